"""``callgate.transport()`` and ``callgate.async_transport()``: enforce mode inside the app, as
the transport of an ``httpx.Client`` (``httpx.AsyncClient``).

How this works: the transport wraps the one the client would use and sends every request
through it unchanged. A response callgate reads (a successful POST to an endpoint a profile
serves, in a framing that profile streams in: the proxy's rule) is handed back at once with its
body streamed through the same ``StreamTap`` enforce mode runs in the proxy, built from the
request the client sent (its route, tools and ``tool_choice``): every event goes on as it comes
but the turn's terminal evidence, which is held until the turn is judged and then released, or
replaced by the provider's own error event, so the SDK raises its usual API error carrying
callgate's line. Any other response is the wrapped transport's, untouched.

Whatever object an SDK or framework builds from the bytes (a stream, a helper, a raw response,
litellm's wrapper), it builds it from the bytes the tap released: ``create``, ``post``, raw and
streaming responses are gated alike, sync and async.

The verdict of each turn goes to ``on_verdict`` when given, and to OpenTelemetry as every gate's
does. A failure of callgate's own fails the turn closed (the error event instead of the turn's
end) unless ``on_error="pass"``, which passes it on unjudged: one log line, an ``unjudged``
count. A failure of the upstream (the connection cut mid-body) ends the body the tap's way
first (a turn without its end is blocked), then raises as the wrapped transport raised.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextvars import ContextVar
from importlib import import_module
from typing import Any

from callgate.integrations.enforce.tap import StreamTap, refusing, route
from callgate.integrations.enforce.tap_state import TapState
from callgate.integrations.otel import record_unjudged, record_verdict
from callgate.reassemble.engine import Reassembler
from callgate.reassemble.errors import SetupError, UsageError
from callgate.reassemble.gate import require_on_error
from callgate.reassemble.quirks import quirks_in_force
from callgate.reassemble.report import Report
from callgate.redact import request_context

log = logging.getLogger("callgate.transport")

#: Told each turn's report once it is judged.
OnVerdict = Callable[[Report], None]
#: The bytes the tap gives back for a chunk: one piece, or several.
Pieces = bytes | list[bytes]


class _Settings:
    """What both transports were given: the provider, the quirks to tolerate, ``on_error``
    and ``on_verdict``."""

    def __init__(
        self,
        provider: str | None,
        allow: Iterable[str],
        on_error: str,
        on_verdict: OnVerdict | None,
    ) -> None:
        require_on_error(on_error)
        self.allow = tuple(allow)
        quirks_in_force(provider, self.allow)  # an unknown quirk now, not at every turn
        self.provider, self.on_error, self.on_verdict = provider, on_error, on_verdict

    def gated(self, web: Any, request: Any, response: Any) -> _Turn | None:
        """The turn to gate for ``response``, or None when callgate does not read it."""
        found = route(
            request.method,
            response.status_code,
            str(request.url),
            response.headers.get("content-type", ""),
            self.provider,
        )
        return None if found is None else _Turn(web, self, request, response, *found)


class _Turn:
    """One gated response: its tap, and what ends it."""

    def __init__(
        self,
        web: Any,
        settings: _Settings,
        request: Any,
        response: Any,
        profile: str,
        provider: str | None,
        framing: str,
    ) -> None:
        self._settings, self.profile = settings, profile
        self._where = f"{request.url.host}{request.url.path}"
        encoding = response.headers.get("content-encoding", "")
        self.tap: Callable[[bytes], Pieces] | None
        self._stream_tap: StreamTap | None = None
        try:
            schemas, parameters = request_context(_body(web, request), profile)
            engine = Reassembler(
                profile,
                schemas,
                request=parameters,
                provider=provider,
                allow_quirks=settings.allow,
            )
            self._stream_tap = StreamTap(
                engine,
                profile,
                encoding,
                enforce=True,
                on_finding=lambda finding: None,
                on_failure=self._broken,
                framing=framing,
                on_error=settings.on_error,
            )
            self.tap = self._stream_tap
        except Exception as error:  # a failure of callgate's own, before any byte
            fault = type(error).__name__
            self._said_broken(fault, closed=settings.on_error == "block", judged=False)
            self.tap = refusing(profile, framing, fault) if settings.on_error == "block" else None
        self.ended = False
        #: The response's headers as the client gets them: the body the tap releases is
        #: decoded, and may end with an error event of another length.
        self.headers = web.Headers(response.headers)
        if self.tap is not None:
            self.headers.pop("content-length", None)
            if encoding not in ("", "identity"):
                self.headers.pop("content-encoding", None)

    def through(self, chunk: bytes) -> list[bytes]:
        if self.tap is None:  # passed on unjudged: the bytes as they came
            return [chunk] if chunk else []
        out = self.tap(chunk)
        return [piece for piece in ([out] if isinstance(out, bytes) else out) if piece]

    def end(self) -> list[bytes]:
        """The body ended (or the upstream failed, or the client stopped reading: an SDK stops
        at the end marker): what the tap sends last; then the verdict, once."""
        if self.ended:
            return []
        self.ended = True
        out = self.through(b"")
        if self._stream_tap is not None:
            try:
                report = self._stream_tap.close()
            except Exception as error:  # the client has what the tap sent
                log.error(
                    "callgate: %s: not judged after an internal %s",
                    self._where,
                    type(error).__name__,
                )
            else:
                record_verdict(report)
                # A text turn passes though it is not executable; a turn whose end never
                # reached the client (it stopped reading) fails on its report.
                if self._stream_tap.state is TapState.BLOCKED or report.exit_code == 1:
                    codes = ", ".join(report.blocking_codes) or "-"
                    log.warning("callgate: %s blocked (%s)", self._where, codes)
                if self._settings.on_verdict is not None:
                    self._settings.on_verdict(report)
        return out

    def _broken(self, kind: str) -> None:
        closed = self._settings.on_error == "block"
        judged = self._stream_tap is not None and self._stream_tap.judged
        self._said_broken(kind, closed=closed, judged=judged)

    def _said_broken(self, kind: str, *, closed: bool, judged: bool) -> None:
        log.error(
            "callgate: %s: inspection stopped after an internal %s; %s",
            self._where,
            kind,
            "the turn was blocked unless its verdict was given (on_error block)"
            if closed
            else "the stream was passed through unchanged",
        )
        if not closed and not judged:
            record_unjudged(self.profile, kind)


def _body(web: Any, request: Any) -> bytes:
    try:
        return bytes(request.content)
    except web.RequestNotRead:  # a streamed body: no tools can be read from it
        return b""


#: The request a framework's hook last handed to ``transport.sent``, in this thread or task: the
#: request of the response it hands to ``transport.gate`` next.
_SENT: ContextVar[Any] = ContextVar("callgate_sent", default=None)


def sent(request: Any) -> Any:
    """``transport.sent(request)``: ``request``, noted as the one whose response
    ``transport.gate`` is handed next in this thread or task (a framework's hook sees the request
    before it is sent and the response before the client ties the two)."""
    _SENT.set(request)
    return request


#: The HTTP libraries whose transports callgate wraps: httpx, and httpx2 (which anthropic's SDK
#: builds on from 2.0).
LIBRARIES = ("httpx", "httpx2")


@functools.cache
def _transports(library: str) -> tuple[type[Any], type[Any]]:
    """The sync and async transport classes for ``library``, made on first use: each subclasses
    that library's own base, which its clients check."""
    try:
        web = import_module(library)
    except ImportError:
        raise SetupError(f"callgate.transport(library={library!r}) needs {library}") from None

    class GatedStream(web.SyncByteStream):  # type: ignore[misc,name-defined]
        def __init__(self, stream: Any, turn: _Turn) -> None:
            self._stream, self._turn = stream, turn

        def __iter__(self) -> Iterator[bytes]:
            try:
                for chunk in self._stream:
                    yield from self._turn.through(chunk)
            except Exception:
                yield from self._turn.end()  # a turn cut short is blocked, the error sent
                raise
            yield from self._turn.end()

        def close(self) -> None:
            self._turn.end()  # the client stopped reading: the verdict on what came
            self._stream.close()

    class AsyncGatedStream(web.AsyncByteStream):  # type: ignore[misc,name-defined]
        def __init__(self, stream: Any, turn: _Turn) -> None:
            self._stream, self._turn = stream, turn

        async def __aiter__(self) -> AsyncIterator[bytes]:
            try:
                async for chunk in self._stream:
                    for piece in self._turn.through(chunk):
                        yield piece
            except Exception:
                for piece in self._turn.end():
                    yield piece
                raise
            for piece in self._turn.end():
                yield piece

        async def aclose(self) -> None:
            self._turn.end()
            await self._stream.aclose()

    class EitherGatedStream(GatedStream, AsyncGatedStream):
        """A body read either way (a whole body in memory, as httpx's ``ByteStream``), gated
        either way."""

    def gated_response(
        settings: _Settings, response: Any, request: Any, asynchronous: bool | None
    ) -> Any:
        """``response`` to ``request`` with its body streamed through a tap, or as it is when
        callgate does not read it."""
        turn = settings.gated(web, request, response)
        if turn is None:
            return response
        stream = response.stream
        if asynchronous is None:
            stream = EitherGatedStream(stream, turn)
        else:
            stream = AsyncGatedStream(stream, turn) if asynchronous else GatedStream(stream, turn)
        return web.Response(
            response.status_code,
            headers=turn.headers,
            stream=stream,
            extensions=response.extensions,
            request=request,
        )

    def gate_received(transport: Any, response: Any) -> Any:
        """``transport.gate(response)``: a response to a request sent some other way, gated as
        the transport gates its own, for a framework that hands each request and response to
        hooks of its own (CrewAI's interceptors). Its body is read as it can be: with ``await``,
        without, or either way. A response a transport made has no request yet: it is the one
        last handed to ``sent`` in this thread or task, and taken: a response gated without a
        ``sent`` before it is refused, never judged against an older request's route and tools."""
        noted = _SENT.get()
        _SENT.set(None)
        try:
            request = response.request
        except RuntimeError:  # httpx's "request instance has not been set"
            request = noted
        if request is None:
            raise UsageError("transport.gate(response): hand the request to .sent(request) first")
        readable = isinstance(response.stream, web.SyncByteStream)
        awaitable = isinstance(response.stream, web.AsyncByteStream)
        asynchronous = None if readable and awaitable else awaitable
        return gated_response(transport._settings, response, request, asynchronous)

    class GateTransport(web.BaseTransport):  # type: ignore[misc,name-defined]
        """``callgate.transport()``: a transport gating the turns it carries."""

        def __init__(self, wrapped: Any, settings: _Settings) -> None:
            self._wrapped, self._settings = wrapped, settings

        def handle_request(self, request: Any) -> Any:
            response = self._wrapped.handle_request(request)
            return gated_response(self._settings, response, request, False)

        gate = gate_received
        sent = staticmethod(sent)

        def close(self) -> None:
            self._wrapped.close()

    class AsyncGateTransport(web.AsyncBaseTransport):  # type: ignore[misc,name-defined]
        """``callgate.async_transport()``: the async form of ``GateTransport``."""

        def __init__(self, wrapped: Any, settings: _Settings) -> None:
            self._wrapped, self._settings = wrapped, settings

        async def handle_async_request(self, request: Any) -> Any:
            response = await self._wrapped.handle_async_request(request)
            return gated_response(self._settings, response, request, True)

        gate = gate_received
        sent = staticmethod(sent)

        async def aclose(self) -> None:
            await self._wrapped.aclose()

    return GateTransport, AsyncGateTransport


def _library_of(wrapped: object, library: str | None) -> str:
    """The HTTP library to gate for: ``library``, or the one ``wrapped`` comes from (its class
    may be the app's own, made from a library's)."""
    if library is None and wrapped is not None:
        packages = [kind.__module__.partition(".")[0] for kind in type(wrapped).__mro__]
        library = next((name for name in packages if name in LIBRARIES), packages[0])
    library = library or "httpx"
    if library not in LIBRARIES:
        raise UsageError(f"library {library!r} is not one of {', '.join(LIBRARIES)}")
    return library


def transport(
    wrapped: Any = None,
    *,
    library: str | None = None,
    provider: str | None = None,
    allow: Iterable[str] = (),
    on_error: str = "block",
    on_verdict: OnVerdict | None = None,
) -> Any:
    """An httpx transport (for ``httpx.Client(transport=...)``, the client an SDK is given)
    that gates every streamed turn it carries as the proxy's enforce mode does. ``wrapped`` is
    the transport it sends through (the library's ``HTTPTransport()`` by default); ``library``
    is ``"httpx"`` (the default) or ``"httpx2"`` (anthropic's SDK from 2.0), told by
    ``wrapped`` when given; ``provider`` names the provider when the host does not tell it;
    ``allow`` names quirks to tolerate; ``on_error`` is what a turn callgate cannot judge does
    (``"block"``: the error event; ``"pass"``: the bytes as they came, counted as unjudged);
    ``on_verdict`` is told each turn's report. Raises ``UsageError`` for a setting callgate
    does not know, ``SetupError`` when the library is not installed."""
    settings = _Settings(provider, allow, on_error, on_verdict)
    return _made(wrapped, library, settings, asynchronous=False)


def async_transport(
    wrapped: Any = None,
    *,
    library: str | None = None,
    provider: str | None = None,
    allow: Iterable[str] = (),
    on_error: str = "block",
    on_verdict: OnVerdict | None = None,
) -> Any:
    """``transport`` for an ``httpx.AsyncClient`` (``httpx2.AsyncClient``; the library's
    ``AsyncHTTPTransport()`` by default); the same settings."""
    settings = _Settings(provider, allow, on_error, on_verdict)
    return _made(wrapped, library, settings, asynchronous=True)


def _made(wrapped: Any, library: str | None, settings: _Settings, *, asynchronous: bool) -> Any:
    name = _library_of(wrapped, library)
    sync, async_ = _transports(name)
    if asynchronous:
        return async_(wrapped or import_module(name).AsyncHTTPTransport(), settings)
    return sync(wrapped or import_module(name).HTTPTransport(), settings)
