"""AWS event-stream messages: callgate's decoder held to botocore's on generated and recorded
bodies, every CRC checked, and the framer cutting whole messages at any chunking."""

from __future__ import annotations

import base64
import itertools
import json
import struct
import uuid
import zlib
from pathlib import Path

import pytest
from botocore.eventstream import ChecksumMismatch, EventStreamBuffer
from hypothesis import given
from hypothesis import strategies as st

from callgate.reassemble.eventstream import (
    MAX_MESSAGE,
    EventStreamError,
    Message,
    MessageFramer,
    decode,
    encode,
    message_event,
    starts_a_message,
)
from callgate.reassemble.profiles import PROFILES, framed, frames
from callgate.reassemble.profiles.anthropic import from_invoke_message
from callgate.reassemble.profiles.bedrock_converse import from_message
from tests.conftest import CONFORMANCE, SHARED_CORPUS, corpus_params, load

_NAMES = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=8).filter(
    lambda name: len(name.encode()) < 256
)
_HEADERS = st.dictionaries(
    _NAMES, st.text(st.characters(blacklist_categories=("Cs",)), max_size=20), max_size=4
)


def botocore_messages(body: bytes) -> list[tuple[dict[str, object], bytes]]:
    buffer = EventStreamBuffer()
    buffer.add_data(body)
    return [(message.headers, message.payload) for message in buffer]


@given(
    st.lists(st.tuples(_HEADERS, st.binary(max_size=64)), max_size=4),
    st.lists(st.integers(min_value=0), max_size=12),
)
def test_messages_decode_as_botocore_reads_them_whatever_the_chunking(
    messages: list[tuple[dict[str, str], bytes]], cuts: list[int]
) -> None:
    body = b"".join(encode(headers, payload) for headers, payload in messages)
    framer = MessageFramer()
    edges = sorted({c % (len(body) + 1) for c in cuts} | {0, len(body)})
    blocks = [b for start, end in itertools.pairwise(edges) for b in framer.feed(body[start:end])]
    assert framer.rest() == b"" and b"".join(blocks) == body
    decoded = [decode(block) for block in blocks]
    assert [(m.headers, m.payload) for m in decoded] == messages == botocore_messages(body)


def typed_message() -> bytes:
    """A message with a header of every type, packed by hand."""

    def header(name: str, kind: int, value: bytes) -> bytes:
        return bytes([len(name)]) + name.encode() + bytes([kind]) + value

    # Every header with a value has another after it, so that each value's width is read.
    headers = b"".join(
        [
            header("u", 9, uuid.UUID(int=7).bytes),
            header("m", 8, struct.pack(">q", 1700000000000)),
            header("w", 7, b"\x00\x02hi"),
            header("y", 6, b"\x00\x03abc"),
            header("l", 5, struct.pack(">q", -(1 << 40))),
            header("i", 4, struct.pack(">i", 70000)),
            header("s", 3, struct.pack(">h", -300)),
            header("b", 2, struct.pack(">b", -2)),
            header("f", 1, b""),
            header("t", 0, b""),
        ]
    )
    payload = b'{"a":1}'
    total = 12 + len(headers) + len(payload) + 4
    prelude = struct.pack(">II", total, len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + headers + payload
    return body + struct.pack(">I", zlib.crc32(body))


def test_every_header_type_reads_as_botocore_reads_it() -> None:
    message = decode(typed_message())
    assert message.headers == {
        "t": True,
        "f": False,
        "b": -2,
        "s": -300,
        "i": 70000,
        "l": -(1 << 40),
        "y": b"abc",
        "w": "hi",
        "m": 1700000000000,
        "u": uuid.UUID(int=7),
    }
    ((headers, payload),) = botocore_messages(typed_message())
    assert {k: v for k, v in message.headers.items() if k not in ("m", "u")} == {
        k: v for k, v in headers.items() if k not in ("m", "u")
    }
    assert (headers["u"], message.payload) == (uuid.UUID(int=7).bytes, payload)


@pytest.mark.parametrize(
    ("position", "problem"),
    [
        (9, "prelude CRC mismatch"),  # a byte of the prelude's CRC
        (-6, "message CRC mismatch"),  # a byte of the payload
        (-1, "message CRC mismatch"),  # a byte of the message CRC
    ],
)
def test_a_bad_crc_is_refused_as_botocore_refuses_it(position: int, problem: str) -> None:
    data = bytearray(encode({":event-type": "chunk"}, b'{"bytes":"e30="}'))
    data[position] ^= 0x01
    with pytest.raises(EventStreamError, match=problem):
        decode(bytes(data))
    with pytest.raises(ChecksumMismatch):
        botocore_messages(bytes(data))
    assert message_event(bytes(data), from_message) == f"event-stream message not read: {problem}"


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"\x00\x00\x00\x10", "4 bytes is shorter than a message"),
        (encode({}, b"")[:10], "10 bytes is shorter than a message"),
        (encode({}, b"x")[:-1], "prelude says 17 bytes, the message has 16"),
    ],
)
def test_a_cut_message_is_refused_in_a_few_words(data: bytes, problem: str) -> None:
    with pytest.raises(EventStreamError, match=problem):
        decode(data)


def prelude(total: int, crc_delta: int = 0) -> bytes:
    lengths = struct.pack(">II", total, 0)
    return lengths + struct.pack(">I", zlib.crc32(lengths) ^ crc_delta) + b"\x00" * 8


@pytest.mark.parametrize(
    ("data", "starts"),
    [
        (prelude(16), True),
        (prelude(MAX_MESSAGE), True),  # botocore's limits: 24 MiB of payload, 128 KiB of headers
        (prelude(MAX_MESSAGE + 1), False),
        (prelude(15), False),  # its CRC holds, but no message is that short
        (prelude(16, crc_delta=1), False),  # a length a message can have, but the CRC is wrong
        (prelude(16)[:15], False),
        (encode({}, b""), True),  # the shortest message: 16 bytes, all of them
    ],
)
def test_a_body_starts_a_message_only_with_a_whole_prelude_whose_crc_and_length_hold(
    data: bytes, starts: bool
) -> None:
    assert starts_a_message(data) is starts


def test_a_length_no_message_can_have_stops_the_framer_and_keeps_every_byte() -> None:
    good = encode({":event-type": "metadata"}, b"{}")
    framer = MessageFramer()
    assert framer.feed(good + b"\x00\x00\x00\x05junk" + good) == [good]
    assert framer.broken and framer.rest() == b"\x00\x00\x00\x05junk" + good
    assert starts_a_message(good) and not starts_a_message(b"\x00\x00\x00\x05junk" + good)
    # Four bytes of a length decide; the largest length a message may have waits for its bytes.
    for length in (5, 15):  # 16 is the shortest message: a prelude and a CRC
        too_short = MessageFramer()
        assert (too_short.feed(length.to_bytes(4, "big")), too_short.broken) == ([], True)
    largest = MessageFramer()
    assert (largest.feed(prelude(MAX_MESSAGE)), largest.broken) == ([], False)
    assert MAX_MESSAGE == 12 + 128 * 1024 + 24 * 1024 * 1024 + 4


@pytest.mark.parametrize(
    "path", sorted((CONFORMANCE / "bedrock-converse").glob("*.json")), ids=lambda p: p.stem
)
def test_converse_fixtures_go_out_as_messages_that_read_back_as_their_events(path: Path) -> None:
    envelope = load(path)
    body = b"".join(frames(envelope))
    # botocore reads each message as the event it was written from, and so does callgate.
    read = [
        {headers.get(":exception-type") or headers[":event-type"]: json.loads(payload)}
        for headers, payload in botocore_messages(body)
    ]
    assert read == envelope["events"]
    assert [message_event(block, from_message) for block in MessageFramer().feed(body)] == envelope[
        "events"
    ]


def test_anthropic_events_go_out_as_base64_chunks_and_an_error_as_an_exception() -> None:
    envelope = load(CONFORMANCE / "anthropic" / "valid_fragmented.json")
    body = b"".join(framed(envelope, "eventstream"))
    messages = botocore_messages(body)
    assert [h[":event-type"] for h, _ in messages] == ["chunk"] * len(envelope["events"])
    error = PROFILES["anthropic"].error_body("callgate blocked this turn: x", ["x"])
    assert PROFILES["anthropic"].to_message is not None
    ((headers, payload),) = botocore_messages(PROFILES["anthropic"].to_message(error))
    assert (headers[":message-type"], headers[":exception-type"], payload) == (
        "exception",
        "modelStreamErrorException",
        b'{"message": "callgate blocked this turn: x"}',
    )
    assert from_invoke_message(Message(headers, payload)) == {
        "type": "error",
        "error": {"type": "modelStreamErrorException", "message": "callgate blocked this turn: x"},
    }


@pytest.mark.parametrize(
    ("payload", "event"),
    [
        (b'{"bytes": "not base64!"}', "a chunk whose bytes are not base64"),
        # valid base64 once the "*" is dropped, as a lenient decoder drops it
        (b'{"bytes": "e3*0="}', "a chunk whose bytes are not base64"),
        (b'{"p": "abc"}', "a chunk without bytes"),
        (b'{"bytes": "' + base64.b64encode(b"{oops") + b'"}', "{oops"),
    ],
)
def test_a_chunk_that_holds_no_anthropic_event_is_text_for_the_engine_to_report(
    payload: bytes, event: str
) -> None:
    message = decode(encode({":event-type": "chunk", ":message-type": "event"}, payload))
    assert from_invoke_message(message) == event


RECORDED = sorted(SHARED_CORPUS.glob("real/bedrock-*/*.b64"))


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params(RECORDED, ids=lambda p: p.name))
def test_recorded_bedrock_bodies_read_as_botocore_reads_them(path: Path) -> None:
    body = base64.b64decode(path.read_text())
    framer = MessageFramer()
    blocks = framer.feed(body)
    assert framer.rest() == b""
    assert [(m.headers, m.payload) for m in map(decode, blocks)] == botocore_messages(body)


def test_an_error_message_is_read_by_both_bedrock_readers_as_a_failure_with_its_code() -> None:
    message = decode(
        encode(
            {":message-type": "error", ":error-code": "InternalFailure", ":error-message": "boom"},
            b"",
        )
    )
    assert from_message(message) == {"InternalFailure": {"message": "boom"}}
    assert from_invoke_message(message) == {
        "type": "error",
        "error": {"type": "InternalFailure", "message": "boom"},
    }


def message_with_headers(headers: bytes, payload: bytes = b"{}") -> bytes:
    """A message whose CRCs hold around raw header bytes."""
    total = 12 + len(headers) + len(payload) + 4
    lengths = struct.pack(">II", total, len(headers))
    body = lengths + struct.pack(">I", zlib.crc32(lengths)) + headers + payload
    return body + struct.pack(">I", zlib.crc32(body))


@pytest.mark.parametrize(
    "headers",
    [
        b"\x01\xff\x07\x00\x02ab",  # a name that is not UTF-8
        b"\x01a\x07\x00\x02\xff\xfe",  # a string value that is not UTF-8
        b"\x01a\x04\x00\x00",  # a 32-bit integer cut short
        b"\x05ab",  # a name longer than the headers: its type byte is missing
    ],
)
def test_headers_a_decoder_cannot_read_are_refused_as_malformed(headers: bytes) -> None:
    with pytest.raises(EventStreamError, match=r"^malformed headers$"):
        decode(message_with_headers(headers))


@pytest.mark.parametrize(
    ("headers", "problem"),
    [
        (b"\x01a\x07\x00\x05ab", "a header value runs past the headers"),  # a string of 5, 2 sent
        (b"\x01a\x06\x00\x01", "a header value runs past the headers"),  # bytes of 1, none sent
        (b"\x01u\x09" + bytes(15), "a header value runs past the headers"),  # a UUID of 15 bytes
        (b"\x01a\x0a", "header type 10 is not known"),
    ],
)
def test_headers_that_run_short_or_name_no_type_are_refused_in_their_own_words(
    headers: bytes, problem: str
) -> None:
    with pytest.raises(EventStreamError, match=f"^{problem}$"):
        decode(message_with_headers(headers))


def test_a_uuid_that_ends_the_headers_exactly_is_read() -> None:
    value = uuid.UUID(int=(1 << 128) - 1)
    assert decode(message_with_headers(b"\x01u\x09" + value.bytes)).headers == {"u": value}


def test_a_header_length_that_reaches_into_the_message_crc_is_refused() -> None:
    # 18 bytes: a prelude of 12, no headers, a payload of 2 and the CRC; the prelude claims 3
    # bytes of headers, one more than there is room for before the CRC.
    lengths = struct.pack(">II", 18, 3)
    body = lengths + struct.pack(">I", zlib.crc32(lengths)) + b"{}"
    with pytest.raises(EventStreamError, match=r"^headers run past the message$"):
        decode(body + struct.pack(">I", zlib.crc32(body)))
