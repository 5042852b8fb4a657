"""``callgate serve``: real framing, fixture choice, faults, timing, and real SDKs as clients."""

from __future__ import annotations

import http.client
import json
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from callgate import check
from callgate.cli.serve import SAMPLES, FakeProvider, collect, parse_timing, run_serve
from callgate.reassemble.errors import InputError, NotApplicable, UsageError
from callgate.reassemble.framing import EVENTSTREAM
from callgate.reassemble.mutations import mutate, mutations
from callgate.reassemble.profiles import PROFILES, framed, frames
from tests.conftest import CONFORMANCE, load
from tests.proxy_harness import APPS_PYTHON, post, read_events, tools_file, websocket_texts
from tests.sdk_cases import AppReports, AppSession, Turn, selected, turn_key

#: The SDK tests that share one interpreter of the app (``apps``): on one xdist worker, so the
#: SDKs are imported once.
SDK_BATCH = pytest.mark.xdist_group("serve-sdk-batch")


@pytest.fixture(scope="module")
def served() -> Iterator[FakeProvider]:
    """One fake provider for the module: what it serves depends only on each request (its path
    and headers), never on the requests before it."""
    provider = FakeProvider(collect([CONFORMANCE])).start()
    yield provider
    provider.close()


@pytest.fixture(scope="module")
def apps() -> Iterator[AppSession]:
    with AppSession() as session:
        yield session


@pytest.fixture(scope="module")
def served_apps(
    request: pytest.FixtureRequest,
    served: FakeProvider,
    apps: AppSession,
    tmp_path_factory: pytest.TempPathFactory,
) -> AppReports:
    """The turns of every selected SDK app case of this module straight to ``served``, run in
    one batch; each test asserts on its own."""
    folder = tmp_path_factory.mktemp("tools")

    def tools(name: str) -> str:
        (folder / name).mkdir(parents=True, exist_ok=True)
        return tools_file(name, folder / name)

    turns = {}
    for item, params in selected(
        request, test_real_sdks_hand_their_apps_what_callgate_blocks
    ).items():
        base = params["base"]
        name = base.split("/f/")[1].removesuffix("/v1")
        turns[turn_key(item, "direct")] = Turn(
            params["sdk"], served.url + base, ("--tools", tools(name))
        )
    unguarded = test_what_each_sdk_hands_an_unguarded_app_for_each_served_fault
    for item, params in selected(request, unguarded).items():
        turns[turn_key(item, "direct")] = unguarded_turn(
            served.url, params["sdk"], params["kind"], tools
        )
    return AppReports(apps.run(turns))


def unguarded_turn(url: str, sdk: str, kind: str, tools: Callable[[str], str]) -> Turn:
    """The app of ``sdk`` against ``url``, served its fixture as the fault ``kind``."""
    name, path = SERVED[sdk]
    return Turn(sdk, url + path, ("--tools", tools(name), "--header", f"x-callgate-mutate={kind}"))


def test_chat_fixtures_go_out_as_data_lines_ending_with_done(served: FakeProvider) -> None:
    status, headers, body = post(served.url, "/f/openai/valid_fragmented/v1/chat/completions")
    chunks = json.loads((CONFORMANCE / "openai" / "valid_fragmented.json").read_text())["chunks"]
    assert (status, headers["content-type"]) == (200, "text/event-stream")
    assert body == b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + (
        b"data: [DONE]\n\n"
    )


def test_anthropic_fixtures_go_out_as_event_and_data_pairs(served: FakeProvider) -> None:
    body = post(served.url, "/f/anthropic/valid_fragmented/v1/messages")[2]
    events = json.loads((CONFORMANCE / "anthropic" / "valid_fragmented.json").read_text())["events"]
    assert body == b"".join(
        f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events
    )


def test_cohere_fixtures_go_out_as_event_and_data_pairs_then_a_bare_done(
    served: FakeProvider,
) -> None:
    body = post(served.url, "/f/cohere/valid_single_call/v2/chat")[2]
    events = json.loads((CONFORMANCE / "cohere" / "valid_single_call.json").read_text())["events"]
    assert (
        body
        == b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)
        + b"data: [DONE]\n\n"
    )


def test_gemini_fixtures_go_out_as_sse_when_asked_and_as_gemini_s_json_array_otherwise(
    served: FakeProvider,
) -> None:
    name = "gemini/valid_parallel_two_chunks"
    chunks = json.loads((CONFORMANCE / f"{name}.json").read_text())["chunks"]
    path = f"/f/{name}/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    _, sse_headers, sse = post(served.url, path + "?alt=sse&key=k")
    _, array_headers, array = post(served.url, path + "?key=k")
    assert sse_headers["content-type"] == "text/event-stream"
    assert sse == b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks)
    assert array_headers["content-type"] == "application/json; charset=UTF-8"
    assert array == b"[" + b"\n,\r\n".join(json.dumps(c, indent=2).encode() for c in chunks) + (
        b"\n]"
    )
    assert json.loads(array) == chunks


def test_ollama_fixtures_go_out_as_json_lines_even_when_sse_is_asked(served: FakeProvider) -> None:
    name = "ollama/valid_parallel_calls_two_lines"
    chunks = json.loads((CONFORMANCE / f"{name}.json").read_text())["chunks"]
    for query in ("", "?alt=sse"):
        _, headers, body = post(served.url, f"/f/{name}/api/chat{query}")
        assert headers["content-type"] == "application/x-ndjson"
        assert body == b"".join(
            json.dumps(c, separators=(",", ":")).encode() + b"\n" for c in chunks
        )


def test_bedrock_fixtures_go_out_as_aws_event_stream_messages_and_anthropic_ones_on_invoke(
    served: FakeProvider,
) -> None:
    converse = "bedrock-converse/valid_parallel_calls"
    _, headers, body = post(served.url, f"/f/{converse}/model/m/converse-stream")
    assert headers["content-type"] == "application/vnd.amazon.eventstream"
    assert body == b"".join(framed(load(CONFORMANCE / f"{converse}.json"), EVENTSTREAM))
    anthropic = "anthropic/valid_fragmented"
    model = "us.anthropic.claude-sonnet-4-5-20250929-v1%3A0"
    _, headers, body = post(served.url, f"/f/{anthropic}/model/{model}/invoke-with-response-stream")
    assert headers["content-type"] == "application/vnd.amazon.eventstream"
    assert body == b"".join(framed(load(CONFORMANCE / f"{anthropic}.json"), EVENTSTREAM))
    # Not an Anthropic model, or the Messages API: not Bedrock's Anthropic stream.
    for path in ("/model/amazon.nova-micro-v1%3A0/invoke-with-response-stream", "/v1/messages"):
        _, headers, _ = post(served.url, f"/f/{anthropic}{path}")
        assert headers["content-type"] == "text/event-stream"


def test_a_fixture_is_chosen_by_header_and_an_unknown_name_is_404(served: FakeProvider) -> None:
    by_header = post(
        served.url,
        "/v1/chat/completions",
        headers={"x-callgate-fixture": "mistral/native_whole_call"},
    )[2]
    assert b"gSIMJiOkT" in by_header
    assert post(served.url, "/f/openai/nope/v1/chat/completions")[0] == 404


def test_without_a_choice_fixtures_are_served_in_turn(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / f"{name}.json").write_text(
            json.dumps({"profile": "openai", "chunks": [{"choices": [], "model": name}]})
        )
    provider = FakeProvider(collect([tmp_path])).start()
    try:
        models = [
            json.loads(post(provider.url, "/v1/chat/completions")[2].split(b"\n")[0][6:])["model"]
            for _ in range(3)
        ]
    finally:
        provider.close()
    assert models == ["a", "b", "a"]


def test_abort_and_gzip_faults(served: FakeProvider) -> None:
    path = "/f/openai/valid_fragmented/v1/chat/completions"
    cut = list(read_events(served.url, path, headers={"x-callgate-abort-after": "2"}))
    assert len(cut) == 2
    plain = post(served.url, path)[2]
    _, headers, gz = post(served.url, path, headers={"x-callgate-compress": "gzip"})
    assert headers["content-encoding"] == "gzip" and zlib.decompress(gz, wbits=31) == plain


def test_recorded_timing_replays_the_captured_gaps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    envelope = json.loads((CONFORMANCE / "openai" / "valid_text_then_call.json").read_text())
    envelope["meta"] = {"stream": {"event_times_ms": [0, 400, 400, 800]}}
    (tmp_path / "timed.json").write_text(json.dumps(envelope))
    waits: list[float] = []
    monkeypatch.setattr("callgate.cli.serve.time.sleep", waits.append)  # the pauses, not the clock
    provider = FakeProvider(collect([tmp_path]), timing="recorded").start()
    try:
        events = list(read_events(provider.url, "/f/timed/v1/chat/completions"))
    finally:
        provider.close()
    assert len(events) == len(envelope["chunks"]) + 1  # and [DONE]
    assert waits == [0.4, 0.4]  # before the 2nd and 4th event; none after the recorded ones


@pytest.mark.parametrize(
    ("value", "parsed"), [("fast", 0.0), ("recorded", "recorded"), ("0.25", 0.25)]
)
def test_timing_values(value: str, parsed: Any) -> None:
    assert parse_timing(value) == parsed


@pytest.mark.sdk
@SDK_BATCH
@pytest.mark.skipif(not APPS_PYTHON.exists(), reason="run `make test` to create .venv-apps")
@pytest.mark.parametrize(
    ("sdk", "base", "handed"),
    [
        # An app that accumulates openai-python's deltas by index, the usual loop, gets one call
        # named after both tools.
        (
            "openai",
            "/f/openai/reused_index_new_id/v1",
            [{"name": "get_weathersearch", "arguments": '{"city":"Oslo"}{"query":"x"}'}],
        ),
        # anthropic-python keeps a truncated stream's partial input without complaint.
        (
            "anthropic",
            "/f/anthropic/truncated_after_block_stop",
            [{"name": "get_weather", "input": {"city": "Oslo"}}],
        ),
    ],
)
def test_real_sdks_hand_their_apps_what_callgate_blocks(
    served_apps: AppReports,
    request: pytest.FixtureRequest,
    sdk: str,
    base: str,
    handed: list[Any],
) -> None:
    result = served_apps.report(request.node, "direct")
    assert result["error"] is None and result["tool_calls"] == handed


def test_serve_finds_fixtures_as_replay_does(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    fixture = (CONFORMANCE / "openai" / "truncated.json").read_bytes()
    (tmp_path / "a" / "x.json").write_bytes(fixture)
    (tmp_path / ".cache").mkdir()
    (tmp_path / ".cache" / "junk.json").write_text("not JSON")
    assert list(collect([tmp_path])) == ["a/x"]  # hidden folders are skipped
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError) as refused:
        collect([tmp_path / "empty"])
    assert str(refused.value) == f"{tmp_path / 'empty'}: no *.json fixture in this folder"


@pytest.mark.parametrize(
    "kind",
    [
        "truncate",
        "duplicate_terminal",
        "corrupt_arguments",
        "resplit",
        "empty_deltas",
        "drop_terminal",
    ],
)
def test_a_mutation_header_serves_the_fixtures_variant_of_that_kind(
    served: FakeProvider, kind: str
) -> None:
    status, _, body = post(
        served.url, "/f/anthropic/valid_fragmented/v1/messages", headers={"x-callgate-mutate": kind}
    )
    variant = mutate(
        load(CONFORMANCE / "anthropic" / "valid_fragmented.json"),
        kind,
        "anthropic/valid_fragmented",
    )
    assert (status, body) == (200, b"".join(frames(variant)))


def test_a_mutation_that_cannot_apply_is_a_422_saying_why(served: FakeProvider) -> None:
    status, _, body = post(
        served.url,
        "/f/gemini/valid_single_call/v1beta/models/g:x?alt=sse",
        headers={"x-callgate-mutate": "resplit"},
    )
    assert (status, json.loads(body)["error"]["message"]) == (
        422,
        "gemini/valid_single_call: cannot serve resplit: resplit: no call's arguments "
        "come in two fragments or more",
    )


def test_a_websocket_session_asked_for_over_http_is_a_400_saying_so(served: FakeProvider) -> None:
    status, _, body = post(served.url, "/f/openai-realtime/valid_single_call/v1/realtime")
    assert (status, json.loads(body)["error"]["message"]) == (
        400,
        "openai-realtime/valid_single_call is a WebSocket session (openai-realtime): serve "
        "answers HTTP",
    )


def websocket(
    url: str, path: str, sends: list[dict[str, Any]], headers: dict[str, str] | None = None
) -> tuple[list[list[Any]], str]:
    """``websocket_texts``, each message's JSON read."""
    texts, ended = websocket_texts(url, path, sends, headers)
    return [[json.loads(text) for text in part] for part in texts], ended


def test_a_session_is_sent_in_parts_one_per_response_create(served: FakeProvider) -> None:
    """The events before any response on connect; the response at ``response.create``, none at
    any other client event; after the last response, the provider's error event."""
    fixture = load(CONFORMANCE / "openai-realtime" / "two_tool_turns_second_cancelled.json")
    first = next(n for n, e in enumerate(fixture["events"]) if e["type"] == "response.created")
    second = next(
        n for n, e in enumerate(fixture["events"]) if e["type"] == "response.created" and n > first
    )
    path = "/f/openai-realtime/two_tool_turns_second_cancelled/v1/realtime?model=gpt-realtime"
    create, update = {"type": "response.create"}, {"type": "session.update", "session": {}}
    got, ended = websocket(served.url, path, [update, create, update, create, create])
    assert ended == "quiet"
    assert got == [
        fixture["events"][:first],
        [],
        fixture["events"][first:second],
        [],
        fixture["events"][second:],
        [
            PROFILES["openai-realtime"].error_body(
                "callgate serve: the fixture has no more responses", []
            )
        ],
    ]


def test_a_session_cut_after_n_events_is_dropped_without_a_close(served: FakeProvider) -> None:
    fixture = load(CONFORMANCE / "openai-realtime" / "valid_single_call.json")
    path = "/f/openai-realtime/valid_single_call/v1/realtime"
    got, ended = websocket(
        served.url, path, [{"type": "response.create"}], {"x-callgate-abort-after": "4"}
    )
    assert (got, ended) == ([fixture["events"][:1], fixture["events"][1:4]], "dropped")


def test_a_session_served_mutated_is_the_variant(served: FakeProvider) -> None:
    fixture = load(CONFORMANCE / "openai-realtime" / "valid_single_call.json")
    variant = mutate(fixture, "cancel", "openai-realtime/valid_single_call")
    path = "/f/openai-realtime/valid_single_call/v1/realtime"
    got, _ = websocket(
        served.url, path, [{"type": "response.create"}], {"x-callgate-mutate": "cancel"}
    )
    assert [event for part in got for event in part] == variant["events"]


@pytest.mark.parametrize(
    ("path", "headers", "message"),
    [
        (
            "/f/openai/valid_fragmented/v1/realtime",
            {},
            "openai/valid_fragmented is an HTTP stream (openai), not a session",
        ),
        (
            "/f/openai-realtime/text_only/v1/realtime",
            {"x-callgate-mutate": "cancel"},
            "openai-realtime/text_only: cannot serve cancel: the source does not pass "
            "(not_applicable []): mutate a passing turn",
        ),
        (
            "/f/no/such/v1/realtime",
            {},
            "no session fixture served here answers /f/no/such/v1/realtime",
        ),
    ],
)
def test_a_websocket_serve_cannot_answer_is_a_400_saying_why(
    served: FakeProvider, path: str, headers: dict[str, str], message: str
) -> None:
    upgrade = {
        "upgrade": "websocket",
        "connection": "Upgrade",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
        "sec-websocket-version": "13",
    }
    connection = http.client.HTTPConnection(served.url.removeprefix("http://"), timeout=5)
    connection.request("GET", path, headers={**upgrade, **headers})
    answer = connection.getresponse()
    assert (answer.status, json.loads(answer.read())["error"]["message"]) == (400, message)
    connection.close()


def test_serve_mutate_applies_to_every_request_and_refuses_an_unknown_kind(tmp_path: Path) -> None:
    provider = FakeProvider(collect([CONFORMANCE / "openai"]), mutate="truncate").start()
    try:
        body = post(provider.url, "/f/valid_fragmented/v1/chat/completions")[2]
    finally:
        provider.close()
    variant = mutate(
        load(CONFORMANCE / "openai" / "valid_fragmented.json"), "truncate", "valid_fragmented"
    )
    assert body == b"".join(frames(variant))
    with pytest.raises(UsageError, match="--mutate: unknown kind 'nope'"):
        run_serve([CONFORMANCE], "127.0.0.1:0", "fast", "nope")


OSLO, RAIN = '{"city":"Oslo"}', '{"query":"rain","limit":3}'
CHAT = [{"name": "get_weather", "arguments": OSLO}, {"name": "search", "arguments": RAIN}]
MESSAGES = [
    {"name": "get_weather", "input": {"city": "Oslo"}},
    {"name": "search", "input": {"query": "rain"}},
]
GEMINI = [
    {"name": "get_weather", "args": {"city": "Oslo"}},
    {"name": "search", "args": {"query": "umbrellas"}},
]
#: The SDK apps, the fixture each is served, and its path on ``callgate serve``.
SERVED = {
    "openai": ("openai/valid_parallel_interleaved", "/f/openai/valid_parallel_interleaved/v1"),
    "anthropic": ("anthropic/valid_text_then_two_tools", "/f/anthropic/valid_text_then_two_tools"),
    "gemini": ("gemini/valid_parallel_two_chunks", "/f/gemini/valid_parallel_two_chunks/"),
}
#: What each SDK hands an app that trusts it, for every fault that applies to its fixture
#: (what it raised, the finish reason it reported, the calls it handed on). Gemini sends each
#: call whole: no slot, fragment or required id to break.
UNGUARDED: dict[tuple[str, str], tuple[str | None, str | None, list[Any]]] = {
    ("openai", "truncate"): (None, None, CHAT),
    ("openai", "drop_terminal"): (None, None, CHAT),
    ("openai", "duplicate_terminal"): (None, "tool_calls", CHAT),
    ("openai", "delta_after_terminal"): (
        None,
        "tool_calls",
        [CHAT[0], {"name": "search", "arguments": RAIN + '"rain","limit":3}'}],
    ),
    ("openai", "wrong_terminal"): (None, "length", CHAT),
    ("openai", "reuse_slot"): (
        None,
        "tool_calls",
        [{"name": "get_weathersearch", "arguments": '{"city":{"query":"Oslo"}"rain","limit":3}'}],
    ),
    ("openai", "drop_id"): (None, "tool_calls", CHAT),
    ("openai", "corrupt_arguments"): (
        None,
        "tool_calls",
        [{"name": "get_weather", "arguments": "{" + OSLO}, CHAT[1]],
    ),
    ("openai", "schema_violation"): (
        None,
        "tool_calls",
        [{"name": "get_weather", "arguments": '{"city": 12345}'}, CHAT[1]],
    ),
    ("openai", "provider_error"): ("APIError", None, []),
    ("anthropic", "truncate"): (None, None, MESSAGES),
    ("anthropic", "drop_terminal"): (None, None, MESSAGES),
    ("anthropic", "duplicate_terminal"): (None, "tool_use", MESSAGES),
    ("anthropic", "delta_after_terminal"): (None, "tool_use", MESSAGES),
    ("anthropic", "wrong_terminal"): (None, "max_tokens", MESSAGES),
    # The second call moved onto the first's index: the SDK hands on both, the second without
    # its input.
    ("anthropic", "reuse_slot"): (None, "tool_use", [MESSAGES[0], {"name": "search", "input": {}}]),
    ("anthropic", "drop_id"): (None, "tool_use", MESSAGES),
    ("anthropic", "corrupt_arguments"): ("ValueError", None, []),
    ("anthropic", "schema_violation"): (
        None,
        "tool_use",
        [{"name": "get_weather", "input": {"city": 12345}}, MESSAGES[1]],
    ),
    ("anthropic", "provider_error"): ("APIStatusError", None, []),
    ("gemini", "truncate"): (None, None, GEMINI[:1]),
    ("gemini", "drop_terminal"): (None, None, GEMINI[:1]),
    ("gemini", "duplicate_terminal"): (None, "STOP", [*GEMINI, GEMINI[1]]),
    ("gemini", "wrong_terminal"): (None, "MAX_TOKENS", GEMINI),
    ("gemini", "schema_violation"): (
        None,
        "STOP",
        [{"name": "get_weather", "args": {"city": 12345}}, GEMINI[1]],
    ),
    ("gemini", "provider_error"): ("ClientError", None, []),
}


def test_the_unguarded_table_holds_every_fault_that_applies_to_each_sdks_fixture() -> None:
    applies = set()
    for sdk, (name, _) in SERVED.items():
        for kind in mutations(blocking=True):
            try:
                mutate(load(CONFORMANCE / f"{name}.json"), kind)
            except NotApplicable:
                continue
            applies.add((sdk, kind))
    assert applies == set(UNGUARDED)


@pytest.mark.sdk
@SDK_BATCH
@pytest.mark.skipif(not APPS_PYTHON.exists(), reason="run `make test` to create .venv-apps")
@pytest.mark.parametrize(("sdk", "kind"), list(UNGUARDED))
def test_what_each_sdk_hands_an_unguarded_app_for_each_served_fault(
    served_apps: AppReports,
    request: pytest.FixtureRequest,
    sdk: str,
    kind: str,
) -> None:
    name, _ = SERVED[sdk]
    result = served_apps.report(request.node, "direct")
    raised = result["error"]["type"] if result["error"] else None
    assert (raised, result["finish"], result["tool_calls"]) == UNGUARDED[sdk, kind]
    assert mutate(load(CONFORMANCE / f"{name}.json"), kind)["expect"]["status"] == "fail"


@pytest.mark.sdk
@pytest.mark.proxy
@SDK_BATCH
@pytest.mark.skipif(not APPS_PYTHON.exists(), reason="run `make test` to create .venv-apps")
def test_through_the_proxy_in_enforce_mode_every_sdk_raises_on_every_fault_and_runs_nothing(
    served: FakeProvider, apps: AppSession, tmp_path: Path
) -> None:
    from tests.proxy_harness import Proxy

    def tools(name: str) -> str:
        (tmp_path / name).mkdir(parents=True, exist_ok=True)
        return tools_file(name, tmp_path / name)

    got, expected = {}, {}
    with Proxy(served.url, tmp_path / "fixtures", callgate_enforce=True) as proxy:
        outcomes = apps.run(
            {
                f"{sdk} {kind}": unguarded_turn(proxy.url, sdk, kind, tools)
                for sdk, kind in UNGUARDED
            }
        )
    for sdk, kind in UNGUARDED:
        result = outcomes[f"{sdk} {kind}"].result()
        got[sdk, kind] = (result["error"] is not None, result["tool_calls"])
        expected[sdk, kind] = (True, [])
    assert got == expected


def chunk_sizes(url: str, path: str, headers: dict[str, str]) -> tuple[list[int], bytes]:
    """The sizes of the HTTP chunks of one answer, as sent, and the body they make."""
    import socket

    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n{head}"
            f"connection: close\r\n\r\n".encode()
        )
        data = b""
        while piece := sock.recv(65536):
            data += piece
    rest, sizes, body = data.partition(b"\r\n\r\n")[2], [], b""
    while True:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return sizes, body
        sizes.append(size)
        body, rest = body + rest[:size], rest[size + 2 :]


def test_split_events_sends_the_same_bytes_in_pieces_of_1_to_13_bytes(served: FakeProvider) -> None:
    path = "/f/anthropic/valid_fragmented/v1/messages"
    whole_sizes, whole = chunk_sizes(served.url, path, {})
    sizes, body = chunk_sizes(served.url, path, {"x-callgate-mutate": "split_events"})
    assert body == whole and len(whole_sizes) == len(
        list(frames(load(CONFORMANCE / "anthropic" / "valid_fragmented.json")))
    )  # one chunk per event
    pattern = [1, 2, 3, 5, 7, 11, 13]
    assert sizes[:-1] == [pattern[n % 7] for n in range(len(sizes) - 1)]
    assert 1 <= sizes[-1] <= pattern[(len(sizes) - 1) % 7] and sum(sizes) == len(body)


def test_without_a_choice_each_api_path_gets_fixtures_of_an_api_that_serves_it() -> None:
    """``serve``'s hint gives OPENAI_BASE_URL and ANTHROPIC_BASE_URL on one server: a folder of
    every API answers each SDK's path with a fixture of its own API, never another's."""
    from callgate.reassemble.profiles import serves

    fixtures = collect([CONFORMANCE])
    lines: list[str] = []
    provider = FakeProvider(fixtures, log=lines.append).start()
    try:
        for path in ("/v1/chat/completions", "/v1/messages", "/v1/responses") * 25:
            assert post(provider.url, path)[0] == 200
        missing = post(provider.url, "/v1/nothing")
    finally:
        provider.close()
    served = [line.rsplit(" ", 1)[1] for line in lines[:-1]]
    paths = [line.split()[3] for line in lines[:-1]]
    assert len(served) == 75
    assert all(serves(fixtures[n]["profile"], p) for n, p in zip(served, paths, strict=True))
    assert {fixtures[name]["profile"] for name in served} >= {
        "openai",
        "anthropic",
        "openai-responses",
    }
    assert (missing[0], json.loads(missing[2])["error"]["message"]) == (
        404,
        "no fixture served here answers /v1/nothing: /f/<fixture>/ then the provider's path "
        "picks one",
    )


PASS_FAIL = ("pass", "fail")


def test_the_samples_hold_a_passing_and_a_failing_turn_of_every_api() -> None:
    samples = collect([SAMPLES])
    apis = sorted({name.split("/")[0] for name in samples})
    over_http = [name for name, profile in PROFILES.items() if not profile.over_websocket]
    assert apis == sorted(over_http)
    assert sorted(samples) == sorted(f"{api}/{verdict}" for api in apis for verdict in PASS_FAIL)
    for name, envelope in samples.items():
        verdict = "pass" if name.endswith("/pass") else "fail"
        assert check(envelope).status.value == verdict, name


def test_serve_without_fixtures_or_samples_is_one_line_and_exit_2() -> None:
    with pytest.raises(UsageError, match=r"^serve: give fixture files or folders, or --samples$"):
        run_serve([], "127.0.0.1:8000", "fast")
