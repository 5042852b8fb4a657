"""callgate's reassembly engine: may the tool calls of this streamed turn be executed?

Sans-I/O: feed raw provider events to a ``Reassembler`` (or a whole envelope to ``check``) and
read the ``Report``. Nothing here touches files, sockets, clocks or logs.
"""

from callgate.reassemble.codes import Code
from callgate.reassemble.engine import Reassembler
from callgate.reassemble.envelope import ENVELOPE_SCHEMA, EnvelopeError, check, validate_envelope
from callgate.reassemble.findings import Finding, Severity
from callgate.reassemble.limits import DEFAULT_LIMITS, Limits
from callgate.reassemble.quirks import QUIRKS, Quirk
from callgate.reassemble.report import Call, Report, Status
from callgate.reassemble.state import SlotState

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
