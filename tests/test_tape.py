"""Tapes (``callgate_tape``): recorded once from a fake provider on loopback, replayed offline.

The app is ``tests/apps/tape_suite.py``, a user's own test file with the real openai (sync and
async), anthropic and google-genai clients, run by the pytest of ``.venv-apps`` where callgate
is installed beside the SDKs. The upstream is ``callgate serve``'s fake provider; every request
of every run stays on loopback (replay has no upstream at all).
"""

from __future__ import annotations

import base64
import dataclasses
import http.client
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast
from urllib.parse import quote, quote_plus, urlsplit

import pytest

from callgate.cli.files import find_fixtures
from callgate.cli.replay.runner import replay
from callgate.cli.serve import FakeProvider
from callgate.cli.tape import RecordMode, store, upstream_problem
from callgate.cli.tape.fixture import CallgateTape, tape_folder
from callgate.cli.tape.server import TapeServer
from callgate.cli.tape.session import Faulted, Tape
from callgate.cli.tape.shape import describe, request_shape
from callgate.reassemble import check
from callgate.reassemble.errors import InputError
from callgate.redact import Exchange
from callgate.redact.record import exchange_record
from tests.conftest import CONFORMANCE, ROOT, function_call_faults, load
from tests.proxy_harness import APPS_PYTHON
from tests.sdk_cases import InnerTest, inner_tests, selected

SUITE = ROOT / "tests" / "apps" / "tape_suite.py"
KEYS = {
    "OPENAI_API_KEY": "sk-proj-canaryKEY5f2e8c1d9a7b4e3f6a0b",
    "ANTHROPIC_API_KEY": "sk-ant-canaryKEY7c1d9a7b4e3f6a0b5f2e",
    "GEMINI_API_KEY": "AIzaCanaryKEY0123456789abcdefghijklmnop",
}
CANARIES = [
    "CANARY-PROMPT-8d1e",
    "CANARY-SYSTEM-51c2",
    "CANARY-TOOL-RESULT-3b7a",
    "CANARY-QUERY-9e4f",
    *KEYS.values(),
]
#: What the SDKs read, cleared so the machine's own settings cannot reach a run.
CLEARED = (
    "OPENAI_BASE_URL",
    "OPENAI_API_BASE",
    "ANTHROPIC_BASE_URL",
    "GOOGLE_GEMINI_BASE_URL",
    "OLLAMA_HOST",
    "GOOGLE_API_KEY",
    "CALLGATE_RECORD_MODE",
    *KEYS,
)
TOOL_LOOP = "test_openai_tool_loop"
#: A base URL where nothing listens: an SDK that reached it instead of the tape would fail.
CLOSED_PORT = "http://127.0.0.1:9/v1"
FOLDER = Path("tapes/test_app")
PARIS = ["get_weather", '{"city":"Paris","unit":"c"}']
#: The tests that share the module's recordings (``studio``): on one xdist worker, so each
#: tape is recorded once.
STUDIO = pytest.mark.xdist_group("tape-studio")


# -- without the SDKs: shapes, records, the session's verdicts -----------------------------------


def test_a_request_shape_keeps_no_prompt_and_counts_messages_per_role() -> None:
    body = json.dumps(
        {
            "model": "gpt-4o-mini",
            "stream": True,
            "tools": [
                {"type": "function", "function": {"name": "get_weather", "parameters": {}}},
                {"type": "function", "function": {"name": "search", "parameters": {}}},
            ],
            "messages": [
                {"role": "system", "content": "secret"},
                {"role": "user", "content": "x"},
                {"role": "assistant", "tool_calls": []},
                {"role": "tool", "content": "y"},
                {"role": "user", "content": "z"},
            ],
        }
    ).encode()
    shape = request_shape("openai", "POST", "/v1/chat/completions?key=abc", body)
    assert shape == {
        "route": "openai",
        "method": "POST",
        "path": "/v1/chat/completions",
        "model": "gpt-4o-mini",
        "tools": ["get_weather", "search"],
        "stream": True,
        "messages_by_role": {"assistant": 1, "system": 1, "tool": 1, "user": 2},
    }
    assert describe(shape) == (
        "POST /v1/chat/completions (openai), model gpt-4o-mini, tools "
        "[get_weather, search], stream, messages assistant 1 system 1 "
        "tool 1 user 2"
    )


def test_shapes_of_the_other_apis_name_their_tools_and_system_prompts() -> None:
    anthropic = json.dumps(
        {
            "model": "claude",
            "system": "s",
            "stream": True,
            "tools": [{"name": "get_weather", "input_schema": {}}],
            "messages": [{"role": "user", "content": "x"}],
        }
    ).encode()
    gemini = json.dumps(
        {
            "contents": [{"role": "user", "parts": [{"text": "x"}]}],
            "systemInstruction": {"parts": [{"text": "s"}]},
            "tools": [{"functionDeclarations": [{"name": "a"}, {"name": "b"}]}],
        }
    )
    assert request_shape("anthropic", "POST", "/v1/messages", anthropic) == {
        "route": "anthropic",
        "method": "POST",
        "path": "/v1/messages",
        "model": "claude",
        "tools": ["get_weather"],
        "stream": True,
        "messages_by_role": {"system": 1, "user": 1},
    }
    assert request_shape(
        "gemini", "POST", "/v1beta/models/g:streamGenerateContent?alt=sse", gemini.encode()
    ) == {
        "route": "gemini",
        "method": "POST",
        "path": "/v1beta/models/g:streamGenerateContent",
        "tools": ["a", "b"],
        "messages_by_role": {"system": 1, "user": 1},
    }
    assert request_shape("openai", "GET", "/v1/models", b"") == {
        "route": "openai",
        "method": "GET",
        "path": "/v1/models",
    }


def exchange(body: bytes, content_type: str = "application/json", status: int = 200) -> Exchange:
    return Exchange(
        method="POST",
        url="https://api.openai.com/v1/embeddings?key=CANARY-QUERY-9e4f",
        request_headers=[("authorization", f"Bearer {KEYS['OPENAI_API_KEY']}")],
        request_body=b'{"input": "CANARY-PROMPT-8d1e"}',
        status=status,
        response_headers=[("content-type", content_type)],
        response_body=body,
        capture="tape",
    )


def test_an_exchange_record_keeps_text_only_when_asked_and_never_a_credential() -> None:
    body = json.dumps(
        {
            "id": "cmpl-1",
            "object": "chat.completion",
            "choices": [{"message": {"role": "assistant", "content": "Sunny"}}],
            "usage": {"total_tokens": 7},
        }
    )
    shape = {"route": "openai", "method": "POST", "path": "/v1/embeddings"}
    kept = exchange_record(exchange(body.encode()), shape, keep_text=True)
    assert (kept["tape_record"], kept["request"]) == (1, shape)
    assert kept["response"] == {
        "status": 200,
        "content_type": "application/json",
        "json": {
            "id": "cmpl-redacted1",
            "object": "chat.completion",
            "choices": [{"message": {"role": "assistant", "content": "Sunny"}}],
            "usage": {"total_tokens": 7},
        },
    }
    masked = exchange_record(exchange(body.encode()), shape)
    assert masked["response"]["json"]["choices"][0]["message"]["content"] == "xxxxx"
    assert exchange_record(exchange(b"upstream said no", "text/plain", 502), shape)["response"] == {
        "status": 502,
        "content_type": "text/plain",
        "text": "xxxxxxxx xxxx xx",
    }
    assert exchange_record(exchange(b"\x89PNG\r\n\xff", "image/png"), shape)["response"] == {
        "status": 200,
        "content_type": "image/png",
        "omitted": "7 bytes that are not UTF-8",
    }
    leaking = json.dumps({"echo": KEYS["OPENAI_API_KEY"]}).encode()
    with pytest.raises(Exception, match=r"a secret would be written at /response/json/echo"):
        exchange_record(exchange(leaking), shape, keep_text=True)


@pytest.mark.parametrize(
    ("body", "kept"),
    [(b"42", 42), (b"null", None), (b"true", True), (b'"Sunny"', "xxxxx"), (b"[1, 2.5]", [1, 2.5])],
)
def test_an_exchange_record_of_a_json_body_that_is_no_object_keeps_its_shape(
    body: bytes, kept: object
) -> None:
    shape = {"route": "openai", "method": "POST", "path": "/v1/embeddings"}
    assert exchange_record(exchange(body), shape)["response"] == {
        "status": 200,
        "content_type": "application/json",
        "json": kept,
    }


def test_a_tape_refuses_what_it_does_not_hold_and_names_what_it_holds_next(tmp_path: Path) -> None:
    tape = Tape(tmp_path / "empty", RecordMode.NONE, "test_x")
    shape = {"route": "openai", "method": "POST", "path": "/v1/chat/completions", "model": "m"}
    decision = tape.decide(shape)
    assert decision.refusal == (
        f"tape test_x ({tmp_path / 'empty'}): request 1 is not on the tape: POST "
        "/v1/chat/completions (openai), model m; the tape holds next: nothing more. To record "
        "it: --callgate-record-mode=new_episodes, or delete the folder and run with "
        "--callgate-record-mode=once"
    )
    assert tape.problems() == [decision.refusal]
    assert not tape.recording and Tape(tmp_path / "empty", RecordMode.ONCE, "t").recording


def test_entries_of_one_shape_are_served_in_order_and_other_shapes_in_any_order(
    tmp_path: Path,
) -> None:
    def shape(model: str) -> dict[str, Any]:
        return {"route": "openai", "method": "POST", "path": "/v1/embeddings", "model": model}

    for number, model in enumerate(["a", "b", "a"], 1):
        store.write(
            tmp_path,
            number,
            shape(model),
            record={
                "tape_record": 1,
                "request": shape(model),
                "response": {"status": 200, "content_type": "text/plain", "text": str(number)},
            },
        )
    tape = Tape(tmp_path, RecordMode.NONE, "test_x")
    served = [tape.decide(shape(model)).entry for model in ["b", "a", "a"]]
    assert [entry.path.name if entry else None for entry in served] == [
        "002.exchange.json",
        "001.exchange.json",
        "003.exchange.json",
    ]
    assert tape.problems() == []
    assert tape.decide(shape("a")).refusal is not None  # each entry is served once


def test_making_a_tape_deletes_nothing_and_opening_one_to_record_all_clears_its_files(
    tmp_path: Path,
) -> None:
    shape = {"route": "openai", "method": "POST", "path": "/v1/embeddings"}
    record = {
        "tape_record": 1,
        "request": shape,
        "response": {"status": 200, "content_type": "text/plain", "text": "1"},
    }
    store.write(tmp_path, 1, shape, record=record)
    (tmp_path / "notes.txt").write_text("kept")
    made = Tape(tmp_path, RecordMode.ALL, "test_x")
    assert made.recording and (tmp_path / "001.exchange.json").is_file()
    opened = Tape.open(tmp_path, RecordMode.ALL, "test_x", allow_unused=True)
    assert opened.recording and opened.allow_unused and opened.decide(shape).record
    assert sorted(path.name for path in tmp_path.iterdir()) == ["notes.txt"]
    opened.recorded(None, shape, "not recorded")
    replayed = Tape.open(tmp_path, RecordMode.NONE, "test_x")
    assert replayed == Tape(tmp_path, RecordMode.NONE, "test_x")  # the state is not compared
    given = {f.name for f in dataclasses.fields(Tape) if f.init}
    compared = {f.name for f in dataclasses.fields(Tape) if f.compare}
    assert given == {"folder", "mode", "test", "redaction", "allow", "allow_unused", "advice"}
    assert compared == given | {"turns", "exchanges", "mutated", "faulted"}


def test_a_request_the_tape_lacks_gets_the_providers_error_shape_even_when_sent_chunked(
    tmp_path: Path,
) -> None:
    tape = Tape(tmp_path, RecordMode.NONE, "test_x")
    server = TapeServer(tape).start()
    try:
        connection = http.client.HTTPConnection("127.0.0.1", int(server.url.rsplit(":", 1)[1]))
        body = [b'{"model": "claude-x", ', b'"stream": true}']
        connection.request(
            "POST",
            "/anthropic/v1/messages",
            body=iter(body),
            encode_chunked=True,
            headers={"content-type": "application/json"},
        )
        response = connection.getresponse()
        answer = json.loads(response.read())
        connection.close()
    finally:
        server.close()
    assert response.status == 400
    assert answer == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": tape.problems()[0]},
    }
    assert (
        "request 1 is not on the tape: POST /v1/messages (anthropic), model claude-x, "
        "stream; the tape holds next: nothing more." in answer["error"]["message"]
    )


def streamed_tape(folder: Path) -> Path:
    """``folder`` holding a recorded tape of one streamed turn with two calls."""
    envelope = load(CONFORMANCE / "openai" / "valid_parallel_interleaved.json")
    shape = {"route": "openai", "method": "POST", "path": "/v1/chat/completions", "model": "m"}
    store.write(folder, 1, shape, envelope=envelope, report=check(envelope))
    return folder


def handed(tape: Tape) -> CallgateTape:
    """What the fixture hands a test, without a server (``mutate`` serves nothing)."""
    return CallgateTape(tape, cast(TapeServer, None))


def failure_of(action: Callable[[], object]) -> str:
    """The line ``action`` fails its test with (a skip is no failure)."""
    with pytest.raises(BaseException) as failed:
        action()
    assert failed.type is pytest.fail.Exception, failed.value
    return str(failed.value)


@pytest.mark.parametrize("mode", list(RecordMode))
def test_mutating_a_tape_that_does_not_exist_fails_naming_where_it_looked(
    tmp_path: Path, mode: RecordMode
) -> None:
    tape = Tape.open(tmp_path / "test_typo", mode, "test_faults.py::test_x")
    assert failure_of(lambda: handed(tape).mutate("truncate")) == (
        f"tape test_faults.py::test_x: no recorded tape at {tmp_path / 'test_typo'} to mutate "
        "(mutate never records): record it first by running the test that makes it, without "
        "mutate, with --callgate-record-mode=once; or name a recorded tape with "
        "@pytest.mark.callgate_tape(name=...)"
    )


def test_a_fault_that_applies_to_no_turn_of_the_tape_fails_the_test(tmp_path: Path) -> None:
    shape = {"route": "openai", "method": "POST", "path": "/v1/embeddings"}
    record = {"tape_record": 1, "request": shape, "response": {"status": 200, "text": "1"}}
    store.write(tmp_path, 1, shape, record=record)
    tape = Tape.open(tmp_path, RecordMode.NONE, "test_x")
    fault_test = handed(tape)
    assert failure_of(lambda: fault_test.mutate("truncate")) == (
        f"tape test_x: truncate applies to no turn of tape {tmp_path}: it holds no streamed turn"
    )
    # That line is the test's failure: the exchange it left unrequested adds no second one.
    assert fault_test.problems() == [] and len(tape.problems()) == 1


@pytest.mark.parametrize("mode", list(RecordMode))
def test_a_mutated_tape_is_replayed_as_its_fault_in_every_mode_and_records_nothing(
    tmp_path: Path, mode: RecordMode
) -> None:
    folder = streamed_tape(tmp_path / "tape")
    tape = Tape.open(folder, mode, "test_x")
    handed(tape).mutate("reuse_slot")
    assert not tape.recording
    entry = tape.decide(store.load(folder)[0].shape).entry
    assert entry is not None and tape.mutated == {"001.json": "reuse_slot"}
    other = {"route": "openai", "method": "POST", "path": "/v1/chat/completions", "model": "n"}
    assert tape.decide(other).refusal is not None  # not recorded, in new_episodes either
    assert tape_files(folder) == ["001.json"]  # and all cleared nothing


CHAT_SHAPE = {"route": "openai", "method": "POST", "path": "/v1/chat/completions", "model": "m"}
#: The requests of a recorded weather agent: the question, then the two tools' results.
ASKED = {**CHAT_SHAPE, "messages_by_role": {"user": 1}}
ANSWERED = {**CHAT_SHAPE, "messages_by_role": {"assistant": 1, "tool": 2, "user": 1}}


def agent_tape(folder: Path) -> Path:
    """``folder`` holding an agent's recorded tape: a turn with two calls, then its answer."""
    for number, (name, shape) in enumerate(
        [("valid_parallel_interleaved", ASKED), ("text_only", ANSWERED)], 1
    ):
        envelope = load(CONFORMANCE / "openai" / f"{name}.json")
        store.write(folder, number, shape, envelope=envelope, report=check(envelope))
    return folder


def test_after_a_served_fault_a_request_the_tape_lacks_gets_an_error_and_fails_nothing(
    tmp_path: Path,
) -> None:
    """The merged call of ``reuse_slot`` makes the agent answer with one tool result, not two:
    a request the recording cannot hold, refused as the provider would refuse it, and the
    answer left unrequested; the test's own assertions decide."""
    tape = Tape.open(agent_tape(tmp_path), RecordMode.NONE, "test_x")
    assert tape.faulted is None
    handed(tape).mutate("reuse_slot")
    assert tape.faulted == Faulted("reuse_slot")
    served = tape.decide(ASKED).entry
    assert served is not None and served.report is not None
    assert served.report.blocking_codes == ["identity_collision"]
    merged = {**CHAT_SHAPE, "messages_by_role": {"assistant": 1, "tool": 1, "user": 1}}
    assert tape.decide(merged).refusal == (
        "callgate tape: request 2 came after the fault reuse_slot served at 001.json and is not "
        "on the tape: POST /v1/chat/completions (openai), model m, messages assistant 1 tool 1 "
        "user 1; the recorded script ends at the fault"
    )
    assert tape.problems() == []
    assert tape.faulted == Faulted(
        "reuse_slot", served=True, turn=0, file="001.json", requests_after=1, refused_after=1
    )
    assert not tape.faulted.matched_after


def test_after_a_served_fault_a_request_the_tape_holds_is_served_as_recorded(
    tmp_path: Path,
) -> None:
    tape = Tape.open(agent_tape(tmp_path), RecordMode.NONE, "test_x")
    handed(tape).mutate("truncate")
    assert tape.decide(ASKED).entry is not None
    answer = tape.decide(ANSWERED).entry
    assert answer is not None and answer.path.name == "002.json"
    assert tape.problems() == []
    assert [turn.report.status.value for turn in tape.turns] == ["fail", "not_applicable"]
    assert tape.faulted == Faulted(
        "truncate", served=True, turn=0, file="001.json", requests_after=1, refused_after=0
    )
    assert tape.faulted.matched_after


@pytest.mark.parametrize("mode", list(RecordMode))
def test_before_its_fault_is_served_a_mutated_tape_fails_as_any_tape_and_advises_no_recording(
    tmp_path: Path, mode: RecordMode
) -> None:
    folder = agent_tape(tmp_path / "tape")
    tape = Tape.open(folder, mode, "test_x")
    handed(tape).mutate("truncate")
    other = {**ASKED, "model": "n"}
    refusal = tape.decide(other).refusal
    assert refusal == (
        f"tape test_x ({folder}): request 1 is not on the tape: POST /v1/chat/completions "
        "(openai), model n, messages user 1; the tape holds next: 001.json (POST "
        "/v1/chat/completions (openai), model m, messages user 1). The tape is mutated before "
        "its fault was served, so the app asks otherwise than when it was recorded: re-record "
        "the tape from the test that makes it, without mutate (delete the folder and run it "
        "with --callgate-record-mode=once)"
    )
    assert tape.problems() == [
        refusal,
        f"tape test_x ({folder}): 2 recorded exchange(s) were not requested, from 001.json "
        "(POST /v1/chat/completions (openai), model m, messages user 1); the app made fewer "
        "requests than when it was recorded (allow_unused=True in @pytest.mark.callgate_tape "
        "accepts that)",
    ]
    assert tape.faulted == Faulted("truncate")


def test_after_a_fault_the_refusal_is_in_the_routes_own_error_shape(tmp_path: Path) -> None:
    tape = Tape.open(agent_tape(tmp_path), RecordMode.NONE, "test_x")
    handed(tape).mutate("provider_error")
    server = TapeServer(tape).start()
    try:
        answers = [
            post(server.url, "/openai/v1/chat/completions", {"model": "m", "messages": asked})
            for asked in ([{"role": "user"}], [{"role": "user"}, {"role": "user"}])
        ]
    finally:
        server.close()
    assert answers[0][0] == 200 and b'"code": "overloaded"' in answers[0][1]
    status, body = answers[1]
    assert (status, json.loads(body)) == (
        400,
        {
            "error": {
                "message": "callgate tape: request 2 came after the fault provider_error served "
                "at 001.json and is not on the tape: POST /v1/chat/completions (openai), model "
                "m, messages user 2; the recorded script ends at the fault",
                "type": "invalid_request_error",
                "code": "callgate",
            }
        },
    )
    assert tape.problems() == []


def post(url: str, path: str, body: dict[str, Any]) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", int(url.rsplit(":", 1)[1]))
    try:
        connection.request("POST", path, body=json.dumps(body).encode())
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_opening_a_tape_to_record_all_clears_its_files_at_the_first_request(
    tmp_path: Path,
) -> None:
    folder = streamed_tape(tmp_path / "tape")
    tape = Tape.open(folder, RecordMode.ALL, "test_x")
    assert tape_files(folder) == ["001.json"]
    assert tape.decide(store.load(folder)[0].shape).record
    assert tape_files(folder) == []
    tape.recorded(None, {"route": "openai"}, "gone")  # what the server does for a failed one
    (folder / "001.json").write_text("{")
    assert Tape.open(folder, RecordMode.ALL, "test_x").recording  # an unreadable one, anew
    with pytest.raises(InputError):
        Tape.open(folder, RecordMode.NEW_EPISODES, "test_x")


def test_a_tape_name_with_a_slash_is_a_path_below_the_tapes_folder(tmp_path: Path) -> None:
    node = cast(pytest.Item, SimpleNamespace(path=tmp_path / "test_faults.py", name="test_x"))
    tapes = tmp_path / "tapes"
    assert tape_folder(node, None) == tapes / "test_faults" / "test_x"
    assert tape_folder(node, "test_y[a b]") == tapes / "test_faults" / "test_y[a_b]"
    assert tape_folder(node, "test_agent/test_weather") == tapes / "test_agent" / "test_weather"
    assert tape_folder(node, "agents/test_agent/test w[1]") == (
        tapes / "agents" / "test_agent" / "test_w[1]"
    )
    with pytest.raises(pytest.UsageError):
        tape_folder(cast(pytest.Item, SimpleNamespace(path=node.path, nodeid="t")), "../x")


@pytest.mark.parametrize(
    ("url", "without"),
    [
        ("http://127.0.0.1:9101/v1", "http://127.0.0.1:9101"),
        ("https://openrouter.ai/api/v1/", "https://openrouter.ai/api"),
        ("http://127.0.0.1:9101/v1beta", "http://127.0.0.1:9101"),
        ("http://127.0.0.1:9101/gw/v2alpha1", "http://127.0.0.1:9101/gw"),
    ],
)
def test_an_upstream_that_repeats_the_apis_prefix_is_refused_with_the_url_to_give(
    url: str, without: str
) -> None:
    prefix = "/" + url.rstrip("/").rsplit("/", 1)[1]
    path = urlsplit(url).path.rstrip("/")
    assert upstream_problem(url) == (
        f"requests already start with {prefix} (they would go to {path}{prefix}/...); "
        f"give the URL without it: {without}"
    )
    assert upstream_problem(without) is None
    assert upstream_problem("http://gateway/openai/v1x") is None


def test_exchange_records_are_not_fixtures_to_replay(tmp_path: Path) -> None:
    (tmp_path / "001.json").write_text("{}")
    (tmp_path / "002.exchange.json").write_text("{}")
    assert find_fixtures([tmp_path]) == [tmp_path / "001.json"]


# -- the real SDKs, recording from a fake provider and replaying offline ------------------------
#
# Each run of the user's suite is a pytest session of its own, with the SDKs to import: so the
# module records each tape once (``studio``), and replays all of them in one session, each test
# asserting on its own inner tests there (their outcomes and output, from ``--junitxml``). A test
# that changes a tape, or the app's environment, runs its sessions on a copy of its own.


def fake(*fixtures: str) -> FakeProvider:
    """A fake provider that serves these conformance fixtures in turn, over and over."""
    return FakeProvider(
        {f"{n:03d}": load(CONFORMANCE / f"{name}.json") for n, name in enumerate(fixtures, 1)}
    ).start()


@pytest.fixture
def app(tmp_path: Path) -> Path:
    return new_app(tmp_path)


def new_app(folder: Path) -> Path:
    """``folder`` with the user's suite in it, as ``test_app.py``."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(SUITE, folder / "test_app.py")
    return folder


def suite_run(
    app: Path,
    *selection: str,
    upstream: FakeProvider | None,
    mode: str | None,
    env: dict[str, str],
    junit: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the user's suite in ``app``: its output on the terminal, or (``junit``) each test's
    in that ``--junitxml`` file."""
    environment = {k: v for k, v in os.environ.items() if k not in CLEARED} | env
    command = [str(APPS_PYTHON), "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_app.py"]
    # langsmith's plugin (it comes with langchain) imports langsmith's client in every session,
    # most of an empty session's start, and has no part in these tests.
    command += ["-p", "no:langsmith_plugin"]
    command += (
        ["-s"] if junit is None else [f"--junitxml={junit}", "-o", "junit_logging=system-out"]
    )
    command += selection
    if mode:
        command.append(f"--callgate-record-mode={mode}")
    if upstream is not None:
        environment |= KEYS
        for route in ("openai", "anthropic", "mistral", "gemini"):
            command += ["--callgate-upstream", f"{route}={upstream.url}"]
    return subprocess.run(
        command, cwd=app, env=environment, capture_output=True, text=True, timeout=300, check=False
    )


def results_in(output: str) -> list[dict[str, Any]]:
    """The RESULT line of each test that printed one, in order."""
    return [
        json.loads(line.split("RESULT ", 1)[1])
        for line in output.splitlines()
        if "RESULT {" in line
    ]


def run_app(
    app: Path,
    *selection: str,
    upstream: FakeProvider | None = None,
    mode: str | None = None,
    **env: str,
) -> tuple[int, str, list[dict[str, Any]]]:
    """Run the user's suite; (exit code, output, the RESULT of each test in order)."""
    done = suite_run(app, *selection, upstream=upstream, mode=mode, env=env)
    output = done.stdout + done.stderr
    return done.returncode, output, results_in(output)


@dataclass(frozen=True)
class Session:
    """A run of the user's suite: its exit code and output, and each of its tests."""

    code: int
    output: str
    tests: dict[str, InnerTest]

    def test(self, name: str) -> InnerTest:
        assert name in self.tests, self.output
        return self.tests[name]

    def passed(self, *names: str) -> None:
        """Each of the tests ``names`` passed."""
        for name in names:
            assert self.test(name).outcome == "passed", (name, self.test(name).report)

    def results(self, *names: str) -> list[dict[str, Any]]:
        """The RESULT lines of the tests ``names``, in that order."""
        return [result for name in names for result in results_in(self.test(name).stdout)]


def run_session(
    app: Path,
    *selection: str,
    upstream: FakeProvider | None = None,
    mode: str | None = None,
    **env: str,
) -> Session:
    """``run_app``, each inner test's outcome and output told apart."""
    junit = app.parent / f"{app.name}.junit.xml"
    done = suite_run(app, *selection, upstream=upstream, mode=mode, env=env, junit=junit)
    tests = inner_tests(junit) if junit.is_file() else {}
    return Session(done.returncode, done.stdout + done.stderr, tests)


def tape_files(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if not path.name.startswith("."))


ASYNC_TESTS = ("test_openai_async", "test_anthropic", "test_gemini", "test_mistral", "test_ollama")
REUSED = "test_openai_parallel_workers[Paris]"
KINDS = ",".join(function_call_faults())  # the tape's turns call functions only


def record_loop(app: Path, **env: str) -> Session:
    """The tool loop's tape: a streamed call, then a streamed text answer."""
    with closing(fake("openai/valid_fragmented", "openai/text_only")) as upstream:
        return run_session(app, "-k", TOOL_LOOP, upstream=upstream, mode="once", **env)


def record_async(app: Path) -> Session:
    with (
        closing(fake("openai/valid_fragmented")) as openai,
        closing(fake("anthropic/valid_fragmented")) as anthropic,
        closing(fake("gemini/valid_single_call")) as gemini,
        closing(fake("mistral/native_whole_call")) as mistral,
        closing(fake("ollama/valid_single_call")) as ollama,
    ):
        command = []
        for route, server in (
            ("openai", openai),
            ("anthropic", anthropic),
            ("gemini", gemini),
            ("mistral", mistral),
            ("ollama", ollama),
        ):
            command += ["--callgate-upstream", f"{route}={server.url}"]
        return run_session(app, "-k", " or ".join(ASYNC_TESTS), *command, mode="once", **KEYS)


def record_langchain(app: Path) -> Session:
    with closing(fake("openai/valid_fragmented")) as upstream:
        return run_session(
            app, "-k", "test_langchain", upstream=upstream, mode="once", OPENAI_API_BASE=CLOSED_PORT
        )


def record_not_streamed(app: Path) -> Session:
    with closing(CompletionUpstream()) as upstream:
        command = ["--callgate-upstream", f"openai={upstream.url}"]
        return run_session(app, "-k", "test_openai_not_streamed", *command, mode="once", **KEYS)


def record_reused(app: Path) -> Session:
    with closing(fake("openai/reused_index_new_id")) as upstream:
        return run_session(
            app, "-k", "test_openai_parallel_workers and Paris", upstream=upstream, mode="once"
        )


#: Each recording: how it is made, and the user's tests that replay it.
RECORDINGS: dict[str, tuple[Callable[[Path], Session], tuple[str, ...]]] = {
    "loop": (record_loop, (TOOL_LOOP, "test_openai_first_turn_on_every_fault")),
    "loop_strict": (lambda app: record_loop(app, APP_REDACTION="strict"), ()),
    "async": (record_async, ASYNC_TESTS),
    "langchain": (record_langchain, ("test_langchain",)),
    "not_streamed": (record_not_streamed, ("test_openai_not_streamed",)),
    "reused": (record_reused, ("test_openai_parallel_workers and Paris",)),
}


class Studio:
    """The module's recordings, each made once in an app folder of its own when a test first
    asks for it; and one replay of the recordings the selected tests replay (``replayed``),
    their tapes copied into one more app folder. Tests that change a tape copy its folder."""

    def __init__(self, folder: Path, replays: set[str]) -> None:
        self._folder, self._replays = folder, replays
        self._recorded: dict[str, tuple[Path, Session]] = {}
        self._replayed: tuple[Path, Session] | None = None

    def recorded(self, name: str) -> tuple[Path, Session]:
        """The app folder where recording ``name`` was made, and its session."""
        if name not in self._recorded:
            app = new_app(self._folder / name)
            self._recorded[name] = app, RECORDINGS[name][0](app)
        return self._recorded[name]

    def replayed(self) -> tuple[Path, Session]:
        """The app folder of the replay, and its session: no upstream, no key."""
        if self._replayed is None:
            app = new_app(self._folder / "replay")
            for name in sorted(self._replays):
                tapes = self.recorded(name)[0] / "tapes"
                shutil.copytree(tapes, app / "tapes", dirs_exist_ok=True)
            selection = " or ".join(
                f"({test})" for name in sorted(self._replays) for test in RECORDINGS[name][1]
            )
            # Only test_langchain reads OPENAI_API_BASE, only the fault test APP_KINDS.
            session = run_session(
                app, "-k", selection, APP_KINDS=KINDS, OPENAI_API_BASE=CLOSED_PORT
            )
            self._replayed = app, session
        return self._replayed

    def copy(self, name: str, folder: Path) -> Path:
        """A copy of recording ``name``'s app folder, in ``folder``, to change."""
        shutil.copytree(self.recorded(name)[0], folder, dirs_exist_ok=True)
        return folder


@pytest.fixture(scope="module")
def studio(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Studio:
    replays = {recording for test, recording in REPLAYED_BY.items() if selected(request, test)}
    return Studio(tmp_path_factory.mktemp("studio"), replays)


def loop_recorded(studio: Studio, name: str = "loop") -> Path:
    """The tool loop's tape folder, recorded once: a streamed call, then a streamed text
    answer."""
    app, session = studio.recorded(name)
    session.passed(TOOL_LOOP)
    assert session.results(TOOL_LOOP) == [
        {"calls": [PARIS], "answer": "Hello there", "turns": ["pass", "not_applicable"]}
    ]
    return app / FOLDER / TOOL_LOOP


@pytest.mark.sdk
@STUDIO
def test_a_tool_loop_recorded_once_replays_offline_with_the_same_result(studio: Studio) -> None:
    recorded_loop = loop_recorded(studio)
    assert tape_files(recorded_loop) == ["001.json", "002.json"]
    _, replayed = studio.replayed()  # no upstream, no key: replay only
    replayed.passed(TOOL_LOOP)
    assert replayed.results(TOOL_LOOP) == [
        {"calls": [PARIS], "answer": "Hello there", "turns": ["pass", "not_applicable"]}
    ]
    # Tapes are fixtures: callgate replay judges them against their pinned verdicts.
    assert [(o.fixture.name, o.held) for o in replay([recorded_loop])] == [
        ("001.json", True),
        ("002.json", True),
    ]
    first = json.loads((recorded_loop / "001.json").read_text())
    assert first["meta"]["tape"]["request"] == {
        "route": "openai",
        "method": "POST",
        "path": "/v1/chat/completions",
        "model": "gpt-4o-mini",
        "tools": ["get_weather"],
        "stream": True,
        "messages_by_role": {"system": 1, "user": 1},
    }
    assert first["meta"]["redaction"]["text"] == "keep"


@pytest.mark.sdk
@STUDIO
def test_an_extra_request_a_changed_model_or_tool_set_and_a_missing_request_fail_with_why(
    studio: Studio, tmp_path: Path
) -> None:
    loop_recorded(studio)
    app = studio.copy("loop", tmp_path)
    recorded_loop = app / FOLDER / TOOL_LOOP
    for change, line in [
        (
            {"APP_EXTRA": "1"},
            "request 3 is not on the tape: POST /v1/chat/completions (openai), model "
            "gpt-4o-mini, tools [get_weather], stream, messages assistant 1 system 1 tool 1 "
            "user 2; the tape holds next: nothing more. To record it: "
            "--callgate-record-mode=new_episodes, or delete the folder and run with "
            "--callgate-record-mode=once",
        ),
        (
            {"APP_MODEL": "gpt-4.1"},
            "request 1 is not on the tape: POST /v1/chat/completions (openai), model gpt-4.1, "
            "tools [get_weather], stream, messages system 1 user 1; the tape holds next: "
            "001.json (POST /v1/chat/completions (openai), model gpt-4o-mini, tools "
            "[get_weather], stream, messages system 1 user 1)",
        ),
        (
            {"APP_SEARCH_TOOL": "1"},
            "request 1 is not on the tape: POST /v1/chat/completions (openai), model "
            "gpt-4o-mini, tools [get_weather, search], stream, messages system 1 user 1; the "
            "tape holds next: 001.json",
        ),
    ]:
        code, output, _ = run_app(app, "-k", TOOL_LOOP, **change)
        assert code == 1 and line in output, change
    (recorded_loop / "002.json").rename(recorded_loop / "003.json")
    shutil.copy(recorded_loop / "003.json", recorded_loop / "002.json")
    code, output, _ = run_app(app, "-k", TOOL_LOOP)
    assert code == 1
    assert "1 recorded exchange(s) were not requested, from 003.json" in output


@pytest.mark.sdk
@STUDIO
def test_new_episodes_appends_and_all_records_anew(studio: Studio, tmp_path: Path) -> None:
    loop_recorded(studio)
    app = studio.copy("loop", tmp_path)
    recorded_loop = app / FOLDER / TOOL_LOOP
    with closing(fake("openai/text_only")) as upstream:
        code, output, results = run_app(
            app, "-k", TOOL_LOOP, upstream=upstream, mode="new_episodes", APP_EXTRA="1"
        )
    assert code == 0, output
    assert tape_files(recorded_loop) == ["001.json", "002.json", "003.json"]
    assert results[0]["turns"] == ["pass", "not_applicable", "not_applicable"]
    assert run_app(app, "-k", TOOL_LOOP, APP_EXTRA="1")[0] == 0  # all three replay now
    with closing(fake("openai/valid_fragmented", "openai/text_only")) as upstream:
        code, output, _ = run_app(app, "-k", TOOL_LOOP, upstream=upstream, mode="all")
    assert code == 0, output
    assert tape_files(recorded_loop) == ["001.json", "002.json"]
    assert run_app(app, "-k", TOOL_LOOP)[0] == 0


@pytest.mark.sdk
@STUDIO
@pytest.mark.parametrize("redaction", ["replay", "strict"])
def test_no_canary_reaches_a_tape_in_any_encoding(studio: Studio, redaction: str) -> None:
    app, session = studio.recorded("loop" if redaction == "replay" else "loop_strict")
    session.passed(TOOL_LOOP)
    files = sorted((app / "tapes").rglob("*.json"))
    assert [f.name for f in files] == ["001.json", "002.json"]
    texts = [f.read_text() for f in files]
    for canary in CANARIES:
        for form in {
            canary,
            quote(canary),
            quote_plus(canary),
            base64.b64encode(canary.encode()).decode(),
        }:
            assert not any(form in text for text in texts), (canary, form)
    arguments = check(json.loads(texts[0])).calls[0].arguments
    assert arguments == (PARIS[1] if redaction == "replay" else '{"city":"xxxxx","unit":"c"}')


@pytest.mark.sdk
@STUDIO
def test_async_openai_anthropic_gemini_mistral_and_ollama_clients_replay_what_they_recorded(
    studio: Studio,
) -> None:
    app, recording = studio.recorded("async")
    recording.passed(*ASYNC_TESTS)
    recorded = recording.results(*ASYNC_TESTS)
    assert recorded == [
        {"arguments": '{"city":"Paris","unit":"c"}', "turns": ["pass"]},
        {"calls": [["get_weather", {"city": "Paris", "unit": "c"}]], "turns": ["pass"]},
        {"calls": [["get_weather", {"city": "Oslo"}]], "turns": ["pass"]},
        {"calls": [["get_weather", '{"city": "San Francisco"}']], "turns": ["pass"]},
        {"calls": [["get_weather", {"city": "Paris"}]], "turns": ["pass"]},
    ]
    _, replayed = studio.replayed()
    replayed.passed(*ASYNC_TESTS)
    assert replayed.results(*ASYNC_TESTS) == recorded
    assert sorted(p.parent.name for p in (app / "tapes").rglob("001.json")) == [
        "test_anthropic",
        "test_gemini",
        "test_mistral",
        "test_ollama",
        "test_openai_async",
    ]
    # A route's own provider where the upstream's host names none: Mistral's shape is read by
    # the mistral profile.
    assert (
        json.loads((app / FOLDER / "test_mistral" / "001.json").read_text())["profile"] == "mistral"
    )


@pytest.mark.sdk
def test_pytest_xdist_workers_record_and_replay_their_own_tapes(app: Path) -> None:
    selection = ["-k", "test_openai_parallel_workers", "-n", "2"]
    with closing(fake("openai/valid_fragmented")) as upstream:
        code, output, _ = run_app(app, *selection, upstream=upstream, mode="once")
    assert code == 0, output
    assert sorted(p.parent.name for p in (app / "tapes").rglob("001.json")) == [
        "test_openai_parallel_workers[Oslo]",
        "test_openai_parallel_workers[Paris]",
    ]
    code, output, _ = run_app(app, *selection)
    assert code == 0, output
    assert "2 passed" in output


@pytest.mark.sdk
@STUDIO
def test_a_tape_of_a_reused_index_fails_its_test_unless_the_marker_allows_the_code(
    studio: Studio,
) -> None:
    app, recording = studio.recorded("reused")
    assert recording.test(REUSED).outcome == "failed"
    assert (
        "001.json: the turn does not pass: fail [identity_collision] (allow it with "
        "@pytest.mark.callgate_tape(allow=['identity_collision']))"
    ) in recording.test(REUSED).report
    assert studio.replayed()[1].test(REUSED).outcome == "failed"  # replayed, it fails the same way
    selection = ["-k", "test_openai_parallel_workers and Paris"]
    code, output, _ = run_app(app, *selection, APP_ALLOW='["identity_collision"]')
    assert code == 0, output


@pytest.mark.sdk
@STUDIO
def test_langchain_over_the_openai_sdk_replays_what_it_recorded(studio: Studio) -> None:
    _, recording = studio.recorded("langchain")
    recording.passed("test_langchain")
    recorded = recording.results("test_langchain")
    assert recorded == [
        {"calls": [["get_weather", {"city": "Paris", "unit": "c"}]], "turns": ["pass"]}
    ]
    # langchain reads OPENAI_API_BASE before OPENAI_BASE_URL: the tape sets both.
    _, replayed = studio.replayed()
    replayed.passed("test_langchain")
    assert replayed.results("test_langchain") == recorded


class CompletionUpstream(ThreadingHTTPServer):
    """An upstream that answers every request with one whole (non-streamed) chat completion."""

    BODY = json.dumps(
        {
            "id": "chatcmpl-upstream-1",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": "Checking the weather.",
                        "tool_calls": [
                            {
                                "id": "call_upstream_1",
                                "type": "function",
                                "function": {
                                    "name": "get_weather",
                                    "arguments": '{"city":"Paris"}',
                                },
                            }
                        ],
                    },
                }
            ],
            "usage": {"prompt_tokens": 9, "completion_tokens": 9, "total_tokens": 18},
        }
    ).encode()

    def __init__(self) -> None:
        body = self.BODY

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.shutdown()
        self.server_close()


@pytest.mark.sdk
@STUDIO
def test_a_non_streamed_completion_is_kept_as_an_exchange_record_and_replayed(
    studio: Studio,
) -> None:
    app, recording = studio.recorded("not_streamed")
    recording.passed("test_openai_not_streamed")
    recorded = recording.results("test_openai_not_streamed")
    assert recorded == [
        {
            "text": "Checking the weather.",
            "turns": [],
            "calls": [["get_weather", '{"city":"Paris"}']],
        }
    ]
    folder = app / FOLDER / "test_openai_not_streamed"
    assert tape_files(folder) == ["001.exchange.json"]
    record = json.loads((folder / "001.exchange.json").read_text())
    assert (
        record["response"]["json"]["choices"][0]["message"]["tool_calls"][0]["id"]
        == "call_redacted2"
    )
    _, replayed = studio.replayed()
    replayed.passed("test_openai_not_streamed")
    assert replayed.results("test_openai_not_streamed") == recorded


@pytest.mark.sdk
@STUDIO
def test_a_recorded_turn_is_served_as_each_fault_and_its_verdict_never_fails_the_test(
    studio: Studio,
) -> None:
    """``callgate_tape.mutate(kind)``: the unguarded accumulator of the app hands on the
    recorded call (or its mangled arguments) on every fault but the provider's error; each
    served turn's verdict names the fault, and none fails the test."""
    loop_recorded(studio)
    app, replayed = studio.replayed()
    faults = {
        name: test
        for name, test in replayed.tests.items()
        if name.startswith("test_openai_first_turn_on_every_fault[")
    }
    assert [name.split("[")[1][:-1] for name in faults] == KINDS.split(",")
    results = replayed.results(*faults)
    city = PARIS[1]
    assert {r["kind"]: (r["calls"], r["codes"]) for r in results} == {
        "truncate": ([PARIS], [["missing_terminal"]]),
        "drop_terminal": ([PARIS], [["missing_terminal"]]),
        "duplicate_terminal": ([PARIS], [["duplicate_terminal"]]),
        "delta_after_terminal": ([["get_weather", city + 'it":"c"}']], [["delta_after_terminal"]]),
        "wrong_terminal": ([PARIS], [["wrong_terminal_reason"]]),
        "drop_id": ([PARIS], [["missing_call_id"]]),
        "corrupt_arguments": ([["get_weather", "{" + city]], [["invalid_arguments_json"]]),
        "schema_violation": (
            [["get_weather", '{"city": 12345, "unit": "c"}']],
            [["schema_violation"]],
        ),
        "provider_error": ("APIError", [["missing_terminal", "stream_error"]]),
    }
    outcomes = [test.outcome for test in faults.values()]
    assert (outcomes.count("passed"), outcomes.count("failed")) == (9, 1), replayed.output
    tape = app / FOLDER / TOOL_LOOP
    assert (
        f"tape test_app.py::test_openai_first_turn_on_every_fault[reuse_slot]: reuse_slot "
        f"applies to no turn of tape {tape}: 001.json: reuse_slot: no "
        "second call in the first call's choice to move onto its slot"
    ) in faults["test_openai_first_turn_on_every_fault[reuse_slot]"].report


#: The recording each test asserts a replay of (``Studio.replayed``).
REPLAYED_BY = {
    test_a_tool_loop_recorded_once_replays_offline_with_the_same_result: "loop",
    test_async_openai_anthropic_gemini_mistral_and_ollama_clients_replay_what_they_recorded: (
        "async"
    ),
    test_a_tape_of_a_reused_index_fails_its_test_unless_the_marker_allows_the_code: "reused",
    test_langchain_over_the_openai_sdk_replays_what_it_recorded: "langchain",
    test_a_non_streamed_completion_is_kept_as_an_exchange_record_and_replayed: "not_streamed",
    test_a_recorded_turn_is_served_as_each_fault_and_its_verdict_never_fails_the_test: "loop",
}
