"""Redaction: default deny, masks that keep the verdict, stable pseudonyms, fail-closed leaks."""

from __future__ import annotations

import base64
import dataclasses
import gzip
import json
import zlib
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from callgate.reassemble import check
from callgate.reassemble.body import parse_stream_body
from callgate.reassemble.errors import InputError
from callgate.reassemble.framing import SSE
from callgate.reassemble.profiles import PROFILES, framed
from callgate.redact import (
    ArgumentMode,
    Exchange,
    NotApplicable,
    RedactionRefused,
    fixture_bytes,
    redact_envelope,
    redact_exchange,
    request_context,
)
from callgate.redact.encoding import Decompressor, decode_whole
from callgate.redact.leaks import encodings, find_leaks, secrets_of
from callgate.redact.mask import Pseudonyms, mask_arguments
from callgate.redact.stream import _enum_values, redacted_copy
from tests.conftest import CONFORMANCE, conformance_fixtures, fixture_id, gemini_chunk, load

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
    "required": ["city"],
}


def sse(*chunks: Any, done: bool = True) -> bytes:
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks)
    return (body + ("data: [DONE]\n\n" if done else "")).encode()


def openai_exchange(
    arguments: list[str],
    *,
    content: str = "Let me look.",
    headers: list[tuple[str, str]] | None = None,
    query: str = "",
    request: dict[str, Any] | None = None,
) -> Exchange:
    first = {
        "index": 0,
        "id": "call_abc123",
        "type": "function",
        "function": {"name": "get_weather", "arguments": ""},
    }
    chunks = [
        {"id": "chatcmpl-9x", "choices": [{"index": 0, "delta": {"content": content}}]},
        {"id": "chatcmpl-9x", "choices": [{"index": 0, "delta": {"tool_calls": [first]}}]},
    ]
    chunks += [
        {
            "id": "chatcmpl-9x",
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": part}}]},
                }
            ],
        }
        for part in arguments
    ]
    chunks.append(
        {"id": "chatcmpl-9x", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
    )
    body = request or {
        "model": "gpt-4o-mini",
        "stream": True,
        "messages": [
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "Weather in Oslo?"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Weather now.",
                    "parameters": WEATHER,
                },
            }
        ],
    }
    return Exchange(
        method="POST",
        url="https://api.openai.com/v1/chat/completions" + query,
        request_headers=headers or [("content-type", "application/json")],
        request_body=json.dumps(body).encode(),
        status=200,
        response_headers=[("content-type", "text/event-stream")],
        response_body=sse(*chunks),
        capture="import:har",
    )


def test_credential_formats_and_the_exchanges_own_secrets_are_leaks_where_they_are() -> None:
    from callgate.redact.leaks import Leak

    value = {
        "messages": [{"content": "key sk-proj-" + "a1" * 12}, {"content": "nothing here"}],
        "auth": "Bearer " + "x" * 20,
        "google": "AIza" + "B" * 35,
    }
    assert find_leaks(value, []) == [
        Leak("/messages/0/content", "openai-key"),
        Leak("/auth", "bearer-token"),
        Leak("/google", "google-api-key"),
    ]
    # And the exchange's own secrets, in no format callgate knows, in any script.
    assert find_leaks({"a": ["plain but secret"]}, ["plain but secret"]) == [
        Leak("/a/0", "credential-from-exchange")
    ]
    assert find_leaks({"b": "das Kennwort: geheimnis-ß-ü"}, ["geheimnis-ß-ü"]) == [
        Leak("/b", "credential-from-exchange")
    ]


@pytest.mark.parametrize("path", conformance_fixtures(), ids=fixture_id)
def test_redacting_a_fixture_keeps_its_verdict_and_is_idempotent(path: Path) -> None:
    envelope = load(path)
    once = redact_envelope(envelope)
    assert (once.report.status, once.report.blocking_codes) == (
        check(envelope).status,
        check(envelope).blocking_codes,
    )
    assert redact_envelope(once.envelope).envelope == once.envelope


def test_an_exchange_becomes_an_envelope_without_prompt_headers_or_query() -> None:
    exchange = openai_exchange(
        ['{"city": "Os', 'lo", "unit": "celsius"}'],
        headers=[
            ("Authorization", "Bearer sk-proj-" + "a" * 40),
            ("x-stainless-package-version", "1.54.0"),
            ("x-stainless-os", "Linux"),
            ("user-agent", "OpenAI/Python 1.54.0"),
        ],
        query="?api-version=2024-10-21",
    )
    envelope = redact_exchange(exchange).envelope
    assert envelope["profile"] == "openai" and envelope["provider"] == "openai"
    assert envelope["tool_schemas"] == {"get_weather": WEATHER}
    assert envelope["request"] == {"model": "gpt-4o-mini", "stream": True}
    meta = envelope["meta"]
    assert meta["headers"] == {
        "x-stainless-package-version": "1.54.0",
        "response-content-type": "text/event-stream",
    }
    assert meta["sdk"] == {"package_version": "1.54.0", "user_agent": "OpenAI/Python"}
    assert meta["messages_by_role"] == {"system": 1, "user": 1}
    assert meta["endpoint"] == "/v1/chat/completions" and meta["capture"] == "import:har"
    assert "query_string" in meta["redaction"]["removed"]
    assert "request.messages" in meta["redaction"]["removed"]
    text = json.dumps(envelope)
    for secret in (
        "You are helpful",
        "Weather in Oslo",
        "Let me look",
        "Linux",
        "api-version",
        "call_abc123",
        "chatcmpl-9x",
        "Oslo",
    ):
        assert secret not in text
    assert envelope["expect"] == {"status": "pass", "codes": []}


def test_arguments_are_masked_across_fragments_keeping_keys_enums_and_boundaries() -> None:
    envelope = redact_exchange(
        openai_exchange(['{"city": "Os', 'lo", "unit": "celsius", "n": 3}'])
    ).envelope
    parts = [
        c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
        for c in envelope["chunks"][1:-1]
    ]
    assert parts == ["", '{"city": "xx', 'xx", "unit": "celsius", "n": 3}']


def test_an_argument_site_of_a_kind_the_redactor_does_not_know_refuses_the_fixture(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its field is kept from the scrub as an argument's: masked by no rule, it would be
    written as it came."""
    envelope = load(CONFORMANCE / "anthropic" / "valid_fragmented.json")
    profile = PROFILES["anthropic"]

    def sites(events: list[Any]) -> Any:
        yield from profile.argument_sites(events)
        yield "mystery", "key", events[0], "type"

    mystery = dataclasses.replace(profile, argument_sites=sites, fragment_site=None)
    monkeypatch.setitem(PROFILES, "anthropic", mystery)
    with pytest.raises(ValueError, match=r"^an argument site of a kind .* not know: .mystery.$"):
        redacted_copy(envelope, ArgumentMode.MASK, owned=False, keep_text=False)


def test_output_text_keeps_its_shape_and_ids_keep_equality() -> None:
    envelope = redact_exchange(openai_exchange(['{"city":"Oslo"}'])).envelope
    chunks = envelope["chunks"]
    assert chunks[0]["choices"][0]["delta"]["content"] == "xxx xx xxxxx"
    assert {c["id"] for c in chunks} == {"chatcmpl-redacted1"}
    assert chunks[1]["choices"][0]["delta"]["tool_calls"][0]["id"] == "call_redacted2"


@pytest.mark.parametrize(
    ("mode", "parts"),
    [
        (ArgumentMode.KEEP, ["", '{"city":"Oslo"}']),
        (ArgumentMode.MASK, ["", '{"city":"xxxx"}']),
    ],
)
def test_argument_modes(mode: ArgumentMode, parts: list[str]) -> None:
    envelope = redact_exchange(openai_exchange(['{"city":"Oslo"}']), arguments=mode).envelope
    assert [
        c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
        for c in envelope["chunks"][1:-1]
    ] == parts


def test_dropping_arguments_changes_the_verdict_and_needs_permission() -> None:
    exchange = openai_exchange(['{"city":"Oslo"}'])
    with pytest.raises(RedactionRefused, match="pass -> fail"):
        redact_exchange(exchange, arguments=ArgumentMode.DROP)
    envelope = redact_exchange(
        exchange, arguments=ArgumentMode.DROP, allow_verdict_change=True
    ).envelope
    assert envelope["meta"]["redaction"]["verdict_changed"] is True
    assert envelope["meta"]["redaction"]["original_verdict"] == {"status": "pass", "codes": []}


def test_a_pattern_that_masking_breaks_is_refused_naming_call_and_keyword() -> None:
    request = {
        "model": "m",
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "parameters": {
                        "type": "object",
                        "properties": {"city": {"type": "string", "pattern": "^[A-Z]"}},
                    },
                },
            }
        ],
    }
    exchange = openai_exchange(['{"city":"Oslo"}'], request=request)
    with pytest.raises(RedactionRefused) as refused:
        redact_exchange(exchange)
    assert "choice 0 slot 0: schema_violation (pattern)" in str(refused.value)
    assert redact_exchange(exchange, arguments=ArgumentMode.KEEP).report.executable


def test_a_credential_left_in_kept_data_refuses_the_write_without_naming_it() -> None:
    key = "sk-ant-api03-" + "Q" * 40
    exchange = openai_exchange(
        ['{"city":"Oslo"}'], headers=[("x-api-key", key)], request={"model": key, "tools": []}
    )
    with pytest.raises(RedactionRefused) as refused:
        redact_exchange(exchange)
    assert "/request/model" in str(refused.value) and key not in str(refused.value)


def test_a_stream_no_profile_reads_at_an_unknown_endpoint_is_not_applicable() -> None:
    exchange = Exchange(
        method="POST",
        url="https://llm.example/v9/generate",
        request_headers=[],
        request_body=b"{}",
        status=200,
        response_headers=[("content-type", "text/event-stream")],
        response_body=sse({"token": "x"}),
    )
    with pytest.raises(NotApplicable, match=r"^no profile reads endpoint /v9/generate$"):
        redact_exchange(exchange)


def test_keeping_the_models_text_is_written_into_the_redaction_note() -> None:
    kept = redact_exchange(openai_exchange(['{"city": "Oslo"}']), keep_text=True).envelope
    assert kept["meta"]["redaction"]["text"] == "keep"
    assert kept["chunks"][0]["choices"][0]["delta"]["content"] == "Let me look."
    masked = redact_exchange(openai_exchange(['{"city": "Oslo"}'])).envelope
    assert "text" not in masked["meta"]["redaction"]
    assert masked["chunks"][0]["choices"][0]["delta"]["content"] == "xxx xx xxxxx"


def test_an_error_status_is_not_applicable_whatever_the_body() -> None:
    exchange = openai_exchange(['{"city": "Oslo"}'])
    exchange = Exchange(
        method=exchange.method,
        url=exchange.url,
        request_headers=exchange.request_headers,
        request_body=exchange.request_body,
        status=429,
        response_headers=exchange.response_headers,
        response_body=exchange.response_body,
    )
    with pytest.raises(NotApplicable, match=r"^HTTP status 429$"):
        redact_exchange(exchange)


def test_a_non_streamed_exchange_is_not_applicable() -> None:
    exchange = Exchange(
        method="POST",
        url="https://api.openai.com/v1/chat/completions",
        request_headers=[],
        request_body=b"{}",
        status=200,
        response_headers=[("content-type", "application/json")],
        response_body=b'{"choices": []}',
    )
    with pytest.raises(NotApplicable, match="not streamed: the body is one JSON document"):
        redact_exchange(exchange)


def test_a_responses_exchange_keeps_every_copy_of_the_arguments_equal_after_masking() -> None:
    item = {
        "id": "fc_1",
        "type": "function_call",
        "status": "in_progress",
        "arguments": "",
        "call_id": "call_9",
        "name": "get_weather",
    }
    done_item = {**item, "status": "completed", "arguments": '{"city":"Oslo"}'}
    events = [
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {
            "type": "response.function_call_arguments.delta",
            "output_index": 0,
            "item_id": "fc_1",
            "delta": '{"city":',
        },
        {
            "type": "response.function_call_arguments.delta",
            "output_index": 0,
            "item_id": "fc_1",
            "delta": '"Oslo"}',
        },
        {
            "type": "response.function_call_arguments.done",
            "output_index": 0,
            "item_id": "fc_1",
            "arguments": '{"city":"Oslo"}',
        },
        {"type": "response.output_item.done", "output_index": 0, "item": done_item},
        {"type": "response.completed", "response": {"status": "completed", "output": [done_item]}},
    ]
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
    request = {
        "model": "gpt-5",
        "input": "Weather in Oslo?",
        "tools": [{"type": "function", "name": "get_weather", "parameters": WEATHER}],
    }
    exchange = Exchange(
        method="POST",
        url="https://api.openai.com/v1/responses",
        request_headers=[],
        request_body=json.dumps(request).encode(),
        status=200,
        response_headers=[("content-type", "text/event-stream")],
        response_body=body,
    )
    envelope = redact_exchange(exchange).envelope
    assert (envelope["profile"], envelope["expect"]) == (
        "openai-responses",
        {"status": "pass", "codes": []},
    )
    streamed = "".join(
        e["delta"] for e in envelope["events"] if e["type"].endswith("arguments.delta")
    )
    assert streamed == '{"city":"xxxx"}' == envelope["events"][3]["arguments"]
    assert envelope["events"][5]["response"]["output"][0]["arguments"] == streamed
    assert (
        "Oslo" not in json.dumps(envelope)
        and "request.input" in envelope["meta"]["redaction"]["removed"]
    )


def test_mask_keeps_syntax_findings_letter_for_letter() -> None:
    assert mask_arguments(['{"a": Par', "is", "}"]) == ['{"a": xxx', "xx", "}"]
    assert mask_arguments(['{"a": NaN, "b": "\\ud800"}']) == ['{"a": NaN, "b": "\\ud800"}']


def test_pseudonyms_are_stable_and_idempotent() -> None:
    ids = Pseudonyms()
    assert [ids(x) for x in ("call_A", "msg_B", "call_A", "", "gSIMJ")] == [
        "call_redacted1",
        "msg_redacted2",
        "call_redacted1",
        "",
        "redacted3",
    ]
    again = Pseudonyms()
    assert [again(x) for x in ("call_redacted1", "msg_redacted2")] == [
        "call_redacted1",
        "msg_redacted2",
    ]


canary = st.text("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz", min_size=16, max_size=24).map(
    lambda s: "Cy" + s
)


@settings(max_examples=60, deadline=None)
@given(
    canary,
    st.sampled_from(
        [
            "authorization",
            "x-api-key",
            "api-key",
            "cookie",
            "openai-organization",
            "x-custom-token",
            "query",
            "system",
            "user",
            "tool_result",
            "output",
            "argument",
        ]
    ),
)
def test_a_planted_canary_never_reaches_a_fixture_in_any_encoding(secret: str, place: str) -> None:
    headers = [("content-type", "application/json")]
    query, content, arguments = "", "Sure.", ['{"city":"Oslo"}']
    request: dict[str, Any] = {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "hi"},
            {"role": "tool", "tool_call_id": "call_0", "content": "result"},
        ],
        "system": "s",
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}],
    }
    if place in ("authorization", "x-api-key", "api-key", "openai-organization", "x-custom-token"):
        headers.append((place, f"Bearer {secret}" if place == "authorization" else secret))
    elif place == "cookie":
        headers.append(("cookie", f"session={secret}; theme=dark"))
    elif place == "query":
        query = f"?key={secret}"
    elif place in ("system", "user", "tool_result"):
        message = {"system": 0, "user": 1, "tool_result": 2}[place]
        request["messages"][message]["content"] = f"note {secret} end"
    elif place == "output":
        content = f"Here is {secret}"
    else:
        arguments = ['{"city": "', secret[:5], secret[5:] + '"}']
    exchange = openai_exchange(
        arguments, content=content, headers=headers, query=query, request=request
    )
    text = json.dumps(redact_exchange(exchange).envelope)
    for form in encodings(secret) | {base64.b64encode(secret.encode()).decode(), quote(secret)}:
        assert form not in text


def test_a_long_conversation_keeps_its_tool_schemas_and_a_malformed_tool_is_left_out() -> None:
    request = {
        "model": "m",
        "stream": True,
        "messages": [{"role": "user", "content": "x" * (2 << 20)}],
        "tools": [
            {"type": "function", "function": "not an object"},
            {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}},
        ],
    }
    assert request_context(json.dumps(request).encode(), "openai") == (
        {"get_weather": WEATHER},
        {"model": "m", "stream": True},
    )
    envelope = redact_exchange(openai_exchange(['{"city": "Oslo"}'], request=request)).envelope
    assert (envelope["tool_schemas"], envelope["meta"]["tools"]) == (
        {"get_weather": WEATHER},
        ["get_weather"],
    )
    assert envelope["expect"] == {"status": "pass", "codes": []}


SECRET_TEXT = st.sampled_from(
    [
        "sk-proj-CANARYkey0123456789abcdef",
        'se"cret\\value\n12',
        "Bearer\tabcdefghijklmnop",
        "bearer abcdefghijklmnop",
        "ASIA0123456789ABCDEF",
        "github_pat_" + "b" * 22,
        "Bearer\x1cabcdefghijklmnop",
        "AIzaSyCANARY0123456789abcdefghijklmnop",
        "plain words",
        "ghp_" + "a" * 36,
        "eyJhbGciOiJI.eyJzdWIiOiIx.c2lnbmF0dXJl",
    ]
)


@st.composite
def values_with_secrets(draw: st.DrawFn) -> tuple[object, list[str]]:
    leaf = st.one_of(
        st.text(max_size=8),
        SECRET_TEXT,
        st.builds(lambda a, s, b: a + s + b, st.text(max_size=3), SECRET_TEXT, st.text(max_size=3)),
        st.integers(),
        st.none(),
    )
    value = draw(
        st.recursive(
            leaf,
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.text(max_size=4) | SECRET_TEXT, inner, max_size=3)
            ),
            max_leaves=8,
        )
    )
    return value, draw(st.lists(SECRET_TEXT, max_size=2))


@pytest.mark.sweep
@settings(max_examples=400, deadline=None)
@given(values_with_secrets())
def test_the_leak_search_over_the_written_text_finds_what_a_walk_over_strings_finds(
    drawn: tuple[object, list[str]],
) -> None:
    from callgate.redact.leaks import _leaks_at, json_strings

    value, secrets = drawn
    needles = {form for secret in secrets for form in encodings(secret)}
    walked = _leaks_at(json_strings(value), needles)
    assert find_leaks(value, secrets) == walked
    # Searched in the text as a fixture lays it out, as the fixture writer hands it over.
    indented = json.dumps(value, indent=2, ensure_ascii=False)
    assert find_leaks(value, secrets, indented) == walked


@pytest.mark.parametrize("path", conformance_fixtures(), ids=fixture_id)
def test_a_redacted_envelope_carries_the_bytes_a_fixture_of_it_stores(path: Path) -> None:
    """What the leak gate searched is what is written: ``Redacted.data``."""
    redacted = redact_envelope(load(path), pin_expectation=True)
    assert redacted.data == fixture_bytes(redacted.envelope)


@pytest.mark.parametrize("path", sorted((CONFORMANCE / "openai").glob("*.json")), ids=fixture_id)
def test_an_sse_body_read_with_its_profile_has_the_events_read_without(path: Path) -> None:
    """With a profile, events are read as the proxy reads them live (its proof that no member
    name repeats, instead of the check per object): the values are the same, of the same
    types, and an event that is not strict JSON stays its text."""
    envelope = load(path)
    body = b"".join(framed(envelope, SSE))
    with_profile = parse_stream_body(body, "text/event-stream", profile="openai")
    without = parse_stream_body(body, "text/event-stream")
    assert with_profile == without
    assert [type(e) for e in with_profile.events] == [type(e) for e in without.events]


def test_keeping_arguments_keeps_only_argument_deltas_never_text_deltas() -> None:
    envelope = load(CONFORMANCE / "openai-responses" / "valid_text_then_call.json")
    events = redact_envelope(envelope, arguments=ArgumentMode.KEEP).envelope["events"]
    assert [(e["type"].rsplit(".", 2)[-2], e["delta"]) for e in events if "delta" in e] == [
        ("output_text", "xxx xx "),
        ("output_text", "xxxxx xxxxx"),
        ("function_call_arguments", '{"'),
        ("function_call_arguments", "city"),
        ("function_call_arguments", '":"'),
        ("function_call_arguments", "Oslo"),
        ("function_call_arguments", '"}'),
    ]


def test_a_done_event_without_its_arguments_is_redacted_without_a_site_for_them() -> None:
    envelope = load(CONFORMANCE / "openai-responses" / "valid_single_call.json")
    done = next(
        e for e in envelope["events"] if e["type"] == "response.function_call_arguments.done"
    )
    del done["arguments"]
    redacted = redact_envelope(envelope, allow_verdict_change=True).envelope
    assert not any(
        "arguments" in e
        for e in redacted["events"]
        if e["type"] == "response.function_call_arguments.done"
    )


# -- corners the mutation run found unpinned -----------------------------------------------------


def headers_exchange(headers: list[tuple[str, str]], query: str = "") -> Exchange:
    return Exchange(
        method="POST",
        url=f"https://api.openai.com/v1/chat/completions{query}",
        request_headers=headers,
        request_body=b"{}",
        status=200,
        response_headers=[],
        response_body=b"",
    )


def test_secrets_are_credential_headers_tokens_cookies_and_query_values_of_eight_or_more() -> None:
    exchange = headers_exchange(
        [
            ("Authorization", "Bearer tok_12345678"),
            ("x-api-key", "k1234567"),
            ("Proxy-Authorization", "ApiKey 0a1b2c3d4e5f6a7b8c9d"),  # a scheme of its own
            ("Cookie", "session=sess_abcdefgh; theme=dark"),
            ("x-stainless-retry-token", "abcdefgh12345678abcd"),  # harmless by prefix
            ("User-Agent", "Agent1234567890abcdefgh"),  # harmless by name, token-like as it is
            ("x-request-tag", "abcdefgh12345678abcd"),  # token-like under any other name
            ("x-short-key", "k123456"),
        ],
        "?key=q1234567&n=1234567",
    )
    assert secrets_of(exchange) == {
        "Bearer tok_12345678",
        "tok_12345678",
        "k1234567",
        "ApiKey 0a1b2c3d4e5f6a7b8c9d",
        "0a1b2c3d4e5f6a7b8c9d",
        "session=sess_abcdefgh; theme=dark",
        "sess_abcdefgh",
        "abcdefgh12345678abcd",
        "q1234567",
    }


def test_a_secret_is_searched_for_in_url_safe_base64_too() -> None:
    secret = "sk-??>>??>>??>>"  # its base64 holds "+" and "/"
    forms = encodings(secret)
    assert any("/" in form or "+" in form for form in forms)
    assert {
        form.replace("+", "-").replace("/", "_")
        for form in forms
        if len(form) >= 8 and form not in (secret,)
    } <= forms


def test_masking_keeps_the_shape_of_an_unterminated_string_and_escapes_across_fragments() -> None:
    assert mask_arguments(['{"city":"Par']) == ['{"city":"xxx']
    assert mask_arguments(['{"city":"Pa', 'ris"}']) == ['{"city":"xx', 'xxx"}']
    assert mask_arguments(['{"a":"x\\', '"y"}']) == ['{"a":"x\\', '"x"}']


def test_kept_header_values_are_clipped_to_80_characters() -> None:
    exchange = openai_exchange(
        ['{"city":"Oslo"}'], headers=[("x-stainless-package-version", "1." + "9" * 100)]
    )
    exchange = Exchange(
        **{
            **exchange.__dict__,
            "response_headers": [("content-type", "text/event-stream; " + "x" * 100)],
        }
    )
    headers = redact_exchange(exchange).envelope["meta"]["headers"]
    assert headers["x-stainless-package-version"] == ("1." + "9" * 100)[:80]
    assert headers["response-content-type"] == ("text/event-stream; " + "x" * 100)[:80]


def test_dropping_arguments_empties_stated_copies_too() -> None:
    envelope = load(CONFORMANCE / "anthropic" / "stated_input_only.json")
    redacted = redact_envelope(
        envelope, arguments=ArgumentMode.DROP, allow_verdict_change=True
    ).envelope
    assert redacted["events"][1]["content_block"]["input"] == {}


def test_masking_keeps_const_values_of_the_tool_schema() -> None:
    envelope = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    envelope["tool_schemas"]["get_weather"]["properties"]["unit"] = {"const": "c"}
    arguments = check(redact_envelope(envelope).envelope).calls[0].arguments
    assert arguments == '{"city":"xxxxx","unit":"c"}'


def test_stream_bodies_are_read_by_their_content_type() -> None:
    sse = parse_stream_body(b"data: {}\n\ndata: [DONE]\n\n", "text/event-stream; charset=utf-8")
    assert (sse.events, sse.framing, sse.done) == ([{}], "sse", True)
    array = parse_stream_body(b'[{"a":1},\n{"a":1, "a":2}]', "application/json")
    assert (array.events, array.incomplete) == ([{"a": 1}, '{"a":1, "a":2}'], False)
    cut = parse_stream_body(b'[{"a":1},', "application/json")
    assert (cut.events, cut.incomplete) == ([{"a": 1}], True)
    with pytest.raises(NotApplicable, match="more text follows a complete JSON value"):
        parse_stream_body(b'[{"a":1}] x', "application/json")


@pytest.mark.parametrize("wrap", ["zlib", "raw"])
def test_deflate_bodies_are_read_with_or_without_their_zlib_header(wrap: str) -> None:
    body = b"data: {}\n\n" * 50
    packer = zlib.compressobj(wbits=15 if wrap == "zlib" else -15)
    packed = packer.compress(body) + packer.flush()
    decompressor = Decompressor("deflate")
    assert decompressor(packed[:7]) + decompressor(packed[7:]) == body
    assert decompressor.complete


def test_an_event_that_is_no_object_is_passed_over_when_arguments_are_looked_for() -> None:
    envelope = load(CONFORMANCE / "openai-responses" / "valid_single_call.json")
    envelope["events"].insert(1, "not an object")
    redacted = redact_envelope(envelope, allow_verdict_change=True).envelope
    assert redacted["events"][1] == "xxx xx xxxxxx"


def test_done_is_seen_only_when_sent_and_also_before_a_byte_that_is_not_utf8() -> None:
    assert parse_stream_body(b'data: {"a":1}\n\n', "text/event-stream").done is False
    broken = parse_stream_body(
        b'data: {"a":1}\n\ndata: [DONE]\n\ndata: \xff\n\n', "text/event-stream"
    )
    assert (broken.events, broken.done, broken.incomplete) == ([{"a": 1}, "\ufffd\n\n"], True, True)


def test_a_base64_run_of_exactly_eight_stable_characters_is_searched_for() -> None:
    assert "YWJjZGVm" in encodings("abcdef")  # base64 of the six bytes, no padding


@pytest.mark.parametrize(
    ("error", "kept"),
    [
        ("Client disconnected.", "client disconnected"),
        ("peer closed connection without sending complete message body", "upstream error"),
        (None, None),
    ],
)
def test_why_a_stream_did_not_end_is_kept_as_one_of_two_words(
    error: str | None, kept: str | None
) -> None:
    exchange = Exchange(
        **{
            **openai_exchange(['{"city":"Oslo"}']).__dict__,
            "complete": error is None,
            "error": error,
        }
    )
    assert redact_exchange(exchange).envelope["meta"]["stream"].get("error") == kept


def test_redacting_an_envelope_pins_its_verdict_only_when_asked() -> None:
    envelope = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    del envelope["expect"]
    assert "expect" not in redact_envelope(envelope).envelope
    assert redact_envelope(envelope, pin_expectation=True).envelope["expect"] == {
        "status": "pass",
        "codes": [],
    }


def test_redacting_an_envelope_refuses_a_changed_verdict_unless_allowed() -> None:
    envelope = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    envelope["tool_schemas"]["get_weather"]["properties"]["city"]["pattern"] = "^P"
    with pytest.raises(RedactionRefused, match="masking would change the verdict"):
        redact_envelope(envelope)
    changed = redact_envelope(envelope, allow_verdict_change=True).envelope
    assert changed["meta"]["redaction"]["verdict_changed"] is True
    # A first redaction that keeps the verdict says so, and a later one keeps saying so.
    kept = redact_envelope(load(CONFORMANCE / "openai" / "valid_fragmented.json")).envelope
    again = redact_envelope(kept).envelope
    for redacted in (kept, again):
        assert redacted["meta"]["redaction"]["verdict_preserved"] is True
        assert "verdict_changed" not in redacted["meta"]["redaction"]


def test_a_choice_that_is_no_object_is_passed_over_when_arguments_are_looked_for() -> None:
    envelope = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    envelope["chunks"].insert(1, {"id": "c", "choices": ["not a choice"]})
    redacted = redact_envelope(envelope, allow_verdict_change=True).envelope
    assert redacted["chunks"][1]["choices"] == ["xxx x xxxxxx"]


def test_a_secret_in_a_member_name_is_caught_at_its_path() -> None:
    secret = "sk-proj-membernameKEY1234567890"
    leaks = find_leaks({"outer": {secret: 1}}, [secret])
    assert [(leak.path, leak.caught_by) for leak in leaks][:1] == [
        (f"/outer/{secret}", "credential-from-exchange")
    ]


def test_an_invalid_unicode_escape_keeps_its_backslash_and_u_and_masks_the_rest() -> None:
    assert mask_arguments(['{"a":"\\uzzzz"}', '{"b":"\\u12"}']) == [
        '{"a":"\\uxxxx"}',
        '{"b":"\\uxx"}',
    ]


def test_a_fixture_file_name_keeps_40_characters_of_the_provider_and_nothing_unsafe() -> None:
    from hashlib import sha256

    from callgate.redact import fixture_name

    name = fixture_name({"provider": "My Gateway/" + "p" * 60, "profile": "openai"}, b"x")
    assert name == f"my-gateway-{'p' * 29}-openai-{sha256(b'x').hexdigest()[:12]}.json"


def test_the_redacted_fixture_pins_its_policy_and_event_times_in_milliseconds() -> None:
    import dataclasses

    exchange = openai_exchange(['{"city": "Oslo"}'])
    times = [0.0, 0.25, 0.2504, 1.5]
    envelope = redact_exchange(dataclasses.replace(exchange, event_times=times)).envelope
    assert (
        envelope["meta"]["redaction"]["policy"],
        envelope["meta"]["redaction"]["policy_version"],
    ) == ("callgate-default", 1)
    assert envelope["meta"]["stream"]["event_times_ms"] == [0, 250, 250, 1500]
    # The request keeps its parameters, never its messages.
    assert envelope["request"] == {"model": "gpt-4o-mini", "stream": True}
    again = redact_envelope({**envelope, "request": {"model": "m", "messages": [{"x": 1}]}})
    assert again.envelope["request"] == {"model": "m"}
    # Times that are not one per event (a body read some other way) are not pinned.
    other = redact_exchange(dataclasses.replace(exchange, event_times=times[:3])).envelope
    assert "event_times_ms" not in other["meta"]["stream"]


@pytest.mark.parametrize("before", [b"", b"\xf1", b"\xf1\xe2"])
@pytest.mark.parametrize("after", [b"", b"\x9d", b"\x9d\x8c", b"\x9d\x8c\x7b"])
def test_a_secret_inside_a_larger_base64_blob_is_found_whatever_its_neighbours(
    before: bytes, after: bytes
) -> None:
    # The neighbours share base64 characters with the secret's first and last bytes; only the
    # characters made of the secret's bits alone may be searched for.
    secret = "CyCanary value 0123"
    blob = base64.b64encode(before + secret.encode() + after).decode()
    assert [leak.path for leak in find_leaks({"blob": blob}, [secret])] == ["/blob"]


def test_a_value_holding_every_encoding_of_a_secret_leaks_at_each() -> None:
    secret = "CyCanary value 0123"  # in no credential format: only the needles find it
    forms = sorted(encodings(secret))
    assert [leak.path for leak in find_leaks(forms, [secret])] == [
        f"/{n}" for n in range(len(forms))
    ]


def test_brotli_and_zstd_bodies_decode_in_pieces_and_a_missing_package_is_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    import brotli
    import zstandard

    from callgate.reassemble.errors import SetupError
    from callgate.redact.encoding import Decompressor

    body = b'data: {"a": "x"}\n\n' * 50
    for coding, packed in (
        ("br", brotli.compress(body)),
        ("zstd", zstandard.ZstdCompressor().compress(body)),
    ):
        decoder = Decompressor(coding)
        assert b"".join(decoder(packed[n : n + 7]) for n in range(0, len(packed), 7)) == body
        assert decoder.complete  # only gzip and deflate can tell where a body ends
    identity = Decompressor("identity")
    assert identity(body) == body and identity.complete
    monkeypatch.setitem(sys.modules, "brotli", None)
    with pytest.raises(SetupError, match="content-encoding br needs the brotli package"):
        Decompressor("br")
    for module in ("compression", "backports", "zstandard"):
        monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(
        SetupError, match=r"content-encoding zstd needs the backports\.zstd package"
    ):
        Decompressor("zstd")


def test_enum_values_inside_a_list_of_subschemas_are_kept_when_arguments_are_masked() -> None:
    envelope = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    envelope["tool_schemas"] = {
        "get_weather": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"anyOf": [{"enum": ["celsius"]}, {"type": "null"}]},
            },
        }
    }
    envelope.pop("expect")
    envelope["chunks"] = [
        json.loads(json.dumps(c).replace('\\"c\\"', '\\"celsius\\"')) for c in envelope["chunks"]
    ]

    def arguments(chunks: list[dict[str, Any]]) -> str:
        return "".join(
            call["function"]["arguments"]
            for chunk in chunks
            for choice in chunk["choices"]
            for call in (choice.get("delta") or {}).get("tool_calls") or []
        )

    assert arguments(envelope["chunks"]) == '{"city":"Paris","unit":"celsius"}'
    assert (
        arguments(redact_envelope(envelope).envelope["chunks"])
        == '{"city":"xxxxx","unit":"celsius"}'
    )


def test_a_whole_body_that_is_not_valid_or_ends_early_for_its_coding_is_one_line() -> None:
    body = b"data: {}\n\n" * 50
    packed = gzip.compress(body)
    assert decode_whole(packed, "gzip") == body
    with pytest.raises(InputError, match=r"^gzip body ends early$"):
        decode_whole(packed[:-9], "gzip")
    with pytest.raises(InputError, match=r"^not valid gzip: Error -3 while decompressing data"):
        decode_whole(b"plain text, not gzip", "gzip")
    packer = zlib.compressobj()
    with pytest.raises(InputError, match=r"^deflate body ends early$"):
        decode_whole(packer.compress(body) + packer.flush(zlib.Z_SYNC_FLUSH), "deflate")


def test_a_fixture_is_written_with_each_event_of_its_stream_on_a_line_of_its_own() -> None:
    envelope = load(CONFORMANCE / "anthropic" / "valid_text_then_two_tools.json")
    data = fixture_bytes(envelope)
    assert json.loads(data) == envelope and data.endswith(b"}\n")
    lines = data.decode().splitlines()
    events = [json.dumps(event, ensure_ascii=False) + "," for event in envelope["events"]]
    start = lines.index('  "events": [') + 1
    assert lines[start : start + len(events)] == [f"    {e}" for e in events[:-1]] + [
        f"    {events[-1][:-1]}"
    ]
    assert lines[start + len(events)] == "  ],"
    # Everything else is indented as json.dumps(indent=2) would: a diff shows a changed event.
    assert lines[: start - 1] == json.dumps(envelope, indent=2).splitlines()[: start - 1]
    assert (
        fixture_bytes({"profile": "openai", "chunks": []})
        == b'{\n  "profile": "openai",\n  "chunks": []\n}\n'
    )
    assert fixture_bytes({"description": "Zürich", "chunks": ["é"]}) == (
        '{\n  "description": "Zürich",\n  "chunks": [\n    "é"\n  ]\n}\n'.encode()
    )


def test_a_gzip_body_corrupted_after_a_good_start_raises_and_never_restarts_as_raw_deflate() -> (
    None
):
    # A deflate body without a header is read as such only from its first byte; later, a piece
    # that would read as a whole raw deflate stream must not be decoded as one.
    body = b"".join(b'data: {"n": %d}\n\n' % n for n in range(2000))
    packed = gzip.compress(body)
    packer = zlib.compressobj(wbits=-15)
    injected = packer.compress(b'data: {"injected": 1}\n\n') + packer.flush()
    decompressor = Decompressor("gzip")
    assert body.startswith(decompressor(packed[: len(packed) // 2]))
    with pytest.raises(zlib.error):
        decompressor(injected)


def test_vertex_argument_pieces_are_masked_keeping_enum_values_or_dropped() -> None:
    envelope = {
        "profile": "gemini",
        "tool_schemas": {"get_weather": WEATHER},
        "chunks": [
            gemini_chunk({"name": "get_weather", "willContinue": True}),
            gemini_chunk(
                {
                    "partialArgs": [
                        {"jsonPath": "$.city", "stringValue": "Oslo"},
                        {"jsonPath": "$.unit", "stringValue": "celsius"},
                    ],
                    "willContinue": True,
                }
            ),
            gemini_chunk({}),
            gemini_chunk(None, "STOP"),
        ],
    }

    def pieces(mode: ArgumentMode) -> list[str]:
        redacted = redact_envelope(envelope, arguments=mode, allow_verdict_change=True)
        return [
            item["stringValue"]
            for item in redacted.envelope["chunks"][1]["candidates"][0]["content"]["parts"][0][
                "functionCall"
            ]["partialArgs"]
        ]

    assert pieces(ArgumentMode.MASK) == ["xxxx", "celsius"]
    assert pieces(ArgumentMode.DROP) == ["", ""]


def test_a_masked_argument_string_keeps_its_length_and_masks_spaces_too() -> None:
    assert mask_arguments(['{"city": "New York\\n"}']) == ['{"city": "xxxxxxxx\\n"}']


# -- masks, by runs and escapes, hold to the character-by-character rule --------------------


def _kept_by_rule(char: str) -> bool:
    """The rule, as the docstring of ``_kept`` states it."""
    return char in '/"\\' or ord(char) < 0x20 or 0xD800 <= ord(char) <= 0xDFFF


def _string_masked_by_rule(literal: str, closed: bool, mask: str) -> str:
    """A string token masked one character or escape at a time."""
    body_end = len(literal) - 1 if closed else len(literal)
    out, i = ['"'], 1
    while i < body_end:
        char = literal[i]
        if char != "\\":
            piece = char if _kept_by_rule(char) else mask
            out.append(piece)
            i += 1
            continue
        digits = literal[i + 2 : i + 6]
        if (
            literal[i + 1 : i + 2] == "u"
            and len(digits) == 4
            and all(d in "0123456789abcdefABCDEF" for d in digits)
        ):
            out.append(
                literal[i : i + 6] if _kept_by_rule(chr(int(digits, 16))) else f"\\u{ord(mask):04x}"
            )
            i += 6
        else:
            out.append(literal[i : i + 2])
            i += 2
    return "".join(out) + literal[body_end:]


def _string_end_by_rule(text: str, start: int) -> tuple[int, bool]:
    i = start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text[i] == '"':
            return i + 1, True
        else:
            i += 1
    return len(text), False


#: Text made of what string masking tells apart: escapes whole and broken, quotes, backslashes,
#: control characters, surrogates, white space, letters of every plane.
MASKING_TEXT = st.lists(
    st.sampled_from(
        [
            "\\",
            '"',
            "\\u",
            "\\\n",
            "\\uD83D",
            "\\ude00",
            "\\u0041",
            "\\u001f",
            "\\u002F",
            "12",
            "ab",
            "\n",
            "\x1c",
            " ",
            "\u2028",
            "\u00a0",
            "/",
            "\ud800",
            "é",
            "😀",
            "x",
        ]
    )
    | st.text(max_size=3),
    max_size=12,
).map("".join)


@settings(max_examples=500, deadline=None)
@given(MASKING_TEXT, st.sampled_from("xy"))
@example('a\\\n"b', "x")  # a backslash escapes even a raw line break
def test_a_string_is_masked_as_it_is_one_character_or_escape_at_a_time(
    text: str, mask: str
) -> None:
    from callgate.redact.mask import _mask_string, _string_end

    literal = '"' + text
    end, closed = _string_end(literal, 0)
    assert (end, closed) == _string_end_by_rule(literal, 0)
    assert _mask_string(literal[:end], closed, mask) == _string_masked_by_rule(
        literal[:end], closed, mask
    )


@settings(max_examples=500, deadline=None)
@given(MASKING_TEXT | st.text(), st.sampled_from("xy"))
def test_free_text_and_parsed_strings_are_masked_character_for_character(
    text: str, mask: str
) -> None:
    from callgate.redact.mask import mask_text, mask_value

    assert mask_text(text) == "".join(c if c.isspace() else "x" for c in text)
    assert mask_value(text, mask=mask) == "".join(c if _kept_by_rule(c) else mask for c in text)


def _json_text_masked_a_token_at_a_time(text: str, keep: frozenset[str], mask: str) -> str:
    """The argument text masked by the lexer alone, one token at a time."""
    from callgate.redact.mask import _token

    out, i = [], 0
    while i < len(text):
        i, piece = _token(text, i, keep, mask)
        out.append(piece)
    return "".join(out)


#: Argument text where runs of numbers and punctuation meet what ends or continues them:
#: exponents, letters, non-ASCII digits, literals, strings, keys.
ARGUMENT_TEXT = st.lists(
    st.sampled_from(
        [
            *("1", "0", "-", "+", ".", "e", "E", "5", ",", ":", " ", "\n", "[", "]", "{", "}"),
            *("\u0663", "\u00b2", "true", "nul", "NaN", '"a"', '"k":', '"v', "x", "\\", "\t"),
            "\x0b",
        ]
    ),
    max_size=24,
).map("".join)


@settings(max_examples=2000, deadline=None)
@given(ARGUMENT_TEXT | MASKING_TEXT, st.sampled_from("xy"), st.booleans())
@example("[1e5,2.5E-3,-0,]", "x", False)
def test_argument_text_is_masked_as_the_lexer_masks_it_a_token_at_a_time(
    text: str, mask: str, keep_a: bool
) -> None:
    from callgate.redact.mask import _mask_json_text

    keep = frozenset({"a"} if keep_a else ())
    assert _mask_json_text(text, keep, mask) == _json_text_masked_a_token_at_a_time(
        text, keep, mask
    )


@settings(max_examples=500, deadline=None)
@given(st.lists(ARGUMENT_TEXT | MASKING_TEXT, max_size=5))
def test_masked_fragments_are_the_masked_text_cut_where_the_fragments_were_cut(
    fragments: list[str],
) -> None:
    from callgate.redact.mask import _mask_json_text

    masked = mask_arguments(fragments)
    assert "".join(masked) == _mask_json_text("".join(fragments), frozenset(), "x")
    assert [len(piece) for piece in masked] == [len(fragment) for fragment in fragments]


def test_a_string_of_a_str_subclass_a_python_caller_put_in_is_masked_too() -> None:
    """An envelope built in Python may hold ``str`` subclasses (an enum's values): they are
    text like any other, and are masked."""

    class Said(str):
        pass

    envelope = load(CONFORMANCE / "openai" / "valid_text_then_call.json")
    text = "a private sentence the model said"
    for chunk in envelope["chunks"]:
        for choice in chunk.get("choices", []):
            if isinstance(choice.get("delta", {}).get("content"), str):
                choice["delta"]["content"] = Said(text)
    written = fixture_bytes(redact_envelope(envelope, allow_verdict_change=True).envelope)
    assert text.encode() not in written


def test_an_exchange_cannot_be_changed_once_made() -> None:
    """What was captured is what is redacted: a stage that changed it would redact another
    exchange than the one recorded."""
    exchange = openai_exchange(['{"city":"Oslo"}'])
    with pytest.raises(dataclasses.FrozenInstanceError):
        exchange.url = "https://example.test/"  # type: ignore[misc]


def test_a_copy_that_restates_other_arguments_of_the_same_length_is_masked_apart() -> None:
    """A Realtime ``.done`` that says ``Rome!`` where the stream said ``Paris``: masked with one
    letter both would read the same and hide the ``argument_mismatch``; the copy takes its own."""
    envelope = load(CONFORMANCE / "openai-realtime" / "valid_single_call.json")
    envelope["events"][7]["arguments"] = '{"city":"Rome!","unit":"c"}'
    redacted = redact_envelope(envelope)
    assert redacted.report.blocking_codes == ["argument_mismatch"]
    assert redacted.envelope["events"][7]["arguments"] == '{"city":"yyyyy","unit":"c"}'


@pytest.mark.parametrize(
    ("copy", "masked"),
    [
        # the same arguments as JSON, members reordered: the stream's letter
        ('{"unit":"c","city":"Paris"}', '{"unit":"c","city":"xxxxx"}'),
        # a copy that is no JSON is not the same arguments: its own letter
        ('{"city":"Paris","unit":"c"', '{"city":"yyyyy","unit":"c"'),
    ],
)
def test_a_copy_is_masked_with_the_stream_s_letter_only_when_it_is_the_same_json(
    copy: str, masked: str
) -> None:
    envelope = load(CONFORMANCE / "openai-realtime" / "valid_single_call.json")
    envelope["events"][7]["arguments"] = copy
    redacted = redact_envelope(envelope)
    assert redacted.report.blocking_codes == ["argument_mismatch"]
    assert redacted.envelope["events"][7]["arguments"] == masked


def test_masking_keeps_the_strings_a_schema_enumerates_and_no_other() -> None:
    """``enum`` and ``const`` values are what a schema allows; a ``required`` list names
    members, and an argument that happens to say one of those names is masked."""
    schemas = {
        "f": {
            "type": "object",
            "properties": {"a": {"enum": ["north", 1]}, "b": {"const": "east"}},
            "required": ["a", "south"],
            "examples": ["west"],
        }
    }
    assert _enum_values(schemas) == {"north", "east"}


def test_what_a_fixture_says_it_removed_is_exactly_what_it_removed() -> None:
    """The tools and the kept parameters stay: only the rest of the request is named."""
    redacted = redact_exchange(openai_exchange(['{"city":"Oslo"}']))
    assert redacted.envelope["meta"]["redaction"]["removed"] == [
        "headers",
        "output_text",
        "provider_ids",
        "request.messages",
    ]
