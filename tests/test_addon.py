"""The mitmproxy addon's hooks in process, with mitmproxy's own test kit (``taddons``, ``tflow``):
what each option does and which values ``configure`` refuses, which flows ``responseheaders``
taps and which pass untouched, what ``response`` and ``error`` write, and that a failure inside
the addon costs the client no byte. The proxy on a real socket is in ``test_proxy.py``."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest
from mitmproxy import exceptions, http
from mitmproxy.addons.save import Save
from mitmproxy.addons.savehar import SaveHar
from mitmproxy.flow import Error
from mitmproxy.test import taddons, tflow, tutils
from mitmproxy.websocket import WebSocketMessage
from wsproto.frame_protocol import Opcode

from callgate.integrations.enforce.tap import StreamTap
from callgate.proxy_addon import addon as addon_module
from callgate.proxy_addon import sessions as sessions_module
from callgate.proxy_addon.addon import FAIL_MARK, PASS_MARK, CallgateAddon
from callgate.proxy_addon.settings import Settings, read_settings
from callgate.proxy_addon.webview import SHOWN, WebBody, bounded
from callgate.reassemble import check, engine
from callgate.reassemble.gate import Blocked
from callgate.reassemble.profiles import frames
from callgate.redact import ArgumentMode
from tests.conftest import CONFORMANCE, load
from tests.proxy_harness import request_body

CHAT = "https://api.openai.com/v1/chat/completions"
PASSING, FAILING = "openai/valid_fragmented", "openai/reused_index_new_id"


def in_loop(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async test on an event loop of its own, as the hooks run on mitmproxy's."""

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(test(*args, **kwargs))

    return run


@contextlib.contextmanager
def running(*others: Any, **options: Any) -> Iterator[tuple[CallgateAddon, taddons.context]]:
    """The addon (after ``others``) loaded by mitmproxy's test master and configured."""
    addon = CallgateAddon()
    with taddons.context(*others, addon) as tctx:
        tctx.configure(addon, **options)
        yield addon, tctx


def llm_flow(
    url: str = CHAT,
    name: str = PASSING,
    *,
    method: str = "POST",
    status: int = 200,
    content_type: str = "text/event-stream",
    **headers: str,
) -> http.HTTPFlow:
    """A flow at its ``responseheaders`` moment: the request sent, the response's head come."""
    flow = tflow.tflow()
    flow.request.method, flow.request.url = method, url
    flow.request.headers = http.Headers(content_type="application/json")
    flow.request.content = request_body(name) if name else b"{}"
    flow.response = tutils.tresp(
        status_code=status,
        headers=http.Headers(content_type=content_type, **headers),
        content=None,
    )
    return flow


def tap_of(flow: http.HTTPFlow) -> StreamTap:
    assert flow.response is not None and isinstance(flow.response.stream, StreamTap)
    return flow.response.stream


def body_of(name: str) -> bytes:
    return b"".join(frames(load(CONFORMANCE / f"{name}.json")))


def through(flow: http.HTTPFlow, body: bytes, piece: int = 100, *, end: bool = True) -> bytes:
    """What the client gets of ``body`` streamed in pieces through the flow's stream callable."""
    assert flow.response is not None and callable(flow.response.stream)
    stream, sent = flow.response.stream, []
    chunks = [body[i : i + piece] for i in range(0, len(body), piece)] + ([b""] if end else [])
    for chunk in chunks:
        out = stream(chunk)
        sent += out if isinstance(out, list) else [out]
    return b"".join(sent)


async def respond(addon: CallgateAddon, flow: http.HTTPFlow) -> None:
    """The ``response`` hook, then one turn of the loop, where the addon judges the flow."""
    addon.response(flow)
    await asyncio.sleep(0)


async def fail(addon: CallgateAddon, flow: http.HTTPFlow, why: str) -> None:
    flow.error = Error(why)
    addon.error(flow)
    await asyncio.sleep(0)


def fixtures_in(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(path.read_text()) for path in sorted(folder.glob("*.json"))]


def arguments_of(fixture: dict[str, Any]) -> str:
    return "".join(
        call["function"]["arguments"]
        for chunk in fixture["chunks"]
        for choice in chunk["choices"]
        for call in choice["delta"].get("tool_calls", [])
    )


def messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == "callgate"]


# -- configure: the options, read once into the settings ------------------------------------------


def test_configure_reads_every_option_into_one_frozen_settings_record(tmp_path: Path) -> None:
    with running(
        callgate_out=str(tmp_path / "out"),
        callgate_arguments="keep",
        callgate_provider="my-gateway",
        callgate_enforce=True,
        callgate_hosts=["API.Example.com", "[::1]", "127.0.0.1"],
        callgate_allow_raw_dump=True,
        callgate_allow_verdict_change=True,
        callgate_web_body="raw",
        callgate_max_body=1000,
        callgate_web_body_max=100,
    ) as (addon, _):
        assert addon.settings == Settings(
            out=tmp_path / "out",
            arguments=ArgumentMode.KEEP,
            provider="my-gateway",
            enforce=True,
            hosts=frozenset({"api.example.com", "::1", "127.0.0.1"}),
            allow_raw_dump=True,
            allow_verdict_change=True,
            web_body=WebBody.raw,
            max_body=1000,
            web_body_max=100,
            viewed=False,
        )
        with pytest.raises(dataclasses.FrozenInstanceError):
            addon.settings.enforce = False  # type: ignore[misc]


def test_the_options_defaults_are_the_settings_defaults() -> None:
    with running() as (addon, tctx):
        assert addon.settings == Settings() == read_settings(tctx.options)
        assert (addon.settings.provider, addon.settings.hosts) == (None, frozenset())


def test_a_user_interface_adding_its_options_makes_the_flows_viewed() -> None:
    with running() as (addon, tctx):
        tctx.options.add_option("web_port", int, 8081, "Web UI port.")  # as mitmweb's addon does
        assert addon.settings.viewed


def bad(name: str, value: Any, message: str) -> Any:
    return pytest.param(name, value, message, id=f"{name}={value!r}")


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        bad(
            "callgate_arguments",
            "bogus",
            "callgate_arguments: 'bogus' is not one of mask, keep, drop",
        ),
        bad(
            "callgate_web_body", "all", "callgate_web_body: 'all' is not one of redacted, raw, none"
        ),
        bad("callgate_out", " ", "callgate_out: empty; give the folder fixtures go to"),
        bad(
            "callgate_provider",
            "my gateway",
            "callgate_provider: 'my gateway' holds white space; a provider name holds none",
        ),
        bad("callgate_max_body", 0, "callgate_max_body: 0 bytes; it must be at least 1"),
        bad("callgate_web_body_max", -1, "callgate_web_body_max: -1 bytes; it must be at least 0"),
        *[
            bad(
                "callgate_hosts",
                ["api.example.com", entry],
                f"callgate_hosts: {entry!r} is not a host name; give it without scheme, port or "
                "path (api.example.com)",
            )
            for entry in (
                "https://api.example.com",
                "api.example.com:443",
                "api.example.com/v1",
                "[::1]:8080",
                "user@api.example.com",
                "",
            )
        ],
    ],
)
def test_a_bad_option_value_is_refused_in_one_line_and_the_last_good_one_kept(
    name: str, value: Any, message: str
) -> None:
    with running(callgate_enforce=True) as (addon, tctx):
        before = addon.settings
        with pytest.raises(exceptions.OptionsError) as refused:
            tctx.configure(addon, **{name: value})
        assert str(refused.value) == message
        assert (addon.settings, getattr(tctx.options, name)) == (before, tctx.options.default(name))


def test_a_file_where_the_fixtures_folder_should_be_is_refused(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("")
    with running() as (addon, tctx):
        with pytest.raises(exceptions.OptionsError) as refused:
            tctx.configure(addon, callgate_out=str(tmp_path / "taken"))
        assert (
            str(refused.value)
            == f"callgate_out: {str(tmp_path / 'taken')!r} is a file, not a folder"
        )


@pytest.mark.parametrize(
    ("writer", "option", "name"),
    [(Save, "save_stream_file", "raw.flow"), (SaveHar, "hardump", "raw.har")],
)
def test_mitmproxys_raw_writers_are_refused_unless_allowed(
    tmp_path: Path, writer: type, option: str, name: str
) -> None:
    with running(writer()) as (addon, tctx):
        with pytest.raises(exceptions.OptionsError) as refused:
            tctx.configure(addon, **{option: str(tmp_path / name)})
        assert str(refused.value) == (
            f"callgate: {option} would write unredacted traffic to disk; remove it or set "
            "callgate_allow_raw_dump=true"
        )
        assert not getattr(tctx.options, option)
        tctx.configure(addon, callgate_allow_raw_dump=True, **{option: str(tmp_path / name)})
        assert addon.settings.allow_raw_dump
        tctx.configure(addon, **{option: None if option == "save_stream_file" else ""})


# -- responseheaders: which flows are tapped ------------------------------------------------------

GEMINI = "https://generativelanguage.googleapis.com/v1beta/models/m:streamGenerateContent"


@pytest.mark.parametrize(
    ("url", "content_type", "profile", "framing"),
    [
        (CHAT, "text/event-stream", "openai", "sse"),
        (
            "https://api.anthropic.com/v1/messages",
            "text/event-stream; charset=utf-8",
            "anthropic",
            "sse",
        ),
        (GEMINI, "application/json", "gemini", "json-array"),
        (f"{GEMINI}?alt=sse", "text/event-stream", "gemini", "sse"),
        ("http://127.0.0.1:11434/api/chat", "application/x-ndjson", "ollama", "ndjson"),
        (
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse-stream",
            "application/vnd.amazon.eventstream",
            "bedrock-converse",
            "eventstream",
        ),
        ("https://api.mistral.ai/v1/chat/completions", "Text/Event-Stream", "mistral", "sse"),
    ],
)
@in_loop
async def test_a_streamed_answer_of_a_known_endpoint_is_tapped_in_its_profile_and_framing(
    url: str, content_type: str, profile: str, framing: str
) -> None:
    with running() as (addon, _):
        flow = llm_flow(url, "", content_type=content_type, content_length="100")
        assert flow.response is not None
        headers = flow.response.headers.fields
        addon.responseheaders(flow)
    tap = flow.response.stream
    assert isinstance(tap, StreamTap)
    assert (tap.profile, tap.framing, tap.enforce, tap.max_body) == (
        profile,
        framing,
        False,
        64 << 20,
    )
    assert flow.response.headers.fields == headers  # observing changes no header


@pytest.mark.parametrize(
    ("method", "url", "status", "content_type"),
    [
        pytest.param("GET", CHAT, 200, "text/event-stream", id="not a POST"),
        pytest.param("POST", CHAT, 400, "text/event-stream", id="a client error"),
        pytest.param("POST", CHAT, 500, "application/json", id="a server error"),
        pytest.param("POST", CHAT, 200, "application/json", id="not streamed"),
        pytest.param("POST", CHAT, 200, "text/html", id="another media type"),
        pytest.param(
            "POST", f"{GEMINI}?alt=sse", 200, "application/x-ndjson", id="not its framing"
        ),
        pytest.param(
            "POST",
            "https://api.openai.com/v1/embeddings",
            200,
            "text/event-stream",
            id="no profile",
        ),
        pytest.param("POST", "https://example.com/upload", 200, "text/event-stream", id="no LLM"),
    ],
)
@in_loop
async def test_a_flow_callgate_has_nothing_to_judge_in_passes_untouched_and_unrecorded(
    tmp_path: Path, method: str, url: str, status: int, content_type: str
) -> None:
    with running(callgate_out=str(tmp_path), callgate_enforce=True) as (addon, _):
        flow = llm_flow(
            url, method=method, status=status, content_type=content_type, content_length="7"
        )
        assert flow.response is not None
        headers = flow.response.headers.fields
        addon.responseheaders(flow)
        assert (flow.response.stream, flow.response.headers.fields) == (False, headers)
        await respond(addon, flow)
        await fail(addon, flow, "connection closed")
        await addon.done()
    assert (flow.marked, flow.comment, flow.metadata) == ("", "", {})
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("hosts", "url", "host_header", "tapped"),
    [
        pytest.param([], CHAT, None, True, id="every host without a list"),
        pytest.param(
            [], "http://127.0.0.1:8080/v1/chat/completions", None, True, id="an unknown host too"
        ),
        pytest.param(["api.openai.com"], CHAT, None, True, id="a listed host"),
        pytest.param(["API.OpenAI.com"], CHAT, "Api.OpenAI.COM", True, id="in any case"),
        pytest.param(["api.openai.com", "api.mistral.ai"], CHAT, None, True, id="one of several"),
        pytest.param(
            ["127.0.0.1"], "http://127.0.0.1:8080/v1/chat/completions", None, True, id="on any port"
        ),
        pytest.param(
            ["[::1]"], "http://[::1]:8080/v1/chat/completions", None, True, id="an IPv6 host"
        ),
        pytest.param(
            ["api.openai.com"],
            "http://127.0.0.1:8080/v1/chat/completions",
            "api.openai.com",
            True,
            id="as the Host header names it",
        ),
        pytest.param(
            ["api.openai.com"],
            "https://eu.api.openai.com/v1/chat/completions",
            None,
            False,
            id="not its subdomain",
        ),
        pytest.param(
            ["api.openai.com"],
            "https://api.anthropic.com/v1/messages",
            None,
            False,
            id="not another known host",
        ),
        pytest.param(["127.0.0.1"], CHAT, "localhost", False, id="not by its address"),
    ],
)
@in_loop
async def test_callgate_hosts_inspects_the_hosts_it_names_and_passes_the_others_untouched(
    hosts: list[str], url: str, host_header: str | None, tapped: bool
) -> None:
    with running(callgate_hosts=hosts, callgate_enforce=True) as (addon, _):
        flow = llm_flow(url, content_length="7")
        if host_header is not None:
            flow.request.headers["host"] = host_header
        assert flow.response is not None
        headers = flow.response.headers.fields
        addon.responseheaders(flow)
    assert isinstance(flow.response.stream, StreamTap) is tapped
    assert (flow.response.headers.fields == headers) is not tapped  # enforce mode drops the length


@pytest.mark.parametrize(
    ("enforce", "version", "encoding", "expected"),
    [
        pytest.param(
            False,
            "HTTP/1.1",
            "gzip",
            {"content-encoding": "gzip", "content-length": "7"},
            id="observe",
        ),
        pytest.param(
            True,
            "HTTP/1.1",
            "identity",
            {"content-encoding": "identity", "transfer-encoding": "chunked"},
            id="enforce, HTTP/1.1",
        ),
        pytest.param(
            True, "HTTP/1.1", "gzip", {"transfer-encoding": "chunked"}, id="enforce, decoded"
        ),
        pytest.param(True, "HTTP/2.0", "gzip", {}, id="enforce, HTTP/2"),
    ],
)
@in_loop
async def test_callgate_enforce_drops_the_declared_length_and_the_encoding_it_decodes(
    enforce: bool, version: str, encoding: str, expected: dict[str, str]
) -> None:
    with running(callgate_enforce=enforce) as (addon, _):
        flow = llm_flow(content_encoding=encoding, content_length="7")
        flow.request.http_version = version
        addon.responseheaders(flow)
    assert flow.response is not None and isinstance(flow.response.stream, StreamTap)
    assert flow.response.stream.enforce is enforce
    assert dict(flow.response.headers.items()) == {"content-type": "text/event-stream", **expected}


@in_loop
async def test_callgate_provider_picks_the_profile_that_claims_it() -> None:
    with running() as (addon, tctx):
        first = llm_flow()
        addon.responseheaders(first)
        tctx.configure(addon, callgate_provider="mistral")
        second = llm_flow()
        addon.responseheaders(second)
    assert [tap_of(first).profile, tap_of(second).profile] == ["openai", "mistral"]


@in_loop
async def test_a_changed_option_reaches_the_next_flow() -> None:
    with running() as (addon, tctx):
        first = llm_flow()
        addon.responseheaders(first)
        tctx.configure(addon, callgate_enforce=True, callgate_max_body=1000)
        second = llm_flow()
        addon.responseheaders(second)
    taps = [tap_of(first), tap_of(second)]
    assert [(tap.enforce, tap.max_body) for tap in taps] == [(False, 64 << 20), (True, 1000)]


@in_loop
async def test_an_encoding_callgate_cannot_decode_passes_untouched_and_is_said(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with running(callgate_enforce=True) as (addon, _):
        flow = llm_flow(content_encoding="x-unknown", content_length="7")
        addon.responseheaders(flow)
    assert flow.response is not None and flow.response.stream is False
    assert flow.response.headers["content-length"] == "7"
    assert messages(caplog) == [
        f"callgate: {flow.id} api.openai.com/v1/chat/completions: content-encoding 'x-unknown' "
        "is not supported; not inspected"
    ]


# -- response and error: the verdict and the fixture ----------------------------------------------


@in_loop
async def test_a_whole_turn_is_marked_and_recorded_right_after_its_response_hook(
    tmp_path: Path,
) -> None:
    with running(callgate_out=str(tmp_path)) as (addon, _):
        sent = {}
        for name in (PASSING, FAILING):
            flow = llm_flow(name=name)
            addon.responseheaders(flow)
            sent[name] = (flow, through(flow, body_of(name)))
            addon.response(flow)
            assert flow.marked == ""  # not in the hook: the client's last bytes go first
            await asyncio.sleep(0)
        await addon.done()
    assert [bytes_ == body_of(name) for name, (_, bytes_) in sent.items()] == [True, True]
    passed, failed = sent[PASSING][0], sent[FAILING][0]
    assert (passed.marked, passed.comment) == (PASS_MARK, "callgate: pass (-)")
    assert (failed.marked, failed.comment) == (FAIL_MARK, "callgate: fail (identity_collision)")
    assert [flow.metadata["callgate"]["status"] for flow in (passed, failed)] == ["pass", "fail"]
    fixtures = fixtures_in(tmp_path)
    assert sorted((f["expect"]["status"], f["expect"]["codes"]) for f in fixtures) == [
        ("fail", ["identity_collision"]),
        ("pass", []),
    ]
    assert [(f["provider"], f["meta"]["stream"]["complete"]) for f in fixtures] == [
        ("openai", True),
        ("openai", True),
    ]


@in_loop
async def test_an_error_ends_the_turn_which_is_recorded_as_cut_short(tmp_path: Path) -> None:
    body = body_of(PASSING)
    cut = body[: body.index(b'"finish_reason": "tool_calls"')]
    cut = cut[: cut.rindex(b"\n\n") + 2]  # the whole events before the finish chunk
    with running(callgate_out=str(tmp_path)) as (addon, _):
        flow = llm_flow()
        addon.responseheaders(flow)
        assert through(flow, cut, end=False) == cut
        await fail(addon, flow, "peer closed connection")
        await addon.done()
    assert (flow.marked, flow.comment) == (FAIL_MARK, "callgate: fail (missing_terminal)")
    [fixture] = fixtures_in(tmp_path)
    assert fixture["expect"] == {"status": "fail", "codes": ["missing_terminal"]}
    assert fixture["meta"]["stream"]["complete"] is False


@in_loop
async def test_callgate_arguments_decides_what_a_fixture_keeps_of_the_arguments(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with running() as (addon, tctx):
        for mode in ("keep", "mask", "drop"):
            tctx.configure(addon, callgate_out=str(tmp_path / mode), callgate_arguments=mode)
            flow = llm_flow()
            addon.responseheaders(flow)
            through(flow, body_of(PASSING))
            await respond(addon, flow)
        await addon.done()
    [kept], [masked] = fixtures_in(tmp_path / "keep"), fixtures_in(tmp_path / "mask")
    assert arguments_of(kept) == '{"city":"Paris","unit":"c"}'
    assert arguments_of(masked) == '{"city":"xxxxx","unit":"c"}'
    assert [kept["meta"]["redaction"]["arguments"], masked["meta"]["redaction"]["arguments"]] == [
        "keep",
        "mask",
    ]
    assert not (tmp_path / "drop").exists()  # dropped, the arguments are no JSON object
    assert messages(caplog)[-1] == (
        f"callgate: {flow.id}: no fixture written: masking would change the verdict "
        "(pass -> fail): choice 0 slot 0: invalid_arguments_json; use --arguments keep, or "
        "--allow-verdict-change"
    )


@in_loop
async def test_callgate_allow_verdict_change_writes_the_fixture_redaction_changed(
    tmp_path: Path,
) -> None:
    with running(
        callgate_out=str(tmp_path), callgate_arguments="drop", callgate_allow_verdict_change=True
    ) as (addon, _):
        flow = llm_flow()
        addon.responseheaders(flow)
        through(flow, body_of(PASSING))
        await respond(addon, flow)
        await addon.done()
    assert flow.marked == PASS_MARK  # the live verdict is the stream's, not the fixture's
    [fixture] = fixtures_in(tmp_path)
    assert arguments_of(fixture) == ""
    assert fixture["meta"]["redaction"]["verdict_changed"] is True
    assert fixture["meta"]["redaction"]["original_verdict"] == {"status": "pass", "codes": []}


@in_loop
async def test_callgate_provider_names_the_fixtures_provider_instead_of_the_host(
    tmp_path: Path,
) -> None:
    with running(callgate_out=str(tmp_path), callgate_provider="my-gateway") as (addon, _):
        flow = llm_flow()
        addon.responseheaders(flow)
        through(flow, body_of(PASSING))
        await respond(addon, flow)
        await addon.done()
    [path] = tmp_path.glob("*.json")
    assert path.name.startswith("my-gateway-openai-")
    assert json.loads(path.read_text())["provider"] == "my-gateway"


@in_loop
async def test_a_body_past_callgate_max_body_passes_through_unjudged_and_unrecorded(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    body = body_of(PASSING)
    with running(callgate_out=str(tmp_path), callgate_max_body=300) as (addon, _):
        flow = llm_flow()
        addon.responseheaders(flow)
        assert through(flow, body) == body
        await respond(addon, flow)
        await addon.done()
    assert (flow.marked, flow.comment) == (FAIL_MARK, "callgate: not judged (limit_exceeded)")
    assert messages(caplog) == [
        f"callgate: {flow.id} api.openai.com/v1/chat/completions: the body grew past 300 bytes "
        "(callgate_max_body): not judged, no fixture written"
    ]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("web_body", "viewed", "shown"),
    [
        pytest.param("redacted", True, "redacted", id="redacted"),
        pytest.param("raw", True, "raw", id="raw"),
        pytest.param("none", True, None, id="none"),
        pytest.param("raw", False, None, id="raw under mitmdump"),
    ],
)
@in_loop
async def test_callgate_web_body_gives_a_user_interface_the_body_it_names(
    tmp_path: Path, web_body: str, viewed: bool, shown: str | None
) -> None:
    with running(callgate_out=str(tmp_path), callgate_web_body=web_body) as (addon, tctx):
        if viewed:
            tctx.options.add_option("web_port", int, 8081, "Web UI port.")
        flow = llm_flow()
        addon.responseheaders(flow)
        through(flow, body_of(PASSING))
        await respond(addon, flow)
        await addon.done()
    [fixture] = fixtures_in(tmp_path)
    assert flow.response is not None
    if shown is None:
        assert (flow.response.content, SHOWN in flow.metadata) == (None, False)
    elif shown == "raw":
        assert flow.response.content == body_of(PASSING)
        assert flow.metadata[SHOWN] == flow.metadata["callgate"]
    else:
        assert flow.response.content == b"".join(frames(fixture))
        assert flow.metadata[SHOWN]["status"] == "pass"


@in_loop
async def test_callgate_web_body_max_keeps_the_head_and_tail_of_a_longer_body(
    tmp_path: Path,
) -> None:
    with running(
        callgate_out=str(tmp_path), callgate_web_body="raw", callgate_web_body_max=200
    ) as (addon, tctx):
        tctx.options.add_option("web_port", int, 8081, "Web UI port.")
        flow = llm_flow()
        addon.responseheaders(flow)
        through(flow, body_of(PASSING))
        await respond(addon, flow)
        await addon.done()
    assert flow.response is not None
    assert flow.response.content == bounded(body_of(PASSING), 200)
    assert len(flow.response.content) < len(body_of(PASSING))


# -- a failure inside the addon -------------------------------------------------------------------


@in_loop
async def test_a_failure_starting_the_inspection_lets_the_stream_through_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Observing, or enforcing with on_error pass."""

    def failing_start(self: engine.Reassembler, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("injected")

    monkeypatch.setattr(engine.Reassembler, "__init__", failing_start)
    counted = counting_unjudged(monkeypatch)
    options = {"callgate_enforce": True, "callgate_on_error": "pass"}
    with running(callgate_out=str(tmp_path), **options) as (addon, _):
        flow = llm_flow(content_length="7")
        addon.responseheaders(flow)
        assert flow.response is not None
        assert (flow.response.stream, flow.response.headers["content-length"]) == (True, "7")
        await respond(addon, flow)
        await addon.done()
    assert messages(caplog) == [
        f"callgate: {flow.id} api.openai.com/v1/chat/completions: inspection could not start "
        "after an internal RuntimeError; the stream was passed through unchanged"
    ]
    assert (flow.marked, list(tmp_path.iterdir())) == ("", [])
    assert counted == [("openai", "RuntimeError")]


@in_loop
async def test_a_failure_starting_the_inspection_in_enforce_mode_sends_the_error_event_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Enforcing, a flow callgate reads but cannot start reading fails closed (the default):
    the provider's error event in place of the whole body, whose length no longer holds."""

    def failing_start(self: engine.Reassembler, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("injected")

    monkeypatch.setattr(engine.Reassembler, "__init__", failing_start)
    counted = counting_unjudged(monkeypatch)
    with running(callgate_out=str(tmp_path), callgate_enforce=True) as (addon, _):
        flow = llm_flow(content_length="7")
        addon.responseheaders(flow)
        assert flow.response is not None and "content-length" not in flow.response.headers
        assert through(flow, body_of(PASSING), piece=50) == (
            b'data: {"error": {"message": "callgate could not judge this turn (RuntimeError), '
            b'so it may not run", "type": "callgate_blocked", "code": "callgate_unjudged", '
            b'"param": null}}\n\n'
        )
        await respond(addon, flow)
        await addon.done()
    assert messages(caplog) == [
        f"callgate: {flow.id} api.openai.com/v1/chat/completions: inspection could not start "
        "after an internal RuntimeError; the turn was blocked (on_error block)"
    ]
    assert counted == []  # failed closed: the client got the error, nothing went on


def counting_unjudged(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """The turns the addon reports as passed on unjudged (``record_unjudged``), as they come."""
    counted: list[tuple[str, str]] = []
    monkeypatch.setattr(addon_module, "record_unjudged", lambda *args: counted.append(args))
    return counted


def failing_at_the_third_event() -> Any:
    """``Reassembler.feed``, raising for the third event it is given."""
    fed = []
    feed = engine.Reassembler.feed

    def failing_feed(self: engine.Reassembler, raw: object) -> Any:
        fed.append(raw)
        if len(fed) == 3:
            raise RuntimeError("injected")
        return feed(self, raw)

    return failing_feed


@pytest.mark.parametrize("enforce", [False, True], ids=["observe", "enforce-on-error-pass"])
@in_loop
async def test_a_failure_while_reading_costs_the_client_no_byte_and_the_turn_is_still_recorded(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    enforce: bool,
) -> None:
    monkeypatch.setattr(engine.Reassembler, "feed", failing_at_the_third_event())
    counted = counting_unjudged(monkeypatch)
    body = body_of(PASSING)
    options = {"callgate_enforce": enforce, "callgate_on_error": "pass"}
    with running(callgate_out=str(tmp_path), **options) as (addon, _):
        flow = llm_flow()
        addon.responseheaders(flow)
        assert through(flow, body, piece=50) == body
        await respond(addon, flow)
        await addon.done()
    assert messages(caplog)[0] == (
        f"callgate: {flow.id} api.openai.com/v1/chat/completions: inspection stopped after an "
        "internal RuntimeError; the stream was passed through unchanged"
    )
    # The writer process judges the whole stream again, as the tap stopped reading it.
    assert [f["expect"] for f in fixtures_in(tmp_path)] == [{"status": "pass", "codes": []}]
    # Enforcing, the gate let an unjudged turn through, by the setting: counted. Observing,
    # no gate stood there.
    assert counted == ([("openai", "RuntimeError")] if enforce else [])


@in_loop
async def test_a_failure_while_reading_in_enforce_mode_blocks_the_turn_and_still_records_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Failing closed (the default): the client gets what went before the failure and the
    error event, never the turn's end; the fixture holds the whole upstream stream."""
    monkeypatch.setattr(engine.Reassembler, "feed", failing_at_the_third_event())
    counted = counting_unjudged(monkeypatch)
    body = body_of(PASSING)
    with running(callgate_out=str(tmp_path), callgate_enforce=True) as (addon, _):
        flow = llm_flow()
        addon.responseheaders(flow)
        sent = through(flow, body, piece=50)
        await respond(addon, flow)
        await addon.done()
    error = sent[sent.index(b'data: {"error"') :]
    assert body.startswith(sent[: len(sent) - len(error)])
    assert b'"finish_reason": "tool_calls"' in body and b'"finish_reason": "' not in sent
    assert error == (
        b'data: {"error": {"message": "callgate could not judge this turn (RuntimeError), so it '
        b'may not run", "type": "callgate_blocked", "code": "callgate_unjudged", "param": null}}'
        b"\n\n"
    )
    assert messages(caplog)[0] == (
        f"callgate: {flow.id} api.openai.com/v1/chat/completions: inspection stopped after an "
        "internal RuntimeError; the turn was blocked unless its verdict was given (on_error block)"
    )
    assert [f["expect"] for f in fixtures_in(tmp_path)] == [{"status": "pass", "codes": []}]
    assert counted == []


def fail_the_first_close(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine fails on the first turn it closes (a fault of callgate's own) and no other."""
    closed = []
    close = engine.Reassembler.close

    def failing_close(self: engine.Reassembler) -> Any:
        closed.append(self)
        if len(closed) == 1:
            raise RuntimeError("injected")
        return close(self)

    monkeypatch.setattr(engine.Reassembler, "close", failing_close)


@in_loop
async def test_a_failure_judging_one_turn_is_said_and_spares_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    fail_the_first_close(monkeypatch)
    with running(callgate_out=str(tmp_path)) as (addon, _):
        first, second = llm_flow(), llm_flow()
        for flow in (first, second):
            addon.responseheaders(flow)
            assert through(flow, body_of(PASSING)) == body_of(PASSING)
            await respond(addon, flow)
        await addon.done()
    assert messages(caplog)[0] == (
        f"callgate: {first.id} api.openai.com/v1/chat/completions: not judged after an internal "
        "RuntimeError; no fixture written"
    )
    assert [first.marked, second.marked] == ["", PASS_MARK]
    assert [f["expect"] for f in fixtures_in(tmp_path)] == [{"status": "pass", "codes": []}]


# -- WebSocket sessions, in process ---------------------------------------------------------------

REALTIME = "https://api.openai.com/v1/realtime?model=gpt-realtime"
CANCELLED = load(CONFORMANCE / "openai-realtime" / "cancelled_mid_arguments.json")


def session_flow(url: str = REALTIME) -> http.HTTPFlow:
    flow = tflow.twebsocketflow()
    flow.request.url = url
    assert flow.websocket is not None
    flow.websocket.messages = []
    return flow


def said(addon: CallgateAddon, flow: http.HTTPFlow, event: object, *, client: bool = False) -> Any:
    """The message as it goes on, after the addon saw it: its JSON value, or None if dropped."""
    assert flow.websocket is not None
    text = json.dumps(event).encode()
    flow.websocket.messages.append(WebSocketMessage(Opcode.TEXT, client, text))
    addon.websocket_message(flow)
    message = flow.websocket.messages[-1]
    return None if message.dropped else json.loads(message.content)


def opened(addon: CallgateAddon, flow: http.HTTPFlow, document: dict[str, Any]) -> None:
    """A Realtime session started, its client setting the fixture's tools."""
    addon.websocket_start(flow)
    update = {"type": "session.update", "session": {"tools": document["request"]["tools"]}}
    said(addon, flow, update, client=True)


def cancelled_session(addon: CallgateAddon, flow: http.HTTPFlow) -> list[Any]:
    """A session whose one response is cancelled mid-arguments: each server message as it goes
    on."""
    opened(addon, flow, CANCELLED)
    return [said(addon, flow, event) for event in CANCELLED["events"]]


@pytest.mark.parametrize(
    ("hosts", "url"),
    [
        pytest.param(["example.com"], REALTIME, id="a host not inspected"),
        pytest.param([], "https://api.openai.com/v1/chat/completions", id="an HTTP endpoint"),
        pytest.param([], "https://example.com/ws", id="no endpoint callgate knows"),
    ],
)
@in_loop
async def test_a_websocket_callgate_does_not_judge_passes_untouched_and_unmarked(
    hosts: list[str], url: str, tmp_path: Path
) -> None:
    with running(callgate_hosts=hosts, callgate_enforce=True, callgate_out=str(tmp_path)) as (
        addon,
        _,
    ):
        flow = session_flow(url)
        assert cancelled_session(addon, flow) == CANCELLED["events"]
        addon.websocket_end(flow)
    assert flow.marked == "" and list(tmp_path.iterdir()) == []


class Updates:
    """An addon that keeps each flow's mark and comment as mitmproxy's ``update`` hook (what
    mitmweb shows a change by) tells it."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def update(self, flows: list[http.HTTPFlow]) -> None:
        self.seen += [(str(flow.marked), flow.comment) for flow in flows]


@in_loop
async def test_each_judged_response_is_shown_at_once_and_written_with_its_session_s_head(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The flow's comment counts the responses judged and blocked, and mitmweb is told of each
    verdict as it is given; each response's fixture keeps the first of a repeated version
    header, as a header is kept everywhere, and says its messages are a WebSocket session's,
    with no ``[DONE]`` and no event cut."""
    document = load(CONFORMANCE / "openai-realtime" / "two_tool_turns_second_cancelled.json")
    updates = Updates()
    with running(updates, callgate_out=str(tmp_path)) as (addon, _):
        flow = session_flow()
        flow.request.headers.add("OpenAI-Beta", "realtime=v1")
        flow.request.headers.add("OpenAI-Beta", "assistants=v2")
        assert flow.response is not None
        flow.response.headers.add("Content-Type", "application/json")
        flow.response.headers.add("Content-Type", "text/plain")
        opened(addon, flow, document)
        shown = []
        for event in document["events"]:
            said(addon, flow, event)
            if event["type"] == "response.done":
                shown.append((flow.marked, flow.comment))
        addon.websocket_end(flow)
        await addon.done()
        await asyncio.sleep(0)  # the writes' outcomes, called back onto the loop
    assert (
        updates.seen
        == shown
        == [
            (
                PASS_MARK,
                "callgate: 0 of 1 responses blocked; last: response resp_CAm8Jp0qx2Lwz1 pass (-)",
            ),
            (
                FAIL_MARK,
                "callgate: 1 of 2 responses blocked; last: response resp_CAm8Kq7ry3Mxa2 fail "
                "(invalid_arguments_json, wrong_terminal_reason)",
            ),
        ]
    )
    written = fixtures_in(tmp_path)
    path_of = {
        json.loads(path.read_text())["expect"]["status"]: path for path in tmp_path.glob("*.json")
    }
    assert sorted(m for m in messages(caplog) if " -> " in m) == [
        f"callgate: {flow.id} response resp_CAm8Jp0qx2Lwz1 pass -> {path_of['pass']} (-)",
        f"callgate: {flow.id} response resp_CAm8Kq7ry3Mxa2 fail -> {path_of['fail']} "
        "(invalid_arguments_json, wrong_terminal_reason)",
    ]
    assert [
        (f["meta"]["headers"]["openai-beta"], f["meta"]["headers"]["response-content-type"])
        for f in written
    ] == [("realtime=v1", "application/json")] * 2
    streams = [f["meta"]["stream"] for f in written]
    assert [(s["framing"], s["done"], s["incomplete_event"]) for s in streams] == [
        ("websocket", False, False)
    ] * 2


@in_loop
async def test_a_response_callgate_fails_to_judge_is_shown_and_said_and_not_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    document = load(CONFORMANCE / "openai-realtime" / "two_tool_turns_second_cancelled.json")
    fail_the_first_close(monkeypatch)
    updates = Updates()
    with running(updates, callgate_out=str(tmp_path)) as (addon, _):
        flow = session_flow()
        opened(addon, flow, document)
        for event in document["events"]:
            said(addon, flow, event)
        addon.websocket_end(flow)
        await addon.done()
    first = "callgate: response resp_CAm8Jp0qx2Lwz1 not judged"
    last = (
        "callgate: 2 of 2 responses blocked; last: response resp_CAm8Kq7ry3Mxa2 fail "
        "(invalid_arguments_json, wrong_terminal_reason)"
    )
    assert updates.seen == [(FAIL_MARK, first), (FAIL_MARK, last)]
    assert messages(caplog)[0] == (
        f"callgate: {flow.id} api.openai.com/v1/realtime: response resp_CAm8Jp0qx2Lwz1 not "
        "judged; no fixture written"
    )
    assert [f["expect"]["status"] for f in fixtures_in(tmp_path)] == ["fail"]


GEMINI_LIVE = (
    "https://generativelanguage.googleapis.com/ws/google.ai.generativelanguage.v1beta."
    "GenerativeService.BidiGenerateContent?key=AIzaCanaryKey0123456789abcdefghijklmnopq"
)


@pytest.mark.parametrize("name", ["withdrawn_call", "valid_single_call", "closed_with_error"])
@in_loop
async def test_a_gemini_live_session_is_judged_whole_when_it_closes(
    name: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Every message goes on as it came, enforce or not (no single one ends the turn); at the
    close the flow is marked and the session is one fixture, its close frame last (its reason
    masked as free text; one mitmproxy holds as None written as ""), no key."""
    document = load(CONFORMANCE / "gemini-live" / f"{name}.json")
    server = [m for m in document["events"] if list(m) != ["close"]]
    close = next((m["close"] for m in document["events"] if list(m) == ["close"]), None)
    code, reason = (close["code"], close["reason"]) if close else (1000, None)
    with running(callgate_enforce=True, callgate_out=str(tmp_path)) as (addon, _):
        flow = session_flow(GEMINI_LIVE)
        addon.websocket_start(flow)
        said(addon, flow, {"setup": document["request"]}, client=True)
        assert [said(addon, flow, message) for message in server] == server
        assert flow.marked == ""
        assert flow.websocket is not None
        flow.websocket.close_code, flow.websocket.close_reason = code, reason
        addon.websocket_end(flow)
        await addon.done()
    codes = ", ".join(document["expect"]["codes"]) or "-"
    failed = document["expect"]["status"] == "fail"
    assert (flow.marked, flow.comment) == (
        ":x:" if failed else ":white_check_mark:",
        f"callgate: session {document['expect']['status']} ({codes})",
    )
    [fixture] = fixtures_in(tmp_path)
    assert (fixture["profile"], fixture["expect"]["codes"]) == (
        "gemini-live",
        document["expect"]["codes"],
    )
    written = "xxxxxxxx xxxxx xxxxxxxxxxxx" if reason else ""  # "Internal error encountered."
    assert fixture["events"][-1] == {"close": {"code": code, "reason": written}}
    assert len(fixture["events"]) == len(server) + 1
    assert "AIzaCanary" not in json.dumps(fixture)
    assert "AAABAAIAAwAEAA==" not in json.dumps(fixture)  # the audio: its length and digest
    assert messages(caplog)[0] == (
        f"callgate: {flow.id} generativelanguage.googleapis.com/ws/google.ai.generativelanguage."
        "v1beta.GenerativeService.BidiGenerateContent: gemini-live sessions are judged when "
        "they close; enforce withholds none of their messages (mitmproxy cannot close a "
        "WebSocket)"
    )


@pytest.mark.parametrize("on_error", ["block", "pass"])
@in_loop
async def test_a_fault_starting_a_session_withholds_it_only_under_enforce_and_block(
    on_error: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def failing_gate(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("injected")

    monkeypatch.setattr(sessions_module, "SessionGate", failing_gate)
    with running(callgate_enforce=True, callgate_on_error=on_error, callgate_out=str(tmp_path)) as (
        addon,
        _,
    ):
        flow = session_flow()
        sent = cancelled_session(addon, flow)
    withheld = on_error == "block"
    assert sent == ([None] * len(CANCELLED["events"]) if withheld else CANCELLED["events"])
    assert messages(caplog)[0] == (
        f"callgate: {flow.id} api.openai.com/v1/realtime: session inspection stopped after an "
        "internal RuntimeError; "
        + (
            "the server's messages are withheld from here on (on_error block)"
            if withheld
            else "the session was passed through unchanged"
        )
    )


@in_loop
async def test_a_fault_closing_a_session_is_said_and_forgets_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def failing_close(self: Any) -> None:
        raise RuntimeError("injected")

    monkeypatch.setattr(sessions_module.SessionGate, "close", failing_close)
    for enforce in (False, True):
        with running(callgate_enforce=enforce, callgate_out=str(tmp_path)) as (addon, _):
            flow = session_flow()
            addon.websocket_start(flow)
            addon.websocket_end(flow)
            assert addon._sessions._sessions == {}  # the flow is over: nothing kept for it
        assert messages(caplog)[-1] == (
            f"callgate: {flow.id} api.openai.com/v1/realtime: session inspection stopped after an "
            "internal RuntimeError; "
            + (
                "the server's messages are withheld from here on (on_error block)"
                if enforce
                else "the session was passed through unchanged"
            )
        )


def test_the_error_event_keeps_the_lane_of_the_end_it_stands_in_for() -> None:
    report = check(load(CONFORMANCE / "openai-responses" / "incomplete_with_call.json"))
    blocked = Blocked(report)
    plain = json.loads(sessions_module._error_event("openai-responses", blocked, b"not json"))
    assert "stream_id" not in plain and plain["error"]["code"] == report.blocking_codes[0]
    laned = b'{"type": "response.completed", "stream_id": "lane-2"}'
    assert json.loads(sessions_module._error_event("openai-responses", blocked, laned)) == {
        **plain,
        "stream_id": "lane-2",
    }
    other = b'{"type": "response.completed", "stream_id": 7}'
    assert json.loads(sessions_module._error_event("openai-responses", blocked, other)) == plain
