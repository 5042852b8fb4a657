"""OpenAI Realtime sessions through mitmproxy with the callgate addon, on loopback: ``callgate
serve`` upstream, the real openai SDK's Realtime client (``tests/apps/realtime_app.py``) and a
plain WebSocket client (wsproto) as apps. Observe mode passes every byte and writes one redacted
fixture per response; enforce mode replaces the end of a response whose calls may not run by the
provider's ``error`` event, and nothing else."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from callgate import NotApplicable, check, mutate, mutations
from callgate.cli.importing.command import ImportOptions, run_import
from callgate.cli.serve import FakeProvider, collect
from callgate.reassemble import Reassembler, Report
from callgate.reassemble.gate import Blocked
from callgate.reassemble.profiles import PROFILES
from callgate.reassemble.sessions import SessionGate, session_parts
from tests.conftest import CONFORMANCE, ROOT, load
from tests.proxy_harness import (
    APPS_PYTHON,
    Proxy,
    batch_results,
    fixtures_in,
    request_body_of,
    websocket_texts,
)

pytestmark = [pytest.mark.proxy, pytest.mark.xdist_group("realtime-proxy")]

REALTIME, RESPONSES = "openai-realtime", "openai-responses"
TWO_TURNS = f"{REALTIME}/two_tool_turns_second_cancelled"
APP = ROOT / "tests" / "apps" / "realtime_app.py"
CREATE = {"type": "response.create"}


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeProvider]:
    fixtures = {
        f"{profile}/{name}": document
        for profile in (REALTIME, RESPONSES)
        for name, document in collect([CONFORMANCE / profile]).items()
    }
    provider = FakeProvider(fixtures).start()
    yield provider
    provider.close()


def app_results(host: str, cases: list[dict[str, Any]]) -> dict[str, Any]:
    """The realtime app's sessions against ``host``, in one interpreter."""
    if not APPS_PYTHON.exists():
        pytest.fail("the apps environment is not built: run make test")
    tools = load(CONFORMANCE / f"{TWO_TURNS}.json")["request"]["tools"]
    sessions = [{"host": host, "tools": tools, "mutate": None, **case} for case in cases]
    results: dict[str, Any] = batch_results(APP, sessions, timeout=300)
    for result in results.values():
        assert "crashed" not in result, result.get("crashed")
    return results


def canaries() -> list[str]:
    """What the app says and the key it sends (``tests/apps/realtime_app.py``)."""
    source = APP.read_text()
    return [
        line.split('"')[1]
        for line in source.splitlines()
        if line.startswith(("CANARY_PROMPT =", "CANARY_INSTRUCTIONS =", "API_KEY ="))
    ]


def audio_of(name: str) -> list[str]:
    """The base64 audio a session fixture streams."""
    events = load(CONFORMANCE / f"{name}.json")["events"]
    return [e["delta"] for e in events if e["type"] == "response.output_audio.delta"]


def test_observe_mode_passes_every_byte_writes_each_response_redacted_and_import_agrees(
    upstream: FakeProvider, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="callgate")
    # The raw session too, as a user who records flows and HAR files for import keeps it.
    saved = {
        "save_stream_file": str(tmp_path / "session.flow"),
        "hardump": str(tmp_path / "s.har"),
        "callgate_allow_raw_dump": True,
    }
    with Proxy(upstream.url, tmp_path / "plain", **saved) as proxy:
        plain = [
            (f"{REALTIME}/valid_audio_then_call", 1),
            (TWO_TURNS, 2),
            (f"{RESPONSES}/shell_call_valid", 1),
            (f"{RESPONSES}/valid_parallel_calls", 1),
        ]
        for name, responses in plain:
            api = "realtime" if name.startswith(REALTIME) else "responses"
            path = f"/f/{name}/v1/{api}?model=m"
            sends = [CREATE] * responses if api == "realtime" else client_messages(name, 1)
            count = len(load(CONFORMANCE / f"{name}.json")["events"])
            direct = flat(websocket_texts(upstream.url, path, sends, until=count))
            through = websocket_texts(proxy.url, path, sends, until=count)
            assert flat(through) == direct, name
        fixtures_in(tmp_path / "plain", 5)
        proxy.set(callgate_out=str(tmp_path / "app"))
        host = proxy.url.removeprefix("http://")
        cases = [
            {"id": "bare", "fixture": TWO_TURNS, "mode": "sync", "guard": "none", "turns": 2},
            {
                "id": "guarded",
                "fixture": TWO_TURNS,
                "mode": "async",
                "guard": "connection",
                "turns": 2,
            },
            {
                "id": "audio",
                "fixture": f"{REALTIME}/valid_audio_then_call",
                "mode": "sync",
                "guard": "none",
                "turns": 1,
            },
        ]
        proxied = app_results(host, cases)
        fixtures_in(tmp_path / "app", 5)
    written = sorted((tmp_path / "app").glob("*.json"))
    direct = app_results(upstream.url.removeprefix("http://"), cases)
    for case in cases:
        for key in ("events", "ran", "blocked", "closed"):
            assert proxied[case["id"]][key] == direct[case["id"]][key], (case["id"], key)
    assert proxied["guarded"]["blocked"] == [
        {
            "response": "resp_CAm8Kq7ry3Mxa2",
            "codes": ["invalid_arguments_json", "wrong_terminal_reason"],
        }
    ]
    verdicts = []
    for path in written:
        text = path.read_text()
        for secret in [*canaries(), *audio_of(f"{REALTIME}/valid_audio_then_call")]:
            assert secret not in text, (path.name, secret[:20])
        fixture = json.loads(text)
        assert fixture["profile"] == "openai-realtime"
        assert sorted(fixture["tool_schemas"]) == ["book_flight", "get_weather"]
        assert "instructions" not in fixture["request"]
        report = check(fixture)
        assert fixture["expect"] == {"status": report.status.value, "codes": report.blocking_codes}
        verdicts.append((fixture["expect"]["status"], tuple(fixture["expect"]["codes"])))
        assert (
            len(
                {
                    e.get("response", {}).get("id")
                    for e in fixture["events"]
                    if e["type"] in ("response.created", "response.done")
                }
            )
            == 1
        )
    assert sorted(verdicts) == sorted(
        [("pass", ()), ("fail", ("invalid_arguments_json", "wrong_terminal_reason"))] * 2
        + [("pass", ())]
    )
    audio = [json.loads(p.read_text()) for p in written if "output_audio" in p.read_text()]
    assert len(audio) == 1
    deltas = [e["delta"] for e in audio[0]["events"] if e["type"] == "response.output_audio.delta"]
    assert deltas and all(d.startswith("[media omitted: ") for d in deltas)
    lines = [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "response resp_CAm8Kq7ry3Mxa2 fail" in r.getMessage()
    ]
    assert len(lines) == 3  # the plain client's session and the app's two
    assert all("(invalid_arguments_json, wrong_terminal_reason)" in line for line in lines)
    recorded = sorted((tmp_path / "plain").glob("*.json")) + written
    for source in ("session.flow", "s.har"):
        imported = import_session(tmp_path / source, tmp_path / f"imported-{source}")
        assert sorted(map(same_parts, imported)) == sorted(
            same_parts(json.loads(p.read_text())) for p in recorded
        ), source


def import_session(source: Path, out: Path) -> list[dict[str, Any]]:
    """``callgate import`` of a recorded session: its fixtures."""
    printed, errors = io.StringIO(), io.StringIO()
    code = run_import([source], ImportOptions(out_dir=out), printed, errors)
    assert (code, errors.getvalue()) == (0, ""), printed.getvalue()
    return [json.loads(path.read_text()) for path in sorted(out.glob("*.json"))]


def same_parts(fixture: dict[str, Any]) -> str:
    """What a fixture of a response holds whoever made it (the proxy live, or import)."""
    kept = ("profile", "tool_schemas", "request", "events", "expect")
    return json.dumps({key: fixture[key] for key in kept}, sort_keys=True)


def flat(received: tuple[list[list[str]], str]) -> list[str]:
    """Every message a WebSocket client received, in order (which send each followed is the
    server's pacing, which ``tests/test_serve.py`` pins)."""
    return [text for part in received[0] for text in part]


def enforced(texts: list[str], profile: str, sent: list[dict[str, Any]]) -> list[str]:
    """What enforce mode must send for a session's server messages, the client having sent
    ``sent``: each message that ends a response the gate blocks replaced by the provider's
    error event; the rest as they are."""
    gate = SessionGate(profile, [])
    for message in sent:
        gate.read_client_text(json.dumps(message))
    out = []
    for text in texts:
        try:
            gate.read_text(text)
        except Blocked as blocked:
            error = PROFILES[profile].error_body(str(blocked), blocked.report.blocking_codes)
            text = json.dumps(error, separators=(",", ":"))
        out.append(text)
    return out


def blocking_variants(profile: str) -> list[tuple[str, str, int]]:
    """Each blocking fault on the first base it applies to, with the responses it holds (one
    ``response.create`` each: ``repeat_after_cancel`` holds two)."""
    made = []
    for kind in mutations(blocking=True, profile=profile):
        for base in ("valid_single_call", "valid_parallel_calls", "shell_call_valid"):
            try:
                variant = mutate(load(CONFORMANCE / profile / f"{base}.json"), kind, base)
            except (NotApplicable, FileNotFoundError):
                continue
            parts = session_parts(variant[PROFILES[profile].stream_key], profile)
            made.append((f"{profile}/{base}", kind, len(parts) - 1))
            break
    return made


def client_messages(name: str, responses: int) -> list[dict[str, Any]]:
    """What an app sends for ``responses`` responses of fixture ``name``: Realtime, its tools
    then ``response.create`` each; Responses, a ``response.create`` with its tools each."""
    document = load(CONFORMANCE / f"{name}.json")
    if document["profile"] == REALTIME:
        update = {"type": "session.update", "session": {"tools": document["request"]["tools"]}}
        return [update, *[CREATE] * responses]
    tools = json.loads(request_body_of(document))["tools"]
    return [{**CREATE, "model": "m", "tools": tools}] * responses


def test_enforce_mode_replaces_the_end_of_each_blocked_response_and_nothing_else(
    upstream: FakeProvider, tmp_path: Path
) -> None:
    """Realtime sessions and Responses WebSocket turns, whole and with every blocking fault
    ``mutate`` makes of them, get exactly the bytes ``enforced`` says; the real app, unguarded,
    runs the first call of the two-turn session only and sees the error event in place of the
    second response's end."""
    sessions = [
        (TWO_TURNS, None, 2),
        (f"{REALTIME}/valid_single_call", None, 1),
        (f"{RESPONSES}/valid_single_call", None, 1),
        (f"{RESPONSES}/shell_call_valid", None, 1),
        (f"{RESPONSES}/shell_call_cut_mid_command", None, 1),
        (f"{RESPONSES}/apply_patch_then_response_incomplete", None, 1),
    ]
    sessions += [*blocking_variants(REALTIME), *blocking_variants(RESPONSES)]
    assert (f"{REALTIME}/valid_single_call", "repeat_after_cancel", 2) in sessions
    replaced = set()
    with Proxy(upstream.url, tmp_path / "fixtures", callgate_enforce=True) as proxy:
        for name, kind, responses in sessions:
            api = "realtime" if name.startswith(REALTIME) else "responses"
            path = f"/f/{name}/v1/{api}"
            headers = {"x-callgate-mutate": kind} if kind else {}
            sends = client_messages(name, responses)
            profile = REALTIME if api == "realtime" else RESPONSES
            served = load(CONFORMANCE / f"{name}.json")
            served = mutate(served, kind, name) if kind else served
            count = len(served[PROFILES[profile].stream_key])
            direct = flat(websocket_texts(upstream.url, path, sends, headers, until=count))
            through = flat(websocket_texts(proxy.url, path, sends, headers, until=count))
            assert through == enforced(direct, profile, sends), (name, kind)
            if kind is None and "valid" in name:
                assert through == direct, name
            if through != direct:
                replaced.add((name, kind))
        host = proxy.url.removeprefix("http://")
        found = app_results(
            host,
            [{"id": "bare", "fixture": TWO_TURNS, "mode": "sync", "guard": "none", "turns": 2}],
        )["bare"]
    assert {(TWO_TURNS, None), (f"{RESPONSES}/apply_patch_then_response_incomplete", None)} <= (
        replaced
    )
    assert (f"{RESPONSES}/valid_single_call", "wrong_terminal") in replaced
    assert found["ran"] == [["function_call", "get_weather", '{"city":"Paris","unit":"c"}']]
    assert found["events"][-1]["type"] == "error"
    assert found["events"][-1]["error"]["code"] == "invalid_arguments_json"
    assert "response.done" not in [e["type"] for e in found["events"][11:]]


class Marks:
    """A mitmproxy addon that notes how callgate left each WebSocket flow: its mark and
    comment."""

    def __init__(self) -> None:
        self.ended: list[tuple[str, str]] = []

    def websocket_end(self, flow: Any) -> None:
        self.ended.append((flow.marked, flow.comment))


def test_a_fault_of_callgates_own_closes_the_session_under_enforce_and_block_only(
    upstream: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session whose reading fails inside callgate: passed through unchanged when observing
    or under ``on_error=pass``; under enforce with ``block`` the message it failed on becomes
    the error event and nothing more of the server's reaches the client, so no response ends
    unjudged."""

    def failing(self: SessionGate, text: str) -> object:
        raise RuntimeError("injected")

    monkeypatch.setattr(SessionGate, "read_text", failing)
    name = f"{REALTIME}/valid_single_call"
    path, sends = f"/f/{name}/v1/realtime", client_messages(name, 1)
    count = len(load(CONFORMANCE / f"{name}.json")["events"])
    direct = flat(websocket_texts(upstream.url, path, sends, until=count))
    unjudged = PROFILES[REALTIME].error_body(
        "callgate could not judge this session (RuntimeError), so no call of it may run",
        ["unjudged"],
    )
    for options, withheld in (
        ({}, False),
        ({"callgate_enforce": True, "callgate_on_error": "pass"}, False),
        ({"callgate_enforce": True}, True),
    ):
        with Proxy(upstream.url, tmp_path / "fixtures", **options) as proxy:
            got = websocket_texts(proxy.url, path, sends, until=count if not withheld else 1)
            if withheld:  # and then nothing, however long the client waits
                assert flat(got) == [json.dumps(unjudged, separators=(",", ":"))], options
                again = websocket_texts(proxy.url, path, sends)
                assert flat(again) == [json.dumps(unjudged, separators=(",", ":"))]
            else:
                assert (flat(got), got[1]) == (direct, "enough"), options


def test_a_response_callgate_could_not_judge_marks_the_session_blocked(
    upstream: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing_close(self: Reassembler) -> Report:
        raise RuntimeError("injected")

    monkeypatch.setattr(Reassembler, "close", failing_close)
    name = f"{REALTIME}/valid_single_call"
    path, sends = f"/f/{name}/v1/realtime", client_messages(name, 1)
    count = len(load(CONFORMANCE / f"{name}.json")["events"])
    marks = Marks()
    with Proxy(upstream.url, tmp_path / "fixtures", watching=[marks]) as proxy:
        websocket_texts(proxy.url, path, sends, until=count)
    assert marks.ended == [(":x:", "callgate: response resp_CAm8Jp0qx2Lwz1 not judged")]


def test_each_judged_response_is_a_verdict_for_opentelemetry(
    upstream: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from callgate.proxy_addon import sessions

    told: list[Report] = []
    monkeypatch.setattr(sessions, "record_verdict", told.append)
    path, sends = f"/f/{TWO_TURNS}/v1/realtime", client_messages(TWO_TURNS, 2)
    count = len(load(CONFORMANCE / f"{TWO_TURNS}.json")["events"])
    with Proxy(upstream.url, tmp_path / "fixtures") as proxy:
        websocket_texts(proxy.url, path, sends, until=count)
        fixtures_in(tmp_path / "fixtures", 2)
    assert [(r.status.value, r.blocking_codes) for r in told] == [
        ("pass", []),
        ("fail", ["invalid_arguments_json", "wrong_terminal_reason"]),
    ]
