"""A strict, incremental, sans-I/O Server-Sent Events decoder (WHATWG event stream interpretation).

How this works: bytes go through a strict incremental UTF-8 decoder, so a character split across
``feed()`` calls is simply held back until its last byte arrives, and invalid UTF-8 becomes an
``SSEError`` carrying the absolute byte offset. The decoded text of each feed is scanned once for
line ends; text after the last line end is kept as a list of pieces and joined only when its line
completes, so each feed costs O(len(chunk)) however long the pending line grows. A CR completes
its line at once (so an event ending in CR is emitted without waiting for more bytes) and arms a
flag that swallows an LF at the start of the next text: that is how a CRLF split across feeds
stays one line end. Each complete line is interpreted as a comment, a blank (dispatching) line or
a field, exactly as the spec says; nothing is ever emitted for an event without its blank line.
"""

from __future__ import annotations

import codecs
import re
from typing import NamedTuple

from callgate.reassemble.errors import InputError

__all__ = [
    "SSEDecoder",
    "SSEError",
    "SSEEvent",
    "decode_all",
    "split_at_bad_byte",
    "unfinished_data",
]

# Only these three are line ends in SSE; str.splitlines() would also split on U+0085, U+2028 etc.
# The CRLF alternative comes first so a CRLF inside one text is a single match.
_LINE_END = re.compile(r"\r\n|\r|\n")
_BOM = "\ufeff"
# A retry value longer than this (after leading zeros) is ignored, as browsers ignore overflow;
# it also keeps int() away from huge digit strings, which Python rejects or converts slowly.
_MAX_RETRY_DIGITS = 18


class SSEEvent(NamedTuple):
    """One dispatched event. (A named tuple: made once per event, it costs less to make than a
    frozen dataclass, which sets each field through ``object.__setattr__``.)

    ``event`` is the ``event:`` field as sent: ``None`` when the block had none. Per WHATWG both
    ``None`` and ``""`` mean the type "message" (see ``type``); keeping them apart lets callers
    tell a stream that names its events from one that does not.
    """

    data: str
    event: str | None = None
    id: str | None = None
    retry: int | None = None

    @property
    def type(self) -> str:
        """The event type a browser's EventSource would report."""
        return self.event or "message"


#: Makes an ``SSEEvent`` from all four fields in order, as the named tuple's own ``_make`` does:
#: its ``__new__`` is a Python function (keywords, defaults), where this is one call into C.
_new_event = tuple.__new__


class SSEError(InputError):
    """The byte stream is not valid SSE (in practice: not valid UTF-8)."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        #: Byte offset from the start of the stream where the problem begins.
        self.offset = offset

    def __reduce__(self) -> tuple[type[SSEError], tuple[str, int]]:
        # The default would rebuild from args alone and lose ``offset``.
        return (SSEError, (str(self), self.offset))


class SSEDecoder:
    """Feed bytes as they arrive; get back the events they complete."""

    def __init__(self) -> None:
        self._held = b""  # the start of a UTF-8 sequence whose last bytes have not come yet
        self._seen_text = False  # the BOM may only be stripped from the stream's first character
        self._skip_lf = False  # the last text ended in CR: an LF next is that CR's other half
        self._partial: list[str] = []  # pieces of the line not yet terminated
        self._in_block = False  # a field line was seen since the last blank line
        self._data: list[str] = []  # data lines; "empty data buffer" means no data field at all
        self._event_type: str | None = None
        self._last_id: str | None = None  # persists across events, as the spec's ID buffer does
        self._retry: int | None = None
        self._closed = False
        self._error: SSEError | None = None
        self.comments = 0
        self.bytes_fed = 0

    def feed(self, data: bytes) -> list[SSEEvent]:
        """Decode ``data``; return the events whose blank line it contained. Raises
        ``SSEError`` when the bytes so far are not UTF-8 (and again on every later call), and
        ``RuntimeError`` when fed after ``close``."""
        if self._error is not None:
            # The stream is broken at a known offset; carrying on would only hide that.
            raise self._error
        if self._closed:
            raise RuntimeError("SSEDecoder.feed() called after close()")
        text = self._decode(data, final=False)
        if not text:
            return []  # e.g. only the first bytes of a character: keep _skip_lf armed
        if not self._seen_text:
            self._seen_text = True
            if text.startswith(_BOM):
                text = text[1:]
        start = 1 if self._skip_lf and text.startswith("\n") else 0
        self._skip_lf = False
        if "\r" not in text:
            return self._split_lf_lines(text[start:] if start else text)
        return self._split_lines(text, start)

    def close(self) -> list[SSEEvent]:
        """End of stream. Pending data is discarded, never dispatched (WHATWG); see ``incomplete``.

        Raises ``SSEError`` if the stream ends inside a UTF-8 sequence.
        """
        if self._error is not None:
            raise self._error
        if not self._closed:
            self._closed = True
            # A CR at the very end is a complete line end already; only the UTF-8 tail is left.
            self._decode(b"", final=True)
        return []

    @property
    def incomplete(self) -> bool:
        """After close(): the stream ended mid-line or mid-event. Before: it would end so now."""
        return self._in_block or bool(self._partial) or bool(self._held)

    def _decode(self, data: bytes, *, final: bool) -> str:
        # The codec's own incremental decoder is Python around this call; the bytes of an
        # unfinished sequence are held here and put before the next input, so the error
        # position is relative to the first byte held.
        start = self.bytes_fed - len(self._held)
        self.bytes_fed += len(data)
        if self._held:
            data = self._held + data
        try:
            text, used = codecs.utf_8_decode(data, "strict", final)
        except UnicodeDecodeError as exc:
            offset = start + exc.start
            bad = exc.object[exc.start : exc.end].hex(" ")
            self._error = SSEError(
                f"invalid UTF-8 at byte offset {offset} ({exc.reason}: {bad})", offset
            )
            raise self._error from None
        self._held = data[used:]
        return text

    def _split_lines(self, text: str, start: int) -> list[SSEEvent]:
        """The lines of text that holds a CR, from ``start``: any of CR, LF and CRLF ends one."""
        events: list[SSEEvent] = []
        for match in _LINE_END.finditer(text, start):
            self._partial.append(text[start : match.start()])
            line = "".join(self._partial)
            self._partial.clear()
            event = self._interpret(line)
            if event is not None:
                events.append(event)
            start = match.end()
            # Only a CR that ends this text can be half of a CRLF; inside the text the regex
            # already matched CRLF as one.
            self._skip_lf = match.group() == "\r" and start == len(text)
        if start < len(text):
            self._partial.append(text[start:])
        return events

    def _split_lf_lines(self, text: str) -> list[SSEEvent]:
        """``_split_lines`` for text whose line ends are all LF, as nearly every provider sends.
        Between two blank lines the decoder is at the start of an event, and an event that is
        one ``data`` line (what nearly every event is) is read whole, not line by line; the
        rest goes through ``_lf_lines``. (No CR here, so no CRLF can be half seen.)"""
        events: list[SSEEvent] = []
        blocks = text.split("\n\n")
        if len(blocks) == 1:
            self._lf_lines(text, events)
            return events
        self._lf_lines(blocks[0] + "\n\n", events)
        for block in blocks[1:-1]:
            if block.startswith("data:") and "\n" not in block:
                events.append(
                    _new_event(
                        SSEEvent,
                        (
                            block[6:] if block.startswith("data: ") else block[5:],
                            None,
                            self._last_id,
                            None,
                        ),
                    )
                )
            else:
                self._lf_lines(block + "\n\n", events)
        self._lf_lines(blocks[-1], events)
        return events

    def _lf_lines(self, text: str, events: list[SSEEvent]) -> None:
        """Each line of LF-only text interpreted, and the events it completes added to
        ``events``: one ``split`` instead of a regular expression, and data lines read here,
        not in ``_interpret``."""
        lines = text.split("\n")
        rest = lines.pop()  # the text after the last LF: the start of a line, or nothing
        if lines and self._partial:
            lines[0] = "".join(self._partial) + lines[0]
            self._partial.clear()
        for line in lines:
            if not line:
                event = self._dispatch()
                if event is not None:
                    events.append(event)
            elif line.startswith("data:"):
                self._in_block = True
                self._data.append(line[6:] if line.startswith("data: ") else line[5:])
            else:
                self._interpret(line)
        if rest:
            self._partial.append(rest)

    def _interpret(self, line: str) -> SSEEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            self.comments += 1
            return None
        self._in_block = True
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]  # exactly one space, so "data:  x" keeps " x"
        self._set_field(name, value)
        return None

    def _set_field(self, name: str, value: str) -> None:
        if name == "event":
            self._event_type = value
        elif name == "data":
            self._data.append(value)
        elif name == "id":
            if "\0" not in value:
                self._last_id = value
        elif name == "retry":
            retry = _parse_retry(value)
            if retry is not None:
                self._retry = retry
        # Any other field name is ignored, as the spec requires.

    def _dispatch(self) -> SSEEvent | None:
        # A blank line ends the block whether or not it produces an event; the last event ID
        # deliberately survives, everything else starts afresh.
        data, self._data = self._data, []
        event_type, self._event_type = self._event_type, None
        retry, self._retry = self._retry, None
        self._in_block = False
        if not data:
            return None
        # Joining with "\n" is the spec's "append value + LF, then drop one trailing LF".
        return _new_event(SSEEvent, ("\n".join(data), event_type, self._last_id, retry))


def _parse_retry(value: str) -> int | None:
    """The reconnection time if ``value`` is all ASCII digits (and sane), else None."""
    if not (value.isascii() and value.isdigit()):
        return None
    if len(value.lstrip("0")) > _MAX_RETRY_DIGITS:
        return None
    return int(value)


def decode_all(data: bytes) -> tuple[list[SSEEvent], bool]:
    """Decode a whole recorded body: (events, incomplete). Raises ``SSEError`` on bad UTF-8."""
    decoder = SSEDecoder()
    events = decoder.feed(data)
    events.extend(decoder.close())
    return events, decoder.incomplete


def split_at_bad_byte(body: bytes, offset: int) -> tuple[list[SSEEvent], str]:
    """A body that is not UTF-8 from byte ``offset`` on (``SSEError.offset``), as callgate reads
    it: the events before that byte, and the rest as text, with U+FFFD for what cannot be read
    (which the engine then reports instead of it vanishing)."""
    return decode_all(body[:offset])[0], body[offset:].decode("utf-8", "replace")


def unfinished_data(tail: bytes) -> list[str]:
    """The data of each event a body's tail (its bytes after the last blank line) would give had
    a blank line ended it: what a decoder that hands out an unfinished last event reads, and the
    spec's reading drops. Blank lines, comments and fields without data give none; a tail that
    is not UTF-8 is one event of its text, with U+FFFD for what cannot be read."""
    try:
        return [event.data for event in SSEDecoder().feed(tail + b"\n\n")]
    except SSEError:
        return [tail.decode("utf-8", "replace")]
