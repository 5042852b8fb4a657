"""The suite's own scheduling: ``make test`` runs ``-n 2 --dist loadgroup``, and the tests of an
``xdist_group`` (a shared proxy, an SDK batch run once) must stay on one worker. A pytest and
pytest-xdist pair that drops the group does so silently: every batch then runs on both."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # two pytest workers started

PYTEST = [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider"]
GROUPED = """
import pytest

pytestmark = pytest.mark.xdist_group("together")


@pytest.mark.parametrize("n", range(4))
def test_grouped(n):
    pass
"""


def test_an_xdist_group_runs_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "test_a.py").write_text(GROUPED)
    (tmp_path / "test_b.py").write_text(GROUPED)
    done = subprocess.run(
        [
            *PYTEST,
            "-n",
            "2",
            "--dist",
            "loadgroup",
            "-W",
            "ignore::pytest.PytestUnknownMarkWarning",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    workers = re.findall(r"^\[(gw\d)\] .* PASSED test_\w\.py::test_grouped", done.stdout, re.M)
    assert len(workers) == 8, done.stdout
    assert len(set(workers)) == 1, done.stdout
