"""``callgate.cli.importing.read``: recordings users already have (HAR, mitmproxy flows, VCR
cassettes, raw bodies) read into exact ``Exchange``s, with everything else a ``Skipped`` or a
one-line ``InputError``.

HAR and flow files are written by mitmproxy's own exporters, so the tests meet what users have.
"""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from mitmproxy import http, io
from mitmproxy.addons.savehar import SaveHar
from mitmproxy.flow import Error
from mitmproxy.test import tflow, tutils

from callgate.cli.importing.read import Skipped, read_source
from callgate.reassemble.errors import InputError
from callgate.redact.exchange import Exchange

URL = "https://api.openai.com/v1/chat/completions"
KEYED_URL = "https://generativelanguage.googleapis.com/v1beta/models/g:generateContent?key=SECRET"
REQUEST = b'{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}'
# A non-ASCII character, because mitmproxy's HAR export writes SSE text as latin-1.
SSE = (
    b'data: {"choices":[{"delta":{"content":"caf\xc3\xa9"}}]}\n\n'
    b'data: {"choices":[{"delta":{},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)
REQUEST_HEADERS = [
    ("host", "api.openai.com"),
    ("authorization", "Bearer sk-test-not-redacted-here"),
    ("content-type", "application/json"),
]
SSE_HEADERS = [("content-type", "text/event-stream; charset=utf-8")]


def mitm_flow(
    *,
    body: bytes | None = SSE,
    response_headers: list[tuple[str, str]] = SSE_HEADERS,
    method: bytes = b"POST",
    error: str | None = None,
) -> http.HTTPFlow:
    request = tutils.treq(
        method=method,
        host="api.openai.com",
        port=443,
        scheme=b"https",
        path=b"/v1/chat/completions",
        headers=http.Headers([(k.encode(), v.encode()) for k, v in REQUEST_HEADERS]),
        content=REQUEST,
    )
    response = tutils.tresp(
        headers=http.Headers([(k.encode(), v.encode()) for k, v in response_headers]), content=body
    )
    return tflow.tflow(req=request, resp=response, err=Error(error) if error else False)


def expected(**changes: Any) -> Exchange:
    fields: dict[str, Any] = {
        "method": "POST",
        "url": URL,
        "request_headers": REQUEST_HEADERS,
        "request_body": REQUEST,
        "status": 200,
        "response_headers": SSE_HEADERS,
        "response_body": SSE,
        "capture": "import:har",
    }
    return Exchange(**(fields | changes))


def write_har(path: Path, flows: list[http.HTTPFlow]) -> Path:
    path.write_text(json.dumps(SaveHar().make_har(flows), indent=4))
    return path


def har_entry(url: str, method: str, content: dict[str, Any], headers: list[Any]) -> dict[str, Any]:
    """An entry shaped as browsers write them (HTTP/2 pseudo-headers included)."""
    return {
        "request": {
            "method": method,
            "url": url,
            "headers": [
                {"name": ":path", "value": "/v1beta?key=SECRET"},
                {"name": "content-type", "value": "application/json"},
            ],
            "postData": {"mimeType": "application/json", "text": "{}"},
        },
        "response": {"status": 200, "headers": headers, "content": content},
    }


def write_browser_har(path: Path, *entries: dict[str, Any]) -> Path:
    log = {"version": "1.2", "creator": {"name": "WebInspector"}, "entries": list(entries)}
    path.write_text(json.dumps({"log": log}))
    return path


def source_error(path: Path, **kwargs: Any) -> str:
    with pytest.raises(InputError) as raised:
        read_source(path, **kwargs)
    return str(raised.value)


# --- HAR ----------------------------------------------------------------------------------------


def test_a_har_exported_by_mitmproxy_gives_back_the_exact_bytes_and_headers(tmp_path: Path) -> None:
    path = write_har(tmp_path / "openai.har", [mitm_flow()])
    assert read_source(path) == [expected()]


def test_mitmproxy_har_text_without_charset_is_latin_1_and_is_turned_back_into_utf_8(
    tmp_path: Path,
) -> None:
    headers = [("content-type", "text/event-stream")]
    path = write_har(tmp_path / "a.har", [mitm_flow(response_headers=headers)])
    assert "caf\u00c3\u00a9" in path.read_text(encoding="utf-8").encode().decode("unicode_escape")
    assert read_source(path) == [expected(response_headers=headers)]


def test_mitmproxy_har_of_a_gzip_stream_holds_decoded_text_under_the_gzip_header(
    tmp_path: Path,
) -> None:
    headers = [*SSE_HEADERS, ("content-encoding", "gzip")]
    flow = mitm_flow(body=gzip.compress(SSE), response_headers=headers)
    assert read_source(write_har(tmp_path / "gz.har", [flow])) == [
        expected(response_headers=headers)
    ]


def test_a_zhar_written_by_mitmproxy_save_har_is_read(tmp_path: Path) -> None:
    path = tmp_path / "dump.zhar"
    SaveHar().export_har([mitm_flow()], str(path))
    assert read_source(path) == [expected()]


def test_mitmproxy_har_keeps_no_error_for_a_flow_that_has_a_response(tmp_path: Path) -> None:
    # The HAR export drops flow.error when there is a response: only flow files say "aborted".
    path = write_har(tmp_path / "aborted.har", [mitm_flow(error="Client disconnected.")])
    assert read_source(path) == [expected()]


def test_a_har_entry_without_response_is_skipped_with_its_error(tmp_path: Path) -> None:
    flow = tflow.tflow(err=Error("Connection refused"))
    assert read_source(write_har(tmp_path / "e.har", [flow])) == [
        Skipped("entry 1", "no response (Connection refused)")
    ]


def test_a_har_get_json_entry_is_skipped_and_the_stream_beside_it_kept(tmp_path: Path) -> None:
    models = mitm_flow(
        method=b"GET", body=b'{"data":[]}', response_headers=[("content-type", "application/json")]
    )
    posted = mitm_flow(body=b'{"id":"x"}', response_headers=[("content-type", "application/json")])
    assert read_source(write_har(tmp_path / "mixed.har", [models, mitm_flow(), posted])) == [
        Skipped("entry 1", "method GET"),
        expected(),
        Skipped("entry 3", "not a streamed response (content-type application/json)"),
    ]


def test_browser_har_base64_content_is_decoded_and_gzip_inside_it_removed(tmp_path: Path) -> None:
    headers = [
        {"name": "content-type", "value": "text/event-stream"},
        {"name": "content-encoding", "value": "gzip"},
    ]
    content = {
        "mimeType": "text/event-stream",
        "encoding": "base64",
        "text": base64.b64encode(gzip.compress(SSE)).decode(),
    }
    path = write_browser_har(tmp_path / "b.har", har_entry(URL, "POST", content, headers))
    assert read_source(path) == [
        Exchange(
            method="POST",
            url=URL,
            request_headers=[("content-type", "application/json")],
            request_body=b"{}",
            status=200,
            response_headers=[("content-type", "text/event-stream"), ("content-encoding", "gzip")],
            response_body=SSE,
            capture="import:har",
        )
    ]


def test_browser_har_text_is_unicode_and_a_response_error_marks_it_incomplete(
    tmp_path: Path,
) -> None:
    entry = har_entry(
        URL,
        "POST",
        {"text": SSE.decode()},
        [{"name": "content-type", "value": "text/event-stream"}],
    )
    entry["response"]["_error"] = "net::ERR_ABORTED"
    [exchange] = read_source(write_browser_har(tmp_path / "c.har", entry))
    assert isinstance(exchange, Exchange)
    assert (exchange.response_body, exchange.complete, exchange.error) == (
        SSE,
        False,
        "net::ERR_ABORTED",
    )


def test_a_gemini_json_array_stream_is_kept_and_skips_never_show_the_query(tmp_path: Path) -> None:
    array = {"text": '[{"candidates":[]}\n,{"candidates":[]}]'}
    json_type = [{"name": "content-type", "value": "application/json"}]
    stream_url = KEYED_URL.replace(":generateContent", ":streamGenerateContent")
    path = write_browser_har(
        tmp_path / "g.har",
        har_entry(stream_url, "POST", array, json_type),
        har_entry(KEYED_URL, "POST", {"text": "{}"}, json_type),
        har_entry(KEYED_URL, "GET", {"text": "{}"}, json_type),
    )
    first, *skipped = read_source(path)
    assert isinstance(first, Exchange) and first.response_body == array["text"].encode()
    assert skipped == [
        Skipped("entry 2", "not a streamed response (content-type application/json)"),
        Skipped("entry 3", "method GET"),
    ]


def test_a_truncated_har_is_one_line_naming_where_it_ends(tmp_path: Path) -> None:
    full = write_har(tmp_path / "full.har", [mitm_flow()]).read_text()
    cut = full[: full.index('"response"')]
    (tmp_path / "cut.har").write_text(cut)
    line, column = cut.count("\n") + 1, len(cut) - cut.rindex("\n")
    assert source_error(tmp_path / "cut.har") == (
        f"not a HAR file: Expecting property name enclosed in double quotes at line {line} "
        f"column {column} (the file ends there: truncated?)"
    )


def test_json_without_log_entries_in_a_har_file_is_a_source_error(tmp_path: Path) -> None:
    (tmp_path / "x.har").write_text('{"log": {"version": "1.2"}}')
    assert source_error(tmp_path / "x.har") == "not a HAR file: no log.entries list"


def test_a_json_file_holding_a_har_and_a_har_without_extension_are_read(tmp_path: Path) -> None:
    har = write_har(tmp_path / "a.har", [mitm_flow()]).read_bytes()
    (tmp_path / "export.json").write_bytes(har)
    (tmp_path / "export").write_bytes(har)
    assert read_source(tmp_path / "export.json") == read_source(tmp_path / "export") == [expected()]


# --- mitmproxy flow files -----------------------------------------------------------------------


def write_flows(path: Path, flows: list[Any]) -> Path:
    with path.open("wb") as file:
        writer = io.FlowWriter(file)
        for flow in flows:
            writer.add(flow)
    return path


def test_a_flow_file_gives_streams_errors_and_skips_in_order(tmp_path: Path) -> None:
    path = write_flows(
        tmp_path / "dump.flow",
        [
            mitm_flow(),
            mitm_flow(error="Client disconnected."),
            mitm_flow(body=b'{"id":"x"}', response_headers=[("content-type", "application/json")]),
            mitm_flow(body=None),
            tflow.ttcpflow(),
        ],
    )
    assert read_source(path) == [
        expected(capture="import:flow"),
        expected(capture="import:flow", complete=False, error="Client disconnected."),
        Skipped("flow 3", "not a streamed response (content-type application/json)"),
        Skipped("flow 4", "no response body stored (streamed without store_streamed_bodies)"),
        Skipped("flow 5", "not an HTTP flow (tcp)"),
    ]


def test_a_gzip_stream_in_a_flow_file_is_decoded(tmp_path: Path) -> None:
    headers = [*SSE_HEADERS, ("content-encoding", "gzip")]
    flow = mitm_flow(body=gzip.compress(SSE), response_headers=headers)
    path = write_flows(tmp_path / "gz.mitm", [flow])
    assert read_source(path) == [expected(capture="import:flow", response_headers=headers)]


def test_a_flow_file_cut_inside_its_second_flow_keeps_the_first(tmp_path: Path) -> None:
    data = write_flows(tmp_path / "two.flow", [mitm_flow(), mitm_flow()]).read_bytes()
    (tmp_path / "cut.flow").write_bytes(data[: len(data) * 3 // 4])
    assert read_source(tmp_path / "cut.flow") == [
        expected(capture="import:flow"),
        Skipped("flow 2", "file is truncated or corrupt from here on"),
    ]


def test_a_file_that_is_not_a_flow_file_is_a_source_error(tmp_path: Path) -> None:
    (tmp_path / "notes.flow").write_text("these are my notes\n")
    assert source_error(tmp_path / "notes.flow") == (
        "not a mitmproxy flow file: Invalid data format."
    )


def test_a_flow_file_without_extension_is_recognised(tmp_path: Path) -> None:
    data = write_flows(tmp_path / "a.flow", [mitm_flow()]).read_bytes()
    (tmp_path / "capture").write_bytes(data)
    assert read_source(tmp_path / "capture") == [expected(capture="import:flow")]


# --- VCR.py / pytest-recording cassettes --------------------------------------------------------


VCR_SSE_TYPE = {"Content-Type": ["text/event-stream"]}


def interaction(body: str | bytes, headers: dict[str, list[str]]) -> dict[str, Any]:
    """One interaction as VCR.py's YAML serializer writes it."""
    return {
        "request": {
            "body": REQUEST.decode(),
            "method": "POST",
            "uri": URL,
            "headers": {
                "authorization": ["Bearer sk-test-not-redacted-here"],
                "content-type": ["application/json"],
            },
        },
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": headers,
            "body": {"string": body},
        },
    }


def write_cassette(path: Path, *interactions: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump({"interactions": list(interactions), "version": 1}))
    return path


def vcr_expected(headers: list[tuple[str, str]], body: bytes = SSE) -> Exchange:
    return expected(
        request_headers=[
            ("authorization", "Bearer sk-test-not-redacted-here"),
            ("content-type", "application/json"),
        ],
        response_headers=headers,
        response_body=body,
        capture="import:vcr",
    )


def test_a_plain_cassette_with_a_text_body_is_read(tmp_path: Path) -> None:
    path = write_cassette(tmp_path / "plain.yaml", interaction(SSE.decode(), VCR_SSE_TYPE))
    assert read_source(path) == [vcr_expected([("Content-Type", "text/event-stream")])]


def test_a_gzip_binary_cassette_body_is_decompressed(tmp_path: Path) -> None:
    headers = {"Content-Type": ["text/event-stream"], "Content-Encoding": ["gzip"]}
    path = write_cassette(tmp_path / "gz.yml", interaction(gzip.compress(SSE), headers))
    assert "!!binary" in path.read_text()
    assert read_source(path) == [
        vcr_expected(  # safe_dump sorts keys, as VCR.py's dump does
            [("Content-Encoding", "gzip"), ("Content-Type", "text/event-stream")]
        )
    ]


def test_a_cassette_keeps_the_stream_and_skips_the_json_interaction(tmp_path: Path) -> None:
    path = write_cassette(
        tmp_path / "two.yaml",
        interaction('{"id":"x"}', {"Content-Type": ["application/json"]}),
        interaction(SSE.decode(), VCR_SSE_TYPE),
    )
    assert read_source(path) == [
        Skipped("interaction 1", "not a streamed response (content-type application/json)"),
        vcr_expected([("Content-Type", "text/event-stream")]),
    ]


def test_an_old_vcrpy_httpx_cassette_is_read(tmp_path: Path) -> None:
    legacy = interaction("", {})
    legacy["response"] = {
        "status_code": 200,
        "http_version": "HTTP/1.1",
        "headers": {"content-type": "text/event-stream"},
        "content": SSE.decode(),
    }
    assert read_source(write_cassette(tmp_path / "old.yaml", legacy)) == [
        vcr_expected([("content-type", "text/event-stream")])
    ]


def test_a_cassette_saved_with_the_json_serializer_is_read(tmp_path: Path) -> None:
    cassette = {"interactions": [interaction(SSE.decode(), VCR_SSE_TYPE)], "version": 1}
    (tmp_path / "c.json").write_text(json.dumps(cassette))
    assert read_source(tmp_path / "c.json") == [
        vcr_expected([("Content-Type", "text/event-stream")])
    ]


def test_yaml_that_is_not_a_cassette_is_a_source_error(tmp_path: Path) -> None:
    (tmp_path / "ci.yml").write_text("jobs:\n  test:\n    runs-on: ubuntu-latest\n")
    assert source_error(tmp_path / "ci.yml") == "not a VCR cassette: no interactions list"


def test_broken_yaml_names_the_position_but_not_the_text(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("interactions:\n- request: {uri: 'sk-secret\n")
    message = source_error(tmp_path / "bad.yaml")
    assert message.startswith("not a VCR cassette: ") and " at line 3 column 1" in message
    assert "sk-secret" not in message and "\n" not in message


# --- raw bodies ---------------------------------------------------------------------------------


def raw(body: bytes, content_type: str, url: str = "", request: bytes = b"{}") -> Exchange:
    return Exchange(
        method="POST",
        url=url,
        request_headers=[],
        request_body=request,
        status=200,
        response_headers=[("content-type", content_type)],
        response_body=body,
        capture="import:raw",
    )


def test_an_sse_body_becomes_one_post_exchange(tmp_path: Path) -> None:
    (tmp_path / "body.sse").write_bytes(SSE)
    assert read_source(tmp_path / "body.sse") == [raw(SSE, "text/event-stream")]


def test_the_request_body_and_url_given_for_a_raw_body_are_carried(tmp_path: Path) -> None:
    (tmp_path / "body.sse").write_bytes(SSE)
    assert read_source(tmp_path / "body.sse", request_body=REQUEST, url=URL) == [
        raw(SSE, "text/event-stream", URL, REQUEST)
    ]


def test_a_jsonl_body_is_kept_as_is_and_typed_ndjson(tmp_path: Path) -> None:
    body = b'{"message":{"content":"hi"},"done":false}\n{"done":true}\n'
    (tmp_path / "ollama.jsonl").write_bytes(body)
    assert read_source(tmp_path / "ollama.jsonl") == [raw(body, "application/x-ndjson")]


def test_a_json_array_of_chunks_is_kept_as_is(tmp_path: Path) -> None:
    body = b'[{"candidates":[]},\n{"candidates":[]}]'
    (tmp_path / "gemini.json").write_bytes(body)
    assert read_source(tmp_path / "gemini.json") == [raw(body, "application/json")]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        (
            "one.json",
            '{"choices": []}',
            "a .json body must be a JSON array of chunks, not an object",
        ),
        (
            "notes.sse",
            "hello\nworld\n",
            "not an SSE body: no line starts with data:, event:, id: or :",
        ),
        ("bad.jsonl", '{"a": 1}\n{"a": \n', "not JSON lines: line 2: Expecting value"),
        (
            "cut.json",
            '[{"a": 1}',
            "not JSON: Expecting ',' delimiter at line 1 column 10"
            " (the file ends there: truncated?)",
        ),
        ("empty.sse", "\n", "empty file"),
        (
            "notes.txt",
            "hello\n",
            "unknown recording format (expected .har, .flow, .yaml, .sse, .jsonl"
            ", .json or .eventstream)",
        ),
        (
            "cut.eventstream",
            "\x00\x00\x00\x10",
            "not an AWS event stream: the first 12 bytes are no"
            " message prelude (or its CRC is wrong)",
        ),
    ],
)
def test_an_unusable_file_is_one_line_naming_the_problem(
    tmp_path: Path, name: str, content: str, message: str
) -> None:
    (tmp_path / name).write_text(content)
    assert source_error(tmp_path / name) == message


def test_a_missing_file_is_a_source_error(tmp_path: Path) -> None:
    assert source_error(tmp_path / "gone.har") == "cannot read: No such file or directory"
