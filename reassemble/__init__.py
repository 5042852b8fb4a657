"""callgate's reassembly engine: may the tool calls of this streamed turn be executed?

Sans-I/O: feed raw provider events to a ``Reassembler`` (or a whole envelope to ``check``) and
read the ``Report``. Nothing here touches files, sockets, clocks or logs.

How this works: the names below load on first use (PEP 562), as ``callgate``'s own do, so a
module of this package (``callgate.reassemble.errors``, which every command's error handling
imports) costs no more than itself: the engine and its profiles load when a turn is judged.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "Code": "callgate.reassemble.codes",
    "Reassembler": "callgate.reassemble.engine",
    "ENVELOPE_SCHEMA": "callgate.reassemble.envelope",
    "EnvelopeError": "callgate.reassemble.envelope",
    "check": "callgate.reassemble.envelope",
    "validate_envelope": "callgate.reassemble.envelope",
    "Finding": "callgate.reassemble.findings",
    "Severity": "callgate.reassemble.findings",
    "DEFAULT_LIMITS": "callgate.reassemble.limits",
    "Limits": "callgate.reassemble.limits",
    "QUIRKS": "callgate.reassemble.quirks",
    "Quirk": "callgate.reassemble.quirks",
    "Call": "callgate.reassemble.report",
    "Report": "callgate.reassemble.report",
    "Status": "callgate.reassemble.report",
    "SlotState": "callgate.reassemble.state",
}

__all__ = [
    "DEFAULT_LIMITS",
    "ENVELOPE_SCHEMA",
    "QUIRKS",
    "Call",
    "Code",
    "EnvelopeError",
    "Finding",
    "Limits",
    "Quirk",
    "Reassembler",
    "Report",
    "Severity",
    "SlotState",
    "Status",
    "check",
    "validate_envelope",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'callgate.reassemble' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # looked up here once
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


if TYPE_CHECKING:
    from callgate.reassemble.codes import Code
    from callgate.reassemble.engine import Reassembler
    from callgate.reassemble.envelope import (
        ENVELOPE_SCHEMA,
        EnvelopeError,
        check,
        validate_envelope,
    )
    from callgate.reassemble.findings import Finding, Severity
    from callgate.reassemble.limits import DEFAULT_LIMITS, Limits
    from callgate.reassemble.quirks import QUIRKS, Quirk
    from callgate.reassemble.report import Call, Report, Status
    from callgate.reassemble.state import SlotState
