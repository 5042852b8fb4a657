"""One fixture replayed: its report and how that differs from its pinned ``expect`` block.

How this works: ``judge`` loads and checks one file; an ``Outcome`` holds the fixture, its report
and the differences between that report and the fixture's ``expect`` block, or, for a file that
cannot be used, an ``error``. Every report and the runner read outcomes and nothing else.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from callgate.cli.files import load_json
from callgate.reassemble import Call, Report, Status, check
from callgate.reassemble.errors import InputError
from callgate.reassemble.profiles import PROFILES
from callgate.reassemble.records import quick_init


class Problem(NamedTuple):
    """One difference between a report and an ``expect`` block."""

    text: str
    #: JSON pointer into the fixture where the difference is pinned (``""``: no ``expect`` block).
    pointer: str
    #: Whether the report's findings show it by themselves (SARIF then adds no result for it).
    shown_by_findings: bool = False


@quick_init
@dataclass(frozen=True)
class Facts:
    """What reports need of a fixture besides its report. An outcome keeps these instead of the
    envelope: a run holds thousands of outcomes, and their streams cost memory, garbage-collector
    passes and, across worker processes, pickling."""

    description: str | None
    profile: str
    #: The fixture's ``expect`` block, as written.
    expect: dict[str, Any] | None
    #: How many events the stream has.
    events: int

    @classmethod
    def of(cls, envelope: Mapping[str, Any]) -> Facts:
        stream = envelope.get(PROFILES[envelope["profile"]].stream_key)
        return cls(
            envelope.get("description"),
            envelope["profile"],
            envelope.get("expect"),
            len(stream) if isinstance(stream, list) else 0,
        )


@quick_init
@dataclass(frozen=True, kw_only=True)
class Outcome:
    """One fixture replayed. ``error`` is set (and ``facts``/``report`` are not) when the file
    is unreadable or not an envelope."""

    fixture: Path
    facts: Facts | None
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
        if self.facts is None or self.report is None:
            return []
        return _problems(self.facts.expect, self.report)

    @classmethod
    def judged(
        cls, fixture: Path, envelope: Mapping[str, Any], report: Report, seconds: float = 0.0
    ) -> Outcome:
        """The outcome of ``report`` on ``envelope``, read from ``fixture``."""
        return cls(
            fixture=fixture,
            facts=Facts.of(envelope),
            report=report,
            problems=expectation_problems(envelope, report),
            seconds=seconds,
        )


def expectation_problems(envelope: Mapping[str, Any], report: Report) -> list[str]:
    """One short line per difference between ``report`` and the envelope's ``expect`` block
    (``{"status", "codes", "calls"}``; ``codes`` compared as a set, ``calls`` in order by id,
    name and arguments; a key that is absent is not compared). Without ``expect`` the turn must
    pass. Empty when the expectation holds. Pure; expects a validated envelope."""
    return [problem.text for problem in _problems(envelope.get("expect"), report)]


def _problems(expect: Mapping[str, Any] | None, report: Report) -> list[Problem]:
    if expect is None:
        if report.status is Status.PASS:
            return []
        return [Problem(f"no expect block, and the turn does not pass: {_verdict(report)}", "")]
    problems = []
    status = report.status
    if expect.get("status") != status:  # a str enum: equal to its value
        problems.append(
            Problem(
                f"status: expected {expect.get('status')}, got {status.value}", "/expect/status"
            )
        )
    if "codes" in expect:
        problems += _code_problems(set(expect["codes"]), set(report.blocking_codes))
    if "calls" in expect:
        problems += _call_problems(expect["calls"], report.calls)
    return problems


def _code_problems(expected: set[str], got: set[str]) -> list[Problem]:
    problems = []
    if missing := sorted(expected - got):
        problems.append(
            Problem(f"codes: expected but did not occur: {', '.join(missing)}", "/expect/codes")
        )
    if unexpected := sorted(got - expected):
        problems.append(
            Problem(
                f"codes: occurred but not expected: {', '.join(unexpected)}", "/expect/codes", True
            )
        )
    return problems


def _call_problems(expected: Sequence[Mapping[str, Any]], calls: Sequence[Call]) -> list[Problem]:
    problems = []
    if len(expected) != len(calls):
        problems.append(
            Problem(f"calls: expected {len(expected)}, got {len(calls)}", "/expect/calls")
        )
    for index, (want, call) in enumerate(zip(expected, calls, strict=False)):
        for key, got in (("id", call.id), ("name", call.name), ("arguments", call.arguments)):
            if want.get(key) != got:
                problems.append(
                    Problem(
                        f"call {index} {key}: expected {_short(want.get(key))}, got {_short(got)}",
                        f"/expect/calls/{index}/{key}",
                    )
                )
    return problems


def _short(value: object, limit: int = 60) -> str:
    text = json.dumps(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _verdict(report: Report) -> str:
    return f"{report.status.value} [{', '.join(report.blocking_codes)}]"


def expectation_now(pinned: Mapping[str, Any] | None, report: Report) -> dict[str, Any]:
    """The ``expect`` block that pins what ``report`` says: status and sorted blocking codes, and
    the calls only when the ``pinned`` block already pinned calls."""
    expect: dict[str, Any] = {"status": report.status.value, "codes": report.blocking_codes}
    if "calls" in (pinned or {}):
        expect["calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in report.calls
        ]
    return expect


def judge(path: Path) -> Outcome:
    """Load and judge one fixture file. Module-level so worker processes can run it."""
    start = time.perf_counter()
    try:
        document = load_json(path)
        report = check(document)  # which checks the envelope: once, not again after loading
    except InputError as error:
        # A folder is in the list only when it holds no fixture; asked after the fact, since a
        # stat of every file costs more than the read that fails on the rare folder.
        folder = path.is_dir()
        problem = (
            "no *.json fixture in this folder" if folder else str(error).removeprefix(f"{path}: ")
        )
        return Outcome(
            fixture=path,
            facts=None,
            report=None,
            problems=[],
            error=problem,
            seconds=time.perf_counter() - start,
        )
    return Outcome.judged(path, document, report, time.perf_counter() - start)


class Summary(NamedTuple):
    fixtures: int
    held: int
    not_held: int
    unreadable: int
    #: Held fixtures by the verdict they pin: a pinned verdict is what was recorded, so a blocked
    #: turn holds as blocked.
    held_pass: int
    held_blocked: int
    held_no_calls: int

    @property
    def exit_code(self) -> int:
        """2 when a file was unreadable, else 1 when an expectation did not hold, else 0."""
        return 2 if self.unreadable else 1 if self.not_held else 0


#: How a held fixture's pinned verdict is counted.
BLOCKED = (Status.FAIL, Status.INVALID)


def summarize(outcomes: Sequence[Outcome]) -> Summary:
    kinds = [o.kind for o in outcomes]
    pinned = [o.report.status for o in outcomes if o.held and o.report is not None]
    return Summary(
        len(kinds),
        kinds.count("held"),
        kinds.count("not-held"),
        kinds.count("unreadable"),
        pinned.count(Status.PASS),
        len(pinned_blocked(outcomes)),
        pinned.count(Status.NOT_APPLICABLE),
    )


def pinned_blocked(outcomes: Sequence[Outcome]) -> list[Outcome]:
    """The held fixtures whose pinned verdict blocks the turn."""
    return [o for o in outcomes if o.held and o.report is not None and o.report.status in BLOCKED]


def summary_line(outcomes: Sequence[Outcome]) -> str:
    """``N fixtures: X held (A pass, B blocked as pinned, C without calls), Y did not, Z
    unreadable``; the parts in brackets that are not zero."""
    s = summarize(outcomes)
    parts = [
        f"{count} {name}"
        for count, name in (
            (s.held_pass, "pass"),
            (s.held_blocked, "blocked as pinned"),
            (s.held_no_calls, "without calls"),
        )
        if count
    ]
    held = f"{s.held} held" + (f" ({', '.join(parts)})" if parts else "")
    return f"{s.fixtures} fixtures: {held}, {s.not_held} did not, {s.unreadable} unreadable"
