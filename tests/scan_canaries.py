"""Recordings with canaries planted in them, as each recorder stores them, and the line
``callgate scan`` must print for each canary.

A canary is a value made for the test: a key in each credential format the leak gate knows, a
request header holding an opaque token, a prompt and a tool result. Each recording holds every
canary once, each in a place of its own, so that each expected line names one canary.
"""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from urllib.parse import quote

import yaml
from mitmproxy import http, io
from mitmproxy.test import tflow, tutils

#: A key in each credential format, as a model might echo it into its answer.
KEYS = {
    "anthropic-key": "sk-ant-api03-" + "CanaryAnth7" * 4,
    "google-api-key": "AIza" + "CanaryGoog7Q" * 3,
    "groq-key": "gsk_" + "CanaryGroq7" * 3,
    "xai-key": "xai-" + "CanaryXai7Q" * 3,
    "huggingface-token": "hf_" + "CanaryHugF7" * 3,
    "aws-access-key": "AKIA" + "CANARY7AWS7KEY7Q",
    "github-token": "ghp_" + "CanaryGitH7" * 4,
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjYW5hcnkifQ.CanaryJwtSignature7",
}
#: In the Authorization header.
OPENAI_KEY = "sk-proj-" + "CanaryOpenAI7" * 3
#: URL-encoded in the query string.
BEARER = "Bearer Canary+Opaque/Bearer7Token"
#: An opaque token in a header named like a credential.
OPAQUE = "CanaryOpaqueApiKey7" * 2
PROMPT = "Canary prompt: summarise the quarterly report for ACME."
TOOL_RESULT = "Canary tool result: balance 4711.00 EUR"
SECRETS = (*KEYS.values(), OPENAI_KEY, BEARER, quote(BEARER, safe=""), OPAQUE, PROMPT, TOOL_RESULT)

URL = "https://api.example.test/v1/chat/completions?auth=" + quote(BEARER, safe="")
REQUEST = {
    "model": "gpt-4o-mini",
    "stream": True,
    "messages": [
        {"role": "user", "content": PROMPT},
        {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function"}]},
        {"role": "tool", "tool_call_id": "call_1", "content": TOOL_RESULT},
    ],
}
REQUEST_HEADERS = [
    ("authorization", f"Bearer {OPENAI_KEY}"),
    ("x-api-key", OPAQUE),
    ("content-type", "application/json"),
]


def sse() -> bytes:
    """The answer: one event per key, the key in the model's text."""
    events = [
        {"choices": [{"index": 0, "delta": {"content": f"the key is {key}"}}]}
        for key in KEYS.values()
    ]
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode() + b"data: [DONE]\n\n"


def _exchange_lines(uri: str, headers: list[str], request: str, response: str) -> set[str]:
    """The findings of one exchange: ``headers`` are the locations of the Authorization and
    X-Api-Key headers; the answer's key number n is on line 2n-1 of the body."""
    lines = {
        f"{uri}: credential (bearer-token)",
        f"{headers[0]}: credential (openai-key)",
        f"{headers[1]}: credential (credential-header)",
        f"{request} /messages: prompt (messages)",
        f"{request} /messages/2: prompt (tool-result)",
    }
    for number, pattern in enumerate(KEYS, 1):
        lines.add(
            f"{response} line {2 * number - 1} /choices/0/delta/content: credential ({pattern})"
        )
    return lines


def _cassette_lines(label: str) -> set[str]:
    return _exchange_lines(
        f"{label} request.uri",
        [f"{label} request.headers.authorization", f"{label} request.headers.x-api-key"],
        f"{label} request.body",
        f"{label} response.body",
    )


def _interaction(body: bytes | str, encoding: str | None) -> dict[str, object]:
    response_headers = {"Content-Type": ["text/event-stream"]}
    if encoding:
        response_headers["Content-Encoding"] = [encoding]
    return {
        "request": {
            "method": "POST",
            "uri": URL,
            "body": json.dumps(REQUEST),
            "headers": {name: [value] for name, value in REQUEST_HEADERS},
        },
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": response_headers,
            "body": {"string": body},
        },
    }


def vcr_plain(folder: Path) -> tuple[Path, set[str]]:
    """A VCR.py cassette as ``decode_compressed_response=True`` leaves it: the body as text."""
    path = folder / "vcr_plain.yaml"
    document = {"interactions": [_interaction(sse().decode(), None)], "version": 1}
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path, _cassette_lines("interaction 1")


def pytest_recording_binary(folder: Path) -> tuple[Path, set[str]]:
    """A pytest-recording cassette (cassettes/<module>/<test>.yaml) keeping the gzip bytes as
    the server sent them: a ``!!binary`` body under its Content-Encoding."""
    path = folder / "cassettes" / "test_app" / "test_summary.yaml"
    path.parent.mkdir(parents=True)
    other = _interaction("{}", None)
    document = {"interactions": [other, _interaction(gzip.compress(sse()), "gzip")], "version": 1}
    text = yaml.safe_dump(document)
    assert "!!binary" in text
    path.write_text(text, encoding="utf-8")
    lines = _cassette_lines("interaction 2")
    # The first interaction holds the same request: its lines, and an empty answer.
    lines |= {line for line in _cassette_lines("interaction 1") if "response.body" not in line}
    return path, lines


def vcr_json_base64(folder: Path) -> tuple[Path, set[str]]:
    """A cassette saved as JSON whose answer is gzip, written out in base64."""
    path = folder / "vcr_base64.json"
    body = base64.b64encode(gzip.compress(sse())).decode()
    document = {"interactions": [_interaction(body, "gzip")], "version": 1}
    path.write_text(json.dumps(document), encoding="utf-8")
    lines = {line for line in _cassette_lines("interaction 1") if "response.body" not in line}
    # The body is one base64 run: where it is, and each key it holds.
    lines |= {f"interaction 1 response.body line 1: credential ({p})" for p in KEYS}
    return path, lines


def har_base64(folder: Path) -> tuple[Path, set[str]]:
    """A HAR whose answer is base64 ``content.text``, as browsers save a compressed body."""
    path = folder / "session.har"
    entry = {
        "request": {
            "method": "POST",
            "url": URL,
            "headers": [{"name": n, "value": v} for n, v in REQUEST_HEADERS],
            "postData": {"mimeType": "application/json", "text": json.dumps(REQUEST)},
        },
        "response": {
            "status": 200,
            "headers": [{"name": "content-type", "value": "text/event-stream"}],
            "content": {
                "mimeType": "text/event-stream",
                "encoding": "base64",
                "text": base64.b64encode(sse()).decode(),
            },
        },
    }
    document = {"log": {"version": "1.2", "creator": {"name": "test"}, "entries": [entry]}}
    path.write_text(json.dumps(document), encoding="utf-8")
    base = "/log/entries/0"
    return path, _exchange_lines(
        f"{base}/request/url",
        [f"{base}/request/headers/0/value", f"{base}/request/headers/1/value"],
        f"{base}/request/postData/text",
        f"{base}/response/content/text",
    )


def mitmproxy_flows(folder: Path) -> tuple[Path, set[str]]:
    """A ``mitmdump -w`` flow file; the answer gzip-compressed, as it came off the wire."""
    path = folder / "capture.flow"
    request = tutils.treq(
        method=b"POST",
        host="api.example.test",
        port=443,
        scheme=b"https",
        path=URL.split("api.example.test", 1)[1].encode(),
        content=json.dumps(REQUEST).encode(),
        headers=http.Headers([(n.encode(), v.encode()) for n, v in REQUEST_HEADERS]),
    )
    headers = http.Headers(content_type="text/event-stream", content_encoding="gzip")
    response = tutils.tresp(headers=headers, content=b"")
    response.content = sse()  # encoded as its Content-Encoding says
    assert response.raw_content is not None and response.raw_content[:2] == b"\x1f\x8b"
    with path.open("wb") as file:
        io.FlowWriter(file).add(tflow.tflow(req=request, resp=response))
    return path, _exchange_lines(
        "flow 1 request.url",
        ["flow 1 request.headers.authorization", "flow 1 request.headers.x-api-key"],
        "flow 1 request.body",
        "flow 1 response.body",
    )


def tape(folder: Path) -> tuple[Path, set[str]]:
    """A tape's folder: a streamed turn kept with its text (as tapes keep it) whose arguments
    were never masked, and an exchange record whose text was never masked."""
    path = folder / "tapes" / "test_app" / "test_summary"
    path.mkdir(parents=True)
    chunks = [
        {"choices": [{"index": 0, "delta": {"content": f"the key is {key}"}}]}
        for key in KEYS.values()
    ]
    call = {"index": 0, "id": "call_redacted1", "type": "function"}
    call["function"] = {"name": "lookup", "arguments": json.dumps({"q": TOOL_RESULT})}
    chunks.append({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    envelope = {
        "description": "Captured turn",
        "envelope_version": 1,
        "profile": "openai",
        "tool_schemas": {"lookup": {"type": "object"}},
        "request": {"model": "gpt-4o-mini", "messages": REQUEST["messages"]},
        "chunks": chunks,
        "meta": {
            "capture": "tape",
            "redaction": {"policy": "callgate-default", "arguments": "mask", "text": "keep"},
            "tape": {"request": {"route": "openai", "method": "POST"}},
        },
    }
    (path / "001.json").write_text(json.dumps(envelope, indent=2), encoding="utf-8")
    record = {
        "tape_record": 1,
        "description": "POST /v1/embeddings: HTTP 200, not a stream callgate judges",
        "request": {"route": "openai", "method": "POST", "path": "/v1/embeddings"},
        "response": {
            "status": 200,
            "content_type": "application/json",
            "json": {"object": "list", "note": f"{PROMPT} {OPENAI_KEY}"},
        },
        "redaction": {"text": "mask"},
    }
    (path / "002.exchange.json").write_text(json.dumps(record), encoding="utf-8")
    turn, exchange = str(path / "001.json"), str(path / "002.exchange.json")
    lines = {
        f"{turn}:/chunks/{n}/choices/0/delta/content: credential ({p})" for n, p in enumerate(KEYS)
    }
    lines |= {
        f"{turn}:/request/messages: prompt (messages)",
        f"{turn}:/request/messages/2: prompt (tool-result)",
        f"{turn}:/chunks/{len(KEYS)}/choices/0/delta/tool_calls/0/function/arguments: "
        "output (arguments)",
        f"{exchange}:/response/json/note: credential (openai-key)",
        f"{exchange}:/response/json/note: output (text)",
    }
    return path, lines


RECORDINGS = (vcr_plain, pytest_recording_binary, vcr_json_base64, har_base64, mitmproxy_flows)


def plant(folder: Path) -> tuple[list[Path], set[str]]:
    """Every recording in ``folder``, and every line the scan must print for them."""
    paths, lines = [], set()
    for make in RECORDINGS:
        path, found = make(folder)
        paths.append(path)
        lines |= {f"{path}:{line}" for line in found}
    path, found = tape(folder)
    return [*paths, path], lines | found
