"""Framing a streamed body into whole events at any chunk boundaries: SSE blocks, Gemini's
streamed JSON array and JSON lines; a cut array keeps its whole elements."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from callgate.reassemble import strict_json
from callgate.reassemble.body import parse_stream_body
from callgate.reassemble.errors import NotApplicable
from callgate.reassemble.framing import (
    ArrayFramer,
    Blocks,
    EventFramer,
    LineFramer,
    element_text,
)
from callgate.reassemble.profiles import array_frames
from tests.conftest import CONFORMANCE

# Strings full of the characters the framer looks at: brackets, braces, quotes, backslashes.
_TRICKY = st.text(alphabet=st.sampled_from('[]{}"\\,: aé\n\u2028😀'), max_size=12)
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | _TRICKY,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TRICKY, inner, max_size=3),
    max_leaves=12,
)
_ELEMENTS = st.lists(st.dictionaries(_TRICKY, _VALUES, max_size=4), max_size=5)


def frame(
    body: bytes,
    cuts: list[int],
    framer: Blocks | None = None,
) -> tuple[list[bytes], bytes, bool]:
    framer = framer or ArrayFramer()
    edges = sorted({c % (len(body) + 1) for c in cuts} | {0, len(body)})
    blocks = [b for start, end in itertools.pairwise(edges) for b in framer.feed(body[start:end])]
    return blocks, framer.rest(), isinstance(framer, ArrayFramer) and framer.closed


_LINES = st.lists(st.text(alphabet="ab: é", min_size=1, max_size=8), min_size=1, max_size=3)


@given(
    st.lists(_LINES, max_size=5),
    st.sampled_from(["\n", "\r\n", "\r"]),
    st.lists(st.integers(min_value=0), max_size=20),
)
def test_sse_blocks_end_at_each_blank_line_whatever_the_chunking(
    events: list[list[str]], end: str, cuts: list[int]
) -> None:
    # Each event: non-empty lines, then the empty line that ends it.
    expected = [("".join(line + end for line in lines) + end).encode() for lines in events]
    body = b"".join(expected) + b"data: cut"
    blocks, rest, _ = frame(body, cuts, EventFramer())
    assert b"".join(blocks) + rest == body
    assert blocks == expected and rest == b"data: cut"


class SteppedEventFramer(EventFramer):
    """The framer without its search for LF-only text: a step per line end, always."""

    def _cuts(self, data: bytes, offset: int) -> list[int]:
        return self._stepped_cuts(data, offset)


@given(
    st.lists(st.sampled_from(["data: a", "b", "", "\n", "\r", "\r\n", "\n\n"]), max_size=24),
    st.lists(st.integers(min_value=0), max_size=20),
)
def test_lf_only_pieces_are_cut_where_a_step_per_line_end_cuts_them(
    parts: list[str], cuts: list[int]
) -> None:
    """Line ends of every kind mixed, so pieces with and without a CR, and pieces right after a
    CR, meet in one body."""
    body = "".join(parts).encode()
    assert frame(body, cuts, EventFramer()) == frame(body, cuts, SteppedEventFramer())


@given(
    st.lists(st.sampled_from(["data: a", "b", "", "\n", "\r", "\r\n", "\n\n"]), max_size=24),
    st.lists(st.integers(min_value=0), max_size=20),
)
def test_a_piece_taken_whole_is_the_blocks_feed_would_give_and_leaves_the_same_state(
    parts: list[str], cuts: list[int]
) -> None:
    """``takes_whole`` says yes only where ``feed`` would return blocks that are the whole piece;
    then the framer goes on exactly as if it had fed it."""
    body = "".join(parts).encode()
    edges = sorted({c % (len(body) + 1) for c in cuts} | {0, len(body)})
    whole, fed = EventFramer(), EventFramer()
    for start, end in itertools.pairwise(edges):
        piece = body[start:end]
        blocks = fed.feed(piece)
        if whole.takes_whole(piece):
            assert b"".join(blocks) == piece and blocks
        else:
            assert whole.feed(piece) == blocks
    assert whole.rest() == fed.rest()


@pytest.mark.parametrize(
    ("before", "piece", "taken"),
    [
        (b"", b"data: a\n\n", True),
        (b"", b"data: a\n\ndata: b\n\n", True),
        (b"", b"data: a\n\ndata: b\n", False),  # the second event is cut
        (b"data: a\n", b"\n", False),  # ends the event the framer holds
        (b"", b"data: a\r\n\r\n", False),  # it may end in CRLF, and the framer steps
        (b"", b"data: a\r\n\n", True),
        (b"data: a\r", b"\n\n", False),  # half a CRLF before it
    ],
)
def test_a_piece_is_taken_whole_only_from_a_block_boundary_and_up_to_one(
    before: bytes, piece: bytes, taken: bool
) -> None:
    framer = EventFramer()
    framer.feed(before)
    assert framer.takes_whole(piece) is taken


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"])
def test_blank_lines_before_the_first_event_are_blocks_as_between_events(end: str) -> None:
    event = f"data: x{end}{end}".encode()
    blank = end.encode()
    at_start, _, _ = frame(blank + event + b":", [], EventFramer())
    between, _, _ = frame(event + blank + event + b":", [], EventFramer())
    assert at_start == [blank, event] and between == [event, blank, event]


def elements(blocks: list[bytes]) -> list[Any]:
    return [strict_json.loads_bytes(element_text(b, i == 0)) for i, b in enumerate(blocks)]


@given(
    _ELEMENTS,
    st.lists(st.integers(min_value=0), max_size=30),
    st.sampled_from(["gemini", "compact", "spaced"]),
)
def test_any_chunking_gives_each_element_once_and_every_byte_back(
    chunks: list[dict[str, Any]], cuts: list[int], style: str
) -> None:
    if style == "gemini":
        body = b"".join(array_frames({"profile": "gemini", "chunks": chunks}))
    elif style == "compact":
        body = json.dumps(chunks, ensure_ascii=False, separators=(",", ":")).encode()
    else:
        body = b" \r\n" + json.dumps(chunks, indent=3).encode() + b"\n"
    blocks, rest, closed = frame(body, cuts)
    assert b"".join(blocks) + rest == body
    assert elements(blocks) == chunks
    assert closed and rest.strip() == (b"]" if chunks else b"[]")


def test_a_backslash_that_ends_a_chunk_escapes_the_first_byte_of_the_next() -> None:
    body = b'[{"a": "x\\"]}"},{"b": 1}]'
    split = body.index(b"\\") + 1
    blocks, rest, closed = frame(body, [split])
    assert elements(blocks) == [{"a": 'x"]}'}, {"b": 1}] and rest == b"]" and closed


def test_a_block_without_its_separator_is_returned_whole_for_the_parser_to_reject() -> None:
    assert element_text(b'\n,\r\n{"a": 1}', first=False) == b'{"a": 1}'
    assert element_text(b'{"a": 1}', first=False) == b'{"a": 1}'
    assert element_text(b'{"a": 1}', first=True) == b'{"a": 1}'
    assert element_text(b'[{"a": 1}', first=True) == b'{"a": 1}'
    assert element_text(b'\n{"a": 1}', first=False) == b'{"a": 1}'
    assert element_text(b',,{"a": 1}', first=False) == b',{"a": 1}'


def test_a_cut_array_keeps_its_whole_elements_and_is_marked_incomplete() -> None:
    chunks = json.loads((CONFORMANCE / "gemini" / "valid_parallel_two_chunks.json").read_text())[
        "chunks"
    ]
    body = b"".join(array_frames({"profile": "gemini", "chunks": chunks}))
    whole = parse_stream_body(body, "application/json; charset=UTF-8")
    assert (whole.events, whole.incomplete, whole.framing) == (chunks, False, "json")
    second = body.index(b"\n,\r\n")
    for cut, kept in (
        (len(body) - 1, chunks),
        (second + 10, chunks[:1]),
        (second, chunks[:1]),
        (1, []),
    ):
        stream = parse_stream_body(body[:cut], "application/json")
        assert (stream.events, stream.incomplete) == (kept, True)


def test_a_cut_element_that_was_never_valid_stays_text_for_the_engine_to_report() -> None:
    stream = parse_stream_body(b'[{"a": 1},\n{"b": tru},\n{"c', "application/json")
    assert stream.events == [{"a": 1}, '{"b": tru}'] and stream.incomplete


def test_a_closed_array_with_an_element_that_is_not_strict_json_keeps_it_as_text() -> None:
    stream = parse_stream_body(
        b'[{"a": 1},\n{"b": 1, "b": 2},\n{"c": "\xff"}\n]', "application/json"
    )
    assert stream.events == [{"a": 1}, '{"b": 1, "b": 2}', '{"c": "\ufffd"}']
    assert not stream.incomplete


@pytest.mark.parametrize("body", [b'[{"a": 1}] x', b'[{"a": 1}]]', b'{"a": tru}'])
def test_a_body_that_is_not_one_array_is_refused(body: bytes) -> None:
    with pytest.raises(NotApplicable, match="not a JSON array of chunks"):
        parse_stream_body(body, "application/json")


@pytest.mark.parametrize("profile", [None, "openai"])
def test_an_event_stream_body_needs_a_profile_that_reads_its_messages(profile: str | None) -> None:
    with pytest.raises(NotApplicable, match=r"^an event stream, which no profile chosen reads$"):
        parse_stream_body(
            b"\x00\x00\x00\x10", "application/vnd.amazon.eventstream", profile=profile
        )


@pytest.mark.parametrize(
    ("content_type", "named"),
    [(None, "missing"), ("", "missing"), (" Text/HTML ; charset=utf-8", "text/html")],
)
def test_a_body_of_no_streamed_content_type_is_refused_naming_it(
    content_type: str | None, named: str
) -> None:
    with pytest.raises(NotApplicable, match=rf"^not streamed \(content-type {named}\)$"):
        parse_stream_body(b"{}", content_type)


def test_json_lines_split_only_at_line_feeds_and_drop_a_byte_order_mark() -> None:
    body = '\ufeff{"a": "x\u2028y\u0085z"}\r\n{"b": 1}\n'.encode()
    assert parse_stream_body(body, "application/x-ndjson").events == [
        {"a": "x\u2028y\u0085z"},
        {"b": 1},
    ]


def test_json_lines_that_are_not_utf8_are_refused_naming_the_byte() -> None:
    with pytest.raises(NotApplicable, match=r"^not UTF-8 at byte 16$"):
        parse_stream_body(b'{"a": 1}\n{"b": "\xff"}\n', "application/x-ndjson")


def test_a_crlf_that_ends_an_event_is_one_line_end_and_a_following_lf_is_another() -> None:
    framer = EventFramer()
    assert [bytes(b) for b in framer.feed(b"data: a\r")] == []
    # The CR ended the event's line; this LF completes that CRLF, and the next LF is the blank
    # line that ends the event; the last LF is an empty event of its own.
    assert [bytes(b) for b in framer.feed(b"\n\n\n")] == [b"data: a\r\n\n", b"\n"]
    assert [bytes(b) for b in EventFramer().feed(b"\r\n\n")] == [b"\r\n", b"\n"]


@given(
    st.lists(st.text(alphabet='{}"a\r\u2028é', max_size=6), max_size=6),
    st.lists(st.integers(min_value=0), max_size=20),
)
def test_json_lines_end_just_after_each_line_feed_whatever_the_chunking(
    lines: list[str], cuts: list[int]
) -> None:
    expected = [(line + "\n").encode() for line in lines]
    body = b"".join(expected) + b'{"cut'
    blocks, rest, _ = frame(body, cuts, LineFramer())
    assert blocks == expected and rest == b'{"cut'


@pytest.mark.parametrize("framer", [EventFramer, ArrayFramer, LineFramer])
def test_the_rest_is_handed_over_once(framer: type[Blocks]) -> None:
    blocks = framer()
    blocks.feed(b'data: {"a"' if framer is EventFramer else b'[{"a"')
    rest = blocks.rest()
    assert rest and blocks.rest() == b""
