"""Cutting a streamed response body into whole events as its bytes arrive, keeping every byte.

A framer's ``feed`` returns the blocks that became whole; joined with ``rest()`` at the end they
are exactly the bytes fed, so a proxy can hold and release upstream bytes event by event. Work per
call is proportional to the bytes given.

- ``EventFramer``: server-sent events, each block up to and including the blank line that ends it.
- ``LineFramer``: newline-delimited JSON (Ollama's ``application/x-ndjson``), each block one line
  with its ``\\n``.
- ``ArrayFramer``: Gemini's streamed JSON array. Without ``?alt=sse``, ``:streamGenerateContent``
  answers ``application/json``: one array whose elements (each a ``GenerateContentResponse``) are
  sent as they are made, e.g. ``[{…}\\n,\\r\\n{…}\\n]``. Each block ends just after one
  element; only brackets, braces, quotes and backslashes are looked at, found by a compiled
  pattern, so the elements are found without being parsed (``element_text`` gives the element
  for the strict parser).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod

#: The framings a response streams in: server-sent events, Gemini's JSON array (no ``alt=sse``),
#: newline-delimited JSON, AWS event-stream messages (``eventstream.MessageFramer``), and the
#: text messages of a WebSocket session, one event each (OpenAI Realtime, Gemini Live), which
#: come whole.
SSE, JSON_ARRAY, NDJSON, EVENTSTREAM = "sse", "json-array", "ndjson", "eventstream"
WEBSOCKET = "websocket"
#: The media types each framing of an HTTP body is served with (a WebSocket session has no
#: body: its messages are read one by one); NDJSON servers also say ``application/json``.
MEDIA_TYPES = {
    SSE: ("text/event-stream",),
    JSON_ARRAY: ("application/json",),
    NDJSON: ("application/x-ndjson", "application/json"),
    EVENTSTREAM: ("application/vnd.amazon.eventstream",),
}


class Blocks(ABC):
    """The bytes fed and not yet returned in a whole block."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        """The blocks that ``data`` completes."""
        offset = len(self._buffer)
        self._buffer += data
        cuts = self._cuts(data, offset)
        if not offset and cuts == [len(data)]:  # the chunk is one whole block, as most are
            self._buffer.clear()
            return [data]
        return self._take(cuts)

    @abstractmethod
    def _cuts(self, data: bytes, offset: int) -> list[int]:
        """Buffer positions where a block ends, found in ``data`` (which starts at ``offset``)."""

    def rest(self) -> bytes:
        """Bytes after the last whole block, at the end of the stream."""
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


_LINE_ENDS = re.compile(rb"[\r\n]")
_BLANK_LINE_LF = re.compile(rb"(?<=\n)\n")  # an LF right after an LF


class EventFramer(Blocks):
    """Cuts a byte stream into whole SSE event blocks (everything up to and including the blank
    line that ends an event), so enforce mode can hold and release exact upstream bytes.

    Line ends are LF, CRLF or CR. A CR that ends an event may be the first half of a CRLF whose
    LF has not arrived yet, so that cut waits for the next byte."""

    def __init__(self) -> None:
        super().__init__()
        self._line_empty = True
        self._previous_cr = False
        self._cut_pending = False

    def _cuts(self, data: bytes, offset: int) -> list[int]:
        if b"\r" not in data and not (self._cut_pending or self._previous_cr):
            return self._lf_cuts(data, offset)
        return self._stepped_cuts(data, offset)

    def takes_whole(self, data: bytes) -> bool:
        """Whether ``data`` is whole events from where the last block ended, as nearly every
        chunk is: nothing is held, and it ends in two LFs, of which the second ends an empty
        line whatever came before. If so it is taken as ``feed`` would take it, whose blocks
        would join to ``data``, and nothing of it is kept.

        The state needs no change: an empty buffer means the last byte fed ended an event (an
        LF, with no CR pending), and so does the last byte of ``data``."""
        return not self._buffer and data.endswith(b"\n\n")

    def _stepped_cuts(self, data: bytes, offset: int) -> list[int]:
        # Only line ends move the state, and a run of other bytes moves it as its first byte
        # does, so the state machine steps on line ends and on the first byte after each.
        steps: list[int] = []
        after = 0
        for match in _LINE_ENDS.finditer(data):
            end = match.start()
            steps += [after, end] if end > after else [end]
            after = end + 1
        if after < len(data):
            steps.append(after)
        return [cut for i in steps if (cut := self._step(data[i], offset + i))]

    def _lf_cuts(self, data: bytes, offset: int) -> list[int]:
        """``_cuts`` where no CR is involved, as nearly every provider sends: an event ends just
        after each LF that ends an empty line, found by one search instead of a step per line."""
        if 0 <= data.find(b"\n\n") == len(data) - 2:  # one event, ending the chunk
            cuts = [offset + len(data)]
        else:
            cuts = [offset + match.end() for match in _BLANK_LINE_LF.finditer(data)]
        if self._line_empty and data.startswith(b"\n"):
            cuts.insert(0, offset + 1)
        if data:
            self._line_empty = data.endswith(b"\n")
        return cuts

    def _step(self, byte: int, i: int) -> int | None:
        """The cut position this byte decides, if any (always > 0)."""
        cut = None
        if self._cut_pending:
            self._cut_pending = False
            if byte == 0x0A:
                self._previous_cr = False
                return i + 1
            cut = i
        if byte == 0x0A and self._previous_cr:
            self._previous_cr = False
            return cut
        if byte in (0x0A, 0x0D):
            self._previous_cr = byte == 0x0D
            if not self._line_empty:
                self._line_empty = True
            elif byte == 0x0A:
                return i + 1
            else:
                self._cut_pending = True
            return cut
        self._line_empty = self._previous_cr = False
        return cut


class LineFramer(Blocks):
    """Cuts the body into lines, each block ending just after its ``\\n`` (a ``\\r`` before
    it stays in the block: JSON reads it as white space)."""

    def _cuts(self, data: bytes, offset: int) -> list[int]:
        cuts, at = [], data.find(b"\n")
        while at != -1:
            cuts.append(offset + at + 1)
            at = data.find(b"\n", at + 1)
        return cuts


_TOKENS = re.compile(rb'[][{}"\\]')
_SPACE = b" \t\r\n"
_OPEN, _CLOSE = frozenset(b"[{"), frozenset(b"]}")
_QUOTE, _BACKSLASH = ord('"'), ord("\\")


class ArrayFramer(Blocks):
    """Cuts the body into blocks, each ending just after one top-level element; the separator
    before an element (``[`` or ``,`` and white space) starts its block, so the blocks joined are
    the body. ``closed`` turns true at the array's closing bracket."""

    def __init__(self) -> None:
        super().__init__()
        self._depth = 0
        self._in_string = False
        self._escaped = False  # a backslash in a string was the last byte seen
        self.closed = False

    def _cuts(self, data: bytes, offset: int) -> list[int]:
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
        return cuts


def element_text(block: bytes, first: bool) -> bytes:
    """The element in a block: without the ``[`` (first block) or ``,`` before it. A block without
    that separator is returned whole, so the strict parser rejects it."""
    text = block.lstrip(_SPACE)
    separator = b"[" if first else b","
    return text[1:].lstrip(_SPACE) if text.startswith(separator) else text
