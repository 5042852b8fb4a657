"""AWS event-stream messages (``application/vnd.amazon.eventstream``), as Bedrock streams
ConverseStream and InvokeModelWithResponseStream.

Wire facts (the AWS event-stream encoding, as botocore's ``eventstream.py`` reads it): a message
is a 12-byte prelude (total length and headers length, big-endian uint32, then the CRC32 of those
8 bytes), the headers, the payload and the CRC32 of everything before it. A header is a name
(uint8 length, UTF-8), a type byte and a value: 0 true, 1 false, 2 int8, 3 int16, 4 int32,
5 int64, 6 bytes and 7 string (uint16 length first), 8 timestamp (int64 milliseconds), 9 UUID
(16 bytes). ``:message-type`` is ``event`` (named by ``:event-type``), ``exception`` (named by
``:exception-type``) or ``error`` (``:error-code``, ``:error-message``).

Written here rather than taken from botocore (32 MB installed with its dependencies, for about
80 lines of decoding): the proxy must cut the body into messages without losing a byte, which the
prelude's length alone decides; a bad CRC must become a finding, not an exception far from the
stream; and botocore's ``EventStreamBuffer`` copies what is left of its buffer after each message,
so a whole recorded body costs it time that grows with the body's square (``bench_framing.py``:
7 µs per message at 1,000 messages, 407 µs at 100,000; this framer 3.4 µs at both).
``tests/test_eventstream.py`` holds this decoder to botocore's on generated messages and on every
recorded Bedrock stream.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from callgate.reassemble import strict_json
from callgate.reassemble.framing import Blocks
from callgate.reassemble.limits import DOCUMENT_LIMITS

#: The prelude (lengths and their CRC) and the message CRC.
PRELUDE, CRC = 12, 4
#: The largest message read: botocore's payload limit (24 MiB) and headers limit (128 KiB).
MAX_MESSAGE = PRELUDE + (128 << 10) + (24 << 20) + CRC

HeaderValue = bool | int | bytes | str | uuid.UUID


class EventStreamError(ValueError):
    """A message that cannot be read; ``str()`` says why in a few words."""


@dataclass(frozen=True)
class Message:
    headers: dict[str, HeaderValue]
    payload: bytes

    def header(self, name: str) -> str:
        """A string header's value, or "" when it is absent or not a string."""
        value = self.headers.get(name)
        return value if isinstance(value, str) else ""


class MessageFramer(Blocks):
    """Cuts the body into whole messages by the total length each prelude states. A length no
    message can have stops the cutting: the rest of the body is then one tail, which
    ``decode`` refuses."""

    def __init__(self) -> None:
        super().__init__()
        self.broken = False

    def _cuts(self, data: bytes, offset: int) -> list[int]:
        # Whole messages were taken from the front of the buffer: the next one starts at 0.
        cuts, at = [], 0
        while not self.broken and len(self._buffer) - at >= 4:
            total = int.from_bytes(self._buffer[at : at + 4], "big")
            if not PRELUDE + CRC <= total <= MAX_MESSAGE:
                self.broken = True
            elif len(self._buffer) - at >= total:
                at += total
                cuts.append(at)
            else:
                break
        return cuts


def starts_a_message(data: bytes) -> bool:
    """Whether ``data`` begins with a message prelude whose CRC holds: how a body without a name
    is known to be an event stream."""
    if len(data) < PRELUDE + CRC:
        return False
    total, _, prelude_crc = struct.unpack(">III", data[:PRELUDE])
    return bool(zlib.crc32(data[:8]) == prelude_crc and PRELUDE + CRC <= total <= MAX_MESSAGE)


def decode(data: bytes) -> Message:
    """The one message ``data`` holds, whole. Raises ``EventStreamError``."""
    if len(data) < PRELUDE + CRC:
        raise EventStreamError(f"{len(data)} bytes is shorter than a message")
    total, headers_length, prelude_crc = struct.unpack(">III", data[:PRELUDE])
    if zlib.crc32(data[:8]) != prelude_crc:
        raise EventStreamError("prelude CRC mismatch")
    if total != len(data):
        raise EventStreamError(f"prelude says {total} bytes, the message has {len(data)}")
    if zlib.crc32(data[:-CRC]) != int.from_bytes(data[-CRC:], "big"):
        raise EventStreamError("message CRC mismatch")
    if PRELUDE + headers_length > total - CRC:
        raise EventStreamError("headers run past the message")
    headers = _headers(data[PRELUDE : PRELUDE + headers_length])
    return Message(headers, data[PRELUDE + headers_length : -CRC])


_FIXED = {2: ">b", 3: ">h", 4: ">i", 5: ">q", 8: ">q"}


def _headers(data: bytes) -> dict[str, HeaderValue]:
    headers: dict[str, HeaderValue] = {}
    at = 0
    try:
        while at < len(data):
            size = data[at]
            name = data[at + 1 : at + 1 + size].decode()
            at += 1 + size
            kind = data[at]
            at += 1
            value: HeaderValue
            if kind in (0, 1):
                value = kind == 0
            elif kind in _FIXED:
                width = struct.calcsize(_FIXED[kind])
                (value,) = struct.unpack(_FIXED[kind], data[at : at + width])
                at += width
            elif kind in (6, 7):
                (length,) = struct.unpack(">H", data[at : at + 2])
                raw = data[at + 2 : at + 2 + length]
                if len(raw) != length:
                    raise EventStreamError("a header value runs past the headers")
                value = raw.decode() if kind == 7 else raw
                at += 2 + length
            elif kind == 9:
                if at + 16 > len(data):
                    raise EventStreamError("a header value runs past the headers")
                value = uuid.UUID(bytes=data[at : at + 16])
                at += 16
            else:
                raise EventStreamError(f"header type {kind} is not known")
            headers[name] = value
    except (IndexError, struct.error, UnicodeDecodeError):
        raise EventStreamError("malformed headers") from None
    return headers


def encode(headers: dict[str, str], payload: bytes) -> bytes:
    """One message with string headers, as Bedrock sends them."""
    packed = b"".join(
        bytes([len(name.encode())])
        + name.encode()
        + b"\x07"
        + struct.pack(">H", len(value.encode()))
        + value.encode()
        for name, value in headers.items()
    )
    total = PRELUDE + len(packed) + len(payload) + CRC
    prelude = struct.pack(">II", total, len(packed))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + packed + payload
    return body + struct.pack(">I", zlib.crc32(body))


def event_message(event_type: str, payload: bytes) -> bytes:
    return encode(
        {":event-type": event_type, ":content-type": "application/json", ":message-type": "event"},
        payload,
    )


def exception_message(exception_type: str, payload: bytes) -> bytes:
    return encode(
        {
            ":exception-type": exception_type,
            ":content-type": "application/json",
            ":message-type": "exception",
        },
        payload,
    )


def message_event(data: bytes, from_message: Callable[[Message], object]) -> object:
    """The event one message stands for, as the profile reads messages. A message that cannot be
    read is a text saying why, which no profile reads (``unsupported_event``), as an SSE body
    that stops being UTF-8 is."""
    try:
        return from_message(decode(data))
    except EventStreamError as error:
        return f"event-stream message not read: {error}"


def body_events(
    body: bytes, from_message: Callable[[Message], object]
) -> tuple[list[object], bool]:
    """The events of a whole body of messages, and whether it ends inside one (then its last
    event is the text saying why, as ``message_event`` gives it)."""
    framer = MessageFramer()
    blocks = framer.feed(body)
    rest = framer.rest()
    return [message_event(block, from_message) for block in [*blocks, rest] if block], bool(rest)


def failure(message: Message) -> tuple[str, object] | None:
    """The name and JSON payload of an ``exception`` message (``:exception-type``), or of an
    ``error`` message (``:error-code``, its ``:error-message`` as ``{"message": ...}``); None for
    an event."""
    kind = message.header(":message-type")
    if kind == "exception":
        return message.header(":exception-type"), payload_value(message.payload)
    if kind == "error":
        return (
            message.header(":error-code") or "error",
            {"message": message.header(":error-message")},
        )
    return None


def is_exception_name(name: str) -> bool:
    """Whether a name is one of the service's exceptions (``throttlingException``, ...)."""
    return name.endswith("Exception")


def payload_value(payload: bytes) -> object:
    """A message's JSON payload; a payload that is not strict JSON stays text, for the engine to
    report."""
    try:
        return strict_json.loads_bytes(payload, DOCUMENT_LIMITS)
    except strict_json.StrictJSONError:
        return payload.decode("utf-8", "replace")
