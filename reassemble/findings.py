"""What a check found, and where."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from callgate.reassemble.codes import Code
from callgate.reassemble.records import quick_init


class Severity(StrEnum):
    #: The turn may not be executed.
    BLOCKING = "blocking"
    #: A named provider quirk made this harmless; reported, never silent.
    TOLERATED = "tolerated"


@quick_init
@dataclass(frozen=True, kw_only=True)
class Finding:
    """One observation about the stream.

    The check that raises it writes ``message``; the engine adds where it struck: the choice and
    slot it concerns (``None`` for turn-level findings), the index of the stream event, and a JSON
    pointer into the envelope.
    """

    code: Code
    message: str
    severity: Severity = Severity.BLOCKING
    choice: int | None = None
    slot: int | None = None
    event: int | None = None
    path: str = ""
    quirk: str | None = None
    #: Machine-readable extras, e.g. the failing schema keyword and argument path.
    detail: dict[str, str] = field(default_factory=dict)

    @property
    def blocking(self) -> bool:
        return self.severity is Severity.BLOCKING

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code.value,
            "severity": self.severity.value,
            "choice": self.choice,
            "slot": self.slot,
            "event": self.event,
            "path": self.path,
            "message": self.message,
        }
        if self.quirk is not None:
            out["quirk"] = self.quirk
        out.update(self.detail)
        return out
