"""The suite itself, on a clone without ``../shared`` beside it (every clone outside the
developers' workplace): every test that reads the shared corpus skips cleanly with one reason,
none fails or errors.

The tests marked ``corpus`` run in a pytest of their own with ``CALLGATE_TEST_CORPUS`` pointing at
a folder that does not exist; their outcomes are read from its JUnit XML report.
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import ROOT

# It reads the corpus's absence, and is one subprocess: make test runs it, test-fast leaves it.
pytestmark = pytest.mark.corpus


def test_without_the_shared_corpus_its_tests_skip_with_one_reason_and_none_fails(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "no-shared" / "corpus"
    report = tmp_path / "report.xml"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--junitxml={report}",
            "-m",
            "corpus",
            "--ignore=tests/test_suite.py",
            "tests",
        ],
        cwd=ROOT,
        env={**os.environ, "CALLGATE_TEST_CORPUS": str(missing)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    cases = ET.parse(report).getroot().iter("testcase")
    skipped = {
        f"{case.get('classname')}::{case.get('name')}": skip.get("message", "")
        for case in cases
        for skip in case.findall("skipped")
    }
    # The corpus tests are there and skip, each naming the corpus it did not find.
    assert len(skipped) >= 10
    assert {
        name: reason
        for name, reason in skipped.items()
        if reason != f"shared corpus not present at {missing}"
    } == {}
