"""Strict RFC 8259 parsing: the JSON parsing test suite, exact codes per rule, and properties."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from callgate.reassemble import strict_json
from callgate.reassemble.codes import Code
from callgate.reassemble.limits import DOCUMENT_LIMITS, Limits
from callgate.reassemble.strict_json import StrictJSONError, loads, loads_bytes
from tests.conftest import CORPUS_ABSENT, SHARED_CORPUS, require_corpus

#: nst/JSONTestSuite's test_parsing folder, in the shared corpus beside the repository.
SUITE = SHARED_CORPUS / "jsontestsuite" / "test_parsing"

#: The codes strict parsing may raise; fuzzed input must never raise anything else.
ARGUMENT_CODES = {
    Code.INVALID_ARGUMENTS_JSON,
    Code.TRAILING_DATA,
    Code.NON_FINITE_NUMBER,
    Code.DUPLICATE_KEY,
    Code.INVALID_UNICODE,
    Code.LIMIT_EXCEEDED,
}

#: n_ files refused with a more precise code than invalid_arguments_json (every other n_ file
#: gets that one): trailing data, bad UTF-8, NaN/Infinity, and nesting past the depth limit.
N_OUTCOMES: dict[str, Code] = {
    "n_array_a_invalid_utf8.json": Code.INVALID_UNICODE,
    "n_array_comma_after_close.json": Code.TRAILING_DATA,
    "n_array_extra_close.json": Code.TRAILING_DATA,
    "n_array_invalid_utf8.json": Code.INVALID_UNICODE,
    "n_multidigit_number_then_00.json": Code.TRAILING_DATA,
    "n_number_NaN.json": Code.NON_FINITE_NUMBER,
    "n_number_infinity.json": Code.NON_FINITE_NUMBER,
    "n_number_invalid-utf-8-in-bigger-int.json": Code.INVALID_UNICODE,
    "n_number_invalid-utf-8-in-exponent.json": Code.INVALID_UNICODE,
    "n_number_invalid-utf-8-in-int.json": Code.INVALID_UNICODE,
    "n_number_minus_infinity.json": Code.NON_FINITE_NUMBER,
    "n_number_real_with_invalid_utf8_after_e.json": Code.INVALID_UNICODE,
    "n_object_lone_continuation_byte_in_key_and_trailing_comma.json": Code.INVALID_UNICODE,
    "n_object_trailing_comment.json": Code.TRAILING_DATA,
    "n_object_trailing_comment_open.json": Code.TRAILING_DATA,
    "n_object_trailing_comment_slash_open.json": Code.TRAILING_DATA,
    "n_object_trailing_comment_slash_open_incomplete.json": Code.TRAILING_DATA,
    "n_object_with_trailing_garbage.json": Code.TRAILING_DATA,
    "n_string_invalid-utf-8-in-escape.json": Code.INVALID_UNICODE,
    "n_string_invalid_utf8_after_escape.json": Code.INVALID_UNICODE,
    "n_string_with_trailing_garbage.json": Code.TRAILING_DATA,
    "n_structure_100000_opening_arrays.json": Code.LIMIT_EXCEEDED,
    "n_structure_array_trailing_garbage.json": Code.TRAILING_DATA,
    "n_structure_array_with_extra_array_close.json": Code.TRAILING_DATA,
    "n_structure_close_unopened_array.json": Code.TRAILING_DATA,
    "n_structure_double_array.json": Code.TRAILING_DATA,
    "n_structure_incomplete_UTF8_BOM.json": Code.INVALID_UNICODE,
    "n_structure_lone-invalid-utf-8.json": Code.INVALID_UNICODE,
    "n_structure_number_with_trailing_garbage.json": Code.TRAILING_DATA,
    "n_structure_object_followed_by_closing_object.json": Code.TRAILING_DATA,
    "n_structure_object_with_trailing_garbage.json": Code.TRAILING_DATA,
    "n_structure_open_array_object.json": Code.LIMIT_EXCEEDED,
    "n_structure_single_eacute.json": Code.INVALID_UNICODE,
    "n_structure_trailing_#.json": Code.TRAILING_DATA,
}

#: y_ files that are valid JSON text but refused by policy.
Y_REJECTED: dict[str, Code] = {
    "y_object_duplicated_key.json": Code.DUPLICATE_KEY,
    "y_object_duplicated_key_and_value.json": Code.DUPLICATE_KEY,
}

ACCEPT = "accept"

#: Every i_ (implementation-defined) file's outcome, decided from its bytes.
I_OUTCOMES: dict[str, Code | str] = {
    # Exponents: overflow to infinity is not a finite number; underflow to 0.0 is fine.
    "i_number_double_huge_neg_exp.json": ACCEPT,
    "i_number_huge_exp.json": Code.NON_FINITE_NUMBER,
    "i_number_neg_int_huge_exp.json": Code.NON_FINITE_NUMBER,
    "i_number_pos_double_huge_exp.json": Code.NON_FINITE_NUMBER,
    "i_number_real_neg_overflow.json": Code.NON_FINITE_NUMBER,
    "i_number_real_pos_overflow.json": Code.NON_FINITE_NUMBER,
    "i_number_real_underflow.json": ACCEPT,
    # Big integers within max_number_chars are exact Python ints.
    "i_number_too_big_neg_int.json": ACCEPT,
    "i_number_too_big_pos_int.json": ACCEPT,
    "i_number_very_big_negative_int.json": ACCEPT,
    # Lone, unpaired or reversed surrogate escapes.
    "i_object_key_lone_2nd_surrogate.json": Code.INVALID_UNICODE,
    "i_string_1st_surrogate_but_2nd_missing.json": Code.INVALID_UNICODE,
    "i_string_1st_valid_surrogate_2nd_invalid.json": Code.INVALID_UNICODE,
    "i_string_incomplete_surrogate_and_escape_valid.json": Code.INVALID_UNICODE,
    "i_string_incomplete_surrogate_pair.json": Code.INVALID_UNICODE,
    "i_string_incomplete_surrogates_escape_valid.json": Code.INVALID_UNICODE,
    "i_string_invalid_lonely_surrogate.json": Code.INVALID_UNICODE,
    "i_string_invalid_surrogate.json": Code.INVALID_UNICODE,
    "i_string_inverted_surrogates_U+1D11E.json": Code.INVALID_UNICODE,
    "i_string_lone_second_surrogate.json": Code.INVALID_UNICODE,
    # Bytes that are not UTF-8: invalid, overlong, truncated, encoded surrogates, Latin-1, UTF-16.
    "i_string_UTF-16LE_with_BOM.json": Code.INVALID_UNICODE,
    "i_string_UTF-8_invalid_sequence.json": Code.INVALID_UNICODE,
    "i_string_UTF8_surrogate_U+D800.json": Code.INVALID_UNICODE,
    "i_string_invalid_utf-8.json": Code.INVALID_UNICODE,
    "i_string_iso_latin_1.json": Code.INVALID_UNICODE,
    "i_string_lone_utf8_continuation_byte.json": Code.INVALID_UNICODE,
    "i_string_not_in_unicode_range.json": Code.INVALID_UNICODE,
    "i_string_overlong_sequence_2_bytes.json": Code.INVALID_UNICODE,
    "i_string_overlong_sequence_6_bytes.json": Code.INVALID_UNICODE,
    "i_string_overlong_sequence_6_bytes_null.json": Code.INVALID_UNICODE,
    "i_string_truncated-utf-8.json": Code.INVALID_UNICODE,
    "i_string_utf16BE_no_BOM.json": Code.INVALID_UNICODE,
    "i_string_utf16LE_no_BOM.json": Code.INVALID_UNICODE,
    # Structure: 500 levels is over the default depth 128; a BOM is not JSON text (RFC 8259 §8.1).
    "i_structure_500_nested_arrays.json": Code.LIMIT_EXCEEDED,
    "i_structure_UTF-8_BOM_empty_object.json": Code.INVALID_ARGUMENTS_JSON,
}


def suite_files(prefix: str) -> list[Any]:
    if not SUITE.is_dir():
        return [
            pytest.param(
                None,
                id=f"{prefix}-suite-absent",
                marks=pytest.mark.skip(reason=CORPUS_ABSENT),
            )
        ]
    return [pytest.param(path, id=path.name) for path in sorted(SUITE.glob(f"{prefix}*.json"))]


def code_of(text: str, limits: Limits | None = None) -> Code:
    with pytest.raises(StrictJSONError) as caught:
        loads(text) if limits is None else loads(text, limits)
    return caught.value.code


def test_the_default_number_limit_is_1000_characters_as_documented() -> None:
    assert loads("[" + "7" * 1000 + "]") == [int("7" * 1000)]
    assert code_of("[" + "7" * 1001 + "]") == Code.LIMIT_EXCEEDED


def test_a_whole_document_may_hold_256_mib_and_not_a_byte_more() -> None:
    # Only the refusal is tried here: reading 256 MiB takes seconds, checking its length not.
    with pytest.raises(StrictJSONError, match="longer than 268435456 bytes"):
        loads(" " * (256 << 20) + "1", DOCUMENT_LIMITS)
    assert loads(" " * (1 << 20) + "1", DOCUMENT_LIMITS) == 1  # over the argument limit


def error_of(text: str, limits: Limits | None = None) -> StrictJSONError:
    with pytest.raises(StrictJSONError) as caught:
        loads(text) if limits is None else loads(text, limits)
    return caught.value


def outcome(data: bytes) -> Code | str:
    try:
        loads_bytes(data)
    except StrictJSONError as error:
        return error.code
    return ACCEPT


# --- Conformance over the JSON parsing test suite -----------------------------------------------


@pytest.mark.corpus
@pytest.mark.parametrize("path", suite_files("y_"))
def test_every_y_file_is_accepted_unless_refused_by_policy(path: Path) -> None:
    assert outcome(path.read_bytes()) == Y_REJECTED.get(path.name, ACCEPT)


@pytest.mark.corpus
@pytest.mark.parametrize("path", suite_files("n_"))
def test_every_n_file_is_rejected_with_its_code(path: Path) -> None:
    assert outcome(path.read_bytes()) == N_OUTCOMES.get(path.name, Code.INVALID_ARGUMENTS_JSON)


@pytest.mark.corpus
@pytest.mark.parametrize("path", suite_files("i_"))
def test_every_i_file_has_its_pinned_outcome(path: Path) -> None:
    assert path.name in I_OUTCOMES, f"{path.name} has no pinned outcome"
    assert outcome(path.read_bytes()) == I_OUTCOMES[path.name]


@pytest.mark.corpus
def test_every_i_file_in_the_suite_has_a_pinned_outcome() -> None:
    names = {path.name for path in require_corpus("jsontestsuite/test_parsing").glob("i_*.json")}
    assert sorted(names - I_OUTCOMES.keys()) == []


@pytest.mark.corpus
def test_every_pinned_name_has_a_file_in_the_suite() -> None:
    names = {path.name for path in require_corpus("jsontestsuite/test_parsing").glob("*.json")}
    assert sorted((I_OUTCOMES.keys() | Y_REJECTED.keys() | N_OUTCOMES.keys()) - names) == []


# --- Numbers ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["NaN", "Infinity", "-Infinity", "[NaN]", '{"a": Infinity}', "[1, -Infinity]"]
)
def test_nan_and_infinity_literals_are_non_finite_numbers(text: str) -> None:
    assert code_of(text) == Code.NON_FINITE_NUMBER


@pytest.mark.parametrize("text", ["1e400", "-1e400", "1E+400", "[0.5e999]", '{"a": -2.5e308}'])
def test_numbers_overflowing_to_infinity_are_non_finite_numbers(text: str) -> None:
    assert code_of(text) == Code.NON_FINITE_NUMBER


def test_a_number_underflowing_to_zero_is_accepted_as_zero() -> None:
    assert loads("1e-400") == 0.0
    negative = loads("-1e-400")
    assert negative == 0.0 and math.copysign(1.0, negative) == -1.0


@pytest.mark.parametrize("value", [2**64 + 1, -(10**300) - 7, 10**999, -(10**998) + 1])
def test_large_integers_round_trip_exactly(value: int) -> None:
    parsed = loads(f'{{"n": {value}}}')["n"]
    assert type(parsed) is int and parsed == value


def test_an_integer_literal_at_max_number_chars_is_accepted() -> None:
    assert loads("1" * 10, Limits(max_number_chars=10)) == int("1" * 10)
    assert loads("-" + "1" * 9, Limits(max_number_chars=10)) == -int("1" * 9)


def test_an_integer_literal_over_max_number_chars_is_limit_exceeded() -> None:
    assert code_of("[" + "1" * 11 + "]", Limits(max_number_chars=10)) == Code.LIMIT_EXCEEDED
    assert code_of("-" + "1" * 10, Limits(max_number_chars=10)) == Code.LIMIT_EXCEEDED


@settings(max_examples=500, deadline=None)
@given(
    limit=st.integers(0, 12),
    extra=st.integers(-2, 2),
    sign=st.booleans(),
    before=st.integers(0, 40),
    after=st.integers(0, 40),
    bare=st.booleans(),
)
def test_an_integer_literal_anywhere_in_a_long_text_is_held_to_max_number_chars(
    limit: int, extra: int, sign: bool, before: int, after: int, bare: bool
) -> None:
    # Texts longer than the limit are looked at only at every limit-th character before the
    # scanner converts integers itself: a literal at any offset must still be caught, the
    # first character of the text included.
    length = max(1, limit + extra)
    literal = ("-" if sign else "") + "7" * (length - sign if length > sign else 1)
    text = literal if bare else "[" + '"x",' * before + literal + ',"y"' * after + "]"
    if len(literal) > limit:
        assert code_of(text, Limits(max_number_chars=limit)) == Code.LIMIT_EXCEEDED
    else:
        value = loads(text, Limits(max_number_chars=limit))
        assert (value if bare else value[before]) == int(literal)


def test_a_float_literal_at_max_number_chars_is_accepted() -> None:
    assert loads("1.25e+100", Limits(max_number_chars=9)) == 1.25e100
    assert loads("-0.000125", Limits(max_number_chars=9)) == -0.000125


def test_a_float_literal_over_max_number_chars_is_limit_exceeded() -> None:
    assert code_of("1.25e+100", Limits(max_number_chars=8)) == Code.LIMIT_EXCEEDED
    assert code_of('{"x": -0.000125}', Limits(max_number_chars=8)) == Code.LIMIT_EXCEEDED


def test_a_5000_digit_integer_with_default_limits_is_limit_exceeded() -> None:
    assert code_of("[" + "7" * 5000 + "]") == Code.LIMIT_EXCEEDED


def test_an_integer_over_the_interpreter_digit_limit_is_limit_exceeded_not_value_error() -> None:
    digit_limit = sys.get_int_max_str_digits()
    if digit_limit == 0:
        pytest.skip("this interpreter converts integers of any length")
    limits = Limits(max_number_chars=digit_limit * 2)
    assert code_of("9" * (digit_limit + 1), limits) == Code.LIMIT_EXCEEDED


# --- Member names -------------------------------------------------------------------------------


def test_duplicate_key_at_depth_three_is_rejected() -> None:
    assert code_of('{"a": {"b": {"c": 1, "d": 2, "c": 3}}}') == Code.DUPLICATE_KEY
    assert code_of('[[{"k": 1, "k": 1}]]') == Code.DUPLICATE_KEY


def test_keys_equal_only_after_escape_decoding_are_duplicates() -> None:
    assert code_of('{"a":1,"\\u0061":2}') == Code.DUPLICATE_KEY
    assert code_of('{"\\/":1,"/":2}') == Code.DUPLICATE_KEY


def test_keys_differing_only_in_case_or_value_are_not_duplicates() -> None:
    assert loads('{"a": 1, "A": 1, "b": {"a": 2}}') == {"a": 1, "A": 1, "b": {"a": 2}}


# --- Unicode ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '{"\\ud800": 1}',
        '{"\\udc00": 1}',
        '{"a": "\\ud800"}',
        '{"a": "x\\udfffy"}',
        '["ok", "\\ud83d"]',
        '["\\ude00"]',
        '"\\ude00\\ud83d"',
        '"\\ud83d\\u0041"',
        '"\\ud83d\\ud83d"',
    ],
    ids=[
        "high-in-key",
        "low-in-key",
        "high-in-value",
        "low-in-value",
        "high-in-array",
        "low-in-array",
        "reversed-pair",
        "high-then-bmp",
        "two-highs",
    ],
)
def test_lone_surrogate_escapes_are_invalid_unicode(text: str) -> None:
    assert code_of(text) == Code.INVALID_UNICODE


def test_a_raw_surrogate_character_in_a_string_is_invalid_unicode() -> None:
    assert code_of('"\ud800"') == Code.INVALID_UNICODE


def test_a_valid_surrogate_pair_escape_is_accepted_as_one_character() -> None:
    assert loads('"\\ud834\\udd1e"') == "\U0001d11e"
    assert loads('{"\\uD83D\\uDE00": "\\uDBFF\\uDFFF"}') == {"\U0001f600": "\U0010ffff"}


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.sampled_from(["\\\\", "\\ud83d", "\\uDE00", "\\u0041", "ud800", "a", "\\n"]), max_size=8
    )
)
def test_a_surrogate_escape_is_seen_only_where_its_backslash_is_not_itself_escaped(
    pieces: list[str],
) -> None:
    # Escaped backslashes before "u" make the rest plain text: the value holds the letters. A
    # real escape leaves a surrogate in the value, or pairs into a character past U+FFFF.
    text = '"' + "".join(pieces) + '"'
    value = json.loads(text)
    assert strict_json._escapes_a_surrogate(text) == any(
        character >= "\ud800" for character in value
    )
    if any("\ud800" <= character <= "\udfff" for character in value):
        assert code_of(text) == Code.INVALID_UNICODE
    else:
        assert loads(text) == value


def test_an_escaped_emoji_in_argument_text_is_plain_text_and_not_walked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A fixture holding argument text with an emoji escape: the document's string holds the
    # six characters "\ud83d", which are no surrogate, and the value needs no walk.
    walked: list[object] = []
    monkeypatch.setattr(strict_json, "_walk", lambda value, limits: walked.append(value))
    text = '{"partial_json": "{\\"mood\\": \\"\\\\ud83d\\\\ude00\\"}"}'
    assert loads(text) == {"partial_json": '{"mood": "\\ud83d\\ude00"}'}
    assert walked == []


def test_a_byte_order_mark_is_not_json_text() -> None:
    assert code_of("\ufeff{}") == Code.INVALID_ARGUMENTS_JSON
    with pytest.raises(StrictJSONError) as caught:
        loads_bytes(b"\xef\xbb\xbf{}")
    assert caught.value.code == Code.INVALID_ARGUMENTS_JSON


@pytest.mark.parametrize(
    ("data", "position"),
    [
        (b'{"a": "\xff"}', 7),
        (b'["\xc0\xaf"]', 2),
        (b'"\xed\xa0\x80"', 1),
        (b'{"k": "\xe2\x82"}', 7),
        (b'"\xe2\x82', 1),
    ],
    ids=[
        "invalid-start-byte",
        "overlong",
        "encoded-surrogate",
        "truncated-inside",
        "truncated-at-end",
    ],
)
def test_invalid_utf8_through_loads_bytes_reports_the_byte_offset(
    data: bytes, position: int
) -> None:
    with pytest.raises(StrictJSONError) as caught:
        loads_bytes(data)
    assert caught.value.code == Code.INVALID_UNICODE
    assert caught.value.position == position


def test_the_byte_offset_counts_bytes_not_characters() -> None:
    with pytest.raises(StrictJSONError) as caught:
        loads_bytes('{"é€": "'.encode() + b'\x80"}')  # 8 characters, 11 bytes before 0x80
    assert caught.value.code == Code.INVALID_UNICODE
    assert caught.value.position == 11


# --- Whitespace and trailing data ---------------------------------------------------------------


@pytest.mark.parametrize("text", ["\f{}", "[\f]", '{"a":\f1}', "[1,\f2]"])
def test_form_feed_is_not_json_whitespace(text: str) -> None:
    assert code_of(text) == Code.INVALID_ARGUMENTS_JSON


def test_a_form_feed_after_a_complete_value_is_trailing_data() -> None:
    error = error_of("{}\f")
    assert (error.code, error.position) == (Code.TRAILING_DATA, 2)


@pytest.mark.parametrize(
    ("text", "position"),
    [
        ('{"a": 1} {"b": 2}', 9),
        ('{"a": 1}{"b": 2}', 8),
        ('  {"a": 1}\n\n{"b": 2}\n', 12),
    ],
)
def test_a_trailing_object_is_trailing_data_at_its_start(text: str, position: int) -> None:
    error = error_of(text)
    assert (error.code, error.position) == (Code.TRAILING_DATA, position)
    assert text[position] == "{"


@pytest.mark.parametrize(
    ("text", "position"),
    [
        ("[1]x", 3),
        ('{"a": 1}}', 8),
        ("1 2", 2),
        ("true false", 5),
        ('"a" ,', 4),
        ("0\x00", 1),
        ('{"a": 1} // comment', 9),
    ],
)
def test_trailing_garbage_is_trailing_data(text: str, position: int) -> None:
    error = error_of(text)
    assert (error.code, error.position) == (Code.TRAILING_DATA, position)


def test_trailing_and_leading_json_whitespace_is_accepted() -> None:
    assert loads('{"a": 1} \t\r\n') == {"a": 1}
    assert loads(" \t\r\n[true] \n") == [True]


@pytest.mark.parametrize("text", ["", " ", "\n", " \t\r\n "], ids=repr)
def test_empty_and_whitespace_only_text_is_invalid_json(text: str) -> None:
    assert code_of(text) == Code.INVALID_ARGUMENTS_JSON


def test_a_syntax_error_reports_its_character_position() -> None:
    error = error_of('{"é": [1,]}')
    assert (error.code, error.position) == (Code.INVALID_ARGUMENTS_JSON, 9)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('"x"', "x"),
        ("1", 1),
        ("-0.5", -0.5),
        ("null", None),
        ("true", True),
        ("[]", []),
    ],
)
def test_top_level_scalars_and_arrays_are_json_text(text: str, value: Any) -> None:
    assert loads(text) == value


# --- Limits -------------------------------------------------------------------------------------


def nested(depth: int, kind: str) -> str:
    if kind == "array":
        return "[" * depth + "]" * depth
    if kind == "object":
        return '{"k":' * depth + "0" + "}" * depth
    return '{"k":[' * (depth // 2) + ("[]" if depth % 2 else "0") + "]}" * (depth // 2)


@pytest.mark.parametrize("kind", ["array", "object", "mixed"])
def test_nesting_exactly_at_max_depth_is_accepted(kind: str) -> None:
    assert loads(nested(5, kind), Limits(max_depth=5)) == json.loads(nested(5, kind))


@pytest.mark.parametrize("kind", ["array", "object", "mixed"])
def test_nesting_one_over_max_depth_is_limit_exceeded(kind: str) -> None:
    assert code_of(nested(6, kind), Limits(max_depth=5)) == Code.LIMIT_EXCEEDED


def test_a_deep_container_in_a_later_member_is_limit_exceeded() -> None:
    text = '{"a": 1, "b": [2, {"c": [[[[]]]]}]}'
    # object, array, object, then four arrays: seven levels.
    assert code_of(text, Limits(max_depth=6)) == Code.LIMIT_EXCEEDED
    loads(text, Limits(max_depth=7))


@pytest.mark.parametrize("kind", ["array", "object", "mixed"])
def test_100000_deep_nesting_is_limit_exceeded_not_recursion_error(kind: str) -> None:
    assert code_of(nested(100_000, kind)) == Code.LIMIT_EXCEEDED


def test_100000_deep_unclosed_nesting_through_loads_bytes_is_limit_exceeded() -> None:
    with pytest.raises(StrictJSONError) as caught:
        loads_bytes(b"[" * 100_000)
    assert caught.value.code == Code.LIMIT_EXCEEDED


def test_argument_bytes_at_the_limit_are_accepted_by_utf8_size() -> None:
    text = '"é€😀"'  # 5 characters, 1 + 2 + 3 + 4 + 1 = 11 UTF-8 bytes
    assert loads(text, Limits(max_argument_bytes=11)) == "é€😀"
    assert loads_bytes(text.encode(), Limits(max_argument_bytes=11)) == "é€😀"


def test_argument_bytes_over_the_limit_are_limit_exceeded_though_characters_fit() -> None:
    text = '"é€😀"'
    assert code_of(text, Limits(max_argument_bytes=10)) == Code.LIMIT_EXCEEDED
    with pytest.raises(StrictJSONError) as caught:
        loads_bytes(text.encode(), Limits(max_argument_bytes=10))
    assert caught.value.code == Code.LIMIT_EXCEEDED


def test_ascii_argument_bytes_at_and_over_the_limit() -> None:
    assert loads('{"a": 12}', Limits(max_argument_bytes=9)) == {"a": 12}
    assert code_of('{"a": 123}', Limits(max_argument_bytes=9)) == Code.LIMIT_EXCEEDED


# --- Properties ---------------------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(), children, max_size=5)
    ),
    max_leaves=30,
)

#: Characters that reach deep into the scanner's paths when shuffled.
json_alphabet = st.sampled_from(list('{}[]",:.-+0123456789eEtrufalsnNIiy\\u/bd8\ud800 \t\n\f'))


@settings(deadline=None)
@given(value=json_values, ensure_ascii=st.booleans(), indent=st.sampled_from([None, 2]))
def test_any_json_value_round_trips_through_dumps_and_loads(
    value: Any, ensure_ascii: bool, indent: int | None
) -> None:
    parsed = loads(json.dumps(value, ensure_ascii=ensure_ascii, indent=indent))
    assert parsed == value
    assert json.dumps(parsed, sort_keys=True) == json.dumps(value, sort_keys=True)


def parses_or_refuses(text: str) -> None:
    try:
        loads(text)
    except StrictJSONError as error:
        assert error.code in ARGUMENT_CODES


@settings(deadline=None)
@given(st.text())
def test_any_text_parses_or_raises_strict_json_error(text: str) -> None:
    parses_or_refuses(text)


@settings(deadline=None)
@given(st.text(alphabet=json_alphabet))
def test_any_json_like_text_parses_or_raises_strict_json_error(text: str) -> None:
    parses_or_refuses(text)


@settings(deadline=None)
@given(st.binary())
def test_any_bytes_parse_or_raise_strict_json_error(data: bytes) -> None:
    try:
        loads_bytes(data)
    except StrictJSONError as error:
        assert error.code in ARGUMENT_CODES


def test_depth_counts_nesting_not_brackets() -> None:
    # 64 objects deep, then 100 empty arrays side by side: more brackets than the limit of
    # 128, so the value is walked, and 66 levels deep, well inside it.
    siblings = ",".join(f'"k{n}":[]' for n in range(100))
    text = '{"a":' * 64 + "{" + siblings + "}" + "}" * 64
    assert loads(text) is not None
    with pytest.raises(StrictJSONError, match="nesting is deeper than 128"):
        loads('{"a":' * 128 + "[" + ",".join(["[]"] * 10) + "]" + "}" * 128)


@pytest.mark.parametrize("padding", [0, 2_000])  # read by ``loads`` itself, and by ``_decode``
def test_objects_the_scan_counted_bound_the_depth_as_the_braces_did(padding: int) -> None:
    # The scan counts the objects it builds, and ``loads`` takes that count for the ``{`` in the
    # text: braces inside a string open nothing, and 129 objects deep is still too deep.
    inside = '"' + "{" * 200 + "x" * padding + '"'
    assert loads('{"a":' * 128 + inside + "}" * 128) is not None
    with pytest.raises(StrictJSONError, match="nesting is deeper than 128"):
        loads('{"a":' * 129 + inside + "}" * 129)


NESTED = st.recursive(
    st.integers(0, 1) | st.text("a\\", max_size=2),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text("ab", max_size=2), children, max_size=3)
    ),
    max_leaves=30,
)


@settings(max_examples=500, deadline=None)
@given(value=NESTED, depth=st.integers(1, 8))
def test_the_depth_walk_over_containers_agrees_with_the_walk_over_every_value(
    value: Any, depth: int
) -> None:
    limits = Limits(max_depth=depth)
    verdicts = []
    for walk in (strict_json._walk, strict_json._check_depth):
        try:
            walk(value, limits)
            verdicts.append(None)
        except StrictJSONError as error:
            verdicts.append((error.code, error.message))
    assert verdicts[0] == verdicts[1]


def test_without_the_name_check_a_repeated_name_keeps_its_last_member_and_the_rest_holds() -> None:
    assert loads('{"a": 1, "a": [2]}', check_names=False) == {"a": [2]}
    assert loads(' {"a": 1, "a": [2]}', check_names=False) == {"a": [2]}  # the slower path
    for text, code in [
        ('{"a": NaN}', Code.NON_FINITE_NUMBER),
        ('{"a": 1, "a": "\\ud800"}', Code.INVALID_UNICODE),
        ('{"a": 1e400}', Code.NON_FINITE_NUMBER),
        ('{"a": 1} x', Code.TRAILING_DATA),
    ]:
        with pytest.raises(StrictJSONError) as refused:
            loads(text, check_names=False)
        assert refused.value.code == code


def test_the_duplicate_named_is_the_name_that_repeats() -> None:
    with pytest.raises(StrictJSONError) as refused:
        loads('{"a": 1, "b": 2, "b": 3}')
    assert str(refused.value).endswith("member name 'b' appears twice")
    name = "n" * 50
    with pytest.raises(StrictJSONError) as refused:
        loads(f'{{"{name}": 1, "{name}": 2}}')
    assert str(refused.value) == f"member name {name[:40]!r} appears twice"


@pytest.mark.parametrize("kind", ["array", "object"])
def test_the_depth_limit_holds_exactly_when_the_value_is_walked_for_surrogates(kind: str) -> None:
    # A surrogate pair escape makes the parser walk the value; the walk counts depth from 1.
    inner = '"\\ud83d\\ude00"'
    text = (
        nested(5, kind).replace("0", inner)
        if kind == "object"
        else "[" * 4 + "[" + inner + "]" + "]" * 4
    )
    assert loads(text, Limits(max_depth=5)) == json.loads(text)
    with pytest.raises(StrictJSONError):
        loads("[" + text + "]", Limits(max_depth=5))


def test_a_number_that_overflows_is_named_by_its_first_40_characters() -> None:
    literal = "9" * 50 + "e400"
    with pytest.raises(StrictJSONError) as raised:
        strict_json.loads(f"[{literal}]")
    assert (raised.value.code, str(raised.value)) == (
        Code.NON_FINITE_NUMBER,
        f"{literal[:40]} overflows to infinity",
    )


def test_the_readers_kept_for_limits_never_pass_sixteen() -> None:
    """One reader per ``Limits`` a caller passes, kept for the next parse: a caller making new
    ``Limits`` for every parse must not grow the table without bound."""
    kept = []
    for number in range(40):
        limits = Limits(max_argument_bytes=1000 + number)
        kept.append(limits)  # alive, so that no two share an id
        assert strict_json.loads('{"a": 1}', limits) == {"a": 1}
        assert len(strict_json._READERS) <= 16
    assert strict_json._READERS[id(kept[-1])].limits is kept[-1]


def test_a_reader_kept_for_other_limits_is_not_used() -> None:
    """Readers are kept by the id of their ``Limits``; an id Python gave a ``Limits`` that is
    gone may come back for a new one, which must get its own reader."""
    small, large = Limits(max_argument_bytes=8), Limits(max_argument_bytes=10_000)
    strict_json._READERS[id(small)] = strict_json._Reader(large)
    with pytest.raises(StrictJSONError) as raised:
        strict_json.loads('{"city": "Oslo"}', small)
    assert (raised.value.code, strict_json._READERS[id(small)].limits) == (
        Code.LIMIT_EXCEEDED,
        small,
    )


def test_a_parse_while_another_holds_the_tally_leaves_its_count_alone() -> None:
    """Two threads parsing at once: the one that finds the tally taken scans with the hooks,
    so the counts the other has noted so far neither prove its names nor get cleared."""
    reader = strict_json._DEFAULT_READER
    assert strict_json._TALLY.pop("free")  # the other parse takes the tally ...
    reader.sizes.append(1)  # ... and has counted one object's member
    try:
        with pytest.raises(StrictJSONError) as raised:
            strict_json.loads('{"a": 1, "a": 2}')
        assert (raised.value.code, reader.sizes, strict_json._TALLY) == (
            Code.DUPLICATE_KEY,
            [1],
            {},
        )
    finally:
        reader.sizes.clear()
        strict_json._TALLY["free"] = True
