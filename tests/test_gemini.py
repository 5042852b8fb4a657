"""The Gemini profile's translator (partialArgs rebuilding, canonical text) and the OpenAPI 3.0
schema translation in ``callgate.reassemble.profiles.gemini_schema``."""

from __future__ import annotations

from typing import Any

import pytest

from callgate.reassemble import Reassembler, Report, check
from callgate.reassemble.codes import Code
from callgate.reassemble.events import Problem, SlotDelta, SlotEnded, SlotStarted
from callgate.reassemble.profiles.gemini import GeminiTranslator, canonical_arguments
from callgate.reassemble.profiles.gemini_partial import Conflict, Rebuild, parse_json_path
from callgate.reassemble.profiles.gemini_schema import declaration_schemas, to_json_schema
from callgate.reassemble.schema import SchemaProblem, ToolSchema, compile_schema
from tests.conftest import CONFORMANCE, load


def chunk(*calls: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {
        "content": {"role": "model", "parts": [{"functionCall": c} for c in calls]}
    }
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate]}


def piece(path: str, more: bool = False, **value: object) -> dict[str, object]:
    item: dict[str, object] = {"jsonPath": path, **value}
    if more:
        item["willContinue"] = True
    return item


def rebuild(*items: dict[str, object]) -> dict[str, object]:
    built = Rebuild()
    for item in items:
        built.apply(item)
    return built.root


def run(*chunks: dict[str, Any], schemas: dict[str, object] | None = None) -> Report:
    reassembler = Reassembler("gemini", schemas if schemas is not None else {"f": {}})
    for raw in chunks:
        reassembler.feed(raw)
    return reassembler.close()


# -- canonical arguments text ----------------------------------------------------------------------


def test_canonical_text_keeps_member_order_and_non_ascii_without_spaces() -> None:
    assert canonical_arguments({"b": 3, "a": "Zürich", "c": [1.0, None]}) == (
        '{"b":3,"a":"Zürich","c":[1.0,null]}'
    )


def test_a_whole_call_part_is_started_given_its_canonical_text_and_ended() -> None:
    events = GeminiTranslator().translate(chunk({"name": "f", "args": {"x": 1}, "id": "a1"}))
    key = (0, 0)
    assert events == [
        SlotStarted(key, "/candidates/0/content/parts/0/functionCall", call_id="a1", name="f"),
        SlotDelta(key, "/candidates/0/content/parts/0/functionCall", arguments='{"x":1}'),
        SlotEnded(key, "/candidates/0/content/parts/0/functionCall"),
    ]


def test_a_call_part_without_args_has_an_empty_object() -> None:
    report = run(chunk({"name": "f"}, finish="STOP"))
    assert report.calls[0].arguments == "{}"


def test_nan_in_args_is_written_out_so_the_strict_parser_refuses_it() -> None:
    report = run(chunk({"name": "f", "args": {"x": float("nan")}}, finish="STOP"))
    assert report.blocking_codes == ["non_finite_number"]


def test_calls_of_a_candidate_are_numbered_across_chunks() -> None:
    report = run(chunk({"name": "f", "args": {}}), chunk({"name": "f", "args": {}}, finish="STOP"))
    assert [(c.choice, c.slot) for c in report.calls] == [(0, 0), (0, 1)]
    assert report.status.value == "pass"


def test_the_same_id_on_two_calls_is_a_duplicate() -> None:
    report = run(
        chunk(
            {"name": "f", "args": {}, "id": "x"},
            {"name": "f", "args": {}, "id": "x"},
            finish="STOP",
        )
    )
    assert report.blocking_codes == ["duplicate_call_id"]


def test_a_call_after_the_candidate_finished_is_refused() -> None:
    report = run(chunk({"name": "f", "args": {}}, finish="STOP"), chunk({"name": "f", "args": {}}))
    assert report.blocking_codes == ["delta_after_terminal"]


# -- jsonPath and partialArgs rebuilding -----------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "segments"),
    [
        ("$", []),
        ("$.a", ["a"]),
        ("$.recipe.ingredients[0].amount", ["recipe", "ingredients", 0, "amount"]),
        ("$.steps[12]", ["steps", 12]),
    ],
)
def test_json_paths_read_as_segments(path: str, segments: list[object]) -> None:
    assert parse_json_path(path) == segments


@pytest.mark.parametrize("path", ["a.b", "$a", "$.a[01]", "$.a[-1]", "$['a']", "$.a.", "$..a"])
def test_other_path_forms_are_not_read(path: str) -> None:
    assert parse_json_path(path) is None


def test_string_pieces_join_until_one_comes_without_will_continue() -> None:
    root = rebuild(
        piece("$.s", True, stringValue="Hel"),
        piece("$.s", True, stringValue="lo"),
        piece("$.s", stringValue=""),
    )
    assert root == {"s": "Hello"}


def test_nested_objects_and_arrays_are_created_in_order_of_arrival() -> None:
    root = rebuild(
        piece("$.r.items[0].n", numberValue=2),
        piece("$.r.items[0].ok", boolValue=True),
        piece("$.r.items[1].n", numberValue=3.5),
        piece("$.r.note", nullValue=None),
        piece("$.a", stringValue="x"),
    )
    assert canonical_arguments(root) == (
        '{"r":{"items":[{"n":2,"ok":true},{"n":3.5}],"note":null},"a":"x"}'
    )


@pytest.mark.parametrize(
    ("items", "says"),
    [
        ([piece("$.a", stringValue="x"), piece("$.a", stringValue="y")], "already set"),
        ([piece("$.a", stringValue="x"), piece("$.a.b", stringValue="y")], "already holds a str"),
        ([piece("$.a[0]", numberValue=1), piece("$.a.b", numberValue=2)], "already holds a list"),
        ([piece("$.a.b", numberValue=1), piece("$.a[0]", numberValue=2)], "already holds a dict"),
        ([piece("$.a[1]", numberValue=1)], "skips array positions"),
        ([piece("$.a", True, stringValue="x"), piece("$.b", stringValue="y")], "still continuing"),
        ([piece("$.a", True, stringValue="x"), piece("$.a", numberValue=1)], "non-string piece"),
        ([piece("$.a", True, numberValue=1)], "only a string value can continue"),
        ([piece("$", stringValue="x")], "root"),
    ],
)
def test_conflicting_pieces_are_invalid_arguments(
    items: list[dict[str, object]], says: str
) -> None:
    with pytest.raises(Conflict) as caught:
        rebuild(*items)
    assert caught.value.code is Code.INVALID_ARGUMENTS_JSON
    assert says in caught.value.message


def test_a_piece_that_skips_array_positions_names_the_array_element_it_skips_to() -> None:
    with pytest.raises(Conflict) as caught:
        rebuild(piece("$.a[0].b", numberValue=1), piece("$.a[2].c.d", numberValue=2))
    assert caught.value.message == "$.a[2].c.d: $.a[2] skips array positions (the array has 1)"


@pytest.mark.parametrize(
    "item",
    [
        {"jsonPath": "$['a']", "stringValue": "x"},
        {"jsonPath": "$.a"},
        {"jsonPath": "$.a", "stringValue": "x", "numberValue": 1},
        {"jsonPath": "$.a", "numberValue": True},
        {"jsonPath": "$.a", "structValue": {}},
        {"jsonPath": "$.a", "stringValue": "x", "willContinue": "yes"},
        "not an item",
    ],
)
def test_items_this_profile_cannot_read_are_unsupported(item: object) -> None:
    with pytest.raises(Conflict) as caught:
        Rebuild().apply(item)
    assert caught.value.code is Code.UNSUPPORTED_EVENT


def test_a_streamed_call_sends_its_text_only_when_the_empty_part_closes_it() -> None:
    translator = GeminiTranslator()
    opened = translator.translate(chunk({"name": "f", "willContinue": True}))
    grown = translator.translate(
        chunk({"partialArgs": [piece("$.a", stringValue="x")], "willContinue": True})
    )
    closed = translator.translate(chunk({}))
    assert [type(e) for e in opened] == [SlotStarted] and grown == []
    assert [(type(e), getattr(e, "arguments", None)) for e in closed] == [
        (SlotDelta, '{"a":"x"}'),
        (SlotEnded, None),
    ]


def test_a_conflict_blocks_the_call_with_its_slot_named() -> None:
    report = run(
        chunk({"name": "f", "willContinue": True}),
        chunk({"partialArgs": [piece("$.a", stringValue="x"), piece("$.a", numberValue=1)]}),
        chunk({}, finish="STOP"),
    )
    assert report.blocking_codes == ["invalid_arguments_json"]
    first = report.findings[0]
    assert (first.choice, first.slot, first.path) == (
        0,
        0,
        "/chunks/1/candidates/0/content/parts/0/functionCall/partialArgs/1",
    )


def test_a_streamed_call_part_that_also_carries_whole_args_is_unsupported_there() -> None:
    report = run(
        chunk({"name": "f", "willContinue": True}),
        chunk({"args": {"a": 1}, "willContinue": True}),
        chunk({}, finish="STOP"),
    )
    first = report.findings[0]
    assert (first.code, first.choice, first.slot, first.path) == (
        Code.UNSUPPORTED_EVENT,
        0,
        0,
        "/chunks/1/candidates/0/content/parts/0/functionCall/args",
    )


def test_a_finish_reason_that_is_not_a_string_is_unsupported_there() -> None:
    report = run(chunk({"name": "f", "args": {}}), {"candidates": [{"finishReason": 7}]})
    first = report.findings[0]
    assert (first.code, first.message, first.path) == (
        Code.UNSUPPORTED_EVENT,
        "finishReason is not a string",
        "/chunks/1/candidates/0/finishReason",
    )


def test_partial_args_that_are_not_a_list_are_unsupported_there() -> None:
    report = run(
        chunk({"name": "f", "willContinue": True}),
        chunk({"partialArgs": {"jsonPath": "$.a"}, "willContinue": True}),
        chunk({"partialArgs": [piece("$.b", False, numberValue=1)], "willContinue": True}),
        chunk({}, finish="STOP"),
    )
    first = report.findings[0]
    assert (first.code, first.message, first.path) == (
        Code.UNSUPPORTED_EVENT,
        "partialArgs is not a list",
        "/chunks/1/candidates/0/content/parts/0/functionCall/partialArgs",
    )
    # What came after cannot be put together with what was lost: no arguments are made up.
    assert [call.arguments for call in report.calls] == [""]


def test_partial_args_that_are_not_a_list_name_their_choice_and_slot() -> None:
    """The second call of a turn: its slot (1) and its candidate's choice (0) apart."""
    report = run(
        {
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [
                            {"functionCall": {"name": "f", "args": {}}},
                            {"functionCall": {"name": "g", "willContinue": True}},
                        ],
                    }
                }
            ]
        },
        chunk({"partialArgs": {"jsonPath": "$.a"}, "willContinue": True}),
        chunk({}, finish="STOP"),
    )
    lost = next(f for f in report.findings if f.message == "partialArgs is not a list")
    assert (lost.choice, lost.slot) == (0, 1)


def test_closing_while_a_string_continues_is_invalid() -> None:
    report = run(
        chunk({"name": "f", "willContinue": True}),
        chunk({"partialArgs": [piece("$.a", True, stringValue="x")]}),
        chunk({}, finish="STOP"),
    )
    assert report.blocking_codes == ["invalid_arguments_json"]


def test_a_streamed_call_open_at_the_end_of_the_stream_is_missing_its_terminal() -> None:
    report = run(
        chunk({"name": "f", "willContinue": True}),
        chunk({"partialArgs": [piece("$.a", stringValue="x")]}),
    )
    assert report.blocking_codes == ["missing_terminal"]


def test_a_new_named_call_leaves_the_open_streamed_call_unended() -> None:
    report = run(
        chunk({"name": "f", "willContinue": True}),
        chunk({"name": "f", "args": {}}),
        chunk({}, finish="STOP"),
    )
    assert report.blocking_codes == ["invalid_slot", "missing_terminal"]


def test_an_empty_part_with_no_streamed_call_open_is_an_invalid_slot() -> None:
    events = GeminiTranslator().translate(chunk({}))
    assert [e.code for e in events if isinstance(e, Problem)] == [Code.INVALID_SLOT]


def test_usage_only_chunks_are_consumed_and_errors_are_stream_errors() -> None:
    translator = GeminiTranslator()
    assert translator.translate({"usageMetadata": {"totalTokenCount": 3}}) == []
    [error] = translator.translate(
        {"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}}
    )
    assert isinstance(error, Problem) and error.code is Code.STREAM_ERROR


# -- OpenAPI 3.0 schemas -------------------------------------------------------------------------


def test_upper_case_types_nullable_and_annotations_translate() -> None:
    openapi = {
        "type": "OBJECT",
        "propertyOrdering": ["a", "b"],
        "required": ["a"],
        "properties": {
            "a": {"type": "STRING", "nullable": True, "description": "d", "example": "x"},
            "b": {
                "type": "ARRAY",
                "minItems": "1",
                "items": {"type": "INTEGER", "format": "int32"},
            },
            "c": {"anyOf": [{"type": "NUMBER", "format": "double"}, {"type": "BOOLEAN"}]},
        },
    }
    assert to_json_schema(openapi) == {
        "type": "object",
        "required": ["a"],
        "properties": {
            "a": {"type": ["string", "null"], "description": "d", "examples": ["x"]},
            "b": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "integer",
                    "allOf": [{"minimum": -(2**31), "maximum": 2**31 - 1}],
                },
            },
            "c": {"anyOf": [{"type": "number"}, {"type": "boolean"}]},
        },
    }


def test_translated_schema_enforces_nullable_and_int32() -> None:
    schema = compile_schema(
        to_json_schema(
            {
                "type": "OBJECT",
                "properties": {"n": {"type": "INTEGER", "format": "int32", "nullable": True}},
            }
        )
    )
    assert isinstance(schema, ToolSchema)
    assert schema.violations({"n": None}) == [] and schema.violations({"n": 5}) == []
    assert [v.keyword for v in schema.violations({"n": 2**31})] == ["maximum"]


@pytest.mark.parametrize(
    ("openapi", "path"),
    [
        ({"type": "OBJECT", "additionalProperties": False}, "/openapi:additionalProperties"),
        ({"type": "TYPE_UNSPECIFIED"}, "/openapi:type"),
        ({"nullable": True}, "/openapi:nullable"),
        ({"type": "STRING", "enum": ["a"], "nullable": True}, "/openapi:nullable"),
        ({"type": "OBJECT", "properties": {"x": {"$ref": "#/x"}}}, "/properties/x/openapi:$ref"),
    ],
)
def test_what_cannot_be_translated_fails_closed_at_its_keyword(openapi: object, path: str) -> None:
    problem = compile_schema(to_json_schema(openapi))
    assert isinstance(problem, SchemaProblem)
    assert (problem.code, problem.schema_path) == (Code.UNSUPPORTED_SCHEMA_KEYWORD, path)


def test_declarations_take_parameters_or_parameters_json_schema() -> None:
    tools = [
        {
            "functionDeclarations": [
                {
                    "name": "a",
                    "parameters": {"type": "OBJECT", "properties": {}},
                    "description": None,
                },
                {
                    "name": "b",
                    "parametersJsonSchema": {"type": "object", "additionalProperties": False},
                },
                {"name": "c", "parameters_json_schema": {"type": "object"}},
                {"name": "d"},
                {"name": "e", "parameters": {"type": "OBJECT"}, "parametersJsonSchema": {}},
            ]
        }
    ]
    schemas = declaration_schemas(tools)
    assert schemas["a"] == {"type": "object", "properties": {}}
    assert schemas["b"] == {"type": "object", "additionalProperties": False}
    assert schemas["c"] == {"type": "object"}
    assert schemas["d"] == {"type": "object", "maxProperties": 0}
    problem = compile_schema(schemas["e"])
    assert isinstance(problem, SchemaProblem)
    assert problem.code is Code.UNSUPPORTED_SCHEMA_KEYWORD


def _judged(chunks: list[dict[str, Any]], name: str = "valid_single_call") -> Any:
    envelope = load(CONFORMANCE / "gemini" / f"{name}.json")
    envelope.pop("expect")
    return check({**envelope, "chunks": chunks})


def _part(call: dict[str, Any], **candidate: Any) -> dict[str, Any]:
    return {
        "candidates": [
            {"content": {"role": "model", "parts": [{"functionCall": call}]}, **candidate}
        ]
    }


def test_a_candidate_index_that_is_no_index_is_an_invalid_slot() -> None:
    report = _judged(
        [_part({"name": "get_weather", "args": {"city": "Oslo"}}, index=-1, finishReason="STOP")]
    )
    assert [(f.code, f.path) for f in report.findings] == [
        (Code.INVALID_SLOT, "/chunks/0/candidates/0/index"),
        (Code.MISSING_TERMINAL, "/chunks"),
    ]


def test_an_id_and_a_name_that_are_no_strings_are_each_reported_name_first() -> None:
    report = _judged([_part({"id": 5, "name": 7, "args": {"city": "Oslo"}}, finishReason="STOP")])
    where = "/chunks/0/candidates/0/content/parts/0/functionCall"
    assert [(f.code, f.path) for f in report.findings] == [
        (Code.UNSUPPORTED_EVENT, f"{where}/name"),
        (Code.UNSUPPORTED_EVENT, f"{where}/id"),
        (Code.MISSING_TOOL_NAME, where),
    ]


def test_a_streamed_call_takes_its_id_from_a_later_part() -> None:
    envelope = load(CONFORMANCE / "gemini" / "vertex_partial_args_valid.json")
    envelope["chunks"][1]["candidates"][0]["content"]["parts"][0]["functionCall"]["id"] = "c9"
    report = _judged(envelope["chunks"], "vertex_partial_args_valid")
    assert report.status.value == "pass"
    assert [(c.id, c.name) for c in report.calls] == [("c9", "book_trip")]


@pytest.mark.parametrize(
    ("schema", "translated"),
    [
        ({"type": "STRING", "anyOf": "x"}, {"type": "string", "openapi:anyOf": "x"}),
        (
            {"type": "STRING", "enumDescriptions": ["a", "b"]},
            {"type": "string", "openapi:enumDescriptions": ["a", "b"]},
        ),
        (
            {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]},
            {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        ),
    ],
)
def test_only_an_any_of_list_is_translated_and_any_other_list_is_kept_as_unsupported(
    schema: dict[str, Any], translated: dict[str, Any]
) -> None:
    assert to_json_schema(schema) == translated


@pytest.mark.parametrize(
    ("items", "code", "message"),
    [
        (
            [{"jsonPath": "x" * 100, "stringValue": "a"}],
            Code.UNSUPPORTED_EVENT,
            f"jsonPath {'x' * 60!r} is not a '$.name[0]' path",
        ),
        (
            [
                {"jsonPath": "$.a.b.c", "stringValue": "s"},
                {"jsonPath": "$.a.b[0]", "stringValue": "t"},
            ],
            Code.INVALID_ARGUMENTS_JSON,
            "$.a.b[0]: $.a.b already holds a dict, not a list",
        ),
    ],
)
def test_a_partial_item_that_cannot_be_placed_says_where_and_why(
    items: list[dict[str, Any]], code: Code, message: str
) -> None:
    built = Rebuild()
    with pytest.raises(Conflict) as raised:
        for item in items:
            built.apply(item)
    assert (raised.value.code, raised.value.message) == (code, message)


def test_of_several_unknown_function_call_fields_the_first_by_name_is_reported() -> None:
    report = _judged(
        [_part({"name": "get_weather", "args": {}, "zz": 1, "aa": 2}, finishReason="STOP")]
    )
    first = report.findings[0]
    assert (first.path, first.message) == (
        "/chunks/0/candidates/0/content/parts/0/functionCall/aa",
        "functionCall field 'aa' is not known",
    )


def test_counts_are_kept_as_integers_whether_sent_as_numbers_or_digit_strings() -> None:
    assert to_json_schema({"type": "ARRAY", "maxItems": 3, "minItems": "1"}) == {
        "type": "array",
        "maxItems": 3,
        "minItems": 1,
    }


def test_a_json_schema_format_is_kept_and_a_note_format_is_dropped() -> None:
    assert to_json_schema({"type": "STRING", "format": "date-time"}) == {
        "type": "string",
        "format": "date-time",
    }
    assert to_json_schema({"type": "STRING", "format": "enum"}) == {"type": "string"}


def test_integer_formats_become_their_bounds() -> None:
    assert to_json_schema({"type": "INTEGER", "format": "int64"}) == {
        "type": "integer",
        "allOf": [{"minimum": -(2**63), "maximum": 2**63 - 1}],
    }
    assert to_json_schema({"type": "INTEGER", "format": "int32"}) == {
        "type": "integer",
        "allOf": [{"minimum": -(2**31), "maximum": 2**31 - 1}],
    }


def test_a_provider_error_is_told_in_its_first_200_characters() -> None:
    report = run({"error": {"message": "x" * 300}})
    first = report.findings[0]
    assert first.message == "provider sent an error: " + "x" * 200
