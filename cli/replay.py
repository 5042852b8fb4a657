"""``callgate replay``: judge every fixture under some folders against its pinned ``expect``.

How this works: the fixture files are found and sorted first, then each one is loaded and judged on
its own, in this process or spread over worker processes (``jobs``); ``Executor.map`` hands the
results back in submission order, so the outcomes are the same either way. An ``Outcome`` is the
fixture, its report and the differences between that report and the fixture's ``expect`` block; a
file that cannot be used is an outcome with an ``error`` and never stops the others. The reports
(``callgate.cli.reports``) are pure functions of the outcomes; ``update`` rewrites ``expect``
blocks to
what the engine says now.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, NamedTuple, TextIO

from rich.console import Console
from rich.progress import Progress

from callgate.cli import reports
from callgate.cli.files import find_fixtures, load_envelope
from callgate.proxy_addon.storage import write_atomic
from callgate.reassemble import Call, Report, Status, check
from callgate.reassemble.errors import InputError
from callgate.redact import fixture_bytes

#: Above this many fixtures a terminal gets a progress bar; below it the bar would only flicker.
PROGRESS_THRESHOLD = 20
#: How wide the text table is when it goes to a file or a pipe (CI logs), not a terminal.
PLAIN_WIDTH = 200


class ReplayFormat(StrEnum):
    text = "text"
    json = "json"
    junit = "junit"
    sarif = "sarif"
    html = "html"


class Problem(NamedTuple):
    """One difference between a report and an ``expect`` block."""

    text: str
    #: JSON pointer into the fixture where the difference is pinned (``""``: no ``expect`` block).
    pointer: str
    #: Whether the report's findings show it by themselves (SARIF then adds no result for it).
    shown_by_findings: bool = False


@dataclass(frozen=True)
class Outcome:
    """One fixture replayed. ``error`` is set (and ``envelope``/``report`` are not) when the file
    is unreadable or not an envelope."""

    fixture: Path
    envelope: dict[str, Any] | None
    report: Report | None
    problems: list[str]
    error: str | None = None
    #: Seconds spent loading and judging; not part of equality, so runs compare equal.
    seconds: float = field(default=0.0, compare=False)

    @property
    def unreadable(self) -> bool:
        return self.error is not None

    @property
    def held(self) -> bool:
        """The fixture's expectation holds (or, without one, the turn passes)."""
        return self.error is None and not self.problems

    @property
    def kind(self) -> str:
        """``held``, ``not-held`` or ``unreadable``."""
        return "unreadable" if self.unreadable else "held" if self.held else "not-held"

    def problem_details(self) -> list[Problem]:
        """The problems with where each is pinned; empty for an unreadable file."""
        if self.envelope is None or self.report is None:
            return []
        return _problems(self.envelope, self.report)


# -- expectations ------------------------------------------------------------------------------

def expectation_problems(envelope: Mapping[str, Any], report: Report) -> list[str]:
    """One short line per difference between ``report`` and the envelope's ``expect`` block
    (``{"status", "codes", "calls"}``; ``codes`` compared as a set, ``calls`` in order by id,
    name and arguments; a key that is absent is not compared). Without ``expect`` the turn must
    pass. Empty when the expectation holds. Pure; expects a validated envelope."""
    return [problem.text for problem in _problems(envelope, report)]


def _problems(envelope: Mapping[str, Any], report: Report) -> list[Problem]:
    expect = envelope.get("expect")
    if expect is None:
        if report.status is Status.PASS:
            return []
        return [Problem(f"no expect block, and the turn does not pass: {_verdict(report)}", "")]
    problems = []
    if expect.get("status") != report.status.value:
        problems.append(Problem(f"status: expected {expect.get('status')}, got "
                                f"{report.status.value}", "/expect/status"))
    if "codes" in expect:
        problems += _code_problems(set(expect["codes"]), set(report.blocking_codes))
    if "calls" in expect:
        problems += _call_problems(expect["calls"], report.calls)
    return problems


def _code_problems(expected: set[str], got: set[str]) -> list[Problem]:
    problems = []
    if missing := sorted(expected - got):
        problems.append(Problem(f"codes: expected but did not occur: {', '.join(missing)}",
                                "/expect/codes"))
    if unexpected := sorted(got - expected):
        problems.append(Problem(f"codes: occurred but not expected: {', '.join(unexpected)}",
                                "/expect/codes", True))
    return problems


def _call_problems(expected: Sequence[Mapping[str, Any]], calls: Sequence[Call]) -> list[Problem]:
    problems = []
    if len(expected) != len(calls):
        problems.append(Problem(f"calls: expected {len(expected)}, got {len(calls)}",
                                "/expect/calls"))
    for index, (want, call) in enumerate(zip(expected, calls, strict=False)):
        for key, got in (("id", call.id), ("name", call.name), ("arguments", call.arguments)):
            if want.get(key) != got:
                problems.append(Problem(f"call {index} {key}: expected {_short(want.get(key))}, "
                                        f"got {_short(got)}", f"/expect/calls/{index}/{key}"))
    return problems


def _short(value: object, limit: int = 60) -> str:
    text = json.dumps(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _verdict(report: Report) -> str:
    return f"{report.status.value} [{', '.join(report.blocking_codes)}]"


def expectation_now(envelope: Mapping[str, Any], report: Report) -> dict[str, Any]:
    """The ``expect`` block that pins what ``report`` says: status and sorted blocking codes, and
    the calls only when the envelope's block already pinned calls."""
    expect: dict[str, Any] = {"status": report.status.value, "codes": report.blocking_codes}
    if "calls" in (envelope.get("expect") or {}):
        expect["calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments}
                           for c in report.calls]
    return expect


# -- running -----------------------------------------------------------------------------------

def judge(path: Path) -> Outcome:
    """Load and judge one fixture file. Module-level so worker processes can run it."""
    start = time.perf_counter()
    try:
        if path.is_dir():
            raise InputError("no *.json fixture in this folder", path)
        envelope = load_envelope(path)
    except InputError as error:
        problem = str(error).removeprefix(f"{path}: ")
        return Outcome(path, None, None, [], problem, time.perf_counter() - start)
    report = check(envelope)
    return Outcome(path, envelope, report, expectation_problems(envelope, report), None,
                   time.perf_counter() - start)


def replay(paths: Sequence[Path], jobs: int = 1, *,
           on_outcome: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Judge every fixture under ``paths`` (see ``find_fixtures``), in sorted order. ``jobs > 1``
    spreads the work over that many processes and gives the same outcomes in the same order.
    ``on_outcome`` is called with each outcome as it is ready, in order (for progress bars)."""
    files = find_fixtures(paths)
    outcomes: list[Outcome] = []
    for outcome in _judged(files, jobs):
        outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)
    return outcomes


def _judged(files: list[Path], jobs: int) -> Iterator[Outcome]:
    if jobs <= 1 or len(files) < 2:
        yield from map(judge, files)
        return
    workers = min(jobs, len(files))
    # Chunks amortise the pickling; several per worker keep the tail short.
    chunk = max(1, len(files) // (workers * 4))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(judge, files, chunksize=chunk)


def update_expectations(outcomes: Iterable[Outcome]) -> list[Path]:
    """Rewrite the ``expect`` block of every readable fixture whose expectation does not hold to
    ``expectation_now``; every other key keeps its value and place. Written atomically as
    ``callgate.redact.fixture_bytes`` lays fixtures out, keeping the file's mode. Returns the files
    written, in order."""
    written = []
    for outcome in outcomes:
        if outcome.envelope is None or outcome.report is None or outcome.held:
            continue
        expect = expectation_now(outcome.envelope, outcome.report)
        updated = {key: expect if key == "expect" else value
                   for key, value in outcome.envelope.items()}
        updated.setdefault("expect", expect)
        mode = outcome.fixture.stat().st_mode & 0o777  # rewritten in place: it keeps its mode
        write_atomic(outcome.fixture, fixture_bytes(updated), mode)
        written.append(outcome.fixture)
    return written


def exit_code(outcomes: Sequence[Outcome]) -> int:
    """2 when a file was unreadable, else 1 when an expectation did not hold, else 0."""
    return reports.summarize(outcomes).exit_code


# -- the command -------------------------------------------------------------------------------

def run_replay(paths: Sequence[Path], report_format: str, output: Path | None, jobs: int,
               update: bool, out: TextIO, err: TextIO) -> int:
    """Replay the fixtures under ``paths``, write the report (to ``output``, atomically, or to
    ``out``) and return the exit code: 0 all held, 1 some did not, 2 some file was unreadable
    (each named on ``err``). With ``update``, rewrite the expectations instead of reporting."""
    if (problem := _usage_problem(report_format, jobs)) is not None:
        print(f"callgate: {problem}", file=err)
        return 2
    outcomes = _replay_with_progress(paths, jobs, err)
    for outcome in outcomes:
        if outcome.error is not None:
            print(f"callgate: {outcome.fixture}: {outcome.error}", file=err)
    if update:
        _print_updates(outcomes, update_expectations(outcomes), out)
        return 2 if any(o.unreadable for o in outcomes) else 0
    text = render(ReplayFormat(report_format), outcomes, terminal=output is None and out.isatty())
    if output is not None:
        write_atomic(output, text.encode())
    else:
        out.write(text)
    return exit_code(outcomes)


def _usage_problem(report_format: str, jobs: int) -> str | None:
    if report_format not in ReplayFormat.__members__:
        return f"unknown report format {report_format!r} (one of {', '.join(ReplayFormat)})"
    return "--jobs must be at least 1" if jobs < 1 else None


def _replay_with_progress(paths: Sequence[Path], jobs: int, err: TextIO) -> list[Outcome]:
    files = find_fixtures(paths)
    if not (err.isatty() and len(files) > PROGRESS_THRESHOLD):
        return replay(files, jobs)
    # Refreshed by hand: an auto-refresh thread alive while the worker pool forks could deadlock.
    with Progress(console=Console(file=err), transient=True, auto_refresh=False) as progress:
        task = progress.add_task("replaying", total=len(files))
        shown = 0.0

        def advance(_: Outcome) -> None:
            nonlocal shown
            progress.advance(task)
            if time.monotonic() - shown >= 0.1:  # ten frames a second is plenty
                progress.refresh()
                shown = time.monotonic()

        return replay(files, jobs, on_outcome=advance)


def _print_updates(outcomes: Sequence[Outcome], written: Sequence[Path], out: TextIO) -> None:
    by_path = {o.fixture: o for o in outcomes}
    for path in written:
        outcome = by_path[path]
        assert outcome.envelope is not None and outcome.report is not None
        old = outcome.envelope.get("expect")
        new = expectation_now(outcome.envelope, outcome.report)
        print(f"updated {path}: {_describe(old)} -> {_describe(new, old)}", file=out)


def _describe(expect: Mapping[str, Any] | None, before: Mapping[str, Any] | None = None) -> str:
    if expect is None:
        return "(no expect)"
    codes = expect.get("codes")
    text = f"{expect['status']} [{', '.join(codes)}]" if codes is not None else expect["status"]
    calls_changed = before is not None and expect.get("calls") != before.get("calls")
    return text + (" (calls)" if calls_changed else "")


def render(report_format: ReplayFormat, outcomes: Sequence[Outcome], *,
           terminal: bool = False, root: Path | None = None) -> str:
    """The report in ``report_format``. Paths under ``root`` (default: the working folder) are
    shown relative to it in JUnit and SARIF; ``terminal`` keeps the text report's colours."""
    root = Path.cwd() if root is None else root
    if report_format is ReplayFormat.json:
        return reports.json_report(outcomes)
    if report_format is ReplayFormat.junit:
        return reports.junit_report(outcomes, root=root)
    if report_format is ReplayFormat.sarif:
        return reports.sarif_report(outcomes, root=root)
    if report_format is ReplayFormat.html:
        from callgate.cli.html_report import (
            render_html,  # written separately; heavy, so only on demand
        )

        return render_html(outcomes)
    return _text(outcomes, terminal)


def _text(outcomes: Sequence[Outcome], terminal: bool) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, width=None if terminal else PLAIN_WIDTH,
                      force_terminal=terminal, highlight=False)
    console.print(reports.text_table(outcomes))
    console.print(reports.summary_line(outcomes), markup=False)
    return buffer.getvalue()
