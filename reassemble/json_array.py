"""Gemini's streamed JSON array, cut into its elements as the bytes arrive.

Without ``?alt=sse``, ``:streamGenerateContent`` answers ``application/json``: one array whose
elements (each a ``GenerateContentResponse``) are sent as they are made, e.g.
``[{…}\\n,\\r\\n{…}\\n]``. ``ArrayFramer`` finds where each top-level element ends without parsing
it, so a caller can hand each element to the strict parser and forward exact upstream bytes.
Work per call is proportional to the bytes given: only brackets, braces, quotes and backslashes
are looked at, found by a compiled pattern.
"""

from __future__ import annotations

import re

_TOKENS = re.compile(rb'[][{}"\\]')
_SPACE = b" \t\r\n"
_OPEN, _CLOSE = frozenset(b"[{"), frozenset(b"]}")
_QUOTE, _BACKSLASH = ord('"'), ord("\\")


class ArrayFramer:
    """Cuts the body into blocks, each ending just after one top-level element; the separator
    before an element (``[`` or ``,`` and white space) starts its block, so the blocks joined are
    the body. ``closed`` turns true at the array's closing bracket."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._depth = 0
        self._in_string = False
        self._escaped = False  # a backslash in a string was the last byte seen
        self.closed = False

    def feed(self, data: bytes) -> list[bytes]:
        offset = len(self._buffer)
        self._buffer += data
        cuts: list[int] = []
        skip = 0
        if self._escaped and data:
            self._escaped, skip = False, 1
        for match in _TOKENS.finditer(data, skip):
            i = match.start()
            if i < skip:
                continue  # the character after a backslash
            byte = data[i]
            if self._in_string:
                if byte == _BACKSLASH:
                    skip = i + 2
                    self._escaped = skip > len(data)
                elif byte == _QUOTE:
                    self._in_string = False
            elif byte == _QUOTE:
                self._in_string = True
            elif byte in _OPEN:
                self._depth += 1
            elif byte in _CLOSE:
                self._depth -= 1
                if self._depth == 1:
                    cuts.append(offset + i + 1)
                elif self._depth == 0:
                    self.closed = True
        return self._take(cuts)

    def rest(self) -> bytes:
        """What follows the last whole element: the closing bracket, or a cut element."""
        rest = bytes(self._buffer)
        self._buffer.clear()
        return rest

    def _take(self, cuts: list[int]) -> list[bytes]:
        blocks, start = [], 0
        for cut in cuts:
            blocks.append(bytes(self._buffer[start:cut]))
            start = cut
        del self._buffer[:start]
        return blocks


def element_text(block: bytes, first: bool) -> bytes:
    """The element in a block: without the ``[`` (first block) or ``,`` before it. A block without
    that separator is returned whole, so the strict parser rejects it."""
    text = block.lstrip(_SPACE)
    separator = b"[" if first else b","
    return text[1:].lstrip(_SPACE) if text.startswith(separator) else text
