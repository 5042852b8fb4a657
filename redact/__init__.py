"""Redaction: from a captured exchange (or an envelope) to a fixture that is safe to keep.

Plain functions over data: no file, socket or logging here.
"""

from callgate.reassemble.envelope import fixture_bytes
from callgate.reassemble.errors import NotApplicable, RedactionRefused
from callgate.redact.exchange import Exchange
from callgate.redact.fixture_file import fixture_name
from callgate.redact.policy import (
    Redacted,
    redact_envelope,
    redact_exchange,
    refuse_leaks,
    request_context,
    request_json,
    tool_schemas,
)
from callgate.redact.stream import ArgumentMode

__all__ = [
    "ArgumentMode",
    "Exchange",
    "NotApplicable",
    "Redacted",
    "RedactionRefused",
    "fixture_bytes",
    "fixture_name",
    "redact_envelope",
    "redact_exchange",
    "refuse_leaks",
    "request_context",
    "request_json",
    "tool_schemas",
]
