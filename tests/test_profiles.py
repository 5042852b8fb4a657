"""Every profile in the registry supplies every wire fact the parts around the engine ask for,
and each fact agrees with the profile's own reader and its conformance fixtures."""

from __future__ import annotations

import base64
import copy
import dataclasses
import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from callgate.reassemble import Code, Reassembler, Status, check
from callgate.reassemble.events import SlotKey
from callgate.reassemble.eventstream import decode
from callgate.reassemble.limits import Limits
from callgate.reassemble.profiles import (
    PROFILES,
    anthropic,
    framed,
    profile_for,
    profile_of_events,
)
from callgate.reassemble.profiles.base import ArgumentSite, Profile, function_tools, reason_replaced
from callgate.reassemble.profiles.openai import ChatTranslator, names_cannot_repeat
from callgate.reassemble.providers import provider_from_url
from callgate.reassemble.readers import event_reader, event_value
from callgate.reassemble.sse import decode_all
from tests.conftest import CONFORMANCE, load
from tests.proxy_harness import request_body

NAMES = sorted(PROFILES)


def fixtures_of(profile: Profile) -> list[Path]:
    return sorted((CONFORMANCE / profile.name).glob("*.json"))


@pytest.mark.parametrize("name", NAMES)
def test_each_profile_has_its_conformance_fixtures(name: str) -> None:
    assert len(fixtures_of(PROFILES[name])) >= 10


@pytest.mark.parametrize("name", NAMES)
def test_each_endpoint_leads_to_its_profile(name: str) -> None:
    profile = PROFILES[name]
    provider = next(iter(profile.claims), None)
    assert profile.endpoints
    for endpoint in profile.endpoints:
        assert profile_for(f"https://api.example/v1{endpoint}?key=x", provider) == name


@pytest.mark.parametrize(
    ("path", "name"),
    [
        (
            "/model/anthropic.claude-3-haiku-20240307-v1%3A0/invoke-with-response-stream",
            "anthropic",
        ),
        (
            "/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/invoke-with-response-stream",
            "anthropic",
        ),
        ("/model/amazon.nova-micro-v1%3A0/invoke-with-response-stream", None),
        ("/model/anthropic.claude-3-haiku-20240307-v1%3A0/invoke", None),
        ("/model/amazon.nova-micro-v1%3A0/converse-stream", "bedrock-converse"),
    ],
)
def test_bedrock_paths_lead_to_converse_and_to_anthropic_only_for_anthropic_models(
    path: str, name: str | None
) -> None:
    assert profile_for(f"https://bedrock-runtime.us-east-1.amazonaws.com{path}") == name


@pytest.mark.parametrize("name", [n for n in NAMES if PROFILES[n].to_message is not None])
def test_the_error_message_of_an_event_stream_is_read_back_as_a_stream_error(name: str) -> None:
    profile = PROFILES[name]
    assert profile.to_message is not None and profile.from_message is not None
    body = profile.error_body("callgate blocked this turn: missing_terminal", ["missing_terminal"])
    message = decode(profile.to_message(body))
    assert message.header(":message-type") == "exception"
    # Anthropic's error travels as Bedrock's exception, which is what reads back.
    read_back = (
        {
            "type": "error",
            "error": {
                "type": "modelStreamErrorException",
                "message": "callgate blocked this turn: missing_terminal",
            },
        }
        if name == "anthropic"
        else body
    )
    assert profile.from_message(message) == read_back
    findings = Reassembler(name, {}).feed(profile.from_message(message))
    assert [finding.code for finding in findings] == [Code.STREAM_ERROR]


@pytest.mark.parametrize("name", NAMES)
def test_the_error_event_is_read_by_the_profile_as_a_stream_error(name: str) -> None:
    profile = PROFILES[name]
    body = profile.error_body("callgate blocked this turn: missing_terminal", ["missing_terminal"])
    [event], incomplete = decode_all(profile.sse_frame(body))
    assert (json.loads(event.data), incomplete) == (body, False)
    if profile.event_lines:
        assert event.event == body["type"]
    findings = Reassembler(name, {}).feed(json.loads(event.data))
    assert [finding.code for finding in findings] == [Code.STREAM_ERROR]


@pytest.mark.parametrize("name", NAMES)
def test_tool_schemas_are_read_back_from_a_request_in_the_profiles_shape(name: str) -> None:
    for path in fixtures_of(PROFILES[name]):
        fixture_name = f"{name}/{path.stem}"
        schemas = load(path).get("tool_schemas", {})
        request = json.loads(request_body(fixture_name))
        assert PROFILES[name].tool_schemas(request) == schemas, fixture_name


def texts_at(sites: list[ArgumentSite], whole_calls: bool) -> set[str]:
    """What the sites hold as argument texts: each call's stream fragments joined, and each copy
    (a text as it is; an object, or with ``whole_calls`` any value, as the engine writes a call
    that arrives whole: compact JSON). Free-form input alike; a built-in call's input object is
    its member under its name, as ``responses_builtins.input_text`` writes it."""
    streams: dict[object, list[str]] = {}
    texts = set()
    for kind, key, container, field in sites:
        value = container[field]
        if kind in ("stream", "text") and isinstance(value, str):
            streams.setdefault(key, []).append(value)
        elif kind == "text_copy":
            texts.add(
                value
                if isinstance(value, str)
                else json.dumps(
                    {field: value}, sort_keys=True, ensure_ascii=False, separators=(",", ":")
                )
            )
        elif kind == "copy":
            texts.add(
                value
                if isinstance(value, str) and not whole_calls
                else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
            )
    return texts | {"".join(parts) for parts in streams.values()}


@pytest.mark.parametrize("name", NAMES)
def test_argument_sites_hold_the_arguments_of_every_call(name: str) -> None:
    """Every call's reassembled arguments are found at the sites the profile names: the
    redactor masks exactly what it finds there, so a missed site would keep an argument. (Vertex
    ``partialArgs`` build arguments from typed pieces; there the string pieces must be found.)"""
    profile = PROFILES[name]
    checked = 0
    for path in fixtures_of(profile):
        envelope = load(path)
        sites = list(profile.argument_sites(envelope[profile.stream_key]))
        texts = texts_at(sites, profile.whole_calls)
        pieces = [site for site in sites if site[0] == "piece"]
        streamed: dict[object, str] = {}
        for kind, key, container, field in sites:
            if kind in ("stream", "text") and isinstance(container[field], str):
                streamed[key] = streamed.get(key, "") + container[field]
        for call in check(envelope).calls:
            # An implied {} (Cohere, Bedrock: a call whose fragments, if any, joined to nothing)
            # is on no site and holds nothing to mask. A call that arrives whole is always on one.
            implied = (
                call.arguments == "{}" and not streamed.get(call.slot) and not profile.whole_calls
            )
            if call.arguments and not implied and not pieces:
                # fragments after a call's end come after its text
                assert any(text.startswith(call.arguments) for text in texts), (
                    path.name,
                    call.arguments,
                )
                checked += 1
    assert checked >= 10


@pytest.mark.parametrize("name", NAMES)
def test_a_passing_turn_shows_its_terminal_evidence(name: str) -> None:
    profile = PROFILES[name]
    passing = [
        load(p) for p in fixtures_of(profile) if load(p).get("expect", {}).get("status") == "pass"
    ]
    assert passing
    for envelope in passing:
        assert any(profile.carries_terminal(raw) for raw in envelope[profile.stream_key])


def test_sniffing_names_only_profiles_whose_first_event_is_unmistakable() -> None:
    sniffed = {
        name: profile_of_events(load(fixtures_of(PROFILES[name])[0])[PROFILES[name].stream_key])
        for name in NAMES
    }
    assert sniffed == {
        "anthropic": "anthropic",
        "bedrock-converse": "bedrock-converse",
        "cohere": "cohere",
        "gemini": None,
        "gemini-live": None,
        "mistral": "openai",
        "ollama": "ollama",
        "openai": "openai",
        "openai-realtime": None,
        "openai-responses": None,
    }


def _set(path: list[str | int], value: object) -> object:
    """An edit of a fixture's stream: set the value at ``path`` (inserting at a list index that
    is a string, e.g. ``"+2"``)."""

    def edit(stream: list[object]) -> None:
        target: object = stream
        for step in path[:-1]:
            target = target[step]  # type: ignore[index]
        last = path[-1]
        if isinstance(last, str) and last.startswith("+"):
            target.insert(int(last[1:]), value)  # type: ignore[attr-defined]
        else:
            target[last] = value  # type: ignore[index]

    return edit


MALFORMED = {
    "anthropic delta not an object": (
        "anthropic/valid_fragmented",
        _set(["+2"], {"type": "content_block_delta", "index": 0, "delta": "oops"}),
        "/events/2/delta",
        "delta has no type",
    ),
    "anthropic content_block without type": (
        "anthropic/valid_fragmented",
        _set(["+1"], {"type": "content_block_start", "index": 5, "content_block": {"id": "x"}}),
        "/events/1/content_block",
        "content_block has no type",
    ),
    "anthropic unknown content block type, its name clipped": (
        "anthropic/valid_fragmented",
        _set(
            ["+1"],
            {"type": "content_block_start", "index": 5, "content_block": {"type": "z" * 100}},
        ),
        "/events/1/content_block/type",
        f"content block type {'z' * 40!r} is not known; it could be a call",
    ),
    "anthropic numeric stop_reason": (
        "anthropic/valid_fragmented",
        _set([10, "delta", "stop_reason"], 7),
        "/events/10/delta/stop_reason",
        "stop_reason is not a string",
    ),
    "anthropic text delta on a tool_use block": (
        "anthropic/valid_fragmented",
        _set(
            ["+2"],
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "x"},
            },
        ),
        "/events/2/delta/type",
        "'text_delta' delta on a 'tool_use' block",
    ),
    "gemini unknown part field, its name clipped": (
        "gemini/valid_single_call",
        _set([0, "candidates", 0, "content", "parts", 0, "q" * 60], 1),
        f"/chunks/0/candidates/0/content/parts/0/{'q' * 60}",
        f"part field {'q' * 40!r} is not known",
    ),
    "gemini chunk not an object": (
        "gemini/valid_single_call",
        _set(["+0"], 5),
        "/chunks/0",
        "chunk is not a JSON object",
    ),
    "gemini unknown partialArgs field": (
        "gemini/valid_single_call",
        _set(
            [0, "candidates", 0, "content", "parts", 0, "functionCall"],
            {
                "name": "get_weather",
                "willContinue": True,
                "partialArgs": [
                    {"jsonPath": "$.city", "stringValue": "Os", "bogus": 1, "willContinue": True}
                ],
            },
        ),
        "/chunks/0/candidates/0/content/parts/0/functionCall/partialArgs/0",
        "partialArgs: partialArgs field 'bogus' is not known",
    ),
    "openai message object without its quirk": (
        "openai/valid_fragmented",
        _set([1, "choices", 0, "message"], {"role": "assistant"}),
        "/chunks/1/choices/0/message",
        "a streamed choice carries a message object",
    ),
    "openai message object equal to the delta, without Writer's quirk": (
        "openai/valid_fragmented",
        lambda stream: stream[1]["choices"][0].__setitem__(
            "message", dict(stream[1]["choices"][0]["delta"])
        ),
        "/chunks/1/choices/0/message",
        "a streamed choice carries a message object",
    ),
    "openai delta not an object": (
        "openai/valid_fragmented",
        _set([1, "choices", 0, "delta"], "x"),
        "/chunks/1/choices/0/delta",
        "delta is not an object",
    ),
    "bedrock unknown event type, its name clipped": (
        "bedrock-converse/valid_tool_only",
        _set(["+1"], {"e" * 60: {}}),
        f"/events/1/{'e' * 60}",
        f"event type {'e' * 40!r} is not known",
    ),
    "bedrock unknown block start in the second block, its name clipped": (
        "bedrock-converse/valid_single_call",
        _set([4, "contentBlockStart", "start"], {"s" * 60: {}}),
        f"/events/4/contentBlockStart/start/{'s' * 60}",
        f"block start {'s' * 40!r} is not known",
    ),
    "bedrock block start of two members": (
        "bedrock-converse/valid_tool_only",
        lambda stream: stream[1]["contentBlockStart"]["start"].__setitem__("text", ""),
        "/events/1/contentBlockStart/start",
        "start is not an object of one member",
    ),
    "bedrock unknown delta member in the second block, its name clipped": (
        "bedrock-converse/valid_parallel_calls",
        _set([5, "contentBlockDelta", "delta"], {"p" * 60: {}}),
        f"/events/5/contentBlockDelta/delta/{'p' * 60}",
        f"delta {'p' * 40!r} is not known",
    ),
    "bedrock event of two members": (
        "bedrock-converse/valid_tool_only",
        _set(["+1"], {"contentBlockStop": {"contentBlockIndex": 0}, "metadata": {}}),
        "/events/1",
        "event is not one {eventType: payload} object",
    ),
    "bedrock payload not an object, its type clipped": (
        "bedrock-converse/valid_tool_only",
        _set(["+1"], {"k" * 60: 5}),
        f"/events/1/{'k' * 60}",
        f"{'k' * 40} payload is not an object",
    ),
    "bedrock text delta on the second block's toolUse": (
        "bedrock-converse/valid_single_call",
        _set([5, "contentBlockDelta", "delta"], {"text": "x"}),
        "/events/5/contentBlockDelta/delta/text",
        "a text delta on a toolUse block",
    ),
    "bedrock toolUse delta on the second block, started as text": (
        "bedrock-converse/valid_single_call",
        _set([4, "contentBlockStart", "start"], {"text": ""}),
        "/events/5/contentBlockDelta/delta/toolUse",
        "a toolUse delta on a block that is not a tool call",
    ),
    "cohere event without a type": (
        "cohere/valid_single_call",
        _set(["+1"], {"delta": {}}),
        "/events/1",
        "event has no type",
    ),
    "cohere unknown event type, its name clipped": (
        "cohere/valid_single_call",
        _set(["+1"], {"type": "t" * 60}),
        "/events/1/type",
        f"event type {'t' * 40!r} is not known",
    ),
    "cohere tool_calls of the second call not an object": (
        "cohere/valid_parallel_calls",
        _set([9, "delta", "message", "tool_calls"], "x"),
        "/events/9/delta/message/tool_calls",
        "tool_calls is not an object",
    ),
    "cohere function of the second call not an object": (
        "cohere/valid_parallel_calls",
        _set([9, "delta", "message", "tool_calls", "function"], "x"),
        "/events/9/delta/message/tool_calls/function",
        "function is not an object",
    ),
    "cohere arguments of the second call not a string": (
        "cohere/valid_parallel_calls",
        _set([9, "delta", "message", "tool_calls", "function", "arguments"], 5),
        "/events/9/delta/message/tool_calls/function/arguments",
        "arguments is not a string",
    ),
    "cohere finish_reason not a string": (
        "cohere/valid_single_call",
        _set([9, "delta", "finish_reason"], 5),
        "/events/9/delta/finish_reason",
        "finish_reason is not a string",
    ),
    "anthropic partial_json not a string": (
        "anthropic/valid_fragmented",
        lambda stream: next(e for e in stream if e["type"] == "content_block_delta")[
            "delta"
        ].__setitem__("partial_json", 5),
        "/events/2/delta/partial_json",
        "partial_json is not a string",
    ),
    "bedrock delta of two members": (
        "bedrock-converse/valid_single_call",
        lambda stream: stream[5]["contentBlockDelta"]["delta"].__setitem__("text", ""),
        "/events/5/contentBlockDelta/delta",
        "delta is not an object of one member",
    ),
    "bedrock stopReason not a string": (
        "bedrock-converse/valid_single_call",
        _set([9, "messageStop", "stopReason"], 3),
        "/events/9/messageStop/stopReason",
        "stopReason is not a string",
    ),
    "anthropic unknown event type, its name clipped": (
        "anthropic/valid_fragmented",
        _set(["+1"], {"type": "t" * 60}),
        "/events/1/type",
        f"event type {'t' * 40!r} is not known",
    ),
    "bedrock block start of two members in the second block": (
        "bedrock-converse/valid_single_call",
        lambda stream: stream[4]["contentBlockStart"]["start"].__setitem__("text", ""),
        "/events/4/contentBlockStart/start",
        "start is not an object of one member",
    ),
    "ollama message not an object": (
        "ollama/valid_single_call",
        _set([0, "message"], "x"),
        "/chunks/0/message",
        "message is not an object",
    ),
    "ollama tool_calls not a list": (
        "ollama/valid_single_call",
        _set([2, "message", "tool_calls"], {}),
        "/chunks/2/message/tool_calls",
        "tool_calls is not a list",
    ),
    "ollama call without a function object": (
        "ollama/valid_single_call",
        _set([2, "message", "tool_calls", 0, "function"], []),
        "/chunks/2/message/tool_calls/0",
        "tool call has no function object",
    ),
    "ollama call name not a string": (
        "ollama/valid_single_call",
        _set([2, "message", "tool_calls", 0, "function", "name"], 3),
        "/chunks/2/message/tool_calls/0/function/name",
        "name is not a string",
    ),
    "ollama id not a string in the second call": (
        "ollama/valid_parallel_calls_one_line",
        _set([1, "message", "tool_calls", 1, "id"], 7),
        "/chunks/1/message/tool_calls/1/id",
        "id is not a string",
    ),
    "gemini streamed part of the second call with args": (
        "gemini/valid_parallel_one_chunk",
        _set([0, "candidates", 0, "content", "parts", 1, "functionCall", "willContinue"], True),
        "/chunks/0/candidates/0/content/parts/1/functionCall/args",
        "a streamed call part also carries args",
    ),
    "gemini-live second function call not an object": (
        "gemini-live/valid_parallel_calls",
        _set([1, "toolCall", "functionCalls", 1], "oops"),
        "/events/1/toolCall/functionCalls/1",
        "function call is not an object",
    ),
    "openai-responses output item without a type": (
        "openai-responses/valid_single_call",
        _set([2, "item", "type"], None),
        "/events/2/item",
        "output item has no type",
    ),
    "openai-responses output item not an object": (
        "openai-responses/valid_single_call",
        _set([2, "item"], ["function_call"]),
        "/events/2/item",
        "output item has no type",
    ),
    "ollama done not a boolean": (
        "ollama/valid_single_call",
        _set([3, "done"], "yes"),
        "/chunks/3/done",
        "done is not a boolean",
    ),
}


#: (choice, slot) each finding names: the slot where the event names a block or a call.
PLACES = {
    "anthropic content_block without type": (None, None),
    "anthropic delta not an object": (0, 0),
    "anthropic numeric stop_reason": (None, None),
    "anthropic text delta on a tool_use block": (0, 0),
    "gemini unknown part field, its name clipped": (0, None),
    "anthropic unknown content block type, its name clipped": (0, 5),
    "gemini chunk not an object": (None, None),
    "gemini unknown partialArgs field": (0, 0),
    "openai delta not an object": (None, None),
    "openai message object equal to the delta, without Writer's quirk": (0, None),
    "openai message object without its quirk": (0, None),
    "bedrock unknown event type, its name clipped": (None, None),
    "bedrock unknown block start in the second block, its name clipped": (0, 1),
    "bedrock event of two members": (None, None),
    "bedrock payload not an object, its type clipped": (None, None),
    "bedrock text delta on the second block's toolUse": (0, 1),
    "bedrock toolUse delta on the second block, started as text": (0, 1),
    "cohere event without a type": (None, None),
    "cohere unknown event type, its name clipped": (None, None),
    "cohere tool_calls of the second call not an object": (0, 1),
    "cohere function of the second call not an object": (0, 1),
    "cohere arguments of the second call not a string": (0, 1),
    "cohere finish_reason not a string": (None, None),
    "anthropic partial_json not a string": (0, 0),
    "bedrock block start of two members": (0, 0),
    "bedrock unknown delta member in the second block, its name clipped": (0, 1),
    "bedrock delta of two members": (0, 1),
    "bedrock stopReason not a string": (None, None),
    "anthropic unknown event type, its name clipped": (None, None),
    "bedrock block start of two members in the second block": (0, 1),
    "ollama message not an object": (None, None),
    "ollama tool_calls not a list": (None, None),
    "ollama call without a function object": (None, None),
    "ollama call name not a string": (0, 0),
    "ollama done not a boolean": (None, None),
    "openai-responses output item without a type": (0, 0),
    "openai-responses output item not an object": (0, 0),
    "ollama id not a string in the second call": (0, 1),
    "gemini streamed part of the second call with args": (0, 1),
    "gemini-live second function call not an object": (0, 1),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_event_is_unsupported_where_it_is_and_never_a_crash(case: str) -> None:
    name, edit, path, message = MALFORMED[case]
    envelope = load(CONFORMANCE / f"{name}.json")
    edit(envelope[PROFILES[envelope["profile"]].stream_key])
    envelope.pop("expect")
    first = check(envelope).findings[0]
    assert (first.code, first.path, first.message) == (Code.UNSUPPORTED_EVENT, path, message)
    assert (first.choice, first.slot) == PLACES[case]


def test_a_parse_error_points_at_the_fragment_an_anthropic_continuation_event_carried() -> None:
    """Continuation events take the engine's short path, which records no pointer of its own:
    the profile's ``continuation_pointer`` is where their text is."""
    [finding] = check(load(CONFORMANCE / "anthropic" / "malformed_arguments.json")).findings
    assert (finding.code, finding.path) == (
        Code.INVALID_ARGUMENTS_JSON,
        "/events/2/delta/partial_json",
    )


@pytest.mark.parametrize("done", [True, False])
def test_a_cohere_body_ends_with_done_as_the_recorded_cohere_streams_do(done: bool) -> None:
    """``data: [DONE]`` after ``message-end``, as in the corpus's recorded Cohere v2 streams
    (``cohere-v2-command-r-*.sse``), unless the recording says the stream had none."""
    envelope = load(CONFORMANCE / "cohere" / "valid_single_call.json")
    envelope["meta"] = {"stream": {"done": done}}
    body = b"".join(framed(envelope, "sse"))
    assert body.endswith(b"data: [DONE]\n\n") is done


def test_an_ollama_line_without_done_is_not_the_last() -> None:
    envelope = load(CONFORMANCE / "ollama" / "valid_single_call.json")
    expected = check(envelope)
    assert envelope["chunks"][0]["done"] is False
    del envelope["chunks"][0]["done"]
    report = check(envelope)
    assert (report.status, report.calls, report.findings) == (
        expected.status,
        expected.calls,
        expected.findings,
    )


def test_ollama_calls_without_an_index_take_the_slots_after_the_highest_taken() -> None:
    envelope = load(CONFORMANCE / "ollama" / "valid_calls_without_index_or_id.json")
    assert [call.slot for call in check(envelope).calls] == [0, 1]
    envelope["chunks"][0]["message"]["tool_calls"][0]["function"]["index"] = 3
    assert [call.slot for call in check(envelope).calls] == [3, 4]


def test_an_ollama_line_is_known_by_its_created_at_done_and_message() -> None:
    line = {"model": "m", "created_at": "t", "message": {"role": "assistant"}, "done": False}
    assert profile_of_events([line]) == "ollama"
    assert profile_of_events([{"model": "m", "created_at": "t", "done": True}]) is None
    # the three members alone are enough
    assert profile_of_events([{"created_at": "t", "done": False, "message": {}}]) == "ollama"


@pytest.mark.parametrize(
    ("name", "path", "field"),
    [
        (
            "bedrock-converse/valid_tool_only",
            ["events", 1, "contentBlockStart", "contentBlockIndex"],
            "contentBlockIndex",
        ),
        (
            "ollama/valid_single_call",
            ["chunks", 2, "message", "tool_calls", 0, "function", "index"],
            "function.index",
        ),
        ("cohere/valid_single_call", ["events", 3, "index"], "tool call index"),
    ],
)
def test_an_index_that_is_none_is_invalid_slot_with_its_value_clipped(
    name: str, path: list[str | int], field: str
) -> None:
    envelope = load(CONFORMANCE / f"{name}.json")
    holder: Any = envelope
    for step in path[:-1]:
        holder = holder[step]
    holder[path[-1]] = "i" * 60
    envelope.pop("expect")
    first = check(envelope).findings[0]
    assert (first.code, first.path, first.message) == (
        Code.INVALID_SLOT,
        "/" + "/".join(map(str, path)),
        f"{field} {'i' * 40!r} is not a non-negative integer",
    )


@pytest.mark.parametrize(
    ("url", "provider"),
    [
        (
            "https://generativelanguage.googleapis.com/v1beta/openai/chat/completions",
            "gemini-openai-compat",
        ),
        (
            "https://generativelanguage.googleapis.com/v1beta/models/g:streamGenerateContent?alt=sse",
            "gemini",
        ),
        (
            "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/l/publishers/"
            "anthropic/models/claude:streamRawPredict",
            "anthropic-vertex",
        ),
        (
            "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/l/publishers/"
            "google/models/gemini:streamGenerateContent",
            "gemini-vertex",
        ),
        ("http://127.0.0.1:11434/api/chat", "ollama"),
        ("https://ollama.com/api/chat", "ollama"),
        ("https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse-stream", "bedrock"),
        ("https://bedrock-runtime-fips.us-west-2.amazonaws.com/model/m/converse-stream", "bedrock"),
        ("https://bedrock.us-east-1.amazonaws.com/foundation-models", None),
        ("https://x.openai.azure.com/openai/deployments/d/chat/completions", "azure-openai"),
        ("https://x.openai.azure.com/openai/v1/chat/completions", "azure-openai"),
        ("https://api.cerebras.ai/v1/chat/completions", "cerebras"),
        ("https://api.openai.com.evil.example/v1/chat/completions", None),
        ("https://evilapi.openai.com/v1/chat/completions", None),
        ("http://127.0.0.1:9000/v1/chat/completions", None),
    ],
)
def test_the_provider_is_named_by_host_and_for_google_by_path(
    url: str, provider: str | None
) -> None:
    assert provider_from_url(url) == provider


def test_a_function_call_item_that_did_not_complete_names_its_status_clipped() -> None:
    envelope = load(CONFORMANCE / "openai-responses" / "valid_single_call.json")
    done = next(e for e in envelope["events"] if e["type"] == "response.output_item.done")
    done["item"]["status"] = "s" * 60
    finding = next(f for f in check(envelope).findings if f.code is Code.WRONG_TERMINAL_REASON)
    assert finding.message == (
        f"the function_call item ended with status {'s' * 40!r}, not 'completed'"
    )


def test_the_responses_error_event_carries_the_first_code() -> None:
    error = PROFILES["openai-responses"].error_body("m", ["identity_collision", "event_gap"])
    assert error["error"]["code"] == "identity_collision"  # type: ignore[index]


@pytest.mark.parametrize(
    "entry",
    [
        # An id on a slot already seen, without a name: the general reading, never the short path.
        {"index": 0, "id": "call_B", "function": {"arguments": "x"}},
    ],
)
def test_a_continuation_chunk_that_states_another_id_is_a_collision(
    entry: dict[str, object],
) -> None:
    engine = Reassembler("openai", {})
    engine.feed(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_A",
                                "function": {"name": "f", "arguments": "{"},
                            }
                        ]
                    },
                }
            ]
        }
    )
    findings = engine.feed({"choices": [{"index": 0, "delta": {"tool_calls": [entry]}}]})
    assert [f.code for f in findings] == [Code.IDENTITY_COLLISION]


def test_an_error_object_chunk_that_also_adds_arguments_is_a_stream_error() -> None:
    engine = Reassembler("openai", {})
    engine.feed(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_A",
                                "function": {"name": "f", "arguments": "{"},
                            }
                        ]
                    },
                }
            ]
        }
    )
    findings = engine.feed(
        {
            "object": "error",
            "message": "overloaded",
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "}"}}]},
                }
            ],
        }
    )
    assert Code.STREAM_ERROR in [f.code for f in findings]
    # The same with the error stated in an error object beside the choice.
    engine = Reassembler("openai", {})
    engine.feed(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_A",
                                "function": {"name": "f", "arguments": "{"},
                            }
                        ]
                    },
                }
            ]
        }
    )
    findings = engine.feed(
        {
            "error": {"message": "overloaded"},
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "}"}}]},
                }
            ],
        }
    )
    assert Code.STREAM_ERROR in [f.code for f in findings]


def test_index_less_whole_calls_take_the_slots_from_0_in_arrival_order() -> None:
    engine = Reassembler("mistral", {"f": {}, "g": {}})
    engine.feed(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {"id": "a", "function": {"name": "f", "arguments": "{}"}},
                            {"id": "b", "function": {"name": "g", "arguments": "{}"}},
                        ]
                    },
                    "finish_reason": "tool_calls",
                }
            ]
        }
    )
    assert [(c.slot, c.id) for c in engine.close().calls] == [(0, "a"), (1, "b")]


def test_an_unknown_output_item_type_is_reported_on_its_item() -> None:
    engine = Reassembler("openai-responses", {})
    [finding] = engine.feed(
        {
            "type": "response.output_item.added",
            "output_index": 3,
            "item": {"id": "x_1", "type": "hologram"},
        }
    )
    assert (finding.code, finding.choice, finding.slot, finding.path) == (
        Code.UNSUPPORTED_EVENT,
        0,
        3,
        "/events/0/item/type",
    )


@pytest.mark.parametrize("cls", ["SdkRoute", "Call"])
def test_routes_and_calls_cannot_be_changed_by_a_caller(cls: str) -> None:
    import dataclasses

    from callgate.reassemble.providers import SDK_ROUTES
    from callgate.reassemble.report import Call, SlotState

    value: object = (
        SDK_ROUTES[0]
        if cls == "SdkRoute"
        else Call(
            choice=0,
            slot=0,
            id="id",
            name="f",
            arguments="{}",
            parsed_arguments={},
            state=SlotState.VALIDATED,
            findings=(),
        )
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        value.name = "changed"  # type: ignore[attr-defined]


def test_a_report_cannot_be_changed_once_made() -> None:
    """A verdict handed to an app, a hook or a trace is the engine's: none of them can alter
    what the next one reads."""
    report = check(load(CONFORMANCE / "openai" / "valid_fragmented.json"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.status = Status.FAIL  # type: ignore[misc]


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_an_sse_frame_carries_text_as_utf8_as_providers_send_it(name: str) -> None:
    frame = PROFILES[name].sse_frame({"type": "x", "text": "Zürich ☀"})
    assert "Zürich ☀".encode() in frame and b"\\u" not in frame


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_an_sse_frame_names_its_event_where_the_provider_does(name: str) -> None:
    """Anthropic, Cohere and OpenAI Responses send an ``event:`` line named after each event's
    ``type``; the others send data lines alone."""
    frame = PROFILES[name].sse_frame({"type": "x.y", "n": 1})
    named = name in ("anthropic", "cohere", "openai-responses")
    assert frame == (b"event: x.y\n" if named else b"") + b'data: {"type": "x.y", "n": 1}\n\n'


@pytest.mark.parametrize(
    ("field", "message"),
    [
        ("id", "id is not a string"),
        ("name", "function/name is not a string"),
        ("arguments", "function/arguments is not a string"),
    ],
)
def test_a_call_entry_field_that_is_not_a_string_is_named(field: str, message: str) -> None:
    entry: dict[str, object] = {
        "index": 0,
        "id": "call_A",
        "function": {"name": "f", "arguments": "{}"},
    }
    if field == "id":
        entry["id"] = 7
    else:
        entry["function"][field] = 7  # type: ignore[index]
    findings = Reassembler("openai", {}).feed(
        {"choices": [{"index": 0, "delta": {"tool_calls": [entry]}}]}
    )
    assert [(f.code, f.message) for f in findings] == [(Code.UNSUPPORTED_EVENT, message)]


def test_a_choice_whose_delta_is_null_is_an_empty_delta() -> None:
    engine = Reassembler("openai", {})
    assert engine.feed({"choices": [{"index": 0, "delta": None, "finish_reason": None}]}) == []


@pytest.mark.parametrize(
    ("profile", "event", "said", "path"),
    [
        (
            "anthropic",
            {"type": "error", "error": {"type": "overloaded_error", "message": "m" * 300}},
            f"overloaded_error: {'m' * 200}",
            "/events/0/error",
        ),
        (
            "bedrock-converse",
            {"throttlingException": {"message": "m" * 300}},
            f"throttlingException: {'m' * 160}",
            "/events/0/throttlingException",
        ),
        (
            "gemini",
            {"promptFeedback": {"blockReason": "B" * 100}},
            f"the prompt was blocked: {'B' * 60}",
            "/chunks/0/promptFeedback/blockReason",
        ),
    ],
    ids=["anthropic", "bedrock-converse", "gemini"],
)
def test_a_provider_error_is_named_by_its_text_clipped(
    profile: str, event: dict[str, Any], said: str, path: str
) -> None:
    """An error event's type and message, or the reason a prompt was blocked, quoted up to the
    profile's limit: 200 characters for Anthropic, 160 for Bedrock, 60 for a Gemini reason."""
    [finding] = Reassembler(profile, {}).feed(event)
    assert (finding.code, finding.path) == (Code.STREAM_ERROR, path)
    assert finding.message.endswith(said)


@pytest.mark.parametrize(
    ("delta", "said"),
    [
        ({"finish_reason": "ERROR", "error": "b" * 300}, "b" * 200),
        ({"finish_reason": "ERROR"}, "finish_reason ERROR"),
        ({"finish_reason": "COMPLETE", "error": "boom"}, "boom"),
    ],
)
def test_a_cohere_error_is_named_by_its_text_up_to_200_characters_else_by_its_reason(
    delta: dict[str, object], said: str
) -> None:
    engine = Reassembler("cohere", {})
    findings = engine.feed({"type": "message-end", "delta": delta})
    assert findings[0].code == Code.STREAM_ERROR
    assert findings[0].message.endswith(f": {said}")


@pytest.mark.parametrize("name", ["anthropic/valid_fragmented", "cohere/valid_single_call"])
def test_argument_sites_pass_over_events_that_are_not_objects(name: str) -> None:
    envelope = load(CONFORMANCE / f"{name}.json")
    profile = PROFILES[envelope["profile"]]
    events = envelope[profile.stream_key]
    mixed = [item for event in events for item in ("not an event", 7, event)]
    assert list(profile.argument_sites(mixed)) == list(profile.argument_sites(events))


def test_an_event_stream_message_carries_text_as_utf8_as_providers_send_it() -> None:
    text = "Zürich ☀"
    converse, anthropic_profile = PROFILES["bedrock-converse"], PROFILES["anthropic"]
    assert converse.to_message is not None and anthropic_profile.to_message is not None
    payloads = [
        decode(converse.to_message({"contentBlockDelta": {"delta": {"text": text}}})).payload,
        decode(converse.to_message([text])).payload,  # an event of another shape: its JSON
        base64.b64decode(
            json.loads(decode(anthropic_profile.to_message({"type": "x", "text": text})).payload)[
                "bytes"
            ]
        ),
    ]
    for payload in payloads:
        assert text.encode() in payload and b"\\u" not in payload


def test_a_bedrock_event_of_two_members_goes_out_as_an_unknown_event_with_its_json() -> None:
    converse = PROFILES["bedrock-converse"]
    assert converse.to_message is not None
    message = decode(converse.to_message({"a": 1, "b": 2}))
    assert (message.header(":event-type"), message.payload) == ("unknown", b'{"a": 1, "b": 2}')


def test_an_anthropic_error_whose_error_is_not_an_object_goes_to_bedrock_as_its_own_exception() -> (
    None
):
    anthropic_profile = PROFILES["anthropic"]
    assert anthropic_profile.to_message is not None
    message = decode(anthropic_profile.to_message({"type": "error", "error": "boom"}))
    assert (message.header(":exception-type"), message.payload) == (
        "modelStreamErrorException",
        b'{"message": ""}',
    )


def gemini_chunk(*parts: object) -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": list(parts)}}]}


def streamed_part(**call: object) -> dict[str, Any]:
    return {"functionCall": {**call, "willContinue": True}}


#: A whole call, then a streamed one opened in the same chunk: the streamed call is slot 1 of
#: candidate 0, so a finding that named the slot as its choice would be seen.
SECOND_CALL_OPENED = gemini_chunk(
    {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}},
    streamed_part(name="book_trip"),
)


@pytest.mark.parametrize(
    ("chunks", "code", "message"),
    [
        (
            [SECOND_CALL_OPENED, gemini_chunk(streamed_part(args={}))],
            Code.UNSUPPORTED_EVENT,
            "a streamed call part carries args",
        ),
        (
            [
                SECOND_CALL_OPENED,
                gemini_chunk(
                    streamed_part(partialArgs=[{"jsonPath": "$.name", "stringValue": "A"}])
                ),
                gemini_chunk(streamed_part(partialArgs=[{"jsonPath": "$.name", "numberValue": 1}])),
            ],
            Code.INVALID_ARGUMENTS_JSON,
            "partialArgs: $.name is already set",
        ),
        (
            [
                SECOND_CALL_OPENED,
                gemini_chunk(
                    streamed_part(
                        partialArgs=[
                            {"jsonPath": "$.name", "stringValue": "Ad", "willContinue": True}
                        ]
                    )
                ),
                gemini_chunk({"functionCall": {}}),
            ],
            Code.INVALID_ARGUMENTS_JSON,
            "partialArgs: the call closed while $.name was still continuing",
        ),
        (
            [
                gemini_chunk(
                    {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}},
                    {"functionCall": {"name": "search", "id": 7, "args": {}}},
                )
            ],
            Code.UNSUPPORTED_EVENT,
            "id is not a string",
        ),
        (
            [
                SECOND_CALL_OPENED,
                gemini_chunk(
                    streamed_part(partialArgs=[{"jsonPath": "$" + ".a" * 3000, "numberValue": 1}])
                ),
                gemini_chunk({"functionCall": {}}),
            ],
            Code.LIMIT_EXCEEDED,
            "args are nested too deeply to write as JSON",
        ),
    ],
    ids=["args", "conflict", "closed-while-continuing", "id", "too-deep"],
)
def test_a_gemini_finding_on_the_second_call_names_candidate_0_and_slot_1(
    chunks: list[dict[str, Any]], code: Code, message: str
) -> None:
    engine = Reassembler("gemini", {})
    found = [f for chunk in chunks for f in engine.feed(chunk) if f.code != Code.UNKNOWN_TOOL]
    assert [(f.code, f.message, f.choice, f.slot) for f in found] == [(code, message, 0, 1)]


def test_a_gemini_call_whose_fields_are_null_is_read_without_them() -> None:
    """A null ``partialArgs``/``willContinue``/``id`` is absent, as the SDK's model sends an
    unset field: the call is a whole call."""
    envelope = load(CONFORMANCE / "gemini" / "valid_single_call.json")
    expected = check(envelope)
    call = envelope["chunks"][0]["candidates"][0]["content"]["parts"][0]["functionCall"]
    call.update(partialArgs=None, willContinue=None, id=None)
    report = check(envelope)
    assert (report.status, report.calls) == (expected.status, expected.calls)


def test_an_unknown_function_call_field_is_named_up_to_40_characters() -> None:
    engine = Reassembler("gemini", {})
    field = "f" * 60  # named before "g", the other unknown field, which goes unnamed
    [finding] = engine.feed(gemini_chunk({"functionCall": {"name": "x", "g": 2, field: 1}}))
    assert (finding.code, finding.message, finding.path) == (
        Code.UNSUPPORTED_EVENT,
        f"functionCall field {'f' * 40!r} is not known",
        f"/chunks/0/candidates/0/content/parts/0/functionCall/{field}",
    )


def test_of_several_unknown_part_fields_the_first_by_name_is_named() -> None:
    envelope = load(CONFORMANCE / "gemini" / "valid_single_call.json")
    part = envelope["chunks"][0]["candidates"][0]["content"]["parts"][0]
    part["zzz"], part["aaa"] = 1, 2
    envelope.pop("expect")
    first = check(envelope).findings[0]
    assert (first.message, first.path) == (
        "part field 'aaa' is not known",
        "/chunks/0/candidates/0/content/parts/0/aaa",
    )


def test_a_delta_of_the_wrong_kind_names_both_kinds_clipped_at_40_characters() -> None:
    block, delta = "web_search_" + "r" * 40 + "_tool_result", "text_delta_" + "d" * 40
    engine = Reassembler("anthropic", {})
    engine.feed(
        {"type": "content_block_start", "index": 0, "content_block": {"type": block, "content": []}}
    )
    [finding] = engine.feed(
        {"type": "content_block_delta", "index": 0, "delta": {"type": delta, "text": "x"}}
    )
    assert (finding.code, finding.message) == (
        Code.UNSUPPORTED_EVENT,
        f"{delta[:40]!r} delta on a {block[:40]!r} block",
    )


def test_cutting_short_needs_the_field_that_states_the_reason() -> None:
    cut_short = reason_replaced("finish_reason", "length")
    assert cut_short({"choices": [{"delta": {}}]}) is None
    assert cut_short({"choices": [{"finish_reason": "stop"}]}) == {
        "choices": [{"finish_reason": "length"}]
    }


def test_a_chat_tool_without_parameters_takes_none_and_a_legacy_function_is_left_out() -> None:
    assert function_tools(
        {"tools": [{"type": "function", "function": {"name": "f"}}], "functions": [{"name": "g"}]}
    ) == {"f": {"type": "object", "properties": {}}}


def test_cohere_output_events_are_no_calls_and_an_unknown_type_is_unsupported() -> None:
    engine = Reassembler("cohere", {})
    for kind in ("message-start", "content-delta", "tool-plan-delta", "citation-start", "debug"):
        assert engine.feed({"type": kind, "delta": {}}) == []
    [finding] = engine.feed({"type": "tool-call-pause", "index": 0})
    assert (finding.code, finding.message) == (
        Code.UNSUPPORTED_EVENT,
        "event type 'tool-call-pause' is not known",
    )


class _GeneralChat(ChatTranslator):
    """The Chat translator without its short path for continuation chunks."""

    def continuation(self, raw: Any) -> tuple[SlotKey, str] | None:
        return None


_DELETE = object()
_CHOICE, _DELTA = ("choices", 0), ("choices", 0, "delta")
_ENTRY = ("choices", 0, "delta", "tool_calls", 0)
_FUNCTION = (*_ENTRY, "function")
#: Where a continuation chunk can differ, and how: (the path of a container, key, new value).
_CHANGES = [
    *(((), "object", value) for value in ("error", _DELETE)),
    *(((), "error", value) for value in (None, "boom", {"message": "boom"})),
    *(((), "choices", value) for value in ([], "x", {"a": 1}, _DELETE)),
    *(((), "usage", value) for value in (None, {})),
    ((("choices",), 1, {"index": 1, "delta": {}})),
    *((("choices",), 0, value) for value in ("x", None)),
    *((_CHOICE, "index", value) for value in (1, -1, True, "0", 0.0, _DELETE)),
    *((_CHOICE, "finish_reason", value) for value in ("stop", "tool_calls", _DELETE)),
    *((_CHOICE, "message", value) for value in (None, {})),
    *((_CHOICE, "delta", value) for value in (None, "x", _DELETE)),
    *((_DELTA, "tool_calls", value) for value in (None, "x", [], {"a": 1}, _DELETE)),
    *((_DELTA, "function_call", value) for value in (None, {"name": "f"})),
    *((_DELTA, "content", value) for value in ("hi", None)),
    (((*_DELTA, "tool_calls"), 1, {"index": 1})),
    *((_ENTRY[:-1], 0, value) for value in ("x", None)),
    *((_ENTRY, "index", value) for value in (0, 5, -1, True, "0", _DELETE)),
    *((_ENTRY, "id", value) for value in (None, "", "call_0", "call_9")),
    *((_ENTRY, "type", value) for value in (None, "", "function", "other")),
    *((_ENTRY, "function", value) for value in (None, "x", _DELETE)),
    *((_FUNCTION, "arguments", value) for value in (None, "", 1, ["x"], _DELETE)),
    *((_FUNCTION, "name", value) for value in (None, "", "f")),
]


def _changed(chunk: Any, changes: list[tuple[tuple[Any, ...], Any, Any]]) -> Any:
    """A copy of ``chunk`` with each change made where its container still is one."""
    chunk = copy.deepcopy(chunk)
    for path, key, change in changes:
        value = change if change is _DELETE else copy.deepcopy(change)
        container = chunk
        try:
            for step in path:
                container = container[step]
            if isinstance(container, dict) and not isinstance(key, str):
                continue  # a list's place in what became an object: JSON keys are strings
            if value is _DELETE:
                del container[key]
            elif isinstance(container, list):
                container[key : key + 1] = [value]
            else:
                container[key] = value
        except (KeyError, IndexError, TypeError):
            continue
    return chunk


#: A Chat chunk that starts two calls, on slots 0 and 1, with no argument text yet.
_TWO_CALLS_STARTED = {
    "choices": [
        {
            "index": 0,
            "delta": {
                "tool_calls": [
                    {
                        "index": slot,
                        "id": f"call_{slot}",
                        "type": "function",
                        "function": {"name": "f", "arguments": ""},
                    }
                    for slot in (0, 1)
                ]
            },
        }
    ]
}


@settings(max_examples=1000, deadline=None)
@given(changes=st.lists(st.lists(st.sampled_from(_CHANGES), max_size=2), min_size=1, max_size=3))
def test_the_chat_short_path_reads_each_chunk_as_the_general_reading_does(
    changes: list[list[tuple[tuple[Any, ...], Any, Any]]],
) -> None:
    """After two calls have started, continuation chunks each changed in up to two places: the
    same events and the same state as without the short path."""
    short, general = ChatTranslator(frozenset()), _GeneralChat(frozenset())
    start = _TWO_CALLS_STARTED
    continuation = {
        "object": "chat.completion.chunk",
        "choices": [
            {
                "index": 0,
                "delta": {"tool_calls": [{"index": 1, "function": {"arguments": "x"}}]},
                "finish_reason": None,
            }
        ],
    }
    for chunk in [start, *(_changed(continuation, some) for some in changes)]:
        assert short.translate(chunk) == general.translate(chunk)
        assert vars(short) == vars(general)


#: The Chat profile read without the translator's short path, in the engine too.
_GENERAL_PROFILE = dataclasses.replace(
    PROFILES["openai"], translator=lambda quirks, request: _GeneralChat(quirks)
)


@settings(max_examples=500, deadline=None)
@given(
    changes=st.lists(st.lists(st.sampled_from(_CHANGES), max_size=2), min_size=1, max_size=4),
    texts=st.lists(st.sampled_from(["x", "", "é", "\ud800", "{}", "yyyyyy"]), min_size=1),
    max_bytes=st.sampled_from([4, 9, 1 << 20]),
)
def test_the_engine_reads_a_short_chunk_as_it_reads_the_general_event(
    changes: list[list[tuple[tuple[Any, ...], Any, Any]]], texts: list[str], max_bytes: int
) -> None:
    """The engine takes a continuation chunk from the translator's short path without an event:
    the same findings after each chunk and the same report as with the general reading, over
    chunks changed as above, texts of other widths and a limit the text can pass."""
    chunks: list[Any] = [_TWO_CALLS_STARTED]
    for some, text in zip(changes, itertools.cycle(texts), strict=False):
        continuation = {
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 1, "function": {"arguments": text}}]},
                    "finish_reason": None,
                }
            ]
        }
        chunks.append(_changed(continuation, some))
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    limits = Limits(max_argument_bytes=max_bytes)
    PROFILES["openai-general"] = _GENERAL_PROFILE
    try:
        short = Reassembler("openai", {"f": True}, limits=limits)
        general = Reassembler("openai-general", {"f": True}, limits=limits)
    finally:
        del PROFILES["openai-general"]
    for chunk in chunks:
        assert short.feed(chunk) == general.feed(chunk)
    assert short.close() == general.close()


_MEMBER = re.compile(r'"(\w+)" ?:')


@settings(max_examples=1000, deadline=None)
@given(
    changes=st.lists(st.sampled_from(_CHANGES), max_size=2),
    arguments=st.sampled_from(["x", ":", '{"a": 1', "\\u003a", "a\\\\u003a", ""]),
    compact=st.booleans(),
    repeat=st.none() | st.integers(0, 20),
    repeated=st.sampled_from([1, "x:y", None, {"k": 1}, "\\u003a"]),
    colon_elsewhere=st.booleans(),
)
def test_a_chat_chunk_read_with_the_names_proof_is_what_the_full_parse_gives(
    changes: list[tuple[tuple[Any, ...], Any, Any]],
    arguments: str,
    compact: bool,
    repeat: int | None,
    repeated: Any,
    colon_elsewhere: bool,
) -> None:
    """Continuation chunks and their neighbours (changed as in the test above), with colons and
    ``\\u`` escapes in strings and now and then a member written twice: reading a chunk with the
    proof gives the same value as the full strict parse, or the same text when that refuses it."""
    chunk = _changed(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 1, "function": {"arguments": "x"}}]},
                    "finish_reason": None,
                }
            ],
        },
        changes,
    )
    if colon_elsewhere and isinstance(chunk, dict):
        chunk["model"] = "m:1"
    text = json.dumps(chunk, separators=(",", ":") if compact else None)
    text = text.replace('"arguments": "x"', f'"arguments": "{arguments}"').replace(
        '"arguments":"x"', f'"arguments":"{arguments}"'
    )
    members = list(_MEMBER.finditer(text))
    if repeat is not None and members:  # the same name once more, in the same object
        member = members[repeat % len(members)]
        text = (
            text[: member.start()]
            + f'"{member.group(1)}": {json.dumps(repeated)}, '
            + text[member.start() :]
        )
    read, full = event_reader(names_cannot_repeat)(text), event_value(text)
    assert (type(read), read) == (type(full), full)


@pytest.mark.parametrize(
    ("text", "holds"),
    [
        (
            '{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
            '"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"v\\": [1,"}}]},'
            '"logprobs":null,"finish_reason":null}]}',
            True,
        ),
        (
            '{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": '
            '{"arguments": "1,"}}]}, "finish_reason": null}]}',
            True,
        ),
        # A model name with a colon is counted out, as the arguments are.
        (
            '{"model": "qwen2.5:7b", "choices": [{"index": 0, "delta": {"tool_calls": '
            '[{"index": 0, "function": {"arguments": "a:1"}}]}}]}',
            True,
        ),
        # A repeated name, a colon in a string deeper down, and a chunk of another shape: the full
        # parse.
        (
            '{"choices": [{"index": 0, "index": 0, "delta": {"tool_calls": [{"index": 0, '
            '"function": {"arguments": "1,"}}]}}]}',
            False,
        ),
        (
            '{"choices": [{"index": 0, "delta": {"role": "a:b", "tool_calls": [{"index": 0, '
            '"function": {"arguments": "1,"}}]}}]}',
            False,
        ),
        ('{"choices": [{"index": 0, "delta": {"content": "a"}}]}', False),
    ],
)
def test_the_names_proof_holds_for_a_plain_arguments_chunk_only(text: str, holds: bool) -> None:
    assert names_cannot_repeat(json.loads(text), text) is holds


@settings(max_examples=300)
@given(
    partial=st.text(alphabet='ab:{}[]",\\ ', max_size=12),
    extra=st.none() | st.sampled_from([1, "x:y", None, {"k": 1}, [1], "\\u003a"]),
    compact=st.booleans(),
    repeat=st.none() | st.integers(0, 20),
    repeated=st.sampled_from([1, "x:y", None, {"k": 1}, "\\u003a"]),
)
def test_an_anthropic_delta_read_with_the_names_proof_is_what_the_full_parse_gives(
    partial: str, extra: Any, compact: bool, repeat: int | None, repeated: Any
) -> None:
    """A ``content_block_delta`` with colons in its strings, now and then a member of another
    kind and now and then a member written twice: read with the proof, it is what the full
    strict parse gives."""
    event: dict[str, Any] = {
        "type": "content_block_delta",
        "index": 1,
        "delta": {"type": "input_json_delta", "partial_json": partial},
    }
    if extra is not None:
        event["delta"]["extra"] = extra
    text = json.dumps(event, separators=(",", ":") if compact else None)
    members = list(_MEMBER.finditer(text))
    if repeat is not None and members:
        member = members[repeat % len(members)]
        text = (
            text[: member.start()]
            + f'"{member.group(1)}": {json.dumps(repeated)}, '
            + text[member.start() :]
        )
    read, full = event_reader(anthropic.names_cannot_repeat)(text), event_value(text)
    assert (type(read), read) == (type(full), full)


@pytest.mark.parametrize(
    ("text", "holds"),
    [
        (
            '{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta",'
            '"partial_json":"{\\"a\\": 1"}}',
            True,
        ),
        (
            '{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", '
            '"text": "a:b"}}',
            True,
        ),
        (
            '{"type":"content_block_delta","index":0,"index":0,"delta":{"type":"text_delta",'
            '"text":"a"}}',
            False,
        ),
        (
            '{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":1}}',
            False,
        ),
        ('{"type":"message_stop"}', False),
    ],
)
def test_the_anthropic_names_proof_holds_for_a_delta_of_scalars_only(
    text: str, holds: bool
) -> None:
    assert anthropic.names_cannot_repeat(json.loads(text), text) is holds


def test_a_profile_without_event_stream_messages_refuses_to_frame_one() -> None:
    with pytest.raises(ValueError, match=r"^openai streams no event-stream messages$"):
        PROFILES["openai"].message_frame({})


def test_a_bedrock_tool_use_that_cannot_be_read_is_found_at_its_block() -> None:
    envelope = load(CONFORMANCE / "bedrock-converse" / "valid_parallel_calls.json")
    bad_start, bad_input = copy.deepcopy(envelope), copy.deepcopy(envelope)
    bad_start["events"][4]["contentBlockStart"]["start"]["toolUse"] = "get_weather"
    bad_input["events"][5]["contentBlockDelta"]["delta"]["toolUse"]["input"] = 7
    found = [
        next((f.code, f.choice, f.slot, f.message) for f in check(case).findings if f.blocking)
        for case in (bad_start, bad_input)
    ]
    assert found == [
        (Code.UNSUPPORTED_EVENT, 0, 1, "toolUse is not an object"),
        (Code.UNSUPPORTED_EVENT, 0, 1, "toolUse.input is not a string"),
    ]


def test_a_slot_whose_fragments_change_between_function_and_custom_is_a_collision() -> None:
    """Either way round, and for a function fragment that the general reading would otherwise
    never see: a bare arguments fragment is read by the short path for continuations, which
    must not add it to a custom call's input."""
    custom = load(CONFORMANCE / "openai" / "custom_tool_valid.json")
    custom["chunks"][2]["choices"][0]["delta"]["tool_calls"][0] = {
        "index": 0,
        "function": {"arguments": "gin Pa"},
    }
    function = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    function["chunks"][1]["choices"][0]["delta"]["tool_calls"][0] = {
        "index": 0,
        "custom": {"input": "x"},
    }
    found = [
        [(f.code, f.path, f.message, f.choice, f.slot) for f in check(document).findings]
        for document in (custom, function)
    ]
    assert found == [
        [
            (
                Code.IDENTITY_COLLISION,
                "/chunks/2/choices/0/delta/tool_calls/0",
                "slot 0 holds a custom call; a later fragment is a function call's",
                0,
                0,
            )
        ],
        [
            (
                Code.IDENTITY_COLLISION,
                "/chunks/1/choices/0/delta/tool_calls/0",
                "slot 0 holds a function call; a later fragment is a custom call's",
                0,
                0,
            )
        ],
    ]


@pytest.mark.parametrize(
    ("chunk", "found"),
    [
        (
            {"error": {"message": "Overloaded", "code": "server_error"}},
            ("stream_error", "provider sent an error: Overloaded", "/chunks/0/error", None),
        ),
        (
            {"error": {"message": "m" * 250}},
            ("stream_error", f"provider sent an error: {'m' * 200}", "/chunks/0/error", None),
        ),
        (
            {"error": {"code": "server_error"}},
            ("stream_error", "provider sent an error: server_error", "/chunks/0/error", None),
        ),
        (
            {"choices": [{"index": 0, "delta": {}, "finish_reason": 5}]},
            (
                "unsupported_event",
                "finish_reason is not a string",
                "/chunks/0/choices/0/finish_reason",
                0,
            ),
        ),
    ],
)
def test_a_chat_error_names_its_message_else_its_code_and_a_reason_must_be_text(
    chunk: dict[str, Any], found: tuple[str, str, str, int | None]
) -> None:
    engine = Reassembler("openai", {"get_weather": {"type": "object"}})
    engine.feed(chunk)
    [first, _] = engine.close().findings  # and missing_terminal
    assert (first.code.value, first.message, first.path, first.choice) == found
