"""The tool-schema keyword policy and the mapping of jsonschema errors to violations."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import subprocess
import sys
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from referencing.exceptions import NoSuchResource

from callgate.reassemble.codes import Code
from callgate.reassemble.schema import (
    _DIALECTS,
    DRAFT7_KEYWORDS,
    DRAFT202012_KEYWORDS,
    SchemaProblem,
    ToolSchema,
    Violation,
    _offline,
    compile_schema,
    compiled_schema,
)
from callgate.reassemble.schema_subset import accepting, plainly_valid

DRAFT7 = "http://json-schema.org/draft-07/schema#"
DRAFT202012 = "https://json-schema.org/draft/2020-12/schema"

# What Pydantic v2 emits for a weather tool: $defs + $ref, Optional as anyOf with null,
# an Enum, a datetime, titles and defaults everywhere.
PYDANTIC_WEATHER: dict[str, Any] = {
    "$defs": {
        "Unit": {"enum": ["celsius", "fahrenheit"], "title": "Unit", "type": "string"},
        "Location": {
            "properties": {
                "city": {"title": "City", "type": "string", "pattern": "^[A-Z][a-z]+$"},
                "country": {
                    "anyOf": [{"type": "string"}, {"type": "null"}],
                    "default": None,
                    "title": "Country",
                },
            },
            "required": ["city"],
            "title": "Location",
            "type": "object",
        },
    },
    "properties": {
        "location": {"$ref": "#/$defs/Location"},
        "unit": {"$ref": "#/$defs/Unit", "default": "celsius"},
        "when": {"format": "date-time", "title": "When", "type": "string"},
        "days": {"default": 1, "maximum": 14, "minimum": 1, "title": "Days", "type": "integer"},
    },
    "required": ["location", "when"],
    "title": "GetWeather",
    "type": "object",
}

# Pydantic v2 for a field typed `Cat | Dog = Field(discriminator="pet_type")`.
PYDANTIC_PETS: dict[str, Any] = {
    "$defs": {
        "Cat": {
            "properties": {
                "pet_type": {"const": "cat", "title": "Pet Type", "type": "string"},
                "meows": {"title": "Meows", "type": "integer"},
            },
            "required": ["pet_type", "meows"],
            "title": "Cat",
            "type": "object",
        },
        "Dog": {
            "properties": {
                "pet_type": {"const": "dog", "title": "Pet Type", "type": "string"},
                "barks": {"title": "Barks", "type": "number"},
            },
            "required": ["pet_type", "barks"],
            "title": "Dog",
            "type": "object",
        },
    },
    "properties": {
        "pet": {
            "discriminator": {
                "mapping": {"cat": "#/$defs/Cat", "dog": "#/$defs/Dog"},
                "propertyName": "pet_type",
            },
            "oneOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}],
            "title": "Pet",
        }
    },
    "required": ["pet"],
    "title": "AdoptPet",
    "type": "object",
}

# OpenAI structured-outputs strict mode: closed objects, every property required, optional
# values spelled as a null union.
OPENAI_STRICT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "Search terms"},
        "limit": {"type": ["integer", "null"], "description": "Max results"},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string", "minLength": 1}},
                "required": ["name"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["query", "limit", "items"],
    "additionalProperties": False,
}


def compiled(schema: object) -> ToolSchema:
    result = compile_schema(schema)
    assert isinstance(result, ToolSchema), result
    return result


def problem(schema: object) -> SchemaProblem:
    result = compile_schema(schema)
    assert isinstance(result, SchemaProblem), "schema was accepted"
    return result


def where(violations: list[Violation]) -> list[tuple[str, str, str]]:
    return [(v.keyword, v.instance_path, v.schema_path) for v in violations]


def test_a_pydantic_model_accepts_arguments_that_fit_it() -> None:
    arguments = {
        "location": {"city": "Paris", "country": None},
        "unit": "celsius",
        "when": "2024-06-01T12:00:00Z",
        "days": 3,
    }
    assert compiled(PYDANTIC_WEATHER).violations(arguments) == []


def test_a_pydantic_model_reports_missing_fields_wrong_enums_and_ranges() -> None:
    arguments = {"location": {"country": 7}, "unit": "kelvin", "days": 15}
    assert where(compiled(PYDANTIC_WEATHER).violations(arguments)) == [
        ("required", "", "/required"),
        ("maximum", "/days", "/properties/days/maximum"),
        ("required", "/location", "/$defs/Location/required"),
        ("anyOf", "/location/country", "/$defs/Location/properties/country/anyOf"),
        ("enum", "/unit", "/$defs/Unit/enum"),
    ]


def test_a_violation_behind_a_ref_points_at_the_real_schema_location() -> None:
    (violation,) = compiled(PYDANTIC_WEATHER).violations(
        {"location": {"city": "paris"}, "when": "2024-06-01T12:00:00Z"}
    )
    assert violation.keyword == "pattern"
    assert violation.instance_path == "/location/city"
    assert violation.schema_path == "/$defs/Location/properties/city/pattern"


def test_a_date_time_format_is_asserted_not_just_annotated() -> None:
    (violation,) = compiled(PYDANTIC_WEATHER).violations(
        {"location": {"city": "Paris"}, "when": "next tuesday"}
    )
    assert (violation.keyword, violation.instance_path) == ("format", "/when")
    assert violation.schema_path == "/properties/when/format"


def test_a_pydantic_discriminated_union_is_accepted_and_validated_by_its_one_of() -> None:
    schema = compiled(PYDANTIC_PETS)
    assert schema.violations({"pet": {"pet_type": "cat", "meows": 3}}) == []
    assert schema.violations({"pet": {"pet_type": "dog", "barks": 1.5}}) == []
    assert where(schema.violations({"pet": {"pet_type": "cat", "barks": 1.5}})) == [
        ("oneOf", "/pet", "/properties/pet/oneOf")
    ]


def test_an_openai_strict_schema_accepts_arguments_with_every_property_present() -> None:
    arguments = {"query": "weather", "limit": None, "items": [{"name": "a"}]}
    assert compiled(OPENAI_STRICT).violations(arguments) == []


def test_an_openai_strict_schema_rejects_extra_missing_and_nested_bad_properties() -> None:
    arguments = {
        "query": "q",
        "items": [{"name": "a"}, {"name": "b"}, {"name": "", "note": 1}],
        "extra": True,
    }
    assert where(compiled(OPENAI_STRICT).violations(arguments)) == [
        ("additionalProperties", "", "/additionalProperties"),
        ("required", "", "/required"),
        ("additionalProperties", "/items/2", "/properties/items/items/additionalProperties"),
        ("minLength", "/items/2/name", "/properties/items/items/properties/name/minLength"),
    ]


def test_a_misspelled_keyword_is_unsupported_and_pointed_at() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string", "requird": True}}}
    found = problem(schema)
    assert found.code is Code.UNSUPPORTED_SCHEMA_KEYWORD
    assert found.schema_path == "/properties/city/requird"
    assert "requird" in found.message


def test_a_misspelled_keyword_under_an_awkward_property_name_gets_an_escaped_pointer() -> None:
    found = problem({"properties": {"a/b~c": {"maxLenght": 3}}})
    assert found.schema_path == "/properties/a~1b~0c/maxLenght"


def test_properties_named_like_keywords_or_typos_are_not_keywords() -> None:
    schema = {
        "type": "object",
        "properties": {
            "requird": {"type": "string"},
            "$id": {"type": "integer"},
            "nullable": {"type": "boolean"},
        },
        "required": ["requird", "$id", "nullable"],
        "additionalProperties": False,
    }
    validator = compiled(schema)
    assert validator.violations({"requird": "x", "$id": 1, "nullable": True}) == []
    assert where(validator.violations({"requird": 1, "$id": 1, "nullable": True})) == [
        ("type", "/requird", "/properties/requird/type")
    ]


def test_data_valued_keywords_are_never_walked_for_keywords() -> None:
    weird = {"requird": 1, "$dynamicRef": "#x", "nullable": True, "$ref": "https://evil/x"}
    schema = {
        "type": "object",
        "enum": [weird],
        "const": weird,
        "default": weird,
        "examples": [weird],
        "required": ["requird"],
    }
    assert compiled(schema).violations(weird) == []


@pytest.mark.parametrize(
    ("keyword", "value"),
    [
        ("$id", "https://example.com/x"),
        ("$anchor", "a"),
        ("$dynamicRef", "#meta"),
        ("$dynamicAnchor", "meta"),
        ("$vocabulary", {"https://example.com/vocab": True}),
        ("$recursiveRef", "#"),
        ("nullable", True),
        ("x-extra", 1),
        ("id", "x"),
    ],
)
def test_keywords_outside_the_policy_are_unsupported(keyword: str, value: object) -> None:
    found = problem({"properties": {"x": {"type": "string", keyword: value}}})
    assert (found.code, found.schema_path) == (
        Code.UNSUPPORTED_SCHEMA_KEYWORD,
        f"/properties/x/{keyword}",
    )


def test_an_unknown_format_is_unsupported() -> None:
    found = problem({"properties": {"tel": {"type": "string", "format": "phone"}}})
    assert (found.code, found.schema_path) == (
        Code.UNSUPPORTED_SCHEMA_KEYWORD,
        "/properties/tel/format",
    )


def test_a_format_is_only_supported_where_its_draft_defines_a_checker() -> None:
    assert isinstance(compile_schema({"format": "uuid"}), ToolSchema)
    assert problem({"$schema": DRAFT7, "format": "uuid"}).schema_path == "/format"


HOSTILE_TEXT = [
    "",
    "\x00",
    "\udcff",
    "a" * 5000,
    "9" * 500,
    "a{4294967296}",
    "(" * 100_000,
    "xn--",
    "xn--zz",
    "\u3002",
    "@",
    "a@b@c",
    "::::",
    "[",
    "%",
    "P",
    "PT",
    "{+a",
    "/~2",
    "2024-02-30T25:61:61Z",
    "http://\udcff",
    "\u0300",
]


@pytest.mark.parametrize("uri", [DRAFT7, DRAFT202012])
def test_every_supported_format_answers_on_hostile_text_instead_of_raising(uri: str) -> None:
    dialect = _DIALECTS[uri.replace("http:", "https:").removesuffix("#")]
    for name in sorted(dialect.formats.checkers):
        validator = compiled({"$schema": uri, "format": name})
        for text in HOSTILE_TEXT:
            assert all(v.keyword == "format" for v in validator.violations(text))


@pytest.mark.parametrize("name", ["iri", "iri-reference"])
def test_iri_formats_are_unsupported_because_their_checker_is_slow_on_long_text(name: str) -> None:
    assert problem({"format": name}).code is Code.UNSUPPORTED_SCHEMA_KEYWORD


def test_a_pattern_violation_names_the_pattern_keyword() -> None:
    validator = compiled({"type": "string", "pattern": "^[0-9]{3}$"})
    assert where(validator.violations("12a")) == [("pattern", "", "/pattern")]
    assert validator.violations("123") == []


@pytest.mark.parametrize(
    "ref", ["https://example.com/schema.json", "other.json#/$defs/A", "#anchor", "", "/$defs/A"]
)
def test_refs_that_leave_this_document_or_use_anchors_are_unsupported(
    ref: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("a remote $ref was fetched")

    monkeypatch.setattr("urllib.request.urlopen", no_network)
    found = problem({"$defs": {"A": {}}, "properties": {"a": {"$ref": ref}}})
    assert (found.code, found.schema_path) == (
        Code.UNSUPPORTED_SCHEMA_KEYWORD,
        "/properties/a/$ref",
    )


def test_the_validator_registry_refuses_to_retrieve_anything() -> None:
    with pytest.raises(NoSuchResource):
        _offline().get_or_retrieve("https://example.com/schema.json")


@pytest.mark.parametrize(
    "ref",
    [
        "#/$defs/Missing",
        "#/properties/a/items",
        "#/$defs/A/0",
        "#/allOf/01",
        "#/allOf/-1",
        "#/$defs",
        "#/properties/a/enum/0",
        "#/required",
        "#/$defs/A/default",
    ],
)
def test_a_local_ref_that_does_not_land_on_a_subschema_is_an_invalid_schema(ref: str) -> None:
    schema = {
        "$defs": {"A": {"default": {"type": "string"}}},
        "required": ["a"],
        "allOf": [{}, {}, {}],
        "properties": {"a": {"enum": [{"type": "string"}]}, "b": {"$ref": ref}},
    }
    found = problem(schema)
    assert (found.code, found.schema_path) == (Code.INVALID_SCHEMA, "/properties/b/$ref")
    assert "does not resolve" in found.message


def test_a_ref_with_tilde_and_slash_escapes_and_percent_encoding_resolves() -> None:
    schema = {
        "$defs": {"a/b": {"type": "integer"}, "m~n": {"type": "string"}, "sp ace": {"minimum": 0}},
        "properties": {
            "x": {"$ref": "#/$defs/a~1b"},
            "y": {"$ref": "#/$defs/m~0n"},
            "z": {"$ref": "#/$defs/sp%20ace"},
        },
    }
    validator = compiled(schema)
    assert validator.violations({"x": 1, "y": "s", "z": 0}) == []
    assert where(validator.violations({"x": "1", "y": 2, "z": -1})) == [
        ("type", "/x", "/$defs/a~1b/type"),
        ("type", "/y", "/$defs/m~0n/type"),
        ("minimum", "/z", "/$defs/sp ace/minimum"),
    ]


def test_a_draft_07_schema_with_definitions_and_tuple_items_validates() -> None:
    schema = {
        "$schema": DRAFT7,
        "definitions": {"Name": {"type": "string"}},
        "type": "array",
        "items": [{"$ref": "#/definitions/Name"}, {"type": "integer"}],
        "additionalItems": False,
    }
    validator = compiled(schema)
    assert validator.violations(["a", 1]) == []
    assert where(validator.violations([1, "a", None])) == [
        ("additionalItems", "", "/additionalItems"),
        ("type", "/0", "/definitions/Name/type"),
        ("type", "/1", "/items/1/type"),
    ]


@pytest.mark.parametrize("uri", [DRAFT7, DRAFT7[:-1], "https://json-schema.org/draft-07/schema#"])
def test_the_draft_07_uri_is_recognised_with_or_without_its_fragment(uri: str) -> None:
    # `dependencies` is a draft-07 keyword only, so compiling proves which dialect was picked.
    compiled({"$schema": uri, "dependencies": {"a": ["b"]}})
    assert problem({"$schema": uri, "$defs": {}}).schema_path == "/$defs"


@pytest.mark.parametrize("uri", [DRAFT202012, DRAFT202012 + "#", None])
def test_the_2020_12_uri_or_no_dollar_schema_means_2020_12(uri: str | None) -> None:
    schema = {"$defs": {"A": {}}, "prefixItems": [{"$ref": "#/$defs/A"}]}
    compiled(schema if uri is None else {"$schema": uri, **schema})
    assert problem({"dependencies": {"a": ["b"]}}).schema_path == "/dependencies"


def test_draft_07_dependencies_hold_data_arrays_and_walked_schemas() -> None:
    schema = {"$schema": DRAFT7, "dependencies": {"a": ["b"], "c": {"required": ["d"]}}}
    validator = compiled(schema)
    assert where(validator.violations({"a": 1, "c": 2})) == [
        ("dependencies", "", "/dependencies"),
        ("required", "", "/dependencies/c/required"),
    ]
    assert problem({"$schema": DRAFT7, "dependencies": {"c": {"requird": ["d"]}}}).schema_path == (
        "/dependencies/c/requird"
    )


def test_draft_07_rejects_assertions_it_would_silently_ignore_next_to_a_ref() -> None:
    base = {"$schema": DRAFT7, "definitions": {"S": {"type": "string"}}}
    compiled({**base, "properties": {"a": {"$ref": "#/definitions/S", "description": "ok"}}})
    found = problem({**base, "properties": {"a": {"$ref": "#/definitions/S", "maxLength": 3}}})
    assert (found.code, found.schema_path) == (
        Code.UNSUPPORTED_SCHEMA_KEYWORD,
        "/properties/a/maxLength",
    )


def test_2020_12_evaluates_assertions_next_to_a_ref() -> None:
    validator = compiled(
        {
            "$defs": {"S": {"type": "string"}},
            "properties": {"a": {"$ref": "#/$defs/S", "maxLength": 3}},
        }
    )
    assert where(validator.violations({"a": "long"})) == [
        ("maxLength", "/a", "/properties/a/maxLength")
    ]


@pytest.mark.parametrize(
    ("schema", "pointer"),
    [
        ({"$schema": DRAFT7, "prefixItems": [{}]}, "/prefixItems"),
        ({"$schema": DRAFT7, "$defs": {}}, "/$defs"),
        ({"definitions": {"A": {}}}, "/definitions"),
        ({"dependencies": {"a": ["b"]}}, "/dependencies"),
    ],
)
def test_keywords_of_the_other_draft_are_unsupported(schema: dict[str, Any], pointer: str) -> None:
    assert problem(schema).schema_path == pointer


def test_the_allowed_keyword_sets_cover_both_drafts_and_exclude_identity_keywords() -> None:
    for forbidden in ("$id", "$anchor", "$dynamicRef", "$dynamicAnchor", "$schema", "nullable"):
        assert forbidden not in DRAFT7_KEYWORDS | DRAFT202012_KEYWORDS
    assert {"discriminator", "unevaluatedProperties", "$defs"} <= DRAFT202012_KEYWORDS
    assert {"definitions", "additionalItems", "dependencies"} <= DRAFT7_KEYWORDS


@pytest.mark.parametrize(
    "uri",
    ["https://json-schema.org/draft/2019-09/schema", "http://json-schema.org/draft-04/schema#", 7],
)
def test_an_unknown_dialect_is_unsupported(uri: object) -> None:
    found = problem({"$schema": uri, "type": "object"})
    assert (found.code, found.schema_path) == (Code.UNSUPPORTED_SCHEMA_KEYWORD, "/$schema")


def test_dollar_schema_below_the_root_is_unsupported() -> None:
    found = problem({"properties": {"a": {"$schema": DRAFT7}}})
    assert (found.code, found.schema_path) == (
        Code.UNSUPPORTED_SCHEMA_KEYWORD,
        "/properties/a/$schema",
    )


def test_an_invalid_type_name_is_caught_by_the_metaschema() -> None:
    found = problem({"properties": {"a": {"type": "strng"}}})
    assert (found.code, found.schema_path) == (Code.INVALID_SCHEMA, "/properties/a/type")


@pytest.mark.parametrize("schema", [[], "object", 1, None, 1.5])
def test_a_root_that_is_neither_an_object_nor_a_boolean_is_an_invalid_schema(
    schema: object,
) -> None:
    assert (problem(schema).code, problem(schema).schema_path) == (Code.INVALID_SCHEMA, "")


@pytest.mark.parametrize(
    ("schema", "pointer"),
    [
        ({"maximum": float("nan")}, "/maximum"),
        ({"enum": ("a", "b")}, "/enum"),
        ({"properties": {1: {}}}, "/properties"),
        ({"pattern": "a{4294967296}"}, "/pattern"),
        ({"patternProperties": {"(": {}}}, "/patternProperties"),
    ],
)
def test_values_json_or_python_regexes_cannot_express_are_an_invalid_schema(
    schema: dict[str, Any], pointer: str
) -> None:
    assert (problem(schema).code, problem(schema).schema_path) == (Code.INVALID_SCHEMA, pointer)


def test_false_subschemas_report_their_own_path_and_the_false_keyword() -> None:
    validator = compiled(
        {"properties": {"x": False, "y": True}, "prefixItems": [False], "items": False}
    )
    assert where(validator.violations({"x": 1, "y": 2})) == [("false", "/x", "/properties/x")]
    assert where(validator.violations([1, 2])) == [
        ("items", "", "/items"),
        ("false", "/0", "/prefixItems/0"),
    ]


def test_boolean_root_schemas_accept_everything_or_nothing() -> None:
    assert compiled(True).violations({"any": "thing"}) == []
    assert where(compiled(False).violations({})) == [("false", "", "")]


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#"},
        {"anyOf": [{"type": "string"}, {"$ref": "#"}]},
        {
            "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"allOf": [{"$ref": "#/$defs/A"}]}},
            "properties": {"a": {"$ref": "#/$defs/A"}},
        },
        {"if": {"not": {"$ref": "#"}}},
    ],
)
def test_a_ref_cycle_that_never_descends_is_an_invalid_schema(schema: dict[str, Any]) -> None:
    found = problem(schema)
    assert found.code is Code.INVALID_SCHEMA and found.schema_path.endswith("/$ref")


def test_a_recursive_ref_that_descends_into_children_validates_trees() -> None:
    schema = {
        "$defs": {
            "Node": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                },
            }
        },
        "$ref": "#/$defs/Node",
    }
    tree: dict[str, Any] = {"name": "leaf"}
    for _ in range(60):
        tree = {"name": "n", "children": [tree]}
    validator = compiled(schema)
    assert validator.violations(tree) == []
    bad = {"name": "root", "children": [{"name": "a"}, {"name": "b", "children": [{}]}]}
    assert where(validator.violations(bad)) == [
        ("required", "/children/1/children/0", "/$defs/Node/required")
    ]


def test_violations_are_sorted_by_instance_path_then_schema_path() -> None:
    schema = {
        "type": "object",
        "required": ["b", "a"],
        "properties": {
            "z": {"type": "integer", "minimum": 5, "multipleOf": 2},
            "m": {"type": "string"},
        },
    }
    found = compiled(schema).violations({"z": 3, "m": 1})
    assert [(v.instance_path, v.schema_path) for v in found] == sorted(
        (v.instance_path, v.schema_path) for v in found
    )
    assert [v.message for v in found[:2]] == [
        "'a' is a required property",
        "'b' is a required property",
    ]


def test_a_compiled_schema_is_reusable_and_independent_of_the_callers_dict() -> None:
    schema = copy.deepcopy(OPENAI_STRICT)
    validator = compiled(schema)
    schema["properties"]["query"]["type"] = "integer"
    schema["required"].append("new")
    for _ in range(3):
        assert validator.violations({"query": "q", "limit": 1, "items": []}) == []
        assert len(validator.violations({})) == 3


def test_long_messages_are_truncated_to_200_characters() -> None:
    (violation,) = compiled({"enum": ["a"]}).violations("x" * 1000)
    assert len(violation.message) == 200


def test_a_huge_integer_against_a_fractional_multiple_of_is_answered_not_raised() -> None:
    validator = compiled({"multipleOf": 0.5})
    assert validator.violations(10**400) == []
    assert where(compiled({"multipleOf": 0.3}).violations(10**400 + 1)) == [
        ("multipleOf", "", "/multipleOf")
    ]


def test_unique_items_on_many_objects_answers_fast() -> None:
    validator = compiled({"type": "array", "uniqueItems": True})
    assert validator.violations([{"a": i, "b": [i, {"c": None}]} for i in range(50_000)]) == []


@pytest.mark.parametrize(
    ("items", "unique"),
    [
        ([{"a": 1, "b": 2}, {"b": 2, "a": 1}], False),
        ([1, 1.0], False),
        ([[1, {"x": 2}], [1.0, {"x": 2}]], False),
        ([True, 1], True),
        ([False, 0, None, "0", ""], True),
        ([[1, 2], [2, 1]], True),
        ([{"a": 1}, {"a": True}], True),
    ],
)
def test_unique_items_uses_json_schema_equality(items: list[object], unique: bool) -> None:
    assert (compiled({"uniqueItems": True}).violations(items) == []) is unique


@pytest.mark.parametrize("text", ["a{4294967296}", "(" * 100_000, "[", "a**"])
def test_model_written_text_that_breaks_re_compile_is_a_format_violation(text: str) -> None:
    validator = compiled({"type": "string", "format": "regex"})
    assert where(validator.violations(text)) == [("format", "", "/format")]


def test_unevaluated_properties_false_closes_a_composed_object() -> None:
    validator = compiled(
        {
            "allOf": [{"properties": {"a": {}}}],
            "properties": {"b": {}},
            "unevaluatedProperties": False,
        }
    )
    assert validator.violations({"a": 1, "b": 2}) == []
    assert where(validator.violations({"a": 1, "c": 3})) == [
        ("unevaluatedProperties", "", "/unevaluatedProperties")
    ]


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(sorted(DRAFT202012_KEYWORDS | {"$ref", "requird", "a"}))
            | st.text(max_size=4),
            inner,
            max_size=4,
        )
    ),
    max_leaves=20,
)


# Values that are equal, or look it, under JSON Schema's equality.
EQUALITY_TRAPS = [
    0,
    0.0,
    -0.0,
    1,
    1.0,
    True,
    False,
    None,
    "",
    "1",
    [],
    {},
    [1],
    [1.0],
    [True],
    {"a": 1},
    {"a": 1.0},
    {"a": True},
    {"a": [1], "b": {}},
    {"b": {}, "a": [1.0]},
]


def json_equal(one: object, two: object) -> bool:
    """JSON Schema's equality (2020-12 core, 4.2.2), written out as the reference: numbers by
    value, booleans only to booleans, arrays item by item, objects member by member."""
    if isinstance(one, bool) or isinstance(two, bool):
        return type(one) is type(two) and one == two
    if isinstance(one, int | float) and isinstance(two, int | float):
        return one == two
    if isinstance(one, list) and isinstance(two, list):
        return len(one) == len(two) and all(map(json_equal, one, two))
    if isinstance(one, dict) and isinstance(two, dict):
        return one.keys() == two.keys() and all(json_equal(one[k], two[k]) for k in one)
    return type(one) is type(two) and one == two


def test_the_reference_equality_tells_the_traps_apart() -> None:
    assert json_equal([True], [True]) and not json_equal([True], [1])
    assert json_equal({"a": [1], "b": {}}, {"b": {}, "a": [1.0]}) and not json_equal(0, False)


@settings(max_examples=300, deadline=None)
@given(st.lists(JSON | st.sampled_from(EQUALITY_TRAPS), max_size=6))
def test_unique_items_agrees_with_json_schemas_equality(items: list[object]) -> None:
    """Against the reference above, not jsonschema's own check: jsonschema 4.26 calls
    ``[[true], [1], [true]]`` unique, which it is not (``[true]`` repeats)."""
    unique = not any(
        json_equal(items[i], items[j]) for i in range(len(items)) for j in range(i + 1, len(items))
    )
    assert (compiled({"uniqueItems": True}).violations(items) == []) is unique


def test_a_repeated_array_of_true_beside_an_array_of_one_is_not_unique() -> None:
    assert [
        v.keyword for v in compiled({"uniqueItems": True}).violations([[True], [1], [True]])
    ] == ["uniqueItems"]


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_compiling_any_json_value_answers_instead_of_raising(schema: object) -> None:
    assert isinstance(compile_schema(schema), ToolSchema | SchemaProblem)


def resolve(document: Any, pointer: str) -> Any:
    for token in pointer.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        document = document[int(token)] if isinstance(document, list) else document[token]
    return document


@pytest.mark.sweep
@settings(max_examples=300, deadline=None)
@given(JSON)
def test_any_json_arguments_get_violations_at_real_schema_locations(arguments: object) -> None:
    for schema in (PYDANTIC_WEATHER, PYDANTIC_PETS, OPENAI_STRICT):
        for violation in compiled(schema).violations(arguments):
            assert violation.keyword in DRAFT202012_KEYWORDS
            assert resolve(schema, violation.schema_path) is not None


def test_a_schema_is_compiled_once_per_process_and_the_cache_stays_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from callgate.reassemble import schema as module

    calls: list[object] = []
    original = module.compile_schema
    monkeypatch.setattr(module, "compile_schema", lambda s: calls.append(s) or original(s))
    monkeypatch.setattr(module, "SCHEMA_CACHE_SIZE", 2)
    monkeypatch.setattr(module, "_CACHE", module.OrderedDict())
    first = {"type": "object", "properties": {"a": {"type": "string"}}}
    same = {"type": "object", "properties": {"a": {"type": "string"}}}
    reordered = {"properties": {"a": {"type": "string"}}, "type": "object"}
    assert module.compiled_schema(first) is module.compiled_schema(same)
    assert module.compiled_schema(reordered) is not module.compiled_schema(first)
    assert len(calls) == 2
    module.compiled_schema(True)  # a third schema: the least recently used one goes
    assert list(module._CACHE) == ['{"type":"object","properties":{"a":{"type":"string"}}}', "true"]
    module.compiled_schema(reordered)
    assert len(calls) == 4  # forgotten, so compiled again
    unhashable = {"enum": {1, 2}}  # not JSON: judged, never cached
    assert isinstance(module.compiled_schema(unhashable), module.SchemaProblem)
    assert len(module._CACHE) == 2


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"uniqueItems": False}, [1, 1, {"a": 1}, {"a": 1}]),
        ({"uniqueItems": True}, "aa"),
        ({"uniqueItems": True}, {"a": 1, "b": 1}),
        ({"type": "array", "uniqueItems": True}, []),
    ],
)
def test_unique_items_asks_nothing_when_false_or_of_a_value_that_is_no_array(
    schema: dict[str, object], value: object
) -> None:
    assert compiled(schema).violations(value) == []


@pytest.mark.parametrize("value", [{1, 2}, b"x", (1, 2), object()])
def test_a_python_value_json_cannot_hold_makes_the_schema_invalid(value: object) -> None:
    found = problem({"type": "object", "properties": {"a": {"const": value}}})
    assert (found.code, found.schema_path, found.message) == (
        Code.INVALID_SCHEMA,
        "/properties/a/const",
        f"{type(value).__name__} is not a JSON value",
    )


def test_a_ref_into_a_loop_of_refs_elsewhere_is_reported_not_followed_forever() -> None:
    schema = {
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/a"}},
        "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
    }
    problem = compile_schema(schema)
    assert isinstance(problem, SchemaProblem)
    assert (problem.code, problem.schema_path) == (Code.INVALID_SCHEMA, "/$defs/a/$ref")


# -- the quick yes for plain schemas -----------------------------------------------------------

SUBSET_NAMES = ["a", "b", "c"]
SUBSET_TYPES = ["object", "array", "string", "integer", "number", "boolean", "null"]
SUBSET_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.text("ab", max_size=3)
    | st.sampled_from([0.0, -0.0, 1.0, 1.5, -2.0, 2.5, 1e300])
)
SUBSET_VALUES = st.recursive(
    SUBSET_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(SUBSET_NAMES), inner, max_size=3)
    ),
    max_leaves=10,
)
SUBSET_NUMBERS = st.integers(-3, 3) | st.sampled_from([0.5, -1.5, 2.0])
SUBSET_SIZES = st.integers(0, 3)
SUBSET_LEAF = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(SUBSET_TYPES)
        | st.lists(st.sampled_from(SUBSET_TYPES), min_size=1, max_size=3, unique=True),
        "enum": st.lists(SUBSET_SCALARS, min_size=1, max_size=3),
        "const": SUBSET_SCALARS,
        "minimum": SUBSET_NUMBERS,
        "maximum": SUBSET_NUMBERS,
        "exclusiveMinimum": SUBSET_NUMBERS,
        "exclusiveMaximum": SUBSET_NUMBERS,
        "minLength": SUBSET_SIZES,
        "maxLength": SUBSET_SIZES,
        "minItems": SUBSET_SIZES,
        "maxItems": SUBSET_SIZES,
        "minProperties": SUBSET_SIZES,
        "maxProperties": SUBSET_SIZES,
        "description": st.text(max_size=3),
        "title": st.text(max_size=3),
    },
)


def subset_schemas(false: bool) -> st.SearchStrategy[Any]:
    """Schemas of the subset's keywords, nested; with ``false``, also `false` subschemas (which
    the subset leaves to jsonschema)."""
    leaves = SUBSET_LEAF | st.just(True) | (st.just(False) if false else st.nothing())

    def nested(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        applicators = st.fixed_dictionaries(
            {},
            optional={
                "properties": st.dictionaries(st.sampled_from(SUBSET_NAMES), inner, max_size=3),
                "required": st.lists(st.sampled_from(SUBSET_NAMES), unique=True, max_size=3),
                "additionalProperties": inner | st.booleans(),
                "items": inner | st.booleans(),
            },
        )
        return st.tuples(SUBSET_LEAF, applicators).map(lambda parts: {**parts[0], **parts[1]})

    return st.recursive(leaves, nested, max_leaves=6)


@pytest.mark.sweep
@settings(max_examples=1000, deadline=None)
@given(subset_schemas(false=False), SUBSET_VALUES, st.sampled_from([None, DRAFT7]))
def test_the_quick_yes_says_exactly_what_jsonschema_says_on_the_subset(
    schema: Any, value: object, dialect: str | None
) -> None:
    if dialect and isinstance(schema, dict):
        schema = {**schema, "$schema": dialect}
    base = _DIALECTS[
        dialect.rstrip("#").replace("http:", "https:") if dialect else DRAFT202012
    ].base(schema)
    fits = accepting(schema)
    assert fits is not None
    assert fits(value) is (next(base.iter_errors(value), None) is None)


@pytest.mark.sweep
@settings(max_examples=1000, deadline=None)
@given(subset_schemas(false=True), JSON | SUBSET_VALUES, st.lists(JSON, max_size=3))
def test_the_quick_yes_never_accepts_what_jsonschema_rejects(
    schema: Any, value: object, more_members: list[object]
) -> None:
    """Any JSON value, `false` subschemas (no quick answer) and containers in `enum` (never a
    quick yes): a yes is always jsonschema's yes; the rest is jsonschema's to answer."""
    if isinstance(schema, dict) and "enum" in schema:
        schema = {**schema, "enum": schema["enum"] + more_members}
    fits = accepting(schema)
    base = _DIALECTS[DRAFT202012].base(schema)
    if fits is not None and fits(value):
        assert next(base.iter_errors(value), None) is None
    tool = compile_schema(schema)
    assert isinstance(tool, ToolSchema)
    assert (tool.violations(value) == []) is (next(base.iter_errors(value), None) is None)


def test_the_quick_yes_leaves_other_keywords_and_values_json_cannot_hold_to_jsonschema() -> None:
    for schema in (
        PYDANTIC_WEATHER,
        {"type": "string", "pattern": "a"},
        {"anyOf": [True]},
        {"items": [{"type": "string"}]},
        {"properties": {"a": False}},
        False,
    ):
        assert accepting(schema) is None
    fits = accepting({"type": "object", "properties": {"a": {"minimum": 1}}, "required": ["a"]})
    assert fits is not None
    assert fits({"a": 1}) and not fits({"a": 0}) and not fits({})

    class Mapping(dict[str, Any]):
        pass

    assert not fits(Mapping(a=0)) and not fits({"a": Decimal(0)})
    # A boolean is no number: `minimum` does not apply to it; `type` does to a list.
    assert fits({"a": 1.5}) and fits({"a": True}) and not fits(["not an object"])


def test_arguments_the_quick_yes_turns_down_still_get_jsonschemas_violations() -> None:
    tool = compiled(
        {"type": "object", "properties": {"v": {"type": "array", "items": {"type": "integer"}}}}
    )
    assert tool.violations({"v": [*range(1000), 2.0]}) == []
    assert tool.violations({"v": [*range(1000), "x"]}) == [
        Violation("type", "/v/1000", "/properties/v/items/type", "'x' is not of type 'integer'")
    ]


@pytest.mark.parametrize(
    ("keyword", "limit", "value", "fits"),
    [
        ("minimum", 1, 1, True),
        ("minimum", 1, 0.5, False),
        ("minimum", 1.5, 2, True),
        ("maximum", 1, 1.0, True),
        ("maximum", 1, 2, False),
        ("exclusiveMinimum", 1, 1, False),
        ("exclusiveMinimum", 1, 1.5, True),
        ("exclusiveMaximum", 1, 1.0, False),
        ("exclusiveMaximum", 1, 0, True),
        ("minLength", 2, "ab", True),
        ("minLength", 2, "a", False),
        ("maxLength", 1, "ab", False),
        ("maxLength", 2, "ab", True),
        ("minItems", 1, [], False),
        ("minItems", 1, [1], True),
        ("maxItems", 1, [1], True),
        ("maxItems", 1, [1, 2], False),
        ("minProperties", 1, {}, False),
        ("minProperties", 1, {"a": 1}, True),
        ("maxProperties", 1, {"a": 1}, True),
        ("maxProperties", 1, {"a": 1, "b": 2}, False),
    ],
)
def test_the_quick_yes_holds_each_bound_at_its_limit(
    keyword: str, limit: object, value: object, fits: bool
) -> None:
    check = accepting({keyword: limit})
    assert check is not None
    assert check(value) is fits
    assert (
        next(_DIALECTS[DRAFT202012].base({keyword: limit}).iter_errors(value), None) is None
    ) is fits


def test_additional_properties_the_quick_yes_cannot_read_leave_the_schema_to_jsonschema() -> None:
    """A subschema of ``additionalProperties`` outside the subset: the quick yes declines the
    whole schema, rather than judging other members by nothing."""
    schema = {"properties": {"a": {}}, "additionalProperties": {"not": {"type": "string"}}}
    assert accepting(schema) is None
    assert accepting({"items": {"not": {"type": "string"}}}) is None  # and so for items
    check = accepting({"properties": {"a": {}}, "additionalProperties": {}})
    assert check is not None and check({"a": 1, "b": "x"}) is True


@pytest.mark.parametrize(
    ("member", "value", "fits"),
    [
        ("a", "a", True),
        ("a", "b", False),
        (True, True, True),
        (True, 1, False),
        (1, True, False),
        (False, 0, False),
        (1, 1.0, True),
        (2.5, 2.5, True),
        (None, None, True),
        (None, "null", False),
        ("1", 1, False),
    ],
)
def test_the_quick_yes_holds_enum_and_const_to_json_equality(
    member: object, value: object, fits: bool
) -> None:
    """The quick yes itself, not only the verdict: a refusal would send the value to
    jsonschema, which judges it the same, so only this tells that the quick path still runs."""
    for schema in ({"enum": ["other", member]}, {"const": member}):
        check = accepting(schema)
        assert check is not None
        assert check(value) is fits, (schema, value)
        assert (next(_DIALECTS[DRAFT202012].base(schema).iter_errors(value), None) is None) is fits


def test_a_schema_wrong_in_two_places_names_the_first_in_every_process() -> None:
    """langchain-cohere sends ``"type": "str"`` and ``"int"``: which one the message names
    followed string hashing, so a fixture's report changed from one process to the next."""
    code = (
        "from callgate.reassemble.schema import compile_schema\n"
        "print(compile_schema({'type': 'object', 'properties': {"
        "'name': {'type': 'str'}, 'age': {'type': 'int'}}}))"
    )
    said = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in range(6)
    }
    assert said == {
        "SchemaProblem(code=<Code.INVALID_SCHEMA: 'invalid_schema'>, "
        "schema_path='/properties/name/type', "
        "message=\"'str' is not valid under any of the given schemas\")\n"
    }


def test_the_first_place_in_document_order_is_named_inside_lists_too() -> None:
    problem = compile_schema({"allOf": [{"type": "str"}], "properties": {"a": {"type": "int"}}})
    assert isinstance(problem, SchemaProblem)
    assert problem.schema_path == "/allOf/0/type"


#: Values in shapes the metaschemas refuse for some keyword, and in shapes they take.
SHAPES = (
    st.none()
    | st.booleans()
    | st.integers(-2, 3)
    | st.sampled_from([0.5, 1.0, -1.0, "", "x", "str", "object", "integer", [], {}])
    | st.lists(st.sampled_from(["a", "b", 1, "object", "null", "str"]), max_size=3)
    | st.dictionaries(st.sampled_from(SUBSET_NAMES), st.booleans() | st.just({}), max_size=2)
)
SCHEMA_KEYWORDS = [
    "type",
    "enum",
    "const",
    "required",
    "properties",
    "additionalProperties",
    "items",
    "minimum",
    "minLength",
    "maxItems",
    "title",
    "examples",
    "default",
    "deprecated",
    "readOnly",
    "$comment",
    "pattern",
    "$schema",
]


def schema_shapes() -> st.SearchStrategy[Any]:
    """Schemas of the subset's keywords in their plain shapes, each object with at most one
    keyword whose value is drawn from ``SHAPES`` (often one the metaschemas refuse)."""
    odd = st.dictionaries(st.sampled_from(SCHEMA_KEYWORDS), SHAPES, max_size=1)
    leaf = st.tuples(SUBSET_LEAF, odd).map(lambda parts: {**parts[0], **parts[1]})

    def nested(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        applicators = st.fixed_dictionaries(
            {},
            optional={
                "properties": st.dictionaries(st.sampled_from(SUBSET_NAMES), inner, max_size=2),
                "items": inner | st.lists(inner, max_size=1),
                "additionalProperties": inner,
            },
        )
        return st.tuples(leaf, applicators).map(lambda parts: {**parts[0], **parts[1]})

    return st.recursive(leaf | st.booleans(), nested, max_leaves=5)


@pytest.mark.sweep
@settings(max_examples=2000, deadline=None)
@given(schema_shapes(), st.booleans())
def test_a_plainly_valid_schema_is_one_both_metaschemas_accept(schema: Any, at_root: bool) -> None:
    if plainly_valid(schema, root=at_root):
        for uri in (DRAFT7, DRAFT202012):
            dialect = _DIALECTS[uri.rstrip("#").replace("http:", "https:")]
            assert next(dialect.base(dialect.base.META_SCHEMA).iter_errors(schema), None) is None


@settings(max_examples=300, deadline=None)
@given(subset_schemas(false=True))
def test_every_schema_of_the_subset_is_plainly_valid(schema: Any) -> None:
    assert plainly_valid(schema)


def test_a_schema_in_a_shape_the_metaschema_refuses_is_left_to_it() -> None:
    for schema in (
        {"type": "str"},
        {"type": []},
        {"type": ["string", "string"]},
        {"required": ["a", "a"]},
        {"required": "a"},
        {"minLength": -1},
        {"minLength": 1.0},  # valid, but left to jsonschema
        {"minimum": True},
        {"enum": "a"},
        {"title": 1},
        {"properties": {"a": {"type": 1}}},
        {"items": [{"type": "string"}]},
        {"$schema": DRAFT7},  # only a root may say it
        {"pattern": "a"},
        [],
    ):
        assert not plainly_valid(schema, root=False), schema
    assert plainly_valid({"$schema": DRAFT7, "type": "object"})


def test_an_error_from_a_subschema_the_walk_never_saw_names_jsonschema_s_own_path() -> None:
    """Every error jsonschema reports today comes from a subschema of the walked document, whose
    pointer is known; one from anywhere else (a later jsonschema that copies subschemas) still
    names a place, jsonschema's own path, rather than failing the check."""
    from jsonschema import ValidationError

    compiled = compile_schema({"type": "object"})
    assert isinstance(compiled, ToolSchema)
    foreign = ValidationError(
        "'x' is not of type 'integer'",
        validator="type",
        path=["a/b", 0],
        schema_path=["properties", "a~b", "type"],
        schema={"type": "integer"},
    )
    assert compiled._violation(foreign) == Violation(
        "type", "/a~1b/0", "/properties/a~0b/type", "'x' is not of type 'integer'"
    )


#: One value of each JSON kind, and the numbers the types tell apart.
GRID = [None, True, False, 0, 1, 1.0, 1.5, -2, "", "a", [], ["a"], [1], {}, {"a": 1}, {"b": "x"}]
GRID_SCHEMAS = [
    *({"type": kind} for kind in SUBSET_TYPES),
    {"type": ["string", "null"]},
    {"type": ["integer", "boolean"]},
    {"type": ["number"]},
    {"enum": ["a", 1, None, True]},
    {"enum": [1.0]},
    {"const": "a"},
    {"const": 1},
    {"type": "string", "description": "annotations are no constraint", "title": "t"},
    {"$schema": DRAFT202012, "type": "object"},
    {"type": "array", "minItems": 1},
    {"type": "string", "enum": ["a", ""]},
    {"properties": {"a": {"type": "integer"}}, "additionalProperties": False},
    {"properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "string"}},
    {"properties": {"a": {"type": "integer"}}, "additionalProperties": True},
    {"items": False},
    {"items": {"type": "string"}},
    {"items": True},
]


@pytest.mark.parametrize("schema", GRID_SCHEMAS, ids=json.dumps)
def test_the_quick_yes_says_what_jsonschema_says_of_each_kind_of_value(schema: Any) -> None:
    """The fast lane's share of the sweep that holds the quick yes to jsonschema: each type,
    type lists, scalar enums and consts, annotations and a root ``$schema``, against a value
    of each kind (a container is never a scalar enum's member)."""
    fits = accepting(schema)
    assert fits is not None
    base = _DIALECTS[DRAFT202012].base(schema)
    said = {json.dumps(v): fits(v) for v in GRID}
    assert said == {json.dumps(v): next(base.iter_errors(v), None) is None for v in GRID}


def test_a_nested_schema_uri_or_a_type_no_json_value_has_is_left_to_jsonschema() -> None:
    nested = {"type": "object", "properties": {"a": {"$schema": DRAFT202012}}}
    assert accepting(nested) is None and not plainly_valid(nested)
    assert not plainly_valid({"items": {"$schema": DRAFT202012}})
    assert [accepting({"type": kind}) for kind in ("float", [], ["string", "float"], 3)] == [
        None
    ] * 4
    assert plainly_valid({"$schema": DRAFT202012, "type": "object"})


@pytest.mark.parametrize(
    "schema",
    [
        {"properties": []},
        {"properties": {"a": 5}},
        {"additionalProperties": 5},
        {"items": "x"},
        {"enum": "x"},
        {"required": [1]},
        {"required": ["a", "a"]},
        {"type": []},
        {"type": ["string", "string"]},
        {"minLength": -1},
        {"minimum": "1"},
    ],
    ids=json.dumps,
)
def test_a_keyword_in_a_shape_its_metaschema_refuses_is_not_plainly_valid(schema: Any) -> None:
    """The plain reading says "valid" only where both metaschemas do; every other shape goes
    to the metaschema, which names the problem."""
    assert not plainly_valid(schema)
    problem = compile_schema(schema)
    assert isinstance(problem, SchemaProblem) and problem.code is Code.INVALID_SCHEMA


def test_a_schema_problem_cannot_be_changed_once_made() -> None:
    """The compiled-schema cache hands the same problem to every engine and thread."""
    problem = compiled_schema({"type": "strnig"})
    assert isinstance(problem, SchemaProblem)
    with pytest.raises(dataclasses.FrozenInstanceError):
        problem.message = "changed"  # type: ignore[misc]
