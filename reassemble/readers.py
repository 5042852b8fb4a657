"""Reading a streamed body in its framing, as its bytes arrive: one reader per framing.

How this works: a reader cuts the body into whole blocks with its framing's framer (``feed``,
then ``rest`` at the body's end: joined, exactly the bytes fed, so a proxy can hold and release
upstream bytes event by event) and reads the events they hold, each parsed only as it is taken:
``read`` takes the bytes of a chunk (``b""``: the body's end), ``read_block`` one block ``feed``
gave, or the tail. A reader says what its framing shows in its bytes: its own end marker
(``ended``: ``data: [DONE]``, the array's closing bracket), a body closed before its end
(``closed``: the array's closing bracket, after which its tail can be read), bytes that cannot be
read (``unreadable``: SSE that is not UTF-8), and the provider's error event in the framing
(``error_frame``). ``READERS`` maps each framing to its reader.

- ``SSEReader``: the events come from the strict SSE decoder, chunk by chunk, whole blocks or
  not; a body that stops being UTF-8 gives the events before the bad byte, then the rest of the
  body received so far as one text event (which no profile reads: ``unsupported_event``).
- ``ArrayReader``: Gemini's streamed JSON array, an element a block.
- ``LineReader``: JSON lines, a line a block, blank lines left out, a byte order mark dropped.
- ``MessageReader``: AWS event-stream messages, each read by the profile (``from_message``).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, Generic, TypeVar

from callgate.reassemble import strict_json
from callgate.reassemble.eventstream import MessageFramer, message_event
from callgate.reassemble.fragment_templates import Templates
from callgate.reassemble.framing import (
    EVENTSTREAM,
    JSON_ARRAY,
    NDJSON,
    SSE,
    ArrayFramer,
    Blocks,
    EventFramer,
    LineFramer,
    element_text,
)
from callgate.reassemble.limits import DOCUMENT_LIMITS
from callgate.reassemble.profiles.base import FragmentSite, Profile
from callgate.reassemble.sse import SSEDecoder, SSEError, split_at_bad_byte, unfinished_data

_DONE = "[DONE]"
_BOM = b"\xef\xbb\xbf"


def event_value(text: str | bytes) -> object:
    """One event's JSON value; text that is not strict JSON stays a string, so the engine sees
    (and reports) it instead of it vanishing."""
    try:
        return (
            strict_json.loads(text, DOCUMENT_LIMITS)
            if isinstance(text, str)
            else strict_json.loads_bytes(text, DOCUMENT_LIMITS)
        )
    except strict_json.StrictJSONError:
        return text if isinstance(text, str) else text.decode("utf-8", "replace")


def event_reader(names_proof: Callable[[object, str], bool] | None) -> Callable[[str], object]:
    """``event_value`` for a profile's events. Given the profile's ``names_proof``, a text
    without ``\\u`` escapes is parsed without the member-name check first (a Python call per
    object, a third of the parse of a Chat Completions chunk), and kept when the proof holds
    for it; any other text takes ``event_value``. Either way the value is ``event_value``'s."""
    if names_proof is None:
        return event_value

    def value(text: str) -> object:
        if "\\u" in text:
            return event_value(text)
        try:
            parsed = strict_json.loads(text, DOCUMENT_LIMITS, check_names=False)
        except strict_json.StrictJSONError:  # the full parse fails too (and keeps the text)
            return text
        return parsed if names_proof(parsed, text) else event_value(text)

    return value


def template_reader(
    read: Callable[[str], object],
    fragment_site: Callable[[Any], FragmentSite | None],
    give_up: Callable[[], None] = lambda: None,
) -> Callable[[str], object]:
    """``read`` (an ``event_reader``) for the events of one stream, except that an argument
    fragment like one read before it (``fragment_templates``) is built from that one's value,
    not parsed. Its value shares all but the path to its arguments with the other's, so the
    caller changes neither (the engine reads events; it does not change them).

    Strict as ``read`` is: the event's text differs from the first's only in the argument
    string, which the scanner read strictly (no control character); ASCII arguments hold no
    surrogate (the scanner turns a surrogate escape into one), and within a quarter of the size
    limit in characters the text cannot pass it. Names, depth, numbers and whatever else the
    text holds are the first event's, which ``read`` passed. Any other event is read by
    ``read``, and every event once ``MOST_UNMATCHED`` have matched no template; ``give_up`` is
    called then (the caller may call ``read`` itself from there on)."""
    templates = Templates(fragment_site)

    def value(text: str) -> object:
        found = templates.find(text)
        if found is None:
            return read(text)
        parts, arguments, template = found
        if template is not None:
            if arguments.isascii() and len(text) <= _BY_COUNT:
                return template.event(arguments)
            return read(text)
        parsed = read(text)
        templates.learn(parts, parsed)
        if templates.given_up:
            give_up()
        return parsed

    return value


#: A text of at most this many characters is within the size limit, even at four UTF-8 bytes
#: a character.
_BY_COUNT = DOCUMENT_LIMITS.max_argument_bytes // 4

F = TypeVar("F", bound=Blocks)


class Reader(ABC, Generic[F]):
    """One body's reading in one framing, its blocks cut by a framer of type ``F``. ``profile``
    reads its events (None: plain JSON values; an event stream needs one); ``received`` gives the
    body received so far."""

    #: The framing's clients read on past its end marker (ollama-python reads lines past the
    #: done line, boto3 messages past ``metadata``): only the body's end decides the turn.
    reads_past_end: ClassVar[bool] = False
    #: An event may go to the client before it is read, told from its bytes (``takes_whole``).
    releases_unread: ClassVar[bool] = False

    def __init__(self, profile: Profile | None, received: Callable[[], bytes]) -> None:
        self._framer = self._new_framer()
        # Plain attributes, not properties: the tap asks for them at every chunk.
        #: The framing's own end marker was read.
        self.ended = False
        #: The bytes closed the body before it ended: its tail can be read now.
        self.closed = False
        #: The body stopped being readable: nothing after that is read.
        self.unreadable = False

    @abstractmethod
    def _new_framer(self) -> F: ...

    @classmethod
    @abstractmethod
    def error_frame(cls, profile: Profile, body: Mapping[str, object], *, first: bool) -> bytes:
        """The profile's error event ``body`` in this framing; ``first``: nothing of the body
        went out before it."""

    def feed(self, data: bytes) -> list[bytes]:
        """The whole blocks ``data`` completes."""
        return self._framer.feed(data)

    def rest(self) -> bytes:
        """The bytes after the last whole block, at the body's end (or once ``closed``)."""
        return self._framer.rest()

    @abstractmethod
    def read(self, data: bytes) -> Iterable[object]:
        """The events a chunk completes; ``b""``: the body's end."""

    @abstractmethod
    def read_block(self, block: bytes, *, tail: bool = False) -> Iterable[object]:
        """The events of one whole block from ``feed``, or of the tail from ``rest``."""

    def takes_whole(self, data: bytes) -> bool:
        """Whether ``data`` is whole blocks that may go unread (``releases_unread``); if so it is
        taken as ``feed`` would take it, and nothing of it is kept."""
        return False

    def leaves_unread(self, tail: bytes) -> bool:
        """Whether ``tail`` (from ``rest``) holds an event the reader does not read and a client
        may: an SSE event no blank line ended, which some SDKs' decoders hand out. A block
        framing reads its tail."""
        return False


class SSEReader(Reader[EventFramer]):
    """Server-sent events: blocks up to and including the blank line that ends an event (to hold
    and release), events from the strict decoder, chunk by chunk, whole blocks or not
    (``[DONE]`` is the end marker)."""

    releases_unread = True

    def __init__(self, profile: Profile | None, received: Callable[[], bytes]) -> None:
        super().__init__(profile, received)
        self._decoder = SSEDecoder()
        self._value = event_reader(profile.names_proof if profile is not None else None)
        self._fragment_site = profile.fragment_site if profile is not None else None
        self._received = received
        self._decoded = 0  # events the decoder gave so far, [DONE] among them
        #: The data of the events the last ``read`` gave, in order (the tap keeps them).
        self.texts: list[str] = []

    def read_fragments_by_template(self) -> None:
        """From now on, build a fragment event like one before it from that one's value
        (``template_reader``): for a caller that only reads the values, as the tap does."""
        if self._fragment_site is not None:
            plain = self._value
            self._value = template_reader(
                plain, self._fragment_site, lambda: self._read_plainly(plain)
            )

    def _read_plainly(self, read: Callable[[str], object]) -> None:
        self._value = read

    def _new_framer(self) -> EventFramer:
        return EventFramer()

    @classmethod
    def error_frame(cls, profile: Profile, body: Mapping[str, object], *, first: bool) -> bytes:
        return profile.sse_frame(body)

    def read(self, data: bytes) -> Iterable[object]:
        if self.unreadable:
            self.texts = []
            return ()
        rest: str | None = None
        try:
            decoded = self._decoder.feed(data) if data else self._decoder.close()
        except SSEError as error:
            # Read as the recorded body is; of the events before the bad byte, those this read
            # completed were lost with the error.
            self.unreadable = True
            decoded, rest = split_at_bad_byte(self._received(), error.offset)
            decoded = decoded[self._decoded :]
        self._decoded += len(decoded)
        texts: list[str] = []
        for sse in decoded:
            if sse.data == _DONE:
                self.ended = True
            else:
                texts.append(sse.data)
        if rest is not None:
            texts.append(rest)
        self.texts = texts
        return map(self._value, texts)

    def read_block(self, block: bytes, *, tail: bool = False) -> Iterable[object]:
        """The events of a block or tail: the decoder's, as for any chunk (an empty tail ends
        the body)."""
        return self.read(block)

    @property
    def incomplete(self) -> bool:
        """Once the body ended: it ended inside an event, or stopped being readable."""
        return self.unreadable or self._decoder.incomplete

    def takes_whole(self, data: bytes) -> bool:
        return self._framer.takes_whole(data)

    def leaves_unread(self, tail: bytes) -> bool:
        """An unfinished ``[DONE]`` is left out: the end marker carries nothing to read, and goes
        as a finished one would."""
        return any(data != _DONE for data in unfinished_data(tail))


class BlockReader(Reader[F]):
    """A reader whose events are read block by block from its framer's blocks, observing too."""

    #: The bytes after the last whole block hold an event: a last line without its newline, a
    #: cut message (read to say so). A JSON array's tail is its closing bracket.
    reads_tail: ClassVar[bool] = True

    def read(self, data: bytes) -> Iterable[object]:
        if data:
            return self._events(self.feed(data))
        return self._events([self.rest()] if self.reads_tail else [])

    def read_block(self, block: bytes, *, tail: bool = False) -> Iterable[object]:
        return self._events([block] if self.reads_tail or not tail else [])

    @abstractmethod
    def _events(self, blocks: list[bytes]) -> Iterable[object]:
        """The events of whole blocks (or of the tail), in order."""


class ArrayReader(BlockReader[ArrayFramer]):
    """Gemini's streamed JSON array: a block ends just after an element; the closing bracket is
    the end marker and closes the body."""

    reads_tail = False

    def __init__(self, profile: Profile | None, received: Callable[[], bytes]) -> None:
        super().__init__(profile, received)
        self._first = True  # no element was read yet: the first follows the ``[``

    def _new_framer(self) -> ArrayFramer:
        return ArrayFramer()

    @classmethod
    def error_frame(cls, profile: Profile, body: Mapping[str, object], *, first: bool) -> bytes:
        """The last element, closing the array (opening it too when nothing went before)."""
        return f"{'[' if first else ','}{json.dumps(body)}\n]".encode()

    def _events(self, blocks: list[bytes]) -> Iterable[object]:
        texts = [element_text(block, self._first and i == 0) for i, block in enumerate(blocks)]
        self._first = self._first and not blocks
        return map(event_value, texts)

    def feed(self, data: bytes) -> list[bytes]:
        blocks = self._framer.feed(data)
        self.ended = self.closed = self._framer.closed
        return blocks


class LineReader(BlockReader[LineFramer]):
    """Newline-delimited JSON (Ollama): a block is a line with its ``\\n``."""

    reads_past_end = True

    def __init__(self, profile: Profile | None, received: Callable[[], bytes]) -> None:
        super().__init__(profile, received)
        self._first = True  # no line was read yet: a byte order mark may start it

    def _new_framer(self) -> LineFramer:
        return LineFramer()

    @classmethod
    def error_frame(cls, profile: Profile, body: Mapping[str, object], *, first: bool) -> bytes:
        return json.dumps(body).encode() + b"\n"

    def _events(self, blocks: list[bytes]) -> Iterable[object]:
        """The JSON text of each line, blank lines left out (they hold no event), and a byte
        order mark before the first line, as import reads the body."""
        if blocks and self._first:
            self._first = False
            blocks = [blocks[0].removeprefix(_BOM), *blocks[1:]]
        return map(event_value, [line for block in blocks if (line := block.strip())])


class MessageReader(BlockReader[MessageFramer]):
    """AWS event-stream messages (Bedrock), each read by the profile; a cut or unreadable message
    is a text saying why (``message_event``)."""

    reads_past_end = True

    def __init__(self, profile: Profile | None, received: Callable[[], bytes]) -> None:
        super().__init__(profile, received)
        self._from_message = profile.from_message if profile is not None else None

    def _new_framer(self) -> MessageFramer:
        return MessageFramer()

    @classmethod
    def error_frame(cls, profile: Profile, body: Mapping[str, object], *, first: bool) -> bytes:
        return profile.message_frame(body)

    def _events(self, blocks: list[bytes]) -> Iterable[object]:
        from_message = self._from_message
        assert from_message is not None, "the profile reads no event-stream messages"
        return (message_event(block, from_message) for block in blocks if block)


#: The reader of each framing.
READERS: dict[str, type[Reader[Any]]] = {
    SSE: SSEReader,
    JSON_ARRAY: ArrayReader,
    NDJSON: LineReader,
    EVENTSTREAM: MessageReader,
}
