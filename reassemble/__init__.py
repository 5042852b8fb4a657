"""callgate's reassembly engine: may the tool calls of this streamed turn be executed?

Sans-I/O: feed raw provider events to a ``Reassembler`` (or a whole envelope to ``check``) and
read the ``Report``. Nothing here touches files, sockets, clocks or logs.
"""

from reassemble.codes import Code
from reassemble.engine import Reassembler
from reassemble.envelope import ENVELOPE_SCHEMA, EnvelopeError, check, validate_envelope
from reassemble.findings import Finding, Severity
from reassemble.limits import DEFAULT_LIMITS, Limits
from reassemble.quirks import QUIRKS, Quirk
from reassemble.report import Call, Report, Status
from reassemble.state import SlotState

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
