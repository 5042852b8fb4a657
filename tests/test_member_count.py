"""Member names proven from the text: the counted path gives what the hooked path gives."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from callgate.reassemble import strict_json
from callgate.reassemble.codes import Code
from callgate.reassemble.limits import DOCUMENT_LIMITS, Limits
from callgate.reassemble.strict_json import StrictJSONError, loads


@contextmanager
def tally_held() -> Iterator[None]:
    """As while another thread's parse holds the tally: every parse takes the hooked scan."""
    taken = strict_json._TALLY.pop(strict_json._FREE)
    try:
        yield
    finally:
        strict_json._TALLY[strict_json._FREE] = taken


def outcome(text: str, limits: Limits) -> tuple[str, Any]:
    try:
        return ("value", loads(text, limits))
    except StrictJSONError as error:
        return ("error", (error.code, error.message, error.position))


def proven(text: str) -> bool:
    """Whether the counted path alone accepts ``text`` (no read again with the hook)."""
    return strict_json._tallied(text, 0, strict_json._DEFAULT_READER, True) is not None


#: Name and string contents as written in JSON text: colons, escaped quotes and backslashes,
#: a name equal to another only once its escape is decoded.
PIECES = ["a", "b", ":", ": ", '\\"', '\\":', "\\\\", '\\\\"', "\\u0061", " ", "x:y", "é"]
STRINGS = st.lists(st.sampled_from(PIECES), max_size=3).map(
    lambda parts: '"' + "".join(parts) + '"'
)
NAMES = st.sampled_from(['"a"', '"b"', '"\\u0061"', '":"', '"\\":"', '""']) | STRINGS
SPACE = st.sampled_from(["", "", " ", "\n", "\t "])
SCALARS = STRINGS | st.sampled_from(["0", "-1.5", "1e400", "true", "null", "12345678901"])


def member(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.builds(lambda n, a, b, v: f"{n}{a}:{b}{v}", NAMES, SPACE, SPACE, children)


DOCUMENTS = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=4).map(lambda items: "[" + ",".join(items) + "]")
        | st.lists(member(children), max_size=4).map(lambda items: "{" + ",".join(items) + "}")
    ),
    max_leaves=12,
)


@pytest.mark.sweep
@settings(max_examples=1500, deadline=None)
@given(
    document=DOCUMENTS,
    before=SPACE,
    after=st.sampled_from(["", " ", " :", ',"a":1', "}"]),
    limits=st.sampled_from([strict_json.DEFAULT_LIMITS, DOCUMENT_LIMITS, Limits(max_depth=3)]),
)
def test_the_counted_path_gives_the_hooked_paths_value_or_error(
    document: str, before: str, after: str, limits: Limits
) -> None:
    text = before + document + after
    counted = outcome(text, limits)
    with tally_held():
        hooked = outcome(text, limits)
    assert counted == hooked


@settings(max_examples=300, deadline=None)
@given(document=DOCUMENTS, padding=st.integers(0, 700))
def test_a_long_text_takes_the_counted_path_and_gives_the_same(document: str, padding: int) -> None:
    # Past 640 characters ``loads`` hands the text to ``_decode``, which counts there too.
    text = "[" + document + "," + '"' + "p" * padding + '"]'
    counted = outcome(text, DOCUMENT_LIMITS)
    with tally_held():
        assert counted == outcome(text, DOCUMENT_LIMITS)


@pytest.mark.parametrize(
    "text",
    [
        '{"id": "c", "choices": [{"index": 0, "delta": {"content": "a"}}]}',
        '{"arguments": "{\\"city\\": \\"Paris\\"}", "note": "at 10:30"}',
        '{"a\\\\": 1, "b": "\\\\\\":"}',
        '{"": {}, "x": [{"y": null}]}',
    ],
)
def test_texts_without_a_repeated_name_are_proven_by_counting(text: str) -> None:
    assert proven(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "a": 2}',
        '{"a": "x:", "a": 2}',
        '{"a": "\\":", "b": {"c": 1, "c": 1}}',
        '{"a": 1, "\\u0061": 2, "b": ":"}',
    ],
)
def test_a_repeated_name_is_never_proven_whatever_colons_the_strings_hold(text: str) -> None:
    assert not proven(text)
    assert outcome(text, strict_json.DEFAULT_LIMITS)[1][0] == Code.DUPLICATE_KEY


@pytest.mark.parametrize(
    "text",
    [
        # Argument fragments that start with a colon, right after their name.
        '{"delta":{"partial_json":": \\"US"}}',
        '{"partial_json": ": 3}", "b": {"c": ":"}}',
    ],
)
def test_a_string_that_starts_with_a_colon_after_a_name_is_proven(text: str) -> None:
    assert proven(text)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        # Whitespace before the colon: the name's quote does not stand just before it.
        ('{"a" : "x:"}', {"a": "x:"}),
        ('{"a"\n: "x:"}', {"a": "x:"}),
        ('{"a"\t: "x:"}', {"a": "x:"}),
        ('{"a"\r: "x:"}', {"a": "x:"}),
        # A string that starts with a colon, not right after a name.
        ('{"a": [":b"]}', {"a": [":b"]}),
    ],
)
def test_texts_the_count_cannot_decide_are_read_again_with_the_hook(
    text: str, value: dict[str, Any]
) -> None:
    assert not proven(text)
    assert loads(text) == value


@pytest.mark.parametrize(
    "text",
    [
        '{"a": ":b", "a": 1}',
        '{"a":":b","a":":"}',
        '{":":":", ":":1}',
        '{"a" : "x:", "a" : 1}',
        '[{"a": 1}, {"b": ": ", "b": ":"}]',
        # Whitespace before one colon: the other name's quote alone would make the count.
        '{"a"\n: 1, "a": 2}',
        '{"a"\t: 1, "a": 2}',
        '{"a"\r: 1, "a": 2}',
    ],
)
def test_a_repeated_name_beside_a_string_that_starts_with_a_colon_is_not_proven(
    text: str,
) -> None:
    assert not proven(text)
    assert outcome(text, strict_json.DEFAULT_LIMITS)[1][0] == Code.DUPLICATE_KEY


def test_a_parse_that_finds_the_tally_held_still_refuses_a_repeated_name() -> None:
    with tally_held():
        with pytest.raises(StrictJSONError) as caught:
            loads('{"a": 1, "a": 2}')
        assert loads('{"a": {"b": 1}}') == {"a": {"b": 1}}
    assert caught.value.code == Code.DUPLICATE_KEY
    assert strict_json._TALLY == {strict_json._FREE: True}


def test_a_failed_scan_leaves_the_tally_free_and_empty() -> None:
    for text in ['{"a": 1,', '{"a": NaN}', "[" * 100_000, '{"a": 1} x']:
        with pytest.raises(StrictJSONError):
            loads(text)
        assert strict_json._TALLY == {strict_json._FREE: True}
        assert strict_json._DEFAULT_READER.sizes == []
