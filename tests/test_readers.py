"""The readers, one per framing: the same blocks and the same events however the body is cut,
the tail handed over once, and an error event each profile reads as the provider's error."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from callgate.reassemble import check
from callgate.reassemble.body import parse_stream_body
from callgate.reassemble.framing import JSON_ARRAY, MEDIA_TYPES, NDJSON, SSE
from callgate.reassemble.profiles import PROFILES, framed
from callgate.reassemble.readers import READERS, LineReader, Reader, SSEReader
from tests.conftest import CONFORMANCE, load

#: Each profile with each framing of an HTTP body it streams in.
PAIRS = [
    (name, framing)
    for name, profile in sorted(PROFILES.items())
    for framing in dict.fromkeys([*profile.framings, *(f for _, f in profile.path_framings)])
    if framing in MEDIA_TYPES
]
_CUTS = st.lists(st.integers(min_value=0), max_size=12)


def passing_turn(name: str) -> dict[str, Any]:
    """The profile's first passing fixture with two events or more."""
    return next(
        envelope
        for path in sorted((CONFORMANCE / name).glob("valid_*.json"))
        if (envelope := load(path))["expect"]["status"] == "pass"
        and len(envelope[PROFILES[name].stream_key]) > 1
    )


def reader_of(name: str, framing: str, body: bytes) -> Reader[Any]:
    return READERS[framing](PROFILES[name], lambda: body)


def pieces(body: bytes, cuts: list[int]) -> list[bytes]:
    edges = sorted({cut % (len(body) + 1) for cut in cuts} | {0, len(body)})
    return [body[start:end] for start, end in itertools.pairwise(edges)]


def test_every_framing_has_a_reader() -> None:
    assert set(READERS) == set(MEDIA_TYPES)


@pytest.mark.parametrize(("name", "framing"), PAIRS)
@given(cuts=_CUTS)
def test_a_body_cut_anywhere_gives_the_blocks_and_events_of_the_whole_body(
    name: str, framing: str, cuts: list[int]
) -> None:
    body = b"".join(framed(passing_turn(name), framing))
    whole, cut = reader_of(name, framing, body), reader_of(name, framing, body)
    blocks = [block for piece in pieces(body, cuts) for block in cut.feed(piece)]
    rest = cut.rest()
    assert (blocks, rest) == (whole.feed(body), whole.rest())
    assert b"".join(blocks) + rest == body
    whole, cut = reader_of(name, framing, body), reader_of(name, framing, body)
    events = [event for piece in [*pieces(body, cuts), b""] for event in cut.read(piece)]
    assert events == [*whole.read(body), *whole.read(b"")]
    assert (cut.ended, cut.unreadable) == (whole.ended, False)


@pytest.mark.parametrize(("name", "framing"), PAIRS)
def test_the_blocks_read_one_by_one_give_the_events_of_the_chunks(name: str, framing: str) -> None:
    """What enforce mode reads (each block, then the tail) is what observe mode reads."""
    body = b"".join(framed(passing_turn(name), framing))
    observing, enforcing = reader_of(name, framing, body), reader_of(name, framing, body)
    blocks = enforcing.feed(body)
    by_block = [event for block in blocks for event in enforcing.read_block(block)]
    by_block += enforcing.read_block(enforcing.rest(), tail=True)
    assert by_block == [*observing.read(body), *observing.read(b"")]
    assert len(by_block) == len(passing_turn(name)[PROFILES[name].stream_key])


@pytest.mark.parametrize(("name", "framing"), PAIRS)
def test_the_tail_is_what_follows_the_last_whole_block_and_is_handed_over_once(
    name: str, framing: str
) -> None:
    frames = list(framed(passing_turn(name), framing))
    cut = frames[1][: len(frames[1]) // 2]
    reader = reader_of(name, framing, frames[0] + cut)
    assert (reader.feed(frames[0] + cut), reader.rest(), reader.rest()) == ([frames[0]], cut, b"")


def test_a_last_line_without_its_newline_is_read_and_an_array_s_tail_is_not() -> None:
    lines = LineReader(PROFILES["ollama"], bytes)
    assert lines.feed(b'{"a": 1}\n{"b": 2}') == [b'{"a": 1}\n']
    assert list(lines.read_block(lines.rest(), tail=True)) == [{"b": 2}]
    array = READERS[JSON_ARRAY](PROFILES["gemini"], bytes)
    assert list(array.read(b'[{"a": 1}\n')) == [{"a": 1}]
    assert not array.closed and not array.ended
    assert (list(array.read(b"]")), array.closed, array.ended) == ([], True, True)
    assert list(array.read_block(array.rest(), tail=True)) == []


def test_an_sse_body_that_stops_being_utf8_gives_the_events_before_and_the_rest_as_text() -> None:
    good, bad, after = b'data: {"a": 1}\n\n', b'data: {"b": "\xff"}\n\n', b"data: [DONE]\n\n"
    body = good + bad + after
    reader = SSEReader(None, lambda: body)
    rest = body[body.index(b"\xff") :].decode("utf-8", "replace")
    assert list(reader.read(body)) == [{"a": 1}, rest]
    assert (reader.unreadable, list(reader.read(b"")), reader.ended) == (True, [], False)
    assert reader.incomplete


def test_an_sse_reader_reads_done_as_the_end_marker_not_as_an_event() -> None:
    reader = SSEReader(PROFILES["openai"], bytes)
    assert list(reader.read(b'data: {"a": 1}\n\ndata: [DONE]\n\n')) == [{"a": 1}]
    assert reader.ended and not reader.incomplete


@pytest.mark.parametrize(("name", "framing"), PAIRS)
def test_the_error_frame_is_read_back_as_the_provider_s_error(name: str, framing: str) -> None:
    """As enforce mode sends it: the events before the terminal evidence, then the error frame
    instead of the rest (opening a JSON array when nothing went before); and alone."""
    profile = PROFILES[name]
    envelope = passing_turn(name)
    frames = list(framed(envelope, framing))
    held = next(
        n for n, raw in enumerate(envelope[profile.stream_key]) if profile.carries_terminal(raw)
    )
    body = profile.error_body("callgate blocked this turn: missing_terminal", ["missing_terminal"])
    for before in (frames[:held], []):
        sent = b"".join(before) + READERS[framing].error_frame(profile, body, first=not before)
        stream = parse_stream_body(sent, MEDIA_TYPES[framing][0], profile=name)
        report = check(
            {
                "profile": name,
                "tool_schemas": envelope["tool_schemas"],
                profile.stream_key: stream.events,
            }
        )
        assert "stream_error" in report.blocking_codes, (before, report.blocking_codes)


@pytest.mark.parametrize("framing", [SSE, NDJSON])
def test_a_reader_without_a_profile_reads_plain_json_values(framing: str) -> None:
    body = b'data: {"a": 1}\n\n' if framing == SSE else b'{"a": 1}\n'
    reader = READERS[framing](None, lambda: body)
    assert [*reader.read(body), *reader.read(b"")] == [{"a": 1}]
