"""The mitmproxy addon with real parts: mitmproxy on 127.0.0.1, the fake provider upstream, the
real openai, anthropic and mistralai SDKs as apps."""

from __future__ import annotations

import http.client
import itertools
import json
import logging
import socket
import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from callgate.reassemble.profiles import PROFILES, array_frames, framed, frames
from callgate.redact import redact_envelope
from tests.conftest import CONFORMANCE, blocked_event, load
from tests.proxy_harness import (
    APPS_PYTHON,
    Proxy,
    SharedProxy,
    fake_provider,
    fixtures_in,
    post,
    read_events,
    request_body,
    tools_file,
    wait_for_log,
)
from tests.sdk_cases import AppReports, AppSession, Turn, selected, turn_key

pytestmark = pytest.mark.proxy

needs_apps = pytest.mark.skipif(
    not APPS_PYTHON.exists(), reason="run `make test` to create .venv-apps"
)


#: The tests that share the module's proxy (``proxies``): on one xdist worker, so it starts
#: once.
POOLED = pytest.mark.xdist_group("shared-proxy")
#: The SDK tests that share one batch of app turns, likewise.
SDK_BATCH = pytest.mark.xdist_group("proxy-sdk-batch")


@pytest.fixture(scope="module")
def upstream() -> Iterator[Any]:
    """One fake provider for the module: what it serves depends only on each request's path and
    headers, never on the requests before it."""
    provider = fake_provider()
    yield provider
    provider.close()


@pytest.fixture(scope="module")
def proxies(upstream: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedProxy]:
    """The proxy to ``upstream`` the module's tests share, each with its own options and fixture
    folder. A test that counts or looks for log lines starts a proxy of its own: the shared
    proxy's log line of an earlier test's fixture can come while the next test runs."""
    shared = SharedProxy(upstream.url, tmp_path_factory.mktemp("proxies"))
    yield shared
    shared.close()


@pytest.fixture
def proxy(proxies: SharedProxy, tmp_path: Path) -> Proxy:
    return proxies.take(tmp_path / "fixtures")


@pytest.fixture
def own_proxy(upstream: Any, tmp_path: Path) -> Iterator[Proxy]:
    """A proxy for this test alone, for a test that counts or looks for log lines."""
    with Proxy(upstream.url, tmp_path / "fixtures") as running:
        yield running


def chat_path(name: str) -> str:
    return f"/f/{name}/v1/chat/completions"


@POOLED
@pytest.mark.parametrize(
    "name",
    [
        "openai/valid_parallel_interleaved",
        "openai/reused_index_new_id",
        "anthropic/valid_text_then_two_tools",
    ],
)
@pytest.mark.parametrize("compress", [False, True])
def test_observe_mode_gives_the_client_the_upstream_bytes_exactly(
    upstream: Any, proxy: Proxy, name: str, compress: bool
) -> None:
    path = f"/f/{name}/v1/messages" if name.startswith("anthropic") else chat_path(name)
    headers = {"x-callgate-compress": "gzip"} if compress else {}
    direct = post(upstream.url, path, request_body(name), headers)
    proxied = post(proxy.url, path, request_body(name), headers)
    assert proxied[0] == direct[0] == 200
    assert proxied[2] == direct[2]
    assert proxied[1].get("content-encoding") == ("gzip" if compress else None)
    if compress:
        assert zlib.decompress(proxied[2], wbits=31).startswith(
            b"data: " if "openai" in name else b"event: "
        )
    fixture = fixtures_in(proxy.out, 1)[0]
    assert fixture["expect"] == {
        "status": load(CONFORMANCE / f"{name}.json")["expect"]["status"],
        "codes": load(CONFORMANCE / f"{name}.json")["expect"]["codes"],
    }


def test_events_reach_the_client_as_they_are_sent(tmp_path: Path) -> None:
    slow = fake_provider(timing=0.5)
    try:
        with Proxy(slow.url, tmp_path / "fixtures") as running:
            times = [t for t, _ in read_events(running.url, chat_path("openai/valid_fragmented"))]
            recorded = fixtures_in(running.out, 1)[0]["meta"]["stream"]["event_times_ms"]
    finally:
        slow.close()
    gaps = [b - a for a, b in itertools.pairwise(times)]
    # 8 chunks and [DONE], 0.5 s apart upstream: a proxy that buffered would deliver them
    # together (gaps near 0); the margin absorbs a loaded machine's scheduling delays.
    assert len(times) == 9 and min(gaps) > 0.25
    # The fixture keeps the gaps it saw, for `callgate serve --timing recorded`.
    assert len(recorded) == 8 and min(b - a for a, b in itertools.pairwise(recorded)) > 250


@POOLED
def test_an_upstream_abort_gives_a_fixture_with_missing_terminal(proxy: Proxy) -> None:
    events = list(
        read_events(
            proxy.url, chat_path("openai/valid_fragmented"), headers={"x-callgate-abort-after": "3"}
        )
    )
    assert len(events) == 3
    fixture = fixtures_in(proxy.out, 1)[0]
    assert fixture["expect"] == {"status": "fail", "codes": ["missing_terminal"]}
    assert fixture["meta"]["stream"]["complete"] is False
    assert fixture["meta"]["stream"]["error"] == "upstream error"


def test_a_client_that_hangs_up_mid_stream_is_recorded_as_such(tmp_path: Path) -> None:
    slow = fake_provider(timing=0.2)
    try:
        with Proxy(slow.url, tmp_path / "fixtures") as running:
            assert (
                len(
                    list(
                        read_events(running.url, chat_path("openai/valid_fragmented"), stop_after=2)
                    )
                )
                == 2
            )
            fixture = fixtures_in(running.out, 1)[0]
    finally:
        slow.close()
    assert fixture["expect"] == {"status": "fail", "codes": ["missing_terminal"]}
    assert fixture["meta"]["stream"]["error"] == "client disconnected"
    assert fixture["meta"]["stream"]["complete"] is False


@POOLED
def test_a_failure_inside_the_pipeline_costs_the_client_no_byte(
    upstream: Any, proxy: Proxy, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from callgate.reassemble import engine

    calls = {"n": 0}
    original = engine.Reassembler.feed

    def failing_feed(self: Any, raw: object) -> Any:
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("injected")
        return original(self, raw)

    monkeypatch.setattr(engine.Reassembler, "feed", failing_feed)
    caplog.set_level(logging.INFO, logger="callgate")
    name = "openai/valid_parallel_interleaved"
    body = request_body(name)
    assert post(proxy.url, chat_path(name), body)[2] == post(upstream.url, chat_path(name), body)[2]
    wait_for_log(caplog, "inspection stopped after an internal RuntimeError")


def test_fifty_concurrent_streams_give_fifty_correct_fixtures(
    own_proxy: Proxy, caplog: pytest.LogCaptureFixture
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    caplog.set_level(logging.INFO, logger="callgate")
    names = [
        p.relative_to(CONFORMANCE).with_suffix("").as_posix()
        for p in sorted((CONFORMANCE / "openai").glob("*.json"))
        if "quirk" not in p.name
    ][:25] * 2
    with ThreadPoolExecutor(max_workers=50) as pool:
        statuses = [
            status
            for status, _, _ in pool.map(
                lambda n: post(own_proxy.url, chat_path(n), request_body(n)), names
            )
        ]
    assert statuses == [200] * 50
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(written_lines(caplog)) < len(names):
        time.sleep(0.1)
    lines = written_lines(caplog)
    assert len(lines) == 50 and len({line.split()[1] for line in lines}) == 50  # 50 flows
    written = [
        json.loads(Path(line.split(" -> ")[1].rsplit(" (", 1)[0]).read_text()) for line in lines
    ]
    expected = {
        json.dumps(redact_envelope(load(CONFORMANCE / f"{n}.json")).envelope["chunks"])
        for n in names
    }
    # Each fixture holds exactly the redacted stream of one source: no cross-talk.
    assert sorted(json.dumps(f["chunks"]) in expected for f in written) == [True] * 50
    assert {json.dumps(f["chunks"]) for f in written} == expected


def written_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if " -> " in r.getMessage()]


def test_canaries_in_headers_query_and_prompt_reach_no_fixture_and_no_log(
    own_proxy: Proxy, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    key, query_key, prompt = "sk-proj-CANARYkey0123456789abcdef", "AIzaCANARYq", "CANARYprompt"
    body = json.loads(request_body("openai/reused_index_new_id"))
    body["messages"] = [{"role": "user", "content": prompt}]
    post(
        own_proxy.url,
        chat_path("openai/reused_index_new_id") + f"?key={query_key}",
        json.dumps(body).encode(),
        {"authorization": f"Bearer {key}", "x-api-key": key},
    )
    fixture = json.dumps(fixtures_in(own_proxy.out, 1)[0])
    logs = "\n".join(r.getMessage() for r in caplog.records)
    assert "identity_collision" in logs
    for canary in (key, query_key, prompt, "CANARY"):
        assert canary not in fixture and canary not in logs


@dataclass
class SdkRuns:
    """The app turns of this module's SDK tests, run in one interpreter, and the fixtures the
    observing proxy wrote for them."""

    apps: AppReports
    captured: list[dict[str, Any]]

    def captured_for(self, name: str) -> list[dict[str, Any]]:
        """The fixtures of the turns served conformance fixture ``name``."""
        return [f for f in self.captured if f["meta"]["endpoint"].startswith(f"/f/{name}/")]


def fixture_name(base: str) -> str:
    """The conformance fixture an SDK base URL path (``/f/NAME[/v1]``) is served."""
    return base.split("/f/")[1].removesuffix("/v1").rstrip("/")


@pytest.fixture(scope="module")
def sdk_runs(
    request: pytest.FixtureRequest,
    upstream: Any,
    proxies: SharedProxy,
    tmp_path_factory: pytest.TempPathFactory,
) -> SdkRuns:
    """Every selected SDK case's turns, straight to the upstream and through the proxy, in one
    interpreter: a group of turns for each of the proxy's settings (observe or enforce, told the
    provider for Mistral or not). Each observing group writes to a folder of its own, where
    each case finds its fixture by the path it asked for."""
    folder = tmp_path_factory.mktemp("sdk")

    def tools(base: str) -> tuple[str, str]:
        (folder / "tools" / fixture_name(base)).mkdir(parents=True, exist_ok=True)
        return ("--tools", tools_file(fixture_name(base), folder / "tools" / fixture_name(base)))

    # (enforce, provider) -> (item, role, sdk, path, proxied) for each turn in that setting.
    groups: dict[tuple[bool, str], list[tuple[str, str, str, str, bool]]] = {}
    for item, case in selected(request, test_each_sdk_streams_through_the_proxy_unchanged).items():
        sdk, base = case["sdk"], case["base"]
        group = groups.setdefault((False, "mistral" if sdk == "mistral" else ""), [])
        group += [(item, "direct", sdk, base, False), (item, "through", sdk, base, True)]
    cohere = test_enforce_mode_ends_a_bad_cohere_turn_with_error_which_cohere_python_hands_on
    enforce_cases = [
        *selected(request, test_enforce_mode_makes_the_sdk_raise_on_a_bad_turn_only).items(),
        *(
            (item, {"sdk": "cohere", "good": COHERE_GOOD, "bad": COHERE_BAD})
            for item in selected(request, cohere)
        ),
    ]
    for item, case in enforce_cases:
        sdk, good, bad = case["sdk"], case["good"], case["bad"]
        group = groups.setdefault((True, "mistral" if sdk == "mistral" else ""), [])
        group += [
            (item, "passed", sdk, good, True),
            (item, "blocked", sdk, bad, True),
            (item, "direct", sdk, good, False),
            (item, "direct_bad", sdk, bad, False),
        ]
    outcomes, captured = {}, []
    with AppSession() as apps:
        for (enforce, provider), turns in groups.items():
            out = folder / ("enforce" if enforce else "observe") / (provider or "any")
            proxy = proxies.take(out, callgate_enforce=enforce, callgate_provider=provider)
            outcomes |= apps.run(
                {
                    turn_key(item, role): Turn(
                        sdk, (proxy.url if proxied else upstream.url) + path, tools(path)
                    )
                    for item, role, sdk, path, proxied in turns
                }
            )
            if not enforce:
                captured += captured_in(out, sum(proxied for *_, proxied in turns))
    return SdkRuns(AppReports(outcomes), captured)


def captured_in(folder: Path, count: int) -> list[dict[str, Any]]:
    """The ``count`` fixtures expected in ``folder``, or those that came (each test then says
    which of its own is missing)."""
    try:
        return fixtures_in(folder, count)
    except AssertionError:
        return [json.loads(f.read_text()) for f in sorted(folder.glob("*.json"))]


@pytest.mark.sdk
@SDK_BATCH
@needs_apps
@pytest.mark.parametrize(
    ("sdk", "base", "calls"),
    [
        ("openai", "/f/openai/valid_fragmented/v1", 1),
        ("anthropic", "/f/anthropic/valid_fragmented", 1),
        ("mistral", "/f/mistral/native_parallel_calls", 2),
        ("gemini", "/f/gemini/valid_parallel_two_chunks/", 2),
        ("openai-responses", "/f/openai-responses/valid_parallel_calls/v1", 2),
        ("ollama", "/f/ollama/valid_parallel_calls_two_lines", 2),
        ("cohere", "/f/cohere/valid_parallel_calls", 2),
        ("bedrock", "/f/bedrock-converse/valid_parallel_calls", 2),
        ("bedrock-invoke", "/f/anthropic/valid_text_then_two_tools", 2),
    ],
)
def test_each_sdk_streams_through_the_proxy_unchanged(
    sdk_runs: SdkRuns, request: pytest.FixtureRequest, sdk: str, base: str, calls: int
) -> None:
    name = fixture_name(base)
    direct = sdk_runs.apps.report(request.node, "direct")
    through = sdk_runs.apps.report(request.node, "through")
    assert through["error"] is None and len(through["tool_calls"]) == calls
    for key in ("kinds", "finish", "tool_calls"):
        assert through[key] == direct[key]
    (fixture,) = sdk_runs.captured_for(name)
    assert (fixture["profile"], fixture["expect"]) == (
        name.split("/")[0],
        {"status": "pass", "codes": []},
    )


@pytest.mark.sdk
@SDK_BATCH
@needs_apps
@pytest.mark.parametrize(
    ("sdk", "good", "bad", "raised", "says", "handed"),
    [
        (
            "openai",
            "/f/openai/valid_fragmented/v1",
            "/f/openai/reused_index_new_id/v1",
            "APIError",
            "callgate blocked this turn: identity_collision",
            [{"name": "get_weathersearch", "arguments": '{"city":"Oslo"}{"query":"x"}'}],
        ),
        (
            "anthropic",
            "/f/anthropic/valid_fragmented",
            "/f/anthropic/reused_index_new_id",
            "APIStatusError",
            "callgate blocked this turn: duplicate_start, identity_collision",
            [{"name": "get_weather", "input": {"city": "Oslo"}}, {"name": "search", "input": {}}],
        ),
        # Unguarded, the Responses app runs the one call response.completed lists, of two streamed.
        (
            "openai-responses",
            "/f/openai-responses/valid_parallel_calls/v1",
            "/f/openai-responses/completed_output_omits_call/v1",
            "APIError",
            "callgate blocked this turn: argument_mismatch",
            [{"name": "get_weather", "arguments": '{"city":"Oslo"}'}],
        ),
        # google-genai raises on Gemini's error shape in the stream.
        (
            "gemini",
            "/f/gemini/valid_parallel_two_chunks/",
            "/f/gemini/vertex_missing_closing_part/",
            "ClientError",
            "409 ABORTED. {'error': {'code': 409, 'message': 'callgate blocked this turn: "
            "missing_terminal', 'status': 'ABORTED'}}",
            [
                {"name": "get_weather", "args": None},
                {"name": None, "args": None},
                {"name": None, "args": None},
            ],
        ),
        # mistralai has no error event; it fails to validate the error chunk and raises.
        (
            "mistral",
            "/f/mistral/native_parallel_calls",
            "/f/mistral/native_same_id_twice",
            "ResponseValidationError",
            "'error': {'message': 'ca",
            [
                {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
                {"name": "get_weather", "arguments": '{"city":"Rome"}'},
            ],
        ),
        # ollama-python raises on an error line; unguarded it hands on both calls at index 0.
        (
            "ollama",
            "/f/ollama/valid_parallel_calls_two_lines",
            "/f/ollama/reused_index_new_id",
            "ResponseError",
            "callgate blocked this turn: duplicate_start, identity_collision",
            [
                {"name": "get_weather", "arguments": {"city": "Paris"}},
                {"name": "get_weather", "arguments": {"city": "Rome"}},
            ],
        ),
        # boto3 raises on an exception message; unguarded, an app that keeps calls by block index
        # runs the second call's input under the first call's start.
        (
            "bedrock",
            "/f/bedrock-converse/valid_parallel_calls",
            "/f/bedrock-converse/reused_index_new_id",
            "EventStreamError",
            "(modelStreamErrorException) when calling the ConverseStream operation: callgate "
            "blocked this turn: delta_after_terminal, duplicate_start, duplicate_terminal, "
            "identity_collision",
            [{"name": "get_weather", "input": {"city": "Rome"}}],
        ),
        (
            "bedrock-invoke",
            "/f/anthropic/valid_fragmented",
            "/f/anthropic/reused_index_new_id",
            "EventStreamError",
            "(modelStreamErrorException) when calling the "
            "InvokeModelWithResponseStream operation: callgate blocked this turn: duplicate_start, "
            "identity_collision",
            [{"name": "search", "input": {"query": "x"}}],
        ),
    ],
)
def test_enforce_mode_makes_the_sdk_raise_on_a_bad_turn_only(
    sdk_runs: SdkRuns,
    request: pytest.FixtureRequest,
    sdk: str,
    good: str,
    bad: str,
    raised: str,
    says: str,
    handed: list[dict[str, Any]],
) -> None:
    passed, blocked, direct, direct_bad = (
        sdk_runs.apps.report(request.node, role)
        for role in ("passed", "blocked", "direct", "direct_bad")
    )
    assert passed["error"] is None and direct_bad["error"] is None
    assert direct_bad["tool_calls"] == handed  # unguarded, the app gets the bad turn's calls
    assert (passed["kinds"], passed["tool_calls"]) == (direct["kinds"], direct["tool_calls"])
    assert blocked["error"]["type"] == raised and says in blocked["error"]["message"]
    assert blocked["tool_calls"] == []


COHERE_GOOD, COHERE_BAD = "/f/cohere/valid_parallel_calls", "/f/cohere/reused_index_new_id"


@pytest.mark.sdk
@SDK_BATCH
@needs_apps
def test_enforce_mode_ends_a_bad_cohere_turn_with_error_which_cohere_python_hands_on(
    sdk_runs: SdkRuns, request: pytest.FixtureRequest
) -> None:
    """cohere-python raises on no event inside a stream (it skips what it cannot read, with a
    warning): the app learns of the block from the finish reason, ERROR instead of TOOL_CALL."""
    passed, blocked, direct, direct_bad = (
        sdk_runs.apps.report(request.node, role)
        for role in ("passed", "blocked", "direct", "direct_bad")
    )
    assert (passed["kinds"], passed["finish"], passed["tool_calls"]) == (
        direct["kinds"],
        "TOOL_CALL",
        direct["tool_calls"],
    )
    assert direct_bad["finish"] == "TOOL_CALL" and blocked["error"] is None
    assert (blocked["kinds"], blocked["finish"]) == (direct_bad["kinds"], "ERROR")


@POOLED
def test_enforce_mode_bytes_of_a_good_turn_are_unchanged_even_when_compressed(
    upstream: Any, proxies: SharedProxy, tmp_path: Path
) -> None:
    name = "openai/valid_parallel_interleaved"
    path, body = chat_path(name), request_body(name)
    running = proxies.take(tmp_path / "fixtures", callgate_enforce=True)
    plain = post(running.url, path, body)
    gz = post(running.url, path, body, {"x-callgate-compress": "gzip"})
    assert plain[2] == post(upstream.url, path, body)[2]
    assert "content-encoding" not in gz[1] and gz[2] == plain[2]


@POOLED
def test_enforce_mode_reads_the_forced_tool_choice_from_the_request_it_forwards(
    upstream: Any, proxies: SharedProxy, tmp_path: Path
) -> None:
    """A call forced by ``tool_choice`` ends with ``"stop"``, as OpenAI documents: it passes
    unchanged; the same stream asked without the forced choice ends with the error event."""
    name = "openai/valid_forced_tool_choice_stop"
    path, forced = chat_path(name), request_body(name)
    assert json.loads(forced)["tool_choice"] == {
        "type": "function",
        "function": {"name": "get_weather"},
    }
    unforced = json.dumps({**json.loads(forced), "tool_choice": "auto"}).encode()
    running = proxies.take(tmp_path / "fixtures", callgate_enforce=True)
    original = post(upstream.url, path, forced)[2]
    assert post(running.url, path, forced)[2] == original
    blocked = post(running.url, path, unforced)[2]
    kept = original[: original.index(b'"finish_reason": "stop"')]
    kept = kept[: kept.rindex(b"data: ")]
    assert blocked.startswith(kept) and b'"finish_reason": "stop"' not in blocked
    error = json.loads(blocked[len(kept) :].decode().removeprefix("data: "))
    assert error["error"]["code"] == "wrong_terminal_reason"


@POOLED
def test_enforce_mode_replaces_the_terminal_of_a_bad_turn_with_an_error_event(
    upstream: Any, proxies: SharedProxy, tmp_path: Path
) -> None:
    name = "openai/reused_index_new_id"
    path = chat_path(name)
    running = proxies.take(tmp_path / "fixtures", callgate_enforce=True)
    body = post(running.url, path, request_body(name))[2]
    original = post(upstream.url, path, request_body(name))[2]
    kept, _, _ = original.partition(
        b'data: {"id": "chatcmpl-fixture", "object": '
        b'"chat.completion.chunk", "created": 1700000000, '
        b'"model": "gpt-4o-mini", "choices": [{"index": 0, '
        b'"delta": {}, "logprobs": null, "finish_reason": '
        b'"tool_calls"}]}'
    )
    assert body.startswith(kept) and len(kept) < len(original)
    error = json.loads(body[len(kept) :].decode().removeprefix("data: "))
    assert error["error"]["code"] == "identity_collision"
    assert b"[DONE]" not in body


def test_raw_writers_are_refused_unless_allowed(upstream: Any, tmp_path: Path) -> None:
    from mitmproxy import exceptions

    with Proxy(upstream.url, tmp_path / "fixtures") as running:
        with pytest.raises(exceptions.OptionsError, match="unredacted"):
            running.master.options.update(save_stream_file=str(tmp_path / "raw.flow"))
        running.master.options.update(
            callgate_allow_raw_dump=True, save_stream_file=str(tmp_path / "raw.flow")
        )


@POOLED
@pytest.mark.parametrize(
    ("name", "expect"),
    [
        ("gemini/valid_parallel_two_chunks", {"status": "pass", "codes": []}),
        ("gemini/vertex_missing_closing_part", {"status": "fail", "codes": ["missing_terminal"]}),
    ],
)
@pytest.mark.parametrize(("alt", "framing"), [("alt=sse&", "sse"), ("", "json")])
def test_a_gemini_rest_call_is_captured_and_its_key_never_kept(
    upstream: Any,
    proxy: Proxy,
    name: str,
    expect: dict[str, Any],
    alt: str,
    framing: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    key = "AIzaSyCANARY0123456789abcdefghijklmnopq"
    path = f"/f/{name}/v1beta/models/gemini-2.5-flash:streamGenerateContent?{alt}key={key}"
    body = request_body(name)
    assert post(proxy.url, path, body)[2] == post(upstream.url, path, body)[2]
    fixture = fixtures_in(proxy.out, 1)[0]
    assert (fixture["profile"], fixture["expect"]) == ("gemini", expect)
    assert (
        fixture["chunks"] == redact_envelope(load(CONFORMANCE / f"{name}.json")).envelope["chunks"]
    )
    assert (fixture["meta"]["stream"]["framing"], fixture["meta"]["stream"]["complete"]) == (
        framing,
        True,
    )
    logs = "\n".join(r.getMessage() for r in caplog.records)
    assert key not in json.dumps(fixture) and key not in logs


GEMINI_ARRAY = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?key=k"


@POOLED
def test_a_gemini_json_array_cut_by_the_upstream_gives_a_fixture_with_missing_terminal(
    proxy: Proxy,
) -> None:
    name = "gemini/valid_parallel_two_chunks"
    with pytest.raises(http.client.IncompleteRead) as cut:
        post(
            proxy.url,
            f"/f/{name}{GEMINI_ARRAY}",
            request_body(name),
            {"x-callgate-abort-after": "1"},
        )
    assert cut.value.partial == next(array_frames(load(CONFORMANCE / f"{name}.json")))
    fixture = fixtures_in(proxy.out, 1)[0]
    assert fixture["expect"] == {"status": "fail", "codes": ["missing_terminal"]}
    assert (
        fixture["chunks"]
        == redact_envelope(load(CONFORMANCE / f"{name}.json")).envelope["chunks"][:1]
    )
    assert fixture["meta"]["stream"]["incomplete_event"] is True
    assert fixture["meta"]["stream"]["complete"] is False


@POOLED
def test_enforce_mode_on_a_gemini_json_array_passes_a_good_turn_and_ends_a_bad_one_with_an_error(
    upstream: Any, proxies: SharedProxy, tmp_path: Path
) -> None:
    good, bad = "gemini/valid_parallel_two_chunks", "gemini/vertex_missing_closing_part"
    running = proxies.take(tmp_path / "fixtures", callgate_enforce=True)
    passed, blocked = (
        post(running.url, f"/f/{n}{GEMINI_ARRAY}", request_body(n))[2] for n in (good, bad)
    )
    assert passed == post(upstream.url, f"/f/{good}{GEMINI_ARRAY}", request_body(good))[2]
    chunks = load(CONFORMANCE / f"{bad}.json")["chunks"]
    terminal = next(i for i, c in enumerate(chunks) if c["candidates"][0].get("finishReason"))
    # Still one JSON array: the chunks before the held finish, then Gemini's error shape.
    assert json.loads(blocked) == [
        *chunks[:terminal],
        {
            "error": {
                "code": 409,
                "message": "callgate blocked this turn: missing_terminal",
                "status": "ABORTED",
            }
        },
    ]


COHERE = "/v2/chat"


@POOLED
@pytest.mark.parametrize("enforce", [False, True], ids=["observe", "enforce"])
def test_a_cohere_turn_is_judged_and_a_bad_one_ends_with_cohere_s_error_in_enforce_mode(
    upstream: Any, proxies: SharedProxy, tmp_path: Path, enforce: bool
) -> None:
    good, bad = "cohere/valid_parallel_calls", "cohere/reused_index_new_id"
    running = proxies.take(tmp_path / "fixtures", callgate_enforce=enforce)
    passed, blocked = (
        post(running.url, f"/f/{n}{COHERE}", request_body(n))[2] for n in (good, bad)
    )
    fixtures = fixtures_in(running.out, 2)
    direct = [post(upstream.url, f"/f/{n}{COHERE}", request_body(n))[2] for n in (good, bad)]
    assert passed == direct[0]
    assert sorted(
        (f["profile"], f["expect"]["status"], tuple(f["expect"]["codes"])) for f in fixtures
    ) == [
        (
            "cohere",
            "fail",
            ("delta_after_terminal", "duplicate_start", "duplicate_terminal", "identity_collision"),
        ),
        ("cohere", "pass", ()),
    ]
    if not enforce:
        assert blocked == direct[1]
        return
    events = load(CONFORMANCE / f"{bad}.json")["events"]
    end = next(i for i, e in enumerate(events) if e["type"] == "message-end")
    codes = ["delta_after_terminal", "duplicate_start", "duplicate_terminal", "identity_collision"]
    # Everything before the held message-end, then Cohere's own failed end; no [DONE].
    assert blocked == b"".join(
        frames({"profile": "cohere", "events": events[:end], "meta": {"stream": {"done": False}}})
    ) + blocked_event("cohere", codes)
    assert blocked.endswith(
        b'event: message-end\ndata: {"type": "message-end", "delta": '
        b'{"finish_reason": "ERROR", "error": "callgate blocked this turn: '
        b"delta_after_terminal, duplicate_start, duplicate_terminal, "
        b'identity_collision"}}\n\n'
    )


@POOLED
@pytest.mark.parametrize("enforce", [False, True], ids=["observe", "enforce"])
def test_an_ollama_turn_is_judged_and_a_bad_one_ends_with_an_error_line_in_enforce_mode(
    upstream: Any, proxies: SharedProxy, tmp_path: Path, enforce: bool
) -> None:
    good, bad = "ollama/valid_parallel_calls_one_line", "ollama/call_after_done"
    running = proxies.take(tmp_path / "fixtures", callgate_enforce=enforce)
    passed, blocked = (post(running.url, f"/f/{n}/api/chat", request_body(n)) for n in (good, bad))
    fixtures = fixtures_in(running.out, 2)
    direct = [post(upstream.url, f"/f/{n}/api/chat", request_body(n))[2] for n in (good, bad)]
    assert passed[2] == direct[0] and passed[1]["content-type"] == "application/x-ndjson"
    assert sorted(
        (
            f["profile"],
            f.get("provider"),
            f["meta"]["stream"]["framing"],
            f["expect"]["status"],
            tuple(f["expect"]["codes"]),
        )
        for f in fixtures
    ) == [
        ("ollama", None, "jsonl", "fail", ("delta_after_terminal",)),
        ("ollama", None, "jsonl", "pass", ()),
    ]
    assert [f["chunks"] for f in sorted(fixtures, key=lambda f: f["expect"]["status"])] == [
        redact_envelope(load(CONFORMANCE / f"{n}.json")).envelope["chunks"] for n in (bad, good)
    ]
    lines = direct[1].splitlines(keepends=True)
    if not enforce:
        assert blocked[2] == direct[1]
        return
    # The call line goes out; the done line and the call after it are held, then replaced.
    assert blocked[2] == lines[0] + blocked_event("ollama", ["delta_after_terminal"], "ndjson")
    assert blocked[2].endswith(b'{"error": "callgate blocked this turn: delta_after_terminal"}\n')


BEDROCK = "/model/anthropic.claude-3-haiku-20240307-v1%3A0"


@POOLED
@pytest.mark.parametrize("enforce", [False, True], ids=["observe", "enforce"])
@pytest.mark.parametrize(
    ("good", "bad", "endpoint"),
    [
        (
            "bedrock-converse/valid_parallel_calls",
            "bedrock-converse/missing_content_block_stop",
            "/converse-stream",
        ),
        (
            "anthropic/valid_text_then_two_tools",
            "anthropic/truncated_after_block_stop",
            "/invoke-with-response-stream",
        ),
    ],
)
def test_a_bedrock_turn_is_judged_and_a_bad_one_ends_with_an_exception_in_enforce_mode(
    upstream: Any,
    proxies: SharedProxy,
    tmp_path: Path,
    enforce: bool,
    good: str,
    bad: str,
    endpoint: str,
) -> None:
    path = f"{BEDROCK}{endpoint}"
    running = proxies.take(
        tmp_path / "fixtures", callgate_enforce=enforce, callgate_provider="bedrock"
    )
    passed, blocked = (post(running.url, f"/f/{n}{path}", request_body(n)) for n in (good, bad))
    fixtures = fixtures_in(running.out, 2)
    direct = [post(upstream.url, f"/f/{n}{path}", request_body(n))[2] for n in (good, bad)]
    assert passed[2] == direct[0]
    assert passed[1]["content-type"] == "application/vnd.amazon.eventstream"
    profile = good.split("/")[0]
    assert sorted(
        (
            f["profile"],
            f["provider"],
            f["meta"]["stream"]["framing"],
            f["expect"]["status"],
            tuple(f["expect"]["codes"]),
        )
        for f in fixtures
    ) == [
        (profile, "bedrock", "eventstream", "fail", ("missing_terminal",)),
        (profile, "bedrock", "eventstream", "pass", ()),
    ]
    assert [f["events"] for f in sorted(fixtures, key=lambda f: f["expect"]["status"])] == [
        redact_envelope(load(CONFORMANCE / f"{n}.json")).envelope["events"] for n in (bad, good)
    ]
    if not enforce:
        assert blocked[2] == direct[1]
        return
    # Every message before the terminal evidence goes out; the rest is held, then replaced.
    envelope = load(CONFORMANCE / f"{bad}.json")
    held = next(
        (n for n, e in enumerate(envelope["events"]) if PROFILES[profile].carries_terminal(e)),
        len(envelope["events"]),
    )
    messages = list(framed(envelope, "eventstream"))
    assert blocked[2] == b"".join(messages[:held]) + blocked_event(
        profile, ["missing_terminal"], "eventstream"
    )


def turns_on_one_connection(port: int, turns: list[tuple[str, bytes]]) -> list[bytes]:
    """Send each turn in turn on one kept-alive HTTP/1.1 connection with a raw socket; read each
    response exactly to its end (its terminating chunk, or its declared length). Returns the
    bodies; fails on anything where a status line should be, or on any byte left over after the
    last response."""
    bodies = []
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        reader = sock.makefile("rb")
        for path, body in turns:
            sock.sendall(
                f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: "
                f"application/json\r\ncontent-length: {len(body)}\r\n\r\n".encode()
                + body
            )
            status = reader.readline()
            assert status.startswith(b"HTTP/1.1 200 "), status
            headers = {}
            while (line := reader.readline()) != b"\r\n":
                name, _, value = line.decode().partition(":")
                headers[name.strip().lower()] = value.strip()
            if "content-length" in headers:
                bodies.append(reader.read(int(headers["content-length"])))
                continue
            assert headers.get("transfer-encoding") == "chunked", headers
            pieces = []
            while (size := int(reader.readline().split(b";")[0], 16)) != 0:
                pieces.append(reader.read(size))
                assert reader.read(2) == b"\r\n"
            assert reader.readline() == b"\r\n"  # the end of the (empty) trailer
            bodies.append(b"".join(pieces))
        sock.settimeout(0.5)
        try:
            left = sock.recv(64)
        except TimeoutError:
            left = b""
    assert left == b"", left
    return bodies


@POOLED
@pytest.mark.parametrize("enforce", [False, True], ids=["observe", "enforce"])
def test_turns_on_one_kept_alive_connection_each_end_once(
    upstream: Any, proxies: SharedProxy, tmp_path: Path, enforce: bool
) -> None:
    """A chunked response ends with exactly one terminating chunk: a second one lands where the
    next response's status line should be."""
    good, bad = "openai/valid_parallel_interleaved", "openai/reused_index_new_id"
    turns = [(chat_path(name), request_body(name)) for name in (good, bad, good)]
    running = proxies.take(tmp_path / "fixtures", callgate_enforce=enforce)
    bodies = turns_on_one_connection(running.port, turns)
    reused = http.client.HTTPConnection("127.0.0.1", running.port, timeout=30)
    for path, body in turns:  # a client that reuses its connection, as most do
        reused.request("POST", path, body, {"content-type": "application/json"})
        assert reused.getresponse().read() == bodies[turns.index((path, body))]
    reused.close()
    direct = [post(upstream.url, path, body)[2] for path, body in turns]
    assert bodies[0] == bodies[2] == direct[0]
    if enforce:
        assert bodies[1].endswith(blocked_event("openai", ["identity_collision"]))
    else:
        assert bodies[1] == direct[1]


class _LengthUpstream(ThreadingHTTPServer):
    """An upstream that declares each body's length instead of chunking it."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _LengthHandler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        threading.Thread(target=self.serve_forever, daemon=True).start()


class _LengthHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        name = self.path.removeprefix("/f/").split("/v1/")[0]
        body = b"".join(frames(load(CONFORMANCE / f"{name}.json")))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize("enforce", [False, True], ids=["observe", "enforce"])
def test_a_declared_length_never_leaves_the_client_waiting(tmp_path: Path, enforce: bool) -> None:
    """Enforce mode can end a body with an error event of another length: the declared length
    goes (the body is chunked instead), or the client waits for bytes that never come."""
    good, bad = "openai/valid_parallel_interleaved", "openai/reused_index_new_id"
    turns = [(chat_path(name), request_body(name)) for name in (good, bad, good)]
    upstream = _LengthUpstream()
    try:
        with Proxy(upstream.url, tmp_path / "fixtures", callgate_enforce=enforce) as running:
            bodies = turns_on_one_connection(running.port, turns)
    finally:
        upstream.shutdown()
    sent = [b"".join(frames(load(CONFORMANCE / f"{name}.json"))) for name in (good, bad, good)]
    assert bodies[0] == bodies[2] == sent[0]
    if enforce:
        assert bodies[1].endswith(blocked_event("openai", ["identity_collision"]))
        assert bodies[1] != sent[1]
    else:
        assert bodies[1] == sent[1]
