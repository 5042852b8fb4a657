"""Resource limits that keep hostile or runaway streams from costing unbounded time or memory."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    #: Largest reassembled argument text of one call, in UTF-8 bytes.
    max_argument_bytes: int = 1 << 20
    #: Deepest nesting of arrays and objects inside one argument document.
    max_depth: int = 128
    #: Longest number literal, in characters (a guard against slow big-number conversion).
    max_number_chars: int = 1000


DEFAULT_LIMITS = Limits()

#: For whole documents (a recorded body, a fixture file, a request with a long conversation):
#: they may be large; nesting and number limits stay those of arguments.
DOCUMENT_LIMITS = Limits(max_argument_bytes=256 << 20)
