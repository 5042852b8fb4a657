"""``callgate serve``: real framing, fixture choice, faults, timing, and real SDKs as clients."""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from callgate.cli.serve import FakeProvider, collect, parse_timing, run_serve
from callgate.reassemble.errors import InputError, UsageError
from callgate.reassemble.mutations import mutate
from callgate.reassemble.profiles import frames
from tests.conftest import CONFORMANCE, load
from tests.proxy_harness import APPS_PYTHON, post, read_events, run_app, tools_file


@pytest.fixture(scope="module")
def served() -> Iterator[FakeProvider]:
    provider = FakeProvider(collect([CONFORMANCE])).start()
    yield provider
    provider.close()


def test_chat_fixtures_go_out_as_data_lines_ending_with_done(served: FakeProvider) -> None:
    status, headers, body = post(served.url, "/f/openai/valid_fragmented/v1/chat/completions")
    chunks = json.loads((CONFORMANCE / "openai" / "valid_fragmented.json").read_text())["chunks"]
    assert (status, headers["content-type"]) == (200, "text/event-stream")
    assert body == b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + (
        b"data: [DONE]\n\n")


def test_anthropic_fixtures_go_out_as_event_and_data_pairs(served: FakeProvider) -> None:
    body = post(served.url, "/f/anthropic/valid_fragmented/v1/messages")[2]
    events = json.loads((CONFORMANCE / "anthropic" / "valid_fragmented.json").read_text())[
        "events"]
    assert body == b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode()
                            for e in events)


def test_gemini_fixtures_go_out_as_sse_when_asked_and_as_gemini_s_json_array_otherwise(
        served: FakeProvider) -> None:
    name = "gemini/valid_parallel_two_chunks"
    chunks = json.loads((CONFORMANCE / f"{name}.json").read_text())["chunks"]
    path = f"/f/{name}/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    _, sse_headers, sse = post(served.url, path + "?alt=sse&key=k")
    _, array_headers, array = post(served.url, path + "?key=k")
    assert sse_headers["content-type"] == "text/event-stream"
    assert sse == b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks)
    assert array_headers["content-type"] == "application/json; charset=UTF-8"
    assert array == b"[" + b"\n,\r\n".join(json.dumps(c, indent=2).encode() for c in chunks) + (
        b"\n]")
    assert json.loads(array) == chunks


def test_a_fixture_is_chosen_by_header_and_an_unknown_name_is_404(served: FakeProvider) -> None:
    by_header = post(served.url, "/v1/chat/completions",
                     headers={"x-callgate-fixture": "mistral/native_whole_call"})[2]
    assert b"gSIMJiOkT" in by_header
    assert post(served.url, "/f/openai/nope/v1/chat/completions")[0] == 404


def test_without_a_choice_fixtures_are_served_in_turn(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / f"{name}.json").write_text(json.dumps(
            {"profile": "openai", "chunks": [{"choices": [], "model": name}]}))
    provider = FakeProvider(collect([tmp_path])).start()
    try:
        models = [json.loads(post(provider.url, "/v1/chat/completions")[2].split(b"\n")[0][6:])[
            "model"] for _ in range(3)]
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


def test_recorded_timing_replays_the_captured_gaps(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
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


@pytest.mark.parametrize(("value", "parsed"), [("fast", 0.0), ("recorded", "recorded"),
                                               ("0.25", 0.25)])
def test_timing_values(value: str, parsed: Any) -> None:
    assert parse_timing(value) == parsed


@pytest.mark.sdk
@pytest.mark.skipif(not APPS_PYTHON.exists(), reason="run `make test` to create .venv-apps")
@pytest.mark.parametrize(("sdk", "base", "handed"), [
    # An app that accumulates openai-python's deltas by index, the usual loop, gets one call
    # named after both tools.
    ("openai", "/f/openai/reused_index_new_id/v1",
     [{"name": "get_weathersearch", "arguments": '{"city":"Oslo"}{"query":"x"}'}]),
    # anthropic-python keeps a truncated stream's partial input without complaint.
    ("anthropic", "/f/anthropic/truncated_after_block_stop", [
        {"name": "get_weather", "input": {"city": "Oslo"}}]),
])
def test_real_sdks_hand_their_apps_what_callgate_blocks(served: FakeProvider, tmp_path: Path,
                                                        sdk: str, base: str,
                                                        handed: list[Any]) -> None:
    result = run_app(sdk, served.url + base, "--tools",
                     tools_file(base.split("/f/")[1].removesuffix("/v1"), tmp_path))
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


@pytest.mark.parametrize("kind", ["truncate", "duplicate_terminal", "corrupt_arguments",
                                  "resplit", "empty_deltas", "drop_terminal"])
def test_a_mutation_header_serves_the_fixtures_variant_of_that_kind(
        served: FakeProvider, kind: str) -> None:
    status, _, body = post(served.url, "/f/anthropic/valid_fragmented/v1/messages",
                           headers={"x-callgate-mutate": kind})
    variant = mutate(load(CONFORMANCE / "anthropic" / "valid_fragmented.json"), kind,
                     "anthropic/valid_fragmented")
    assert (status, body) == (200, b"".join(frames(variant)))


def test_a_mutation_that_cannot_apply_is_a_422_saying_why(served: FakeProvider) -> None:
    status, _, body = post(served.url, "/f/gemini/valid_single_call/v1beta/models/g:x?alt=sse",
                           headers={"x-callgate-mutate": "resplit"})
    assert (status, json.loads(body)["error"]["message"]) == (
        422, "gemini/valid_single_call: cannot serve resplit: resplit: no call's arguments "
             "come in two fragments or more")


def test_serve_mutate_applies_to_every_request_and_refuses_an_unknown_kind(
        tmp_path: Path) -> None:
    provider = FakeProvider(collect([CONFORMANCE / "openai"]), mutate="truncate").start()
    try:
        body = post(provider.url, "/f/valid_fragmented/v1/chat/completions")[2]
    finally:
        provider.close()
    variant = mutate(load(CONFORMANCE / "openai" / "valid_fragmented.json"), "truncate",
                     "valid_fragmented")
    assert body == b"".join(frames(variant))
    with pytest.raises(UsageError, match="--mutate: unknown kind 'nope'"):
        run_serve([CONFORMANCE], "127.0.0.1:0", "fast", "nope")


PARIS = '{"city":"Paris","unit":"c"}'


@pytest.mark.sdk
@pytest.mark.skipif(not APPS_PYTHON.exists(), reason="run `make test` to create .venv-apps")
@pytest.mark.parametrize(("sdk", "kind", "finish", "handed"), [
    # openai-python hands on calls whatever became of the stream: no finish at all, a second
    # one, arguments that are not JSON.
    ("openai", "truncate", None, [{"name": "get_weather", "arguments": PARIS}]),
    ("openai", "drop_terminal", None, [{"name": "get_weather", "arguments": PARIS}]),
    ("openai", "duplicate_terminal", "tool_calls", [{"name": "get_weather",
                                                     "arguments": PARIS}]),
    ("openai", "corrupt_arguments", "tool_calls", [{"name": "get_weather",
                                                    "arguments": "{" + PARIS}]),
    # anthropic-python refuses JSON it cannot parse, but not a turn that never said it ended.
    ("anthropic", "truncate", None, [{"name": "get_weather", "input": json.loads(PARIS)}]),
    ("anthropic", "drop_terminal", None, [{"name": "get_weather", "input": json.loads(PARIS)}]),
    ("anthropic", "duplicate_terminal", "tool_use", [{"name": "get_weather",
                                                      "input": json.loads(PARIS)}]),
])
def test_what_sdks_hand_an_unguarded_app_for_each_served_fault(
        served: FakeProvider, tmp_path: Path, sdk: str, kind: str, finish: str | None,
        handed: list[Any]) -> None:
    name = f"{sdk}/valid_fragmented"
    base = "/f/openai/valid_fragmented/v1" if sdk == "openai" else f"/f/{name}"
    result = run_app(sdk, served.url + base, "--tools", tools_file(name, tmp_path),
                     "--header", f"x-callgate-mutate={kind}")
    assert (result["error"], result["finish"], result["tool_calls"]) == (None, finish, handed)
    assert mutate(load(CONFORMANCE / f"{name}.json"), kind)["expect"]["status"] == "fail"


@pytest.mark.sdk
@pytest.mark.skipif(not APPS_PYTHON.exists(), reason="run `make test` to create .venv-apps")
def test_anthropic_python_raises_on_corrupt_arguments(served: FakeProvider,
                                                      tmp_path: Path) -> None:
    result = run_app("anthropic", served.url + "/f/anthropic/valid_fragmented", "--tools",
                     tools_file("anthropic/valid_fragmented", tmp_path),
                     "--header", "x-callgate-mutate=corrupt_arguments")
    assert (result["tool_calls"], result["error"]["type"]) == ([], "ValueError")
    assert result["error"]["message"].startswith("Unable to parse tool parameter JSON")
