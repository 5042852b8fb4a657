"""The SDK apps of ``tests/apps/client.py``, many turns to one interpreter.

Importing the provider SDKs costs seconds; a turn against a loopback server costs milliseconds.
So a test module hands its turns to one ``client.py --batch`` (``AppSession``), group by group
where the servers must change between groups, and each test asserts on its own turn's report,
as it did when each turn had an interpreter of its own. A turn that crashes the app (an
exception outside the SDK call, a bad argument) is that turn's failure, with its traceback; a
turn that hangs is that turn's failure after ``TURN_TIMEOUT``, and the turns after it go on in a
new interpreter.

Likewise for a pytest session run in a subprocess (a user's suite): one session runs many inner
tests, and ``inner_tests`` tells each one's outcome and output apart, from its ``--junitxml``.
"""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from xml.etree import ElementTree

import pytest

from tests.proxy_harness import APPS_PYTHON, CLIENT

#: Seconds one turn may take, its SDK's import included (as with an interpreter per turn).
TURN_TIMEOUT = 60.0


@dataclass(frozen=True)
class Turn:
    """One run of the app: ``client.py SDK BASE_URL ARGS...``."""

    sdk: str
    base_url: str
    args: tuple[str, ...] = ()


@dataclass(frozen=True)
class Outcome:
    """What the app printed for one turn, or why it printed nothing."""

    report: dict[str, Any] | None
    failure: str = ""

    def result(self) -> dict[str, Any]:
        """The turn's report (the SDK's exception is in it); fails the test where the app
        itself crashed, hung or died, with its traceback or its output."""
        assert self.report is not None, self.failure
        return self.report


class AppSession:
    """One interpreter of the app at a time, fed one turn at a time (``run``)."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[str] | None = None

    def __enter__(self) -> AppSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop()

    def run(self, turns: Mapping[str, Turn]) -> dict[str, Outcome]:
        """Run ``turns`` in order; the outcome of each, by its key."""
        return {key: self._turn(key, turn) for key, turn in turns.items()}

    def _turn(self, key: str, turn: Turn) -> Outcome:
        process, lines = self._started()
        assert process.stdin is not None
        case = {"id": key, "argv": [turn.sdk, turn.base_url, *turn.args]}
        try:
            process.stdin.write(json.dumps(case) + "\n")
            process.stdin.flush()
            line = lines.get(timeout=TURN_TIMEOUT)
        except BrokenPipeError:
            line = None
        except queue.Empty:
            return self._lost(f"the app gave no result within {TURN_TIMEOUT:.0f} s")
        if line is None:
            return self._lost("the app ended before this turn's result")
        printed = json.loads(line)
        assert printed["id"] == key, (printed["id"], key)
        return Outcome(printed.get("report"), printed.get("crash", ""))

    def _started(self) -> tuple[subprocess.Popen[str], queue.Queue[str | None]]:
        if self._process is None:
            # The interpreter's stderr, kept for a turn's failure; closed with it (``_stop``).
            self._stderr = tempfile.TemporaryFile("w+")  # noqa: SIM115
            self._process = subprocess.Popen(
                [str(APPS_PYTHON), str(CLIENT), "--batch"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                text=True,
            )
            assert self._process.stdout is not None
            self._lines = _lines_of(self._process.stdout)
        return self._process, self._lines

    def _lost(self, why: str) -> Outcome:
        """The interpreter hung or died on this turn: its failure, with what the app printed
        on stderr; the next turn starts a new one."""
        assert self._process is not None
        self._process.kill()
        code = self._process.wait()
        self._stderr.seek(0)
        failure = f"{why} (exit {code}):\n{self._stderr.read()}"
        self._stop()
        return Outcome(None, failure)

    def _stop(self) -> None:
        if self._process is not None:
            process, self._process = self._process, None
            assert process.stdin is not None
            with contextlib.suppress(BrokenPipeError):  # it died: _lost says why
                process.stdin.close()
            code = process.wait(TURN_TIMEOUT)
            self._stderr.seek(0)
            printed, _ = self._stderr.read(), self._stderr.close()
            assert code in (0, -9), f"the app ended with {code}: {printed}"


def _lines_of(stream: IO[str]) -> queue.Queue[str | None]:
    """The lines of ``stream`` as they come, then None at its end (read by a thread of its own,
    so the reader can give up on a turn that hangs)."""
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    return lines


def run_turns(turns: Mapping[str, Turn]) -> dict[str, Outcome]:
    """Run ``turns`` in one interpreter (as few as it takes); the outcome of each."""
    with AppSession() as session:
        return session.run(turns)


def selected(request: pytest.FixtureRequest, test: Callable[..., Any]) -> dict[str, dict[str, Any]]:
    """The parameters of each item of ``test`` this session runs, by item name: a batch runs the
    turns of the selected cases only (``-k`` runs one case without running them all)."""
    return {
        item.name: item.callspec.params if hasattr(item, "callspec") else {}
        for item in request.session.items
        if isinstance(item, pytest.Function)
        and item.originalname == test.__name__
        and item.module is request.module
    }


def turn_key(item: str, role: str) -> str:
    """The key of the turn of test item ``item`` that plays ``role`` (``"direct"``...)."""
    return f"{item} {role}"


class AppReports:
    """The outcomes of a batch of turns keyed by ``turn_key``: each test's report of each role."""

    def __init__(self, outcomes: Mapping[str, Outcome]) -> None:
        self._outcomes = dict(outcomes)

    def report(self, item: pytest.Item, role: str) -> dict[str, Any]:
        """The report of ``item``'s turn of ``role``; fails the test where the app failed."""
        return self._outcomes[turn_key(item.name, role)].result()


@dataclass(frozen=True)
class InnerTest:
    """One test of a pytest session run in a subprocess, as its ``--junitxml`` tells it (with
    ``junit_logging=system-out``): ``failed`` for a failure or an error in any of its phases,
    ``skipped``, or ``passed``; the messages and texts of its failures, errors or skip; what it
    printed."""

    outcome: str
    report: str
    stdout: str


def inner_tests(junit: Path) -> dict[str, InnerTest]:
    """Each test of a ``--junitxml`` file, by its name (``test_x[param]``)."""
    tests = {}
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        problems = [e for e in case if e.tag in ("failure", "error", "skipped")]
        outcome = "passed"
        if any(e.tag != "skipped" for e in problems):
            outcome = "failed"
        elif problems:
            outcome = "skipped"
        report = "\n".join(f"{e.get('message', '')}\n{e.text or ''}" for e in problems)
        stdout = "".join(e.text or "" for e in case.iter("system-out"))
        tests[case.attrib["name"]] = InnerTest(outcome, report, stdout)
    return tests
