"""Argument-fragment events written from a template (``callgate.redact.fragment_lines``) are
held to the general path: the same redacted events, lines and fixture, in every argument mode,
over chunks changed in the places that decide and written as JSON text in different ways."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from callgate.integrations.enforce.tap import unpack_body
from callgate.reassemble import check, fragment_templates
from callgate.reassemble.envelope import one_line_events
from callgate.reassemble.fragment_templates import _ARGUMENTS as ARGUMENTS
from callgate.reassemble.fragment_templates import MARK, MOST_UNMATCHED
from callgate.reassemble.framing import SSE
from callgate.reassemble.profiles import PROFILES, framed
from callgate.reassemble.profiles.openai import fragment_site
from callgate.reassemble.readers import event_reader, event_value, template_reader
from callgate.redact import ArgumentMode, redact_exchange
from callgate.redact.fragment_lines import FragmentLines
from callgate.redact.policy import recorded_envelope
from callgate.redact.stream import redacted_copy
from tests.test_engine import chunk as chat_chunk
from tests.test_engine import entry
from tests.test_live_verdict import exchange_of
from tests.test_redact_fragments import _CHANGED, _TEXTS, _stream

#: Ways a provider writes an event's JSON text: separators, and non-ASCII escaped or not.
_WRITINGS = st.tuples(st.sampled_from([(",", ":"), (", ", ": "), (",", " :\t")]), st.booleans())


def _texts(events: list[Any], writings: list[tuple[tuple[str, str], bool]]) -> list[str]:
    return [
        json.dumps(event, separators=separators, ensure_ascii=ascii_only)
        for event, (separators, ascii_only) in zip(events, writings, strict=True)
    ]


def _both_ways(
    events: list[Any], texts: list[str], mode: ArgumentMode, keep_text: bool
) -> tuple[dict[str, Any], dict[str, Any], FragmentLines]:
    """The stream redacted from its values, and from its texts as the proxy's writer reads
    them (the events with a template not parsed)."""
    envelope = {"profile": "openai", "tool_schemas": {}, "chunks": events}
    general = redacted_copy(envelope, mode, owned=False, keep_text=keep_text)
    lines = FragmentLines(fragment_site)
    parsed = {**envelope, "chunks": lines.parse(texts)}
    templated = redacted_copy(parsed, mode, owned=True, keep_text=keep_text, lines=lines)
    return general, templated, lines


@settings(max_examples=500, deadline=None)
@given(
    changes=_CHANGED,
    texts=_TEXTS,
    repeats=st.integers(1, 4),
    data=st.data(),
    mode=st.sampled_from(ArgumentMode),
    keep_text=st.booleans(),
)
def test_a_stream_is_redacted_from_templates_as_without_them(
    changes: list[list[Any]],
    texts: list[str],
    repeats: int,
    data: st.DataObject,
    mode: ArgumentMode,
    keep_text: bool,
) -> None:
    events = _stream(changes * repeats, texts)
    writings = data.draw(st.lists(_WRITINGS, min_size=len(events), max_size=len(events)))
    general, templated, lines = _both_ways(events, _texts(events, writings), mode, keep_text)
    assert json.dumps(templated) == json.dumps(general)
    assert lines.lines == one_line_events(general["chunks"])


def _turn(fragments: int, **top: Any) -> list[Any]:
    """Two calls started, then ``fragments`` argument chunks taking turns, then the end."""
    pieces = ['{"v": [', *[f'"{n}", ' for n in range(fragments - 2)], '"0"]}']
    head = {"id": "chatcmpl-1", "model": "m", **top}  # before the choices, as providers write
    return [
        {**head, **chat_chunk(entry(0, "", "call_1", "f"))},
        {**head, **chat_chunk(entry(1, "", "call_2", "f"))},
        *({**head, **chat_chunk(entry(n % 2, piece))} for n, piece in enumerate(pieces * 2)),
        {**head, **chat_chunk(finish="tool_calls")},
    ]


def _fixture_both_ways(
    events: list[Any], texts: list[str] | None = None
) -> tuple[tuple[bytes, Any], tuple[bytes, Any], int]:
    """The fixture and report redacted from the recorded body, and from the events and their
    texts as the proxy hands them over; and how many events were written from a template."""
    envelope = {"profile": "openai", "tool_schemas": {}, "chunks": events}
    body = b"".join(framed(envelope, SSE))
    exchange = exchange_of(body, b"{}", SSE)
    recorded = redact_exchange(exchange, profile="openai")
    verdict = check(recorded_envelope(exchange, profile="openai"))
    packed = (texts or _texts_of(events), SSE, True, False)
    lines = FragmentLines(fragment_site)
    templated = redact_exchange(
        exchange, profile="openai", verdict=verdict, body=unpack_body(packed, lines), lines=lines
    )
    return (
        (recorded.data, recorded.report),
        (templated.data, templated.report),
        lines.from_templates,
    )


def _texts_of(events: list[Any]) -> list[str]:
    return [json.dumps(event) for event in events]


def test_every_fragment_of_a_long_turn_after_each_calls_first_is_written_from_a_template() -> None:
    events = _turn(200)
    recorded, templated, from_templates = _fixture_both_ways(events)
    assert templated == recorded
    # Of the 400 fragments, each call's first (and its start, whose entry holds an id) is not.
    assert from_templates == 398


def test_a_fragment_whose_text_holds_arguments_elsewhere_is_written_alone() -> None:
    """A member named so that ``"arguments":`` stands before the real one, and an id equal to
    an argument text: the split is proved at the argument string, or no template is learnt."""
    named = _turn(20, **{'x"arguments': "v"})
    recorded, templated, from_templates = _fixture_both_ways(named)
    assert (templated, from_templates) == (recorded, 0)
    same_id = _turn(20, id='"0", ')
    recorded, templated, from_templates = _fixture_both_ways(same_id)
    assert (templated, from_templates) == (recorded, 38)


def test_a_model_named_like_the_mark_is_written_event_by_event_with_the_same_bytes() -> None:
    events = _turn(20, model=MARK)
    recorded, templated, from_templates = _fixture_both_ways(events)
    assert (templated, from_templates) == (recorded, 38)


@pytest.mark.parametrize("mode", list(ArgumentMode))
def test_events_that_differ_outside_their_arguments_stop_being_matched_at_the_bound(
    mode: ArgumentMode, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each event carrying padding of its own (as OpenAI's ``obfuscation`` member does): no
    event matches another, and past the bound no text is split, in the writer or in the tap."""
    events = [{**event, "obfuscation": "p" * number} for number, event in enumerate(_turn(100), 1)]
    splits: list[str] = []

    class Counted:
        def search(self, text: str) -> Any:
            splits.append(text)
            return ARGUMENTS.search(text)

    monkeypatch.setattr(fragment_templates, "_ARGUMENTS", Counted())
    texts = _texts_of(events)
    general, templated, lines = _both_ways(events, texts, mode, keep_text=False)
    assert json.dumps(templated) == json.dumps(general)
    # The bound's texts split, none matched; all but the two calls' starts taught a template.
    assert (lines.from_templates, lines.learnt, len(splits)) == (0, MOST_UNMATCHED - 2, 32)
    read = template_reader(event_reader(PROFILES["openai"].names_proof), fragment_site)
    assert [read(text) for text in texts] == [event_value(text) for text in texts]
    assert len(splits) == 2 * MOST_UNMATCHED


# -- the tap's reading: fragments built from a template, not parsed ----------------------------

#: Argument texts a template must not build: non-ASCII, a surrogate escape (lone or paired),
#: and ones that are plain.
_ODD_TEXTS = st.sampled_from(["é", "\\ud800", "\\ud83d\\ude00", "\ud83d\ude00", "ok", ""])


@settings(max_examples=300, deadline=None)
@given(
    changes=_CHANGED,
    texts=st.lists(st.one_of(st.sampled_from(['{"v": "a', "1, "]), _ODD_TEXTS), min_size=1),
    repeats=st.integers(1, 4),
    data=st.data(),
)
def test_the_tap_reads_each_event_from_a_template_as_the_strict_parse_does(
    changes: list[list[Any]], texts: list[str], repeats: int, data: st.DataObject
) -> None:
    """Values equal to the strict parse's for every event (refused ones stay their text),
    written in different ways; argument texts that escape surrogates (an escape in the
    arguments string is ``\\\\u``, in its text ``\\u``) or are not ASCII are parsed."""
    events = _stream(changes * repeats, texts)
    writings = data.draw(st.lists(_WRITINGS, min_size=len(events), max_size=len(events)))
    written = _texts(events, writings)
    # Arguments written with a raw escape: "\\ud800" in the text is the escape itself.
    written = [text.replace("\\\\u", "\\u") for text in written]
    read = template_reader(event_reader(PROFILES["openai"].names_proof), fragment_site)
    assert [read(text) for text in written] == [event_value(text) for text in written]


def test_a_long_turns_fragments_are_built_in_the_tap_without_a_parse() -> None:
    events = _turn(200)
    parsed: list[str] = []
    strict = event_reader(PROFILES["openai"].names_proof)

    def counted(text: str) -> object:
        parsed.append(text)
        return strict(text)

    read = template_reader(counted, fragment_site)
    texts = _texts_of(events)
    assert [read(text) for text in texts] == [event_value(text) for text in texts]
    # The two calls' starts, each call's first fragment and the end.
    assert len(parsed) == 5


def test_a_fragment_with_a_raw_control_character_is_refused_in_the_tap_as_recorded() -> None:
    events = _turn(20)
    texts = _texts_of(events)
    texts[10] = texts[10].replace('"arguments": "', '"arguments": "\n', 1)
    read = template_reader(event_reader(PROFILES["openai"].names_proof), fragment_site)
    assert [read(text) for text in texts] == [event_value(text) for text in texts]
    assert read(texts[10]) == texts[10]  # refused: the text itself


def test_a_profile_without_fragment_events_parses_every_text_and_learns_nothing() -> None:
    lines = FragmentLines(None)
    assert lines.parse(['{"a": 1}', '"text"']) == [{"a": 1}, "text"]
    assert (lines.learnt, lines.from_templates) == (0, 0)
