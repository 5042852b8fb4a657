"""The envelope check: the direct reading of ``ENVELOPE_SCHEMA`` agrees with jsonschema on every
document, valid or not, and a bad envelope is one line naming where it is wrong."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from callgate.reassemble.encoder_pieces import encoder_pieces
from callgate.reassemble.envelope import (
    _ONE_LINE,
    EnvelopeError,
    _plainly_valid,
    _validator,
    one_line_events,
    validate_envelope,
)
from callgate.reassemble.profiles import PROFILES
from tests.conftest import conformance_fixtures, load

ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2) | st.text(max_size=4),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=6,
)
#: Values for each field: mostly right, sometimes of another type, close to the boundary.
FIELDS: dict[str, Any] = {
    "profile": st.sampled_from([*PROFILES, "acme-chat", ""]) | ANY_JSON,
    "envelope_version": st.sampled_from([1, 1.0, 2, True, "1", 0]),
    "description": st.text(max_size=4) | ANY_JSON,
    "provider": st.text(max_size=4) | ANY_JSON,
    "tool_schemas": st.dictionaries(
        st.text(max_size=3), st.booleans() | st.just({}) | ANY_JSON, max_size=3
    )
    | ANY_JSON,
    "request": st.just({}) | ANY_JSON,
    "chunks": st.lists(ANY_JSON, max_size=2) | ANY_JSON,
    "events": st.lists(ANY_JSON, max_size=2) | ANY_JSON,
    "meta": st.just({"k": 1}) | ANY_JSON,
    "expect": st.builds(
        lambda valid, key, value: {**valid, key: value} if key else valid,
        st.fixed_dictionaries(
            {"status": st.sampled_from(["pass", "fail"])},
            optional={
                "codes": st.just(["a", "b"]),
                "calls": st.just([{"id": None, "name": "f", "arguments": "{}"}]),
            },
        ),
        st.sampled_from(["", "status", "codes", "calls", "other"]),
        st.sampled_from(
            [
                "ok",
                1,
                None,
                ["a", "a"],
                ["a", 1],
                [{}],
                [],
                "a",
                [{"id": 1, "name": "f", "arguments": "{}"}],
                [{"id": None, "name": "f"}],
                [{"id": None, "name": "f", "arguments": None, "extra": 1}],
            ]
        ),
    )
    | ANY_JSON,
    "unknown_key": ANY_JSON,
}
VALID_FIELDS: dict[str, Any] = {
    "envelope_version": st.sampled_from([1, 1.0]),
    "description": st.text(max_size=4),
    "provider": st.text(max_size=4),
    "tool_schemas": st.dictionaries(st.text(max_size=3), st.booleans() | st.just({}), max_size=3),
    "request": st.just({"n": 1}),
    "meta": st.just({}),
    "expect": st.fixed_dictionaries(
        {"status": st.sampled_from(["pass", "fail", "invalid", "not_applicable"])},
        optional={
            "codes": st.lists(st.sampled_from(["a", "b"]), unique=True, max_size=2),
            "calls": st.lists(
                st.fixed_dictionaries(
                    {
                        "id": st.none() | st.text(max_size=2),
                        "name": st.none() | st.text(max_size=2),
                        "arguments": st.none() | st.text(max_size=2),
                    }
                ),
                max_size=2,
            ),
        },
    ),
}


@st.composite
def documents(draw: st.DrawFn) -> object:
    """A valid envelope, then perhaps one field set to anything (often still valid, often
    just wrong), perhaps a required key taken away; now and then any JSON at all."""
    if draw(st.integers(0, 9)) == 0:
        return draw(ANY_JSON)
    profile = draw(st.sampled_from(sorted(PROFILES)))
    document = {
        "profile": profile,
        PROFILES[profile].stream_key: draw(st.lists(ANY_JSON, max_size=2)),
    }
    document.update(draw(st.fixed_dictionaries({}, optional=VALID_FIELDS)))
    if draw(st.booleans()):
        key = draw(st.sampled_from(sorted(FIELDS)))
        document[key] = draw(FIELDS[key])
    if draw(st.integers(0, 5)) == 0:
        document.pop(draw(st.sampled_from(sorted(document))))
    return document


@pytest.mark.sweep
@settings(max_examples=2000, deadline=None)
@given(documents())
def test_the_direct_reading_agrees_with_jsonschema(document: object) -> None:
    assert _plainly_valid(document) == _validator().is_valid(document)


_EVENT_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()  # NaN and the infinities too, as allow_nan writes them
    | st.text(),  # lone surrogates, control characters, non-ASCII
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(), children, max_size=3)
    ),
    max_leaves=12,
)


@pytest.mark.sweep
@settings(max_examples=1000, deadline=None)
@given(st.lists(_EVENT_VALUES, max_size=4))
def test_events_are_written_on_one_line_as_the_encoder_writes_each(values: list[Any]) -> None:
    assert one_line_events(values) == [_ONE_LINE(value) for value in values]


def test_every_bundled_fixture_is_read_directly() -> None:
    assert all(_plainly_valid(load(path)) for path in conformance_fixtures())


@pytest.mark.parametrize(
    ("document", "line"),
    [
        (
            {"profile": "openai"},
            "not a callgate envelope: at (root): 'chunks' is a required property",
        ),
        (
            {"profile": "openai", "chunks": [], "envelope_version": True},
            "not a callgate envelope: at /envelope_version: 1 was expected",
        ),
        (
            {"profile": "openai", "chunks": [], "expect": {"status": "pass", "codes": ["a", "a"]}},
            "not a callgate envelope: at /expect/codes: ['a', 'a'] has non-unique elements",
        ),
    ],
)
def test_a_bad_envelope_is_one_line_naming_where(document: object, line: str) -> None:
    with pytest.raises(EnvelopeError) as raised:
        validate_envelope(document)
    assert str(raised.value) == line


BASE = {"profile": "openai", "chunks": []}
CORNERS = [
    BASE,
    {**BASE, "envelope_version": 1.0},
    {**BASE, "envelope_version": True},
    {**BASE, "envelope_version": 2},
    {"profile": "anthropic", "chunks": []},
    {**BASE, "profile": "acme-chat"},
    {**BASE, "tool_schemas": {"f": True, "g": {}}},
    {**BASE, "tool_schemas": {"f": 1}},
    {**BASE, "tool_schemas": []},
    {**BASE, "other": 1},
    *(
        {**BASE, "expect": expect}
        for expect in [
            {"status": "pass"},
            {"status": "ok"},
            {"status": "pass", "codes": ["a", "a"]},
            {"status": "pass", "codes": ["a", 1]},
            {"status": "pass", "codes": "a"},
            {"status": "pass", "codes": [["a"], ["a"]]},
            {"status": "pass", "calls": [{"id": None, "name": "f", "arguments": "{}"}]},
            {"status": "pass", "calls": [{"id": 1, "name": "f", "arguments": "{}"}]},
            {"status": "pass", "calls": [{"id": None, "name": "f"}]},
            {"status": "pass", "calls": [{"id": None, "name": "f", "arguments": "", "x": 1}]},
            {"status": "pass", "other": 1},
            {"codes": []},
            "pass",
        ]
    ),
]


@pytest.mark.parametrize("document", CORNERS)
def test_the_direct_reading_agrees_with_jsonschema_at_each_corner(document: object) -> None:
    assert _plainly_valid(document) == _validator().is_valid(document)


@pytest.mark.parametrize("length", [200, 201])
def test_the_schema_message_is_kept_whole_up_to_200_characters_and_clipped_after(
    length: int,
) -> None:
    tail = " is not one of ['anthropic', 'bedrock-converse', 'cohere', 'gemini', 'gemini-live', "
    tail += "'mistral', 'ollama', 'openai', 'openai-realtime', 'openai-responses']"
    profile = "p" * (length - len(tail) - 2)  # repr adds the quotes
    message = f"{profile!r}{tail}"
    assert len(message) == length
    with pytest.raises(EnvelopeError) as raised:
        validate_envelope({"envelope_version": 1, "profile": profile, "chunks": []})
    shown = message if length <= 200 else message[:200] + "..."
    assert str(raised.value) == f"not a callgate envelope: at /profile: {shown}"


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(
    value=_JSON_VALUES,
    ascii_only=st.booleans(),
    compact=st.booleans(),
    indent=st.sampled_from([None, 2]),
)
def test_an_encoders_pieces_joined_are_what_it_encodes(
    value: object, ascii_only: bool, compact: bool, indent: int | None
) -> None:
    """By the C encoder built once for a one-line encoder, by ``encode`` itself for one that
    indents: the same text either way."""
    separators = (",", ":") if compact else None
    encoder = json.JSONEncoder(
        ensure_ascii=ascii_only, separators=separators, indent=indent, check_circular=False
    )
    assert "".join(encoder_pieces(encoder)(value, 0)) == encoder.encode(value)


def test_only_a_one_line_encoder_that_looks_for_no_cycle_gets_the_c_encoder() -> None:
    one_line = encoder_pieces(json.JSONEncoder(check_circular=False))
    assert type(one_line).__name__ == "Encoder"  # json's C encoder type
    for other in (json.JSONEncoder(indent=2, check_circular=False), json.JSONEncoder()):
        assert type(encoder_pieces(other)).__name__ == "function"
