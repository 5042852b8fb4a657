"""What Python callers bring from the provider SDKs: their event objects fed to ``Reassembler``,
and their tools lists given to ``Reassembler`` and ``check``, reading as the wire and the
name-to-schema mapping do."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from callgate import Reassembler, UsageError, check
from callgate.reassemble.profiles import PROFILES
from callgate.reassemble.profiles.builtin import TOOL_KEY
from callgate.reassemble.profiles.gemini_schema import to_json_schema
from callgate.reassemble.sdk import tool_schemas_of
from tests.conftest import CONFORMANCE, ROOT, Dumps
from tests.proxy_harness import APPS_PYTHON

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}


def envelope(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def stream(document: dict[str, Any]) -> list[Any]:
    events: list[Any] = document[PROFILES[document["profile"]].stream_key]
    return events


def fed(document: dict[str, Any], events: list[Any], tools: object = None) -> dict[str, Any]:
    """The report of ``events`` read as ``document``'s turn (its tool schemas unless ``tools``)."""
    engine = Reassembler(
        document["profile"],
        document.get("tool_schemas", {}) if tools is None else tools,
        request=document.get("request"),
        provider=document.get("provider"),
    )
    for event in events:
        engine.feed(event)
    report: dict[str, Any] = engine.close().to_dict()
    return report


# -- events ---------------------------------------------------------------------------------------

FIXTURES = sorted(
    path
    for profile in ("openai", "openai-responses", "anthropic", "gemini", "bedrock-converse")
    for path in (CONFORMANCE / profile).glob("*.json")
)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_an_object_with_model_dump_reads_as_the_wire_json_it_dumps(path: Path) -> None:
    document = envelope(path)
    wrapped = [Dumps(event) for event in stream(document)]
    assert fed(document, wrapped) == check(document).to_dict()
    assert {tuple(sorted(w.asked.items())) for w in wrapped} <= {
        (("by_alias", True), ("exclude_unset", True), ("mode", "json"))
    }


def test_an_event_that_is_neither_json_nor_a_model_is_a_type_error_naming_its_type() -> None:
    engine = Reassembler("openai", {"get_weather": WEATHER})
    with pytest.raises(TypeError) as raised:
        engine.feed(Path("chunk.json"))
    assert str(raised.value) == (
        "Reassembler.feed() takes one event as parsed from the wire (a dict) or an SDK's pydantic "
        "model of one, not pathlib.PosixPath"
    )
    assert engine.close().findings == ()  # refused before it counted as an event


@pytest.mark.parametrize("raw", ["data: {}", ["a list"], 7, None, b"{}"])
def test_a_json_value_that_is_no_object_stays_a_finding_not_an_exception(raw: object) -> None:
    [finding] = Reassembler("openai", {}).feed(raw)
    assert (finding.code.value, finding.message) == (
        "unsupported_event",
        "chunk is not a JSON object",
    )


# -- tools ----------------------------------------------------------------------------------------


def chat(schemas: dict[str, Any]) -> list[Any]:
    return [
        {"type": "function", "function": {"name": name, "description": "d", "parameters": schema}}
        for name, schema in schemas.items()
    ]


def responses(schemas: dict[str, Any]) -> list[Any]:
    return [
        {"type": "function", "name": name, "parameters": schema, "strict": False}
        for name, schema in schemas.items()
    ]


def anthropic(schemas: dict[str, Any]) -> list[Any]:
    return [
        {"name": name, "description": "d", "input_schema": schema}
        for name, schema in schemas.items()
    ]


def gemini_tool(schemas: dict[str, Any]) -> list[Any]:
    declarations = [{"name": n, "parametersJsonSchema": s} for n, s in schemas.items()]
    return [{"functionDeclarations": declarations}]


def gemini_snake_tool(schemas: dict[str, Any]) -> list[Any]:
    declarations = [{"name": n, "parameters_json_schema": s} for n, s in schemas.items()]
    return [{"function_declarations": declarations}]


def gemini_declarations(schemas: dict[str, Any]) -> list[Any]:
    return [{"name": n, "parametersJsonSchema": s} for n, s in schemas.items()]


def bedrock(schemas: dict[str, Any]) -> dict[str, Any]:
    return {
        "tools": [{"toolSpec": {"name": n, "inputSchema": {"json": s}}} for n, s in schemas.items()]
    }


SHAPES: list[tuple[str, Callable[[dict[str, Any]], object]]] = [
    ("openai", chat),
    ("mistral", chat),
    ("cohere", chat),
    ("ollama", chat),
    ("openai-responses", responses),
    ("anthropic", anthropic),
    ("gemini", gemini_tool),
    ("gemini", gemini_snake_tool),
    ("gemini", gemini_declarations),
    ("bedrock-converse", bedrock),
]
SHAPED = [
    (path, shape)
    for profile, shape in SHAPES
    for path in sorted((CONFORMANCE / profile).glob("*.json"))
    if envelope(path).get("tool_schemas")
]


@pytest.mark.parametrize(
    ("path", "shape"), SHAPED, ids=[f"{p.parent.name}/{p.stem}-{s.__name__}" for p, s in SHAPED]
)
def test_tools_in_an_sdks_shape_give_the_report_of_the_mapping(
    path: Path, shape: Callable[[dict[str, Any]], object]
) -> None:
    document = envelope(path)
    tools = shape(document.pop("tool_schemas"))
    assert check(document, tools=tools).to_dict() == check(envelope(path)).to_dict()
    assert fed(document, stream(document), tools) == check(envelope(path)).to_dict()


def test_the_openai_sdk_tools_list_no_longer_makes_every_call_an_unknown_tool() -> None:
    document = envelope(CONFORMANCE / "openai" / "valid_parallel_interleaved.json")
    tools = chat(document.pop("tool_schemas"))
    engine = Reassembler("openai", tools)
    for chunk in stream(document):
        engine.feed(chunk)
    report = engine.close()
    assert (report.status.value, report.blocking_codes) == ("pass", [])
    assert Reassembler("openai", tools=tools).close().status.value == "not_applicable"


def test_a_gemini_declaration_reads_its_openapi_parameters_as_gemini_does() -> None:
    parameters = {
        "type": "OBJECT",
        "properties": {"city": {"type": "STRING"}},
        "required": ["city"],
    }
    chunk = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [{"functionCall": {"name": "w", "args": {"city": 1}}}],
                },
                "finishReason": "STOP",
            }
        ]
    }
    by_declaration = Reassembler("gemini", [{"name": "w", "parameters": parameters}])
    by_mapping = Reassembler("gemini", {"w": to_json_schema(parameters)})
    for engine in (by_declaration, by_mapping):
        engine.feed(chunk)
    assert by_declaration.close() == by_mapping.close()
    assert by_mapping.close().blocking_codes == ["schema_violation"]


def test_an_untyped_named_tool_is_a_gemini_declaration_under_the_gemini_profile_only() -> None:
    """Its ``parameters`` are OpenAPI under Gemini (``nullable`` widens the type) and JSON
    Schema elsewhere, where they are kept as they are."""
    parameters = {"type": "object", "properties": {"a": {"type": "string", "nullable": True}}}
    tool = {"name": "w", "parameters": parameters}
    assert tool_schemas_of([tool], "openai-responses") == {"w": parameters}
    assert tool_schemas_of([tool], "gemini") == {
        "w": {"type": "object", "properties": {"a": {"type": ["string", "null"]}}}
    }


def test_a_tool_object_with_model_dump_is_read_as_its_json() -> None:
    tool = Dumps(
        {"functionDeclarations": [{"name": "get_weather", "parametersJsonSchema": WEATHER}]}
    )
    assert tool_schemas_of([tool], "gemini") == {"get_weather": WEATHER}
    assert tool.asked == {"mode": "json", "by_alias": True, "exclude_unset": True}


def test_tools_the_provider_runs_itself_are_left_out_as_in_a_recorded_request() -> None:
    tools = [
        {"type": "web_search"},
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
        {"type": "code_execution_20250825", "name": "code_execution"},
        {"googleSearch": {}},
        *chat({"get_weather": WEATHER}),
    ]
    assert tool_schemas_of(tools, "openai") == {"get_weather": WEATHER}


def test_tools_the_client_runs_without_a_schema_are_read_by_their_definition() -> None:
    """Built-in client tools and custom tools: their definition (what decides the input, not
    the description) stands for the schema callgate ships or the format they declare."""
    tools = [
        {"type": "shell"},
        {
            "type": "computer_use_preview",
            "display_width": 1024,
            "display_height": 768,
            "environment": "linux",
        },
        {"type": "custom", "name": "grammar_tool", "description": "d", "format": {"type": "text"}},
        {"type": "bash_20250124", "name": "bash", "cache_control": {"type": "ephemeral"}},
        {"type": "text_editor_20250429"},
    ]
    assert tool_schemas_of(tools, "openai-responses") == {
        "shell": {TOOL_KEY: {"type": "shell"}},
        "computer": {
            TOOL_KEY: {"type": "computer_use_preview", "display_width": 1024, "display_height": 768}
        },
        "grammar_tool": {
            TOOL_KEY: {"type": "custom", "name": "grammar_tool", "format": {"type": "text"}}
        },
        "bash": {TOOL_KEY: {"type": "bash_20250124", "name": "bash"}},
        "str_replace_based_edit_tool": {TOOL_KEY: {"type": "text_editor_20250429"}},
    }


@pytest.mark.parametrize(
    ("tools", "line"),
    [
        (
            [*chat({"a": WEATHER}), {"type": "function", "function": {"parameters": WEATHER}}],
            "tools[1] has no name (a string); expected an SDK's tool: ",
        ),
        (
            [{"name": "a", "input_schema": "an object"}],
            "tools[0] (a): its schema is not a JSON object; expected an SDK's tool: ",
        ),
        (
            [{"type": "function", "function": {"name": "a", "parameters": ["city"]}}],
            "tools[0] (a): its schema is not a JSON object; expected an SDK's tool: ",
        ),
        ([{"description": "what is it"}], "tools[0] is no tool callgate can read; expected "),
        (["get_weather"], "tools[0]: a tool is a dict or an SDK's pydantic model of one, not "),
        (
            [{"functionDeclarations": [{"name": "a"}, {"parameters": {}}]}],
            "tools[0].functionDeclarations[1] has no name (a string); expected ",
        ),
        (
            [{"functionDeclarations": [{"name": "a", "parametersJsonSchema": "x"}]}],
            "tools[0].functionDeclarations[0] (a): its schema is not a JSON object; expected ",
        ),
        (
            {"tools": [{"toolSpec": {"inputSchema": {"json": WEATHER}}}]},
            "toolConfig.tools[0] has no name (a string); expected ",
        ),
        ("get_weather", "tools must map tool names to JSON Schemas or list tools as the "),
    ],
)
def test_tools_it_cannot_read_are_a_usage_error_of_one_line_naming_the_entry(
    tools: object, line: str
) -> None:
    with pytest.raises(UsageError) as raised:
        Reassembler("openai", tools)  # type: ignore[arg-type]
    assert str(raised.value).startswith(line)
    assert "\n" not in str(raised.value)


def test_tools_given_twice_are_a_usage_error() -> None:
    with pytest.raises(UsageError) as twice:
        Reassembler("openai", {"a": WEATHER}, tools=chat({"a": WEATHER}))
    assert str(twice.value) == "give the tools once: tool_schemas or tools, not both"
    document = envelope(CONFORMANCE / "openai" / "valid_fragmented.json")
    with pytest.raises(UsageError) as also_in_envelope:
        check(document, tools=chat({"a": WEATHER}))
    assert str(also_in_envelope.value) == (
        "give the tools once: the envelope's tool_schemas or tools, not both"
    )


# -- the real SDKs --------------------------------------------------------------------------------

#: Builds each event as the SDK's own stream does (``construct_type``: no validation, fields the
#: wire left out stay unset), feeds the objects, and prints both reports for every fixture.
SDK_SCRIPT = """
import json, sys, warnings
from pathlib import Path
from anthropic._models import construct_type as anthropic_construct
from anthropic.types import RawMessageStreamEvent
from openai._models import construct_type as openai_construct
from openai.types.chat import ChatCompletionChunk
from openai.types.responses import ResponseStreamEvent
from google.genai import types
import callgate
from callgate.reassemble.sdk import tool_schemas_of

warnings.simplefilter("ignore")  # pydantic's notes on unknown block types, which the wire has
BUILD = {
    "openai": lambda d: openai_construct(type_=ChatCompletionChunk, value=d),
    "openai-responses": lambda d: openai_construct(type_=ResponseStreamEvent, value=d),
    "anthropic": lambda d: anthropic_construct(type_=RawMessageStreamEvent, value=d),
}
results = {}
for path in sys.argv[1:]:
    envelope = json.loads(Path(path).read_text(encoding="utf-8"))
    key = "events" if "events" in envelope else "chunks"
    objects = [BUILD[envelope["profile"]](event) for event in envelope[key]]
    assert all(type(o) is not dict for o in objects), path
    engine = callgate.Reassembler(
        envelope["profile"], envelope.get("tool_schemas", {}),
        request=envelope.get("request"), provider=envelope.get("provider"),
    )
    for event in objects:
        engine.feed(event)
    results[path] = [engine.close().to_dict(), callgate.check(envelope).to_dict()]
declared = types.Tool(function_declarations=[
    types.FunctionDeclaration(name="get_weather", parameters_json_schema={"type": "object"}),
])
results["gemini tool"] = tool_schemas_of([declared], "gemini")
print(json.dumps(results))
"""
#: The one fixture whose wire the SDK's model does not give back: its serializer writes the
#: string index "0" as the number 0.
SDK_REWRITES = {"invalid_slot_string_index.json"}


@pytest.mark.sdk
def test_real_sdk_models_read_as_their_wire_json() -> None:
    paths = [
        str(path)
        for profile in ("openai", "openai-responses", "anthropic")
        for path in sorted((CONFORMANCE / profile).glob("*.json"))
        if path.name not in SDK_REWRITES
    ]
    done = subprocess.run(
        [str(APPS_PYTHON), "-c", SDK_SCRIPT, *paths],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    assert results.pop("gemini tool") == {"get_weather": {"type": "object"}}
    assert len(results) == len(paths) > 100
    differing = [
        path for path, (from_objects, from_wire) in results.items() if from_objects != from_wire
    ]
    assert differing == []


#: docs/guard.md's example, for openai and anthropic: the SDK streams a fixture from callgate's fake
#: provider, and each object it hands out goes straight to ``feed``, with the SDK's tools list.
STREAMED_SCRIPT = """
import json, sys
import anthropic, openai
import callgate

base, results = sys.argv[1], {}
for path in sys.argv[2:]:
    envelope = json.loads(open(path, encoding="utf-8").read())
    profile, name = envelope["profile"], path.rsplit("/", 1)[1].removesuffix(".json")
    schemas, messages = envelope["tool_schemas"], [{"role": "user", "content": "Weather?"}]
    if profile == "openai":
        tools = [{"type": "function", "function": {"name": n, "parameters": s}}
                 for n, s in schemas.items()]
        client = openai.OpenAI(base_url=f"{base}/f/openai/{name}/v1", api_key="k")
        stream = client.chat.completions.create(
            model="m", messages=messages, tools=tools, stream=True)
    else:
        tools = [{"name": n, "input_schema": s} for n, s in schemas.items()]
        client = anthropic.Anthropic(base_url=f"{base}/f/anthropic/{name}", api_key="k")
        stream = client.messages.create(
            model="m", max_tokens=64, messages=messages, tools=tools, stream=True)
    engine = callgate.Reassembler(profile, tools=tools, provider=envelope.get("provider"))
    kinds = set()
    for event in stream:
        kinds.add(type(event).__module__.split(".")[0])
        engine.feed(event)
    results[path] = [sorted(kinds), engine.close().to_dict()]
print(json.dumps(results))
"""


@pytest.mark.sdk
def test_sdk_streams_fed_straight_to_the_engine_with_the_sdks_tools_read_as_recorded() -> None:
    from tests.proxy_harness import fake_provider

    paths = [
        CONFORMANCE / path
        for path in (
            "openai/valid_fragmented.json",
            "openai/valid_parallel_interleaved.json",
            "openai/reused_index_new_id.json",
            "anthropic/valid_fragmented.json",
            "anthropic/valid_text_then_two_tools.json",
            "anthropic/reused_index_new_id.json",
        )
    ]
    provider = fake_provider()
    try:
        done = subprocess.run(
            [str(APPS_PYTHON), "-c", STREAMED_SCRIPT, provider.url, *map(str, paths)],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            check=False,
        )
    finally:
        provider.close()
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    for path in paths:
        kinds, report = results[str(path)]
        assert kinds == [path.parent.name]  # every event was the SDK's own object
        expected = check(envelope(path)).to_dict()
        # Event indices aside: the anthropic SDK hands out no ``ping`` event.
        assert report["status"] == expected["status"]
        assert without_events(report["calls"]) == without_events(expected["calls"]) != []
        assert [f["code"] for f in report["findings"]] == [f["code"] for f in expected["findings"]]


def without_events(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{key: value for key, value in call.items() if key != "events"} for call in calls]
