"""Stable finding codes.

The values are wire codes: reports, fixtures' pinned expectations and users' CI configs name
them, so a member is never renamed or removed; ``str(code)`` is the wire code. Add one only with
a test and an entry in the catalogue (``reassemble/catalogue.py``), which is the single source
for the docs and ``callgate explain``.
"""

from __future__ import annotations

from enum import StrEnum


class Code(StrEnum):
    # Identity: which call a fragment belongs to.
    IDENTITY_COLLISION = "identity_collision"
    DUPLICATE_CALL_ID = "duplicate_call_id"
    MISSING_CALL_ID = "missing_call_id"
    MISSING_TOOL_NAME = "missing_tool_name"
    INVALID_SLOT = "invalid_slot"
    DUPLICATE_START = "duplicate_start"
    DELTA_BEFORE_START = "delta_before_start"
    # Lifecycle: whether the provider said the call and the turn are finished.
    MISSING_TERMINAL = "missing_terminal"
    WRONG_TERMINAL_REASON = "wrong_terminal_reason"
    DUPLICATE_TERMINAL = "duplicate_terminal"
    DELTA_AFTER_TERMINAL = "delta_after_terminal"
    CALL_WITHDRAWN = "call_withdrawn"
    TERMINAL_WITHOUT_CALL = "terminal_without_call"
    STREAM_ERROR = "stream_error"
    EVENT_GAP = "event_gap"
    UNSUPPORTED_EVENT = "unsupported_event"
    # Arguments: the reassembled text, parsed strictly once the call is finished.
    INVALID_ARGUMENTS_JSON = "invalid_arguments_json"
    TRAILING_DATA = "trailing_data"
    NON_FINITE_NUMBER = "non_finite_number"
    DUPLICATE_KEY = "duplicate_key"
    INVALID_UNICODE = "invalid_unicode"
    LIMIT_EXCEEDED = "limit_exceeded"
    ARGUMENTS_NOT_OBJECT = "arguments_not_object"
    ARGUMENT_MISMATCH = "argument_mismatch"
    # Schema: the tool's JSON Schema and the arguments' fit to it.
    UNKNOWN_TOOL = "unknown_tool"
    UNSUPPORTED_SCHEMA_KEYWORD = "unsupported_schema_keyword"
    INVALID_SCHEMA = "invalid_schema"
    SCHEMA_VIOLATION = "schema_violation"
    # Built-in tools and free-form input: what a JSON Schema cannot state.
    INVALID_PATCH = "invalid_patch"
    GRAMMAR_VIOLATION = "grammar_violation"
    GRAMMAR_INCOMPLETE = "grammar_incomplete"
    UNSUPPORTED_GRAMMAR = "unsupported_grammar"
