"""Tests for the incremental SSE decoder (WHATWG event stream interpretation)."""

from __future__ import annotations

import pickle
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from callgate.reassemble.errors import InputError
from callgate.reassemble.sse import SSEDecoder, SSEError, SSEEvent, decode_all


def feed_pieces(pieces: Iterable[bytes]) -> tuple[list[SSEEvent], SSEDecoder]:
    decoder = SSEDecoder()
    events: list[SSEEvent] = []
    for piece in pieces:
        events.extend(decoder.feed(piece))
    events.extend(decoder.close())
    return events, decoder


def bytewise(body: bytes) -> list[bytes]:
    return [body[i : i + 1] for i in range(len(body))]


def events_of(body: bytes) -> list[SSEEvent]:
    events, incomplete = decode_all(body)
    assert not incomplete
    return events


# --- line ends -------------------------------------------------------------------------------


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
def test_each_line_ending_separates_lines_and_dispatches(eol: bytes) -> None:
    body = b"data: a" + eol + b"data: b" + eol + eol + b"data: c" + eol + eol
    assert events_of(body) == [SSEEvent("a\nb"), SSEEvent("c")]


def test_mixed_line_endings_in_one_stream_are_all_honoured() -> None:
    assert events_of(b"data: a\r\ndata: b\rdata: c\n\r\n") == [SSEEvent("a\nb\nc")]


def test_crlf_split_across_feeds_is_one_line_end() -> None:
    # Were the LF a second line end it would be a blank line dispatching "a" on its own.
    events, _ = feed_pieces([b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"])
    assert events == [SSEEvent("a\nb")]


def test_cr_at_end_of_feed_followed_by_other_text_is_a_line_end() -> None:
    events, _ = feed_pieces([b"data: a\r", b"data: b\r", b"\r"])
    assert events == [SSEEvent("a\nb")]


def test_cr_then_empty_feeds_then_lf_is_still_one_line_end() -> None:
    events, _ = feed_pieces([b"data: a\r", b"", b"", b"\ndata: b\n\n"])
    assert events == [SSEEvent("a\nb")]


def test_two_crs_then_lf_are_two_line_ends() -> None:
    # CR CR LF = line end, then a blank line ended by CRLF: "a" is dispatched.
    events, _ = feed_pieces([b"data: a\r", b"\r", b"\n", b"data: b\n\n"])
    assert events == [SSEEvent("a"), SSEEvent("b")]


def test_event_ending_in_cr_is_emitted_without_waiting_for_more_bytes() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r\r") == [SSEEvent("a")]
    assert decoder.feed(b"\n") == []  # the CRLF's second half, not another blank line
    assert decoder.close() == []
    assert not decoder.incomplete


@pytest.mark.parametrize("char", ["\x85", "\u2028", "\u2029", "\x0b", "\x0c", "\x1c"])
def test_unicode_line_separators_other_than_cr_and_lf_are_ordinary_text(char: str) -> None:
    body = f"data: a{char}b\n\n".encode()
    assert events_of(body) == [SSEEvent(f"a{char}b")]


# --- fields ------------------------------------------------------------------------------------


def test_exactly_one_leading_space_of_the_value_is_stripped() -> None:
    body = b"data:no-space\ndata: one\ndata:  two\ndata:\tTab\n\n"
    assert events_of(body) == [SSEEvent("no-space\none\n two\n\tTab")]


def test_only_the_first_colon_separates_field_name_from_value() -> None:
    assert events_of(b"data: a: b:c\n\n") == [SSEEvent("a: b:c")]


def test_line_without_colon_is_a_field_with_empty_value() -> None:
    assert events_of(b"data\n\n") == [SSEEvent("")]
    assert events_of(b"data\ndata\n\n") == [SSEEvent("\n")]


def test_empty_data_field_still_dispatches_an_event_with_empty_data() -> None:
    assert events_of(b"data:\n\n") == [SSEEvent("")]


def test_multiple_data_lines_join_with_newline_and_one_trailing_newline_is_dropped() -> None:
    assert events_of(b"data: a\ndata:\ndata: b\ndata:\n\n") == [SSEEvent("a\n\nb\n")]


def test_event_field_sets_the_type_and_absence_is_reported_as_none() -> None:
    named, unnamed = events_of(b"event: ping\ndata: 1\n\ndata: 2\n\n")
    assert (named.event, named.type) == ("ping", "ping")
    assert (unnamed.event, unnamed.type) == (None, "message")


def test_empty_event_field_is_kept_as_given_but_means_message() -> None:
    (event,) = events_of(b"event:\ndata: x\n\n")
    assert (event.event, event.type) == ("", "message")


def test_event_type_is_reset_after_each_blank_line() -> None:
    body = b"event: a\ndata: 1\n\ndata: 2\n\n"
    assert [e.event for e in events_of(body)] == ["a", None]


def test_blank_line_without_data_dispatches_nothing_and_resets_the_event_type() -> None:
    assert events_of(b"event: lost\n\ndata: x\n\n") == [SSEEvent("x")]


def test_last_of_repeated_event_fields_wins() -> None:
    assert events_of(b"event: a\nevent: b\ndata: x\n\n") == [SSEEvent("x", event="b")]


def test_id_persists_across_events_until_changed() -> None:
    body = b"data: 1\n\nid: 7\ndata: 2\n\ndata: 3\n\nid: 8\ndata: 4\n\n"
    assert [e.id for e in events_of(body)] == [None, "7", "7", "8"]


def test_id_set_in_a_block_without_data_still_applies_to_later_events() -> None:
    assert events_of(b"id: 5\n\ndata: x\n\n") == [SSEEvent("x", id="5")]


def test_empty_id_field_sets_the_id_to_empty_string() -> None:
    assert [e.id for e in events_of(b"id: 1\ndata: a\n\nid\ndata: b\n\n")] == ["1", ""]


def test_id_containing_nul_is_ignored() -> None:
    assert events_of(b"id: 1\n\nid: a\x00b\ndata: x\n\n") == [SSEEvent("x", id="1")]


def test_retry_with_ascii_digits_is_reported_on_its_event_only() -> None:
    body = b"retry: 3000\ndata: a\n\ndata: b\n\n"
    assert [e.retry for e in events_of(body)] == [3000, None]


@pytest.mark.parametrize("value", ["", "3s", "-1", "1.5", " 10", "\u0663", "1" * 40])
def test_retry_that_is_not_plain_ascii_digits_is_ignored(value: str) -> None:
    body = f"retry: 100\nretry: {value}\ndata: x\n\n".encode()
    assert events_of(body) == [SSEEvent("x", retry=100)]


def test_retry_with_leading_zeros_is_a_plain_integer() -> None:
    assert events_of(b"retry: " + b"0" * 30 + b"42\ndata: x\n\n")[0].retry == 42


def test_retry_in_a_block_without_data_is_not_carried_to_the_next_event() -> None:
    assert events_of(b"retry: 10\n\ndata: x\n\n") == [SSEEvent("x")]


def test_unknown_fields_are_ignored() -> None:
    body = b"foo: bar\nDATA: shout\nData: no\ndata: yes\n\n"
    assert events_of(body) == [SSEEvent("yes")]


def test_field_name_with_leading_space_is_an_unknown_field() -> None:
    # As in a recorded OpenRouter body that starts " data: ...": browsers drop that event too.
    assert events_of(b" data: lost\n\ndata: kept\n\n") == [SSEEvent("kept")]


def test_done_sentinel_is_an_ordinary_event() -> None:
    assert events_of(b"data: {}\n\ndata: [DONE]\n\n") == [SSEEvent("{}"), SSEEvent("[DONE]")]


# --- comments ----------------------------------------------------------------------------------


def test_comment_lines_are_ignored_and_counted() -> None:
    body = b": OPENROUTER PROCESSING\n\n:\ndata: a\n:between\ndata: b\n\n"
    events, decoder = feed_pieces([body])
    assert events == [SSEEvent("a\nb")]
    assert decoder.comments == 3


def test_comment_only_stream_is_complete_and_has_no_events() -> None:
    events, incomplete = decode_all(b": keep-alive\n\n: again\n")
    assert (events, incomplete) == ([], False)


# --- BOM ---------------------------------------------------------------------------------------


def test_leading_bom_is_stripped() -> None:
    assert events_of(b"\xef\xbb\xbfdata: x\n\n") == [SSEEvent("x")]


def test_leading_bom_split_across_feeds_is_stripped() -> None:
    events, _ = feed_pieces([b"\xef", b"\xbb", b"\xbf", b"data: x\n\n"])
    assert events == [SSEEvent("x")]


def test_only_one_leading_bom_is_stripped() -> None:
    # The second BOM becomes part of the field name "\ufeffdata", which is unknown.
    assert events_of(b"\xef\xbb\xbf\xef\xbb\xbfdata: x\n\ndata: y\n\n") == [SSEEvent("y")]


def test_bom_after_the_start_is_kept_as_text() -> None:
    body = "data: a\n\n\ufeffdata: lost\n\ndata: \ufeffb\n\n".encode()
    assert events_of(body) == [SSEEvent("a"), SSEEvent("\ufeffb")]


# --- UTF-8 -------------------------------------------------------------------------------------


def test_multibyte_character_split_across_feeds_is_decoded() -> None:
    body = "data: é€😀\n\n".encode()
    assert feed_pieces(bytewise(body))[0] == [SSEEvent("é€😀")]


@pytest.mark.parametrize(
    ("body", "offset"),
    [
        (b"data: ok\n\ndata: \xff\n\n", 16),
        (b"\xc0\xafdata: overlong\n\n", 0),
        (b"data: \xed\xa0\x80 surrogate\n\n", 6),
        (b"data: \xe2\x82x\n\n", 6),
    ],
)
def test_invalid_utf8_raises_sse_error_at_its_byte_offset(body: bytes, offset: int) -> None:
    with pytest.raises(SSEError, match=f"invalid UTF-8 at byte offset {offset}") as info:
        decode_all(body)
    assert info.value.offset == offset
    assert isinstance(info.value, InputError)  # the one family every command prints as a line


def test_invalid_utf8_offset_counts_bytes_held_back_from_earlier_feeds() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: ok\n\ndata: \xf0\x9f") == [SSEEvent("ok")]
    with pytest.raises(SSEError) as info:
        decoder.feed(b"\x98x\n\n")  # the 4-byte sequence starting at 16 is cut short by "x"
    assert info.value.offset == 16


def test_stream_ending_inside_a_utf8_sequence_raises_at_close() -> None:
    decoder = SSEDecoder()
    decoder.feed(b"data: x\n\ndata: \xe2\x82")
    with pytest.raises(SSEError, match="unexpected end of data") as info:
        decoder.close()
    assert info.value.offset == 15


def test_decoder_stays_failed_after_an_sse_error() -> None:
    decoder = SSEDecoder()
    with pytest.raises(SSEError):
        decoder.feed(b"\xff")
    with pytest.raises(SSEError):
        decoder.feed(b"data: fine\n\n")
    with pytest.raises(SSEError):
        decoder.close()


def test_sse_error_survives_pickling_with_its_offset() -> None:
    error = pickle.loads(pickle.dumps(SSEError("bad", 12)))
    assert (str(error), error.offset) == ("bad", 12)


# --- end of stream -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"data: x\n",
        b"data: x",
        b"data: a\n\ndata: x",
        b"event: message_stop\ndata: {}",
        b"data: a\n\nevent: e\n",
        b"data: a\n\nid: 1\n",
        b"data: a\n\n: partial comment",
        b"data: a\n\n:",
    ],
)
def test_stream_ending_inside_an_event_is_incomplete_and_not_dispatched(body: bytes) -> None:
    decoder = SSEDecoder()
    events = decoder.feed(body)
    assert decoder.close() == []
    assert all(e.data != "x" for e in events)
    assert decoder.incomplete


@pytest.mark.parametrize(
    "body",
    [b"", b"data: x\n\n", b"data: x\r\r", b"data: x\r\n\r\n", b"data: x\n\n: c\n", b"\n\n\n"],
)
def test_stream_ending_after_a_blank_line_is_complete(body: bytes) -> None:
    assert decode_all(body)[1] is False


def test_decode_all_returns_events_and_incomplete_flag() -> None:
    assert decode_all(b"data: a\n\ndata: b\n") == ([SSEEvent("a")], True)


def test_feed_after_close_is_a_runtime_error() -> None:
    decoder = SSEDecoder()
    decoder.close()
    with pytest.raises(RuntimeError):
        decoder.feed(b"data: x\n\n")


def test_close_twice_returns_no_events() -> None:
    decoder = SSEDecoder()
    decoder.feed(b"data: x\n\n")
    assert decoder.close() == []
    assert decoder.close() == []


def test_bytes_fed_counts_every_byte_given() -> None:
    _, decoder = feed_pieces([b"\xef\xbb\xbf", b"data: \xe2", b"\x82\xac\r", b"\n\r\n"])
    assert decoder.bytes_fed == 16


# --- realistic streams byte by byte ------------------------------------------------------------

ANTHROPIC_STYLE = (
    b"event: message_start\n"
    b'data: {"type":"message_start","message":{"id":"msg_1","content":[]}}\n\n'
    b"event: content_block_start\n"
    b'data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use",'
    b'"id":"toolu_1","name":"get_weather","input":{}}              }\n\n'
    b"event: ping\n"
    b'data: {"type": "ping"}\n\n'
    b"event: content_block_delta\n"
    b'data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta",'
    b'"partial_json":"{\\"city\\": \\"Z\\u00fcrich \xe2\x98\x80\xef\xb8\x8f\\"}"}}\n\n'
    b"event: content_block_stop\n"
    b'data: {"type":"content_block_stop","index":0           }\n\n'
    b"event: message_stop\n"
    b'data: {"type":"message_stop"           }\n\n'
)

OPENAI_STYLE = (
    b'data: {"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,'
    b'"id":"call_1","function":{"name":"f","arguments":""}}]}}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,'
    b'"function":{"arguments":"{\\"q\\": \\"\xf0\x9f\x98\x80\\"}"}}]}}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n'
    b"data: [DONE]\n\n"
)


def test_anthropic_style_stream_fed_byte_by_byte_matches_whole() -> None:
    whole = events_of(ANTHROPIC_STYLE)
    assert [e.event for e in whole] == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_stop",
        "message_stop",
    ]
    assert "\\u00fcrich ☀️" in whole[3].data  # the sun is raw UTF-8, split by bytewise
    events, decoder = feed_pieces(bytewise(ANTHROPIC_STYLE))
    assert events == whole
    assert not decoder.incomplete


def test_openai_style_stream_fed_byte_by_byte_matches_whole() -> None:
    whole = events_of(OPENAI_STYLE)
    assert len(whole) == 4
    assert all(e.event is None for e in whole)
    assert whole[-1] == SSEEvent("[DONE]")
    assert "😀" in whole[1].data
    events, decoder = feed_pieces(bytewise(OPENAI_STYLE.replace(b"\n", b"\r\n")))
    assert events == whole
    assert not decoder.incomplete


def test_one_long_line_fed_one_byte_at_a_time_completes() -> None:
    # Structural guard for O(len(chunk)) feeds: a decoder that rescanned its whole buffer per
    # feed would do ~2e8 character steps here; no timing is asserted.
    payload = b"x" * 20_000
    decoder = SSEDecoder()
    body = b"data: " + payload + b"\n\n"
    events: list[SSEEvent] = []
    for piece in bytewise(body):
        events.extend(decoder.feed(piece))
    assert events == [SSEEvent(payload.decode())]
    assert decoder.bytes_fed == len(body)


# --- property: any split gives the same events ---------------------------------------------------

_SPECIAL = "é€ü中😀🎉\U0001f9d1\u200d\U0001f4bb\u2028\x85\x00:\t "
_text_char = st.one_of(
    st.characters(codec="utf-8", exclude_characters="\r\n"),
    st.sampled_from(_SPECIAL),
)
_line = st.text(_text_char, max_size=12)
_no_nul_line = st.text(_text_char.filter(lambda c: c != "\x00"), max_size=8)


@dataclass(frozen=True)
class Spec:
    data: str
    event: str | None
    id: str | None
    comment: str | None


_specs = st.lists(
    st.builds(
        Spec,
        data=st.lists(_line, min_size=1, max_size=4).map("\n".join),
        event=st.none() | _line,
        id=st.none() | _no_nul_line,
        comment=st.none() | _line,
    ),
    max_size=6,
)


def serialize(specs: list[Spec], eol: str) -> bytes:
    lines: list[str] = []
    for spec in specs:
        if spec.comment is not None:
            lines.append(":" + spec.comment)
        if spec.event is not None:
            lines.append("event: " + spec.event)
        if spec.id is not None:
            lines.append("id: " + spec.id)
        lines.extend("data: " + line for line in spec.data.split("\n"))
        lines.append("")
    return "".join(line + eol for line in lines).encode()


def expected_events(specs: list[Spec]) -> list[SSEEvent]:
    events: list[SSEEvent] = []
    last_id: str | None = None
    for spec in specs:
        last_id = spec.id if spec.id is not None else last_id
        events.append(SSEEvent(spec.data, spec.event, last_id))
    return events


def split_at(body: bytes, cuts: list[int]) -> list[bytes]:
    bounds = [0, *sorted(set(cuts)), len(body)]
    return [body[a:b] for a, b in pairwise(bounds)]


@settings(max_examples=300)
@given(specs=_specs, eol=st.sampled_from(["\n", "\r\n", "\r"]), bom=st.booleans(), data=st.data())
def test_feeding_random_pieces_gives_the_same_events_as_feeding_the_whole(
    specs: list[Spec], eol: str, bom: bool, data: st.DataObject
) -> None:
    body = (b"\xef\xbb\xbf" if bom else b"") + serialize(specs, eol)
    cuts = data.draw(st.lists(st.integers(0, len(body)), max_size=len(body)))
    whole, whole_decoder = feed_pieces([body])
    assert whole == expected_events(specs)
    assert whole_decoder.comments == sum(s.comment is not None for s in specs)
    assert not whole_decoder.incomplete
    for pieces in (split_at(body, cuts), bytewise(body)):
        events, decoder = feed_pieces(pieces)
        assert events == whole
        assert (decoder.comments, decoder.incomplete) == (whole_decoder.comments, False)
        assert decoder.bytes_fed == len(body)


@pytest.mark.parametrize(
    ("value", "retry"),
    [("9" * 18, int("9" * 18)), ("0000" + "9" * 18, int("9" * 18)), ("9" * 19, None)],
)
def test_a_retry_of_more_than_18_digits_is_ignored(value: str, retry: int | None) -> None:
    [event] = decode_all(f"retry: {value}\ndata: x\n\n".encode())[0]
    assert event.retry == retry


def test_a_stream_holding_half_a_character_would_end_incomplete() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"\xc3") == [] and decoder.incomplete
    assert decoder.feed(b"\xa9\n\n") == [] and not decoder.incomplete


def test_a_bom_that_starts_a_later_feed_is_kept_as_text() -> None:
    events, _ = feed_pieces([b"data: a", "\ufeffb\n\n".encode()])
    assert events == [SSEEvent("a\ufeffb")]


class _StepByStep(SSEDecoder):
    """The decoder with all text read a line at a time by the regular expression, as text
    that holds a CR is."""

    def _split_lf_lines(self, text: str) -> list[SSEEvent]:
        return self._split_lines(text, 0)


_LF_LINES = [
    "data: x",
    "data:y",
    "data:  z",
    "data",
    "data:",
    ":c",
    "event: e",
    "event:",
    "id: 1",
    "id:",
    "retry: 5",
    "retry: x",
    "x",
    " é",
    'data: {"a": 1}',
]
#: Lines, each followed by its LF, then up to two blank lines.
_LF_BLOCKS = st.lists(
    st.tuples(st.lists(st.sampled_from(_LF_LINES), max_size=3), st.integers(0, 2)), max_size=12
)


@settings(max_examples=500)
@given(blocks=_LF_BLOCKS, end=st.sampled_from(["", "data: w"]), data=st.data())
def test_lf_only_text_gives_what_reading_it_a_line_at_a_time_gives(
    blocks: list[tuple[list[str], int]], end: str, data: st.DataObject
) -> None:
    """Any LF-only text, cut anywhere: the events of each feed, the comments counted and
    whether the stream ends incomplete are those of the step-by-step reading."""
    body = (
        "".join("".join(line + "\n" for line in lines) + "\n" * blanks for lines, blanks in blocks)
        + end
    ).encode()
    pieces = split_at(body, data.draw(st.lists(st.integers(0, len(body)), max_size=8)))
    fast, step = SSEDecoder(), _StepByStep()
    for piece in pieces:
        assert fast.feed(piece) == step.feed(piece)
    assert (fast.comments, fast.incomplete) == (step.comments, step.incomplete)


def test_a_whole_body_that_ends_inside_a_utf8_sequence_is_refused_where_it_ends() -> None:
    """``decode_all`` closes the decoder: the cut sequence at the end is an error at its first
    byte, not a body read whole."""
    with pytest.raises(SSEError) as refused:
        decode_all(b"data: {}\n\ndata: \xc3")
    assert refused.value.offset == 16
    assert decode_all(b"data: {}\n\ndata: x") == ([SSEEvent("{}")], True)


def test_a_cr_s_lf_is_skipped_once_and_the_next_lf_ends_the_event() -> None:
    decoder = SSEDecoder()
    events = [
        e for chunk in (b"data: a\r", b"\n", b"\n", b"data: b\n\n") for e in decoder.feed(chunk)
    ]
    assert [event.data for event in events] == ["a", "b"]
