"""``callgate import`` as a user meets it: files in, redacted fixtures out, one line each."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from mitmproxy import http
from mitmproxy.addons.savehar import SaveHar
from mitmproxy.test import tflow, tutils
from typer.testing import CliRunner

from callgate.cli.app import app
from callgate.reassemble.framing import EVENTSTREAM
from callgate.reassemble.profiles import PROFILES, framed
from callgate.redact import redact_envelope
from tests.conftest import CONFORMANCE, load
from tests.proxy_harness import request_body_of

runner = CliRunner()
KEY = "sk-proj-" + "Zq7" * 16
QUERY_KEY = "AIza" + "Yx9" * 12
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
REQUEST = json.dumps(
    {
        "model": "gpt-4o-mini",
        "stream": True,
        "tools": TOOLS,
        "messages": [{"role": "user", "content": "What is the weather in Lisbon?"}],
    }
).encode()


def sse_body(*arguments: str, finish: str | None = "tool_calls") -> bytes:
    chunks = [
        {
            "id": "chatcmpl-1",
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "get_weather", "arguments": ""},
                            }
                        ]
                    },
                }
            ],
        }
    ]
    chunks += [
        {
            "id": "chatcmpl-1",
            "choices": [
                {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": a}}]}}
            ],
        }
        for a in arguments
    ]
    if finish:
        chunks.append(
            {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
        )
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks).encode() + b"data: [DONE]\n\n"


def flow(body: bytes, query: str = "") -> http.HTTPFlow:
    request = tutils.treq(
        method=b"POST",
        host="api.openai.com",
        port=443,
        scheme=b"https",
        path=f"/v1/chat/completions{query}".encode(),
        content=REQUEST,
        headers=http.Headers(authorization=f"Bearer {KEY}", content_type="application/json"),
    )
    response = tutils.tresp(headers=http.Headers(content_type="text/event-stream"), content=body)
    return tflow.tflow(req=request, resp=response)


def invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["import", *args])
    return result.exit_code, result.stdout, result.stderr


def test_a_har_exported_by_mitmproxy_becomes_safe_fixtures(tmp_path: Path) -> None:
    har = tmp_path / "session.har"
    flows = [
        flow(sse_body('{"city":', '"Lisbon"}')),
        flow(sse_body('{"city":"Li', finish=None), f"?key={QUERY_KEY}"),
    ]
    har.write_text(json.dumps(SaveHar().make_har(flows)))
    code, out, err = invoke(str(har), "--out-dir", str(tmp_path / "fx"))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert len(lines) == 2
    assert lines[0].endswith("(pass: -)") and lines[1].endswith("(fail: missing_terminal)")
    files = sorted((tmp_path / "fx").iterdir())
    assert [f.name.startswith("openai-openai-") and f.suffix == ".json" for f in files] == [
        True,
        True,
    ]
    for path in files:
        assert path.stat().st_mode & 0o777 == 0o600
        text = path.read_text()
        for secret in (KEY, QUERY_KEY, "Lisbon", "weather in", "call_1"):
            assert secret not in text


def test_the_scripted_raw_body_form_works(tmp_path: Path) -> None:
    body, request, out = tmp_path / "b.sse", tmp_path / "r.json", tmp_path / "o.json"
    body.write_bytes(sse_body('{"city":"Porto"}'))
    request.write_bytes(REQUEST)
    code, stdout, _ = invoke(
        str(body),
        "--request",
        str(request),
        "--profile",
        "openai",
        "--provider",
        "groq",
        "--output",
        str(out),
    )
    assert code == 0 and stdout.endswith(f"-> {out} (pass: -)\n")
    envelope = json.loads(out.read_text())
    assert (envelope["profile"], envelope["provider"], list(envelope["tool_schemas"])) == (
        "openai",
        "groq",
        ["get_weather"],
    )
    checked = runner.invoke(app, ["check", str(out)])
    assert checked.exit_code == 0


def test_out_with_several_fixtures_writes_nothing(tmp_path: Path) -> None:
    har = tmp_path / "two.har"
    har.write_text(json.dumps(SaveHar().make_har([flow(sse_body("{}")), flow(sse_body("{}"))])))
    assert invoke(str(har), "--out", str(tmp_path / "one.json")) == (
        1,
        "",
        "callgate: --output names one file but 2 fixtures were found; use --output-dir\n",
    )
    assert not (tmp_path / "one.json").exists()


def test_bad_inputs_are_one_line_each_and_never_a_traceback(tmp_path: Path) -> None:
    truncated = tmp_path / "cut.har"
    truncated.write_text(json.dumps(SaveHar().make_har([flow(sse_body("{}"))]))[:200])
    not_cassette = tmp_path / "list.yaml"
    not_cassette.write_text("- just\n- a list\n")
    not_sse = tmp_path / "body.sse"
    not_sse.write_text("hello world\n")
    good = tmp_path / "good.sse"
    good.write_bytes(sse_body('{"city":"Faro"}'))
    code, out, err = invoke(
        str(truncated),
        str(not_cassette),
        str(not_sse),
        str(good),
        "--profile",
        "openai",
        "--output-dir",
        str(tmp_path / "fx"),
    )
    assert code == 2
    problems = err.splitlines()
    assert [p.split(": ")[1] for p in problems] == [str(truncated), str(not_cassette), str(not_sse)]
    assert "Traceback" not in err and len(problems) == 3
    assert "imported" in out and len(list((tmp_path / "fx").iterdir())) == 1


def test_a_non_streamed_exchange_is_skipped_with_its_reason(tmp_path: Path) -> None:
    har = tmp_path / "mixed.har"
    plain = flow(b'{"choices": []}')
    plain.response.headers["content-type"] = "application/json"
    har.write_text(json.dumps(SaveHar().make_har([plain])))
    assert invoke(str(har), "--output-dir", str(tmp_path)) == (
        1,
        f"skipped {har} #1 (entry 1): not a streamed response (content-type application/json)\n",
        "callgate: nothing to import: no streamed tool-call exchange was found\n",
    )


def test_an_unknown_profile_is_one_line_and_exit_2(tmp_path: Path) -> None:
    body = tmp_path / "b.sse"
    body.write_bytes(sse_body("{}"))
    assert invoke(str(body), "--profile", "acme-chat") == (
        2,
        "",
        f"callgate: unknown profile 'acme-chat'; known: {', '.join(sorted(PROFILES))}\n",
    )


def bedrock_flow(name: str, endpoint: str) -> http.HTTPFlow:
    envelope = load(CONFORMANCE / f"{name}.json")
    request = tutils.treq(
        method=b"POST",
        host="bedrock-runtime.us-east-1.amazonaws.com",
        port=443,
        scheme=b"https",
        path=f"/model/anthropic.claude-3-haiku-20240307-v1%3A0/{endpoint}".encode(),
        content=request_body_of(envelope),
        headers=http.Headers(
            authorization="AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/x",
            content_type="application/json",
        ),
    )
    response = tutils.tresp(
        headers=http.Headers(content_type="application/vnd.amazon.eventstream"),
        content=b"".join(framed(envelope, EVENTSTREAM)),
    )
    return tflow.tflow(req=request, resp=response)


def test_bedrock_event_streams_import_from_a_har_and_as_raw_bodies(tmp_path: Path) -> None:
    converse, invoke_name = "bedrock-converse/valid_parallel_calls", "anthropic/valid_fragmented"
    har = tmp_path / "bedrock.har"
    har.write_text(
        json.dumps(
            SaveHar().make_har(
                [
                    bedrock_flow(converse, "converse-stream"),
                    bedrock_flow(invoke_name, "invoke-with-response-stream"),
                ]
            )
        )
    )
    code, out, err = invoke(str(har), "--output-dir", str(tmp_path / "fx"))
    assert (code, err) == (0, "")
    written = [json.loads(p.read_text()) for p in sorted((tmp_path / "fx").glob("*.json"))]
    assert sorted(
        (f["profile"], f["provider"], f["meta"]["stream"]["framing"], f["expect"]["status"])
        for f in written
    ) == [
        ("anthropic", "bedrock", "eventstream", "pass"),
        ("bedrock-converse", "bedrock", "eventstream", "pass"),
    ]
    for fixture in written:
        name = converse if fixture["profile"] == "bedrock-converse" else invoke_name
        assert (
            fixture["events"]
            == redact_envelope(load(CONFORMANCE / f"{name}.json"), secrets=()).envelope["events"]
        )
    # The same body in a VCR cassette (bytes: !!binary), as a raw file, and as a raw file known
    # by its first prelude.
    body = b"".join(framed(load(CONFORMANCE / f"{converse}.json"), EVENTSTREAM))
    url = (
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-haiku-"
        "20240307-v1%3A0/converse-stream"
    )
    (tmp_path / "bedrock.yaml").write_text(
        yaml.safe_dump(
            {
                "interactions": [
                    {
                        "request": {
                            "method": "POST",
                            "uri": url,
                            "headers": {},
                            "body": request_body_of(
                                load(CONFORMANCE / f"{converse}.json")
                            ).decode(),
                        },
                        "response": {
                            "status": {"code": 200, "message": "OK"},
                            "body": {"string": body},
                            "headers": {"Content-Type": ["application/vnd.amazon.eventstream"]},
                        },
                    }
                ]
            }
        )
    )
    code, out, err = invoke(str(tmp_path / "bedrock.yaml"), "--out-dir", str(tmp_path / "vcr"))
    assert (code, err) == (0, "")
    (fixture,) = [json.loads(p.read_text()) for p in (tmp_path / "vcr").glob("*.json")]
    assert (fixture["profile"], fixture["provider"], fixture["expect"]["status"]) == (
        "bedrock-converse",
        "bedrock",
        "pass",
    )
    request = tmp_path / "request.json"
    request.write_bytes(request_body_of(load(CONFORMANCE / f"{converse}.json")))
    for file_name in ("turn.eventstream", "turn"):
        (tmp_path / file_name).write_bytes(body)
        code, out, err = invoke(
            str(tmp_path / file_name),
            "--request",
            str(request),
            "--profile",
            "bedrock-converse",
            "--provider",
            "bedrock",
            "--output",
            str(tmp_path / f"{file_name}.json"),
        )
        assert (code, err) == (0, ""), out
        fixture = json.loads((tmp_path / f"{file_name}.json").read_text())
        assert fixture["expect"] == {"status": "pass", "codes": []}


TWO_TURNS = load(CONFORMANCE / "openai-realtime" / "two_tool_turns_second_cancelled.json")
CANARY_INSTRUCTIONS = "canary-instructions-4e1c: you book flights"
CANARY_PROMPT = "canary-prompt-71ad: weather in Paris, then a flight"


def realtime_flow() -> http.HTTPFlow:
    """A Realtime session as mitmproxy records it: the client's settings and prompt, then two
    tool turns, the second cancelled mid-arguments."""
    from mitmproxy.websocket import WebSocketMessage
    from wsproto.frame_protocol import Opcode

    recorded = tflow.twebsocketflow()
    recorded.request.url = "https://api.openai.com/v1/realtime?model=gpt-realtime"
    recorded.request.headers["authorization"] = f"Bearer {KEY}"
    session = {"tools": TWO_TURNS["request"]["tools"], "instructions": CANARY_INSTRUCTIONS}
    sent = [
        {"type": "session.update", "session": session},
        {
            "type": "conversation.item.create",
            "item": {"type": "message", "role": "user", "content": [{"text": CANARY_PROMPT}]},
        },
        {"type": "response.create"},
    ]
    assert recorded.websocket is not None
    recorded.websocket.messages = [
        *(WebSocketMessage(Opcode.TEXT, True, json.dumps(m).encode()) for m in sent),
        *(
            WebSocketMessage(Opcode.TEXT, False, json.dumps(e).encode())
            for e in TWO_TURNS["events"]
        ),
    ]
    return recorded


def test_a_realtime_session_becomes_one_fixture_per_response(tmp_path: Path) -> None:
    """From a flow file and from a HAR: each response is a fixture of its own, judged by the
    tools the client's ``session.update`` gave; none holds the key, the instructions, the
    prompt or the calls' arguments."""
    from mitmproxy import io

    flows = tmp_path / "session.flows"
    with flows.open("wb") as out:
        io.FlowWriter(out).add(realtime_flow())
    har = tmp_path / "session.har"
    har.write_text(json.dumps(SaveHar().make_har([realtime_flow()])))
    for recording in (flows, har):
        out_dir = tmp_path / recording.suffix.lstrip(".")
        code, out, err = invoke(str(recording), "--out-dir", str(out_dir))
        assert (code, err) == (0, ""), recording
        verdicts = [line.rpartition(" (")[2] for line in out.splitlines()]
        assert verdicts == [
            "pass: -)",
            "fail: invalid_arguments_json, wrong_terminal_reason)",
        ], recording
        for path in out_dir.iterdir():
            text = path.read_text()
            for secret in (KEY, CANARY_INSTRUCTIONS, CANARY_PROMPT, "Paris", "Lisbon"):
                assert secret not in text, (recording, secret)
            fixture = json.loads(text)
            assert sorted(fixture["tool_schemas"]) == ["book_flight", "get_weather"]
