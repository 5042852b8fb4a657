"""The verdict on one streamed turn, as data and as the JSON report."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from callgate.reassemble.codes import Code
from callgate.reassemble.findings import Finding
from callgate.reassemble.records import quick_init
from callgate.reassemble.state import SlotState

REPORT_VERSION = 1


class Status(StrEnum):
    #: Every call is complete, unambiguous and schema-valid: eligible for a policy gate.
    PASS = "pass"
    #: A tool-call turn with a blocking finding: execute none of its calls.
    FAIL = "fail"
    #: No streamed tool call: nothing for callgate to decide.
    NOT_APPLICABLE = "not_applicable"
    #: No streamed tool call, and the stream itself is broken.
    INVALID = "invalid"


EXIT_CODES = {Status.PASS: 0, Status.FAIL: 1, Status.NOT_APPLICABLE: 2, Status.INVALID: 2}


@quick_init
@dataclass(frozen=True, kw_only=True)
class Call:
    choice: int
    slot: int
    id: str | None
    name: str | None
    #: The exact reassembled argument text (``None`` when it was not kept, e.g. over the limit).
    arguments: str | None
    #: The strictly parsed arguments, when they parsed.
    parsed_arguments: Any
    #: This call's own state; whether the turn may run is the report's ``executable``.
    state: SlotState
    findings: tuple[Code, ...]
    #: Stream event indices where the provider opened the slot, added to it, and ended it.
    opened: int | None = None
    grew: tuple[int, ...] = ()
    ended: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "choice": self.choice,
            "slot": self.slot,
            "id": self.id,
            "name": self.name,
            "arguments": self.arguments,
            "parsed_arguments": self.parsed_arguments,
            "state": self.state.value,
            "findings": [code.value for code in self.findings],
            "events": {"opened": self.opened, "grew": list(self.grew), "ended": self.ended},
        }


@quick_init
@dataclass(frozen=True, kw_only=True)
class Report:
    profile: str
    provider: str | None
    #: Whether the turn holds a streamed tool call (or the provider claimed one, or it holds tool
    #: data callgate could not read, which may be one).
    applicable: bool
    calls: tuple[Call, ...]
    findings: tuple[Finding, ...]

    @property
    def status(self) -> Status:
        blocked = any(f.blocking for f in self.findings)
        if not self.applicable:
            return Status.INVALID if blocked else Status.NOT_APPLICABLE
        return Status.FAIL if blocked else Status.PASS

    @property
    def executable(self) -> bool:
        """The atomic gate: every call of the turn may run, or none may."""
        return self.status is Status.PASS

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.status]

    @property
    def blocking_codes(self) -> list[str]:
        """The distinct codes of blocking findings, sorted: what a fixture's ``expect`` pins."""
        # str() of a str enum is its value, without the ``value`` property's Python call.
        return sorted({str(f.code) for f in self.findings if f.blocking})

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data. A lone surrogate (provider text a Python caller handed
        over) becomes U+FFFD: no JSON text can carry one strictly, and the report must be strict
        JSON wherever it goes."""
        report: dict[str, Any] = _without_lone_surrogates(
            {
                "report_version": REPORT_VERSION,
                "status": self.status.value,
                "applicable": self.applicable,
                "executable": self.executable,
                "profile": self.profile,
                "provider": self.provider,
                "calls": [call.to_dict() for call in self.calls],
                "findings": [finding.to_dict() for finding in self.findings],
            }
        )
        return report


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _without_lone_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return value if value.isascii() else _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {key: _without_lone_surrogates(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_lone_surrogates(item) for item in value]
    return value
