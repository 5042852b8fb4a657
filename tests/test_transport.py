"""``callgate.transport()`` without an SDK: httpx clients over httpx's own ``MockTransport``
answering with a fixture's bytes, sync and async. A passing turn's bytes reach the client as
the provider sent them; a failing turn's terminal evidence is replaced by the provider's error
event; what callgate does not read passes untouched; a fault of callgate's own fails closed
unless ``on_error="pass"`` (the real SDKs on every path: ``tests/test_transport_sdk.py``)."""

from __future__ import annotations

import asyncio
import contextvars
import gzip
import json
from typing import Any

import httpx
import pytest

import callgate
from callgate import Report, UsageError
from callgate.integrations.enforce import transport as transport_module
from callgate.integrations.enforce.tap import StreamTap, unjudged_frame
from callgate.reassemble import engine
from callgate.reassemble.errors import SetupError
from callgate.reassemble.profiles import PROFILES, frames
from callgate.reassemble.readers import READERS
from tests.conftest import CONFORMANCE, blocked_event, load
from tests.proxy_harness import request_body

PASSING, FAILING = "openai/valid_parallel_interleaved", "openai/reused_index_new_id"
CHAT = "https://api.openai.com/v1/chat/completions"
SSE_TYPE = {"content-type": "text/event-stream"}


def served(name: str, headers: dict[str, str] | None = None, *, compress: bool = False) -> Any:
    """A mock upstream answering every request with fixture ``name``'s bytes."""
    body = b"".join(frames(load(CONFORMANCE / f"{name}.json")))
    if compress:
        body = gzip.compress(body)
        headers = {**(headers or SSE_TYPE), "content-encoding": "gzip"}

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers=headers or SSE_TYPE, content=body)

    return httpx.MockTransport(answer), body


def post(transport: httpx.BaseTransport, name: str, url: str = CHAT) -> bytes:
    with (
        httpx.Client(transport=transport) as client,
        client.stream("POST", url, content=request_body(name)) as response,
    ):
        return b"".join(response.iter_bytes())


def post_async(transport: httpx.AsyncBaseTransport, name: str, url: str = CHAT) -> bytes:
    async def run() -> bytes:
        async with (
            httpx.AsyncClient(transport=transport) as client,
            client.stream("POST", url, content=request_body(name)) as response,
        ):
            return b"".join([piece async for piece in response.aiter_bytes()])

    return asyncio.run(run())


def ended_with_error(body: bytes, code: str) -> bytes:
    """The passing prefix of ``body`` before its finish chunk, and the error event."""
    kept = body[: body.index(b'"finish_reason": "tool_calls"')]
    return kept[: kept.rindex(b"data: ")] + blocked_event("openai", [code])


def test_a_passing_turn_reaches_the_client_as_sent_and_its_verdict_is_told() -> None:
    verdicts: list[Report] = []
    upstream, body = served(PASSING)
    assert post(callgate.transport(upstream, on_verdict=verdicts.append), PASSING) == body
    assert post_async(callgate.async_transport(upstream, on_verdict=verdicts.append), PASSING) == (
        body
    )
    assert [(r.status.value, len(r.calls)) for r in verdicts] == [("pass", 2), ("pass", 2)]


def test_a_failing_turn_ends_with_the_providers_error_event_instead_of_its_end() -> None:
    verdicts: list[Report] = []
    upstream, body = served(FAILING)
    expected = ended_with_error(body, "identity_collision")
    assert post(callgate.transport(upstream, on_verdict=verdicts.append), FAILING) == expected
    assert post_async(callgate.async_transport(upstream), FAILING) == expected
    assert [r.blocking_codes for r in verdicts] == [["identity_collision"]]


def test_a_compressed_body_reaches_the_client_decoded_without_its_length() -> None:
    upstream, _ = served(FAILING, compress=True)
    with (
        httpx.Client(transport=callgate.transport(upstream)) as client,
        client.stream("POST", CHAT, content=request_body(FAILING)) as response,
    ):
        assert "content-encoding" not in response.headers
        assert "content-length" not in response.headers
        got = b"".join(response.iter_bytes())
    plain = b"".join(frames(load(CONFORMANCE / f"{FAILING}.json")))
    assert got == ended_with_error(plain, "identity_collision")


@pytest.mark.parametrize(
    ("method", "url", "headers"),
    [
        ("POST", "https://example.com/v1/other", SSE_TYPE),  # no profile serves it
        ("POST", CHAT, {"content-type": "application/json"}),  # not streamed
        ("GET", CHAT, SSE_TYPE),
    ],
)
def test_what_callgate_does_not_read_passes_untouched(
    method: str, url: str, headers: dict[str, str]
) -> None:
    upstream, body = served(FAILING, headers)
    verdicts: list[Report] = []
    with httpx.Client(transport=callgate.transport(upstream, on_verdict=verdicts.append)) as client:
        response = client.request(method, url, content=request_body(FAILING))
    assert (response.content, response.headers.get("content-length"), verdicts) == (
        body,
        str(len(body)),
        [],
    )


def test_a_fault_of_callgates_own_fails_the_turn_closed_unless_on_error_passes_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    counted: list[tuple[str, str]] = []
    monkeypatch.setattr(transport_module, "record_unjudged", lambda *args: counted.append(args))
    feed, fed = engine.Reassembler.feed, [0]

    def failing_feed(self: engine.Reassembler, raw: object) -> Any:
        fed[0] += 1
        if fed[0] == 3:
            raise RuntimeError("injected")
        return feed(self, raw)

    monkeypatch.setattr(engine.Reassembler, "feed", failing_feed)
    upstream, body = served(PASSING)
    got = post(callgate.transport(upstream), PASSING)
    spec = PROFILES["openai"]
    error = unjudged_frame(spec, READERS["sse"](spec, lambda: b""), "RuntimeError", first=False)
    assert got.endswith(error) and body.startswith(got[: -len(error)])
    assert b'"finish_reason": "tool_calls"' not in got and counted == []
    said = [r.getMessage() for r in caplog.records if r.name == "callgate.transport"]
    assert said == [
        "callgate: api.openai.com/v1/chat/completions: inspection stopped after an internal "
        "RuntimeError; the turn was blocked unless its verdict was given (on_error block)",
        "callgate: api.openai.com/v1/chat/completions blocked (missing_terminal)",
    ]
    fed[0] = 0
    assert post(callgate.transport(upstream, on_error="pass"), PASSING) == body
    assert counted == [("openai", "RuntimeError")]


def test_a_failure_building_the_gate_refuses_the_body_unless_on_error_passes_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def failing_start(self: engine.Reassembler, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("injected")

    monkeypatch.setattr(engine.Reassembler, "__init__", failing_start)
    counted: list[tuple[str, str]] = []
    monkeypatch.setattr(transport_module, "record_unjudged", lambda *args: counted.append(args))
    upstream, body = served(PASSING)
    spec = PROFILES["openai"]
    error = unjudged_frame(spec, READERS["sse"](spec, lambda: b""), "RuntimeError", first=True)
    assert post(callgate.transport(upstream), PASSING) == error
    assert counted == []
    assert post(callgate.transport(upstream, on_error="pass"), PASSING) == body
    assert counted == [("openai", "RuntimeError")]
    said = [r.getMessage() for r in caplog.records if r.name == "callgate.transport"]
    where = "callgate: api.openai.com/v1/chat/completions: inspection stopped after an internal"
    assert said == [
        f"{where} RuntimeError; the turn was blocked unless its verdict was given (on_error block)",
        f"{where} RuntimeError; the stream was passed through unchanged",
    ]


def test_a_fault_after_the_verdict_passes_the_rest_on_and_counts_no_turn_unjudged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A chunk after the verdict fails to decode (a stand-in decoder: a real one does not fail
    once and go on): the turn was judged, so it is not counted among the turns passed on
    unjudged, and every byte reaches the client."""
    counted: list[tuple[str, str]] = []
    monkeypatch.setattr(transport_module, "record_unjudged", lambda *args: counted.append(args))
    body = b"".join(frames(load(CONFORMANCE / f"{PASSING}.json")))

    class FailingOnce(StreamTap):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._identity = False
            self.decompressor = lambda chunk: self._fail(chunk)  # type: ignore[assignment]

        @staticmethod
        def _fail(chunk: bytes) -> bytes:
            if chunk == b": b":
                raise ValueError("corrupt")
            return chunk

    class Pieces(httpx.SyncByteStream):
        def __iter__(self) -> Any:
            yield from (body, b": a\n\n", b": b", b"\n\n")

    monkeypatch.setattr(transport_module, "StreamTap", FailingOnce)
    upstream = httpx.MockTransport(lambda r: httpx.Response(200, headers=SSE_TYPE, stream=Pieces()))
    got = post(callgate.transport(upstream, on_error="pass"), PASSING)
    assert got == body + b": a\n\n: b\n\n"
    assert counted == []


def test_an_upstream_cut_mid_body_ends_the_turn_blocked_then_raises() -> None:
    body = b"".join(frames(load(CONFORMANCE / f"{PASSING}.json")))
    cut = body[: body.index(b'"finish_reason": "tool_calls"')]
    cut = cut[: cut.rindex(b"data: ")]

    class Cut(httpx.SyncByteStream):
        def __iter__(self) -> Any:
            yield cut
            raise httpx.RemoteProtocolError("peer closed connection")

    upstream = httpx.MockTransport(
        lambda request: httpx.Response(200, headers=SSE_TYPE, stream=Cut())
    )
    got = []
    with (
        httpx.Client(transport=callgate.transport(upstream)) as client,
        client.stream("POST", CHAT, content=request_body(PASSING)) as response,
        pytest.raises(httpx.RemoteProtocolError),
    ):
        for piece in response.iter_bytes():
            got.append(piece)
    assert b"".join(got) == cut + blocked_event("openai", ["missing_terminal"])


def test_an_upstream_cut_mid_body_ends_an_async_turn_blocked_then_raises() -> None:
    body = b"".join(frames(load(CONFORMANCE / f"{PASSING}.json")))
    cut = body[: body.index(b'"finish_reason": "tool_calls"')]
    cut = cut[: cut.rindex(b"data: ")]

    class Cut(httpx.AsyncByteStream):
        async def __aiter__(self) -> Any:
            yield cut
            raise httpx.RemoteProtocolError("peer closed connection")

    upstream = httpx.MockTransport(
        lambda request: httpx.Response(200, headers=SSE_TYPE, stream=Cut())
    )
    got: list[bytes] = []

    async def run() -> None:
        async with (
            httpx.AsyncClient(transport=callgate.async_transport(upstream)) as client,
            client.stream("POST", CHAT, content=request_body(PASSING)) as response,
        ):
            async for piece in response.aiter_bytes():
                got.append(piece)

    with pytest.raises(httpx.RemoteProtocolError):
        asyncio.run(run())
    assert b"".join(got) == cut + blocked_event("openai", ["missing_terminal"])


def test_a_library_callgate_does_not_gate_is_a_usage_error() -> None:
    message = r"^library '{}' is not one of httpx, httpx2$"
    with pytest.raises(UsageError, match=message.format("requests")):
        callgate.transport(library="requests")

    class Elsewhere:
        pass

    package = Elsewhere.__module__.partition(".")[0]  # this test module's, as pytest names it
    with pytest.raises(UsageError, match=message.format(package)):
        callgate.async_transport(Elsewhere())  # the library is the wrapped transport's
    callgate.transport(Elsewhere(), library="httpx")  # unless it is named


def test_closing_the_gate_closes_the_transport_it_wraps() -> None:
    class Wrapped(httpx.MockTransport):  # the app's own class, made from httpx's
        closed = 0

        def close(self) -> None:
            Wrapped.closed += 1

        async def aclose(self) -> None:
            Wrapped.closed += 1

    callgate.transport(Wrapped(lambda r: httpx.Response(200))).close()
    asyncio.run(callgate.async_transport(Wrapped(lambda r: httpx.Response(200))).aclose())
    assert Wrapped.closed == 2


def test_each_turn_judged_is_a_verdict_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    recorded: list[Report] = []
    monkeypatch.setattr(transport_module, "record_verdict", recorded.append)
    for name in (PASSING, FAILING):
        post(callgate.transport(served(name)[0]), name)
    assert [r.status.value for r in recorded] == ["pass", "fail"]


def test_settings_callgate_does_not_know_are_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"^on_error 'maybe' is not one of block, pass$"):
        callgate.transport(on_error="maybe")
    with pytest.raises(UsageError, match=r"^unknown quirk 'nope'; known: "):
        callgate.async_transport(allow=["nope"])


def test_the_request_body_decides_the_tools() -> None:
    """The tools come from the request sent: the same stream asked without them is blocked."""
    upstream, body = served(PASSING)
    bare = json.dumps({"model": "m", "stream": True, "messages": []}).encode()
    with httpx.Client(transport=callgate.transport(upstream)) as client:
        got = client.post(CHAT, content=bare).content
    assert got == ended_with_error(body, "unknown_tool")


class Hooked(httpx.BaseTransport):
    """A transport as a framework builds one around its hooks (CrewAI's interceptors): the
    request handed to ``sent`` before it goes, the response to ``gate`` before the client has
    tied it to its request."""

    def __init__(self, upstream: httpx.BaseTransport, gate: Any) -> None:
        self.upstream, self.gate = upstream, gate

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        sent = self.gate.sent(request)
        answer = self.upstream.handle_request(sent)
        untied = httpx.Response(answer.status_code, headers=answer.headers, stream=answer.stream)
        return self.gate.gate(untied)  # type: ignore[no-any-return]


class AsyncHooked(httpx.AsyncBaseTransport):
    def __init__(self, upstream: httpx.AsyncBaseTransport, gate: Any) -> None:
        self.upstream, self.gate = upstream, gate

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        sent = self.gate.sent(request)
        answer = await self.upstream.handle_async_request(sent)
        untied = httpx.Response(answer.status_code, headers=answer.headers, stream=answer.stream)
        return self.gate.gate(untied)  # type: ignore[no-any-return]


def test_a_frameworks_hooks_hand_the_request_and_response_to_sent_and_gate() -> None:
    verdicts: list[Report] = []
    for name, code in ((PASSING, None), (FAILING, "identity_collision")):
        upstream, body = served(name)
        gate = callgate.transport(on_verdict=verdicts.append)
        expected = body if code is None else ended_with_error(body, code)
        assert post(Hooked(upstream, gate), name) == expected, name
        # the async body is read with ``await``: one gate serves both kinds of hooks
        assert post_async(AsyncHooked(upstream, gate), name) == expected, name
    assert [r.status.value for r in verdicts] == ["pass", "pass", "fail", "fail"]


def test_gate_without_the_request_is_a_usage_error() -> None:
    upstream, _ = served(PASSING)
    untied = httpx.Response(200, headers=SSE_TYPE, content=b"")
    with pytest.raises(UsageError, match=r"hand the request to \.sent\(request\) first"):
        contextvars.Context().run(callgate.transport(upstream).gate, untied)  # nothing sent


def test_a_request_handed_to_sent_is_taken_by_one_gate_only() -> None:
    """A second response gated without its own ``sent`` is refused, not judged against the
    route and tools of the request before it."""

    def run() -> None:
        upstream, body = served(PASSING)
        gate = callgate.transport(upstream)
        assert post(Hooked(upstream, gate), PASSING) == body
        untied = httpx.Response(200, headers=SSE_TYPE, content=body)
        with pytest.raises(UsageError, match=r"hand the request to \.sent\(request\) first"):
            gate.gate(untied)

    contextvars.Context().run(run)


def test_only_a_blocked_turn_is_logged_as_blocked(caplog: pytest.LogCaptureFixture) -> None:
    for name in (PASSING, "openai/text_only", FAILING):
        upstream, _ = served(name)
        post(callgate.transport(upstream), name)
    blocked = [r.getMessage() for r in caplog.records if r.name == "callgate.transport"]
    assert blocked == ["callgate: api.openai.com/v1/chat/completions blocked (identity_collision)"]


def test_a_library_that_is_not_installed_is_a_setup_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> Any:
        raise ImportError(name)

    transport_module._transports.cache_clear()
    monkeypatch.setattr(transport_module, "import_module", missing)
    try:
        with pytest.raises(
            SetupError, match=r"^callgate.transport\(library='httpx2'\) needs httpx2$"
        ):
            callgate.transport(library="httpx2")
    finally:
        transport_module._transports.cache_clear()


def test_the_async_transports_own_gate_serves_a_frameworks_hooks() -> None:
    for name, code in ((PASSING, None), (FAILING, "identity_collision")):
        upstream, body = served(name)
        expected = body if code is None else ended_with_error(body, code)
        gate = callgate.async_transport(upstream)
        assert post_async(AsyncHooked(upstream, gate), name) == expected, name


class Recorded(httpx.SyncByteStream):
    """An upstream body that notes whether the client's side closed it."""

    def __init__(self, body: bytes) -> None:
        self.body, self.closed = body, False

    def __iter__(self) -> Any:
        yield from self.body.splitlines(keepends=True)

    def close(self) -> None:
        self.closed = True


def test_a_client_that_stops_reading_closes_the_upstream_body_and_its_turn_is_told_blocked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The turn's end never reached the client, so its report fails (and is logged blocked)
    though the tap never replaced anything; the upstream body is closed, not left open."""
    body = b"".join(frames(load(CONFORMANCE / f"{PASSING}.json")))
    upstream_body = Recorded(body)

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers=SSE_TYPE, stream=upstream_body)

    verdicts: list[Report] = []
    transport = callgate.transport(httpx.MockTransport(answer), on_verdict=verdicts.append)
    with (
        httpx.Client(transport=transport) as client,
        client.stream("POST", CHAT, content=request_body(PASSING)) as response,
    ):
        next(response.iter_raw())
    assert upstream_body.closed
    assert [r.blocking_codes for r in verdicts] == [["missing_terminal"]]
    blocked = [r.getMessage() for r in caplog.records if r.name == "callgate.transport"]
    assert blocked == ["callgate: api.openai.com/v1/chat/completions blocked (missing_terminal)"]


def test_an_async_client_that_stops_reading_closes_the_upstream_body() -> None:
    body = b"".join(frames(load(CONFORMANCE / f"{PASSING}.json")))

    class AsyncRecorded(httpx.AsyncByteStream):
        closed = False

        async def __aiter__(self) -> Any:
            for line in body.splitlines(keepends=True):
                yield line

        async def aclose(self) -> None:
            AsyncRecorded.closed = True

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers=SSE_TYPE, stream=AsyncRecorded())

    async def run() -> None:
        async with (
            httpx.AsyncClient(transport=callgate.async_transport(httpx.MockTransport(answer))) as c,
            c.stream("POST", CHAT, content=request_body(PASSING)) as response,
        ):
            await response.aiter_raw().__anext__()

    asyncio.run(run())
    assert AsyncRecorded.closed


def test_a_passing_turn_the_tap_ends_with_the_error_event_is_logged_blocked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A body that ends inside an event gets the error event whatever the verdict (no verdict
    read that event): the turn's report passes, but the client was told it is blocked, and the
    log says so."""
    whole = b"".join(frames(load(CONFORMANCE / f"{PASSING}.json")))
    body = whole[: whole.rindex(b"data: [DONE]")] + b'data: {"id": "x"'

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers=SSE_TYPE, content=body)

    verdicts: list[Report] = []
    transport = callgate.transport(httpx.MockTransport(answer), on_verdict=verdicts.append)
    got = post(transport, PASSING)
    # The finish chunk was held for the verdict; the error event goes at the body's end.
    kept = body[: body.index(b'"finish_reason": "tool_calls"')]
    assert got == kept[: kept.rindex(b"data: ")] + blocked_event("openai", [])
    async_transport = callgate.async_transport(httpx.MockTransport(answer))
    assert post_async(async_transport, PASSING) == got
    assert [r.status.value for r in verdicts] == ["pass"]  # the async gate was given no on_verdict
    blocked = [r.getMessage() for r in caplog.records if r.name == "callgate.transport"]
    assert blocked == ["callgate: api.openai.com/v1/chat/completions blocked (-)"] * 2


def test_a_verdict_that_fails_to_come_is_logged_as_not_judged(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The client has what the tap sent; the failure that kept the verdict away is logged."""

    def failing_close(self: StreamTap) -> Report:
        raise RuntimeError("injected")

    monkeypatch.setattr(StreamTap, "close", failing_close)
    upstream, _ = served("openai/text_only")
    post(callgate.transport(upstream), "openai/text_only")
    lines = [r.getMessage() for r in caplog.records if r.name == "callgate.transport"]
    assert lines[-1] == (
        "callgate: api.openai.com/v1/chat/completions: not judged after an internal RuntimeError"
    )
