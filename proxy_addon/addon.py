"""The callgate mitmproxy addon: hooks only; the work is in ``tap``, ``reassemble`` and ``redact``.

Load it with ``mitmdump -s "$(callgate addon-path)"`` (``proxy_addon/script.py``) or through
``callgate record``. Its options are read and checked once each time they change
(``configure``, ``settings``). For every streamed response of a known LLM endpoint (of the hosts
``callgate_hosts`` names, when it names any) it installs a tap that forwards each chunk unchanged
and checks the stream as it passes (whenever it pauses for a few milliseconds, and at least every
tenth of a second), marks the flow as soon as a blocking finding is read, and once the client has
the whole response judges the turn and has a redacted fixture written off the event loop
(``writer``). Every other flow passes untouched. A failure inside the addon is logged and costs
the client no byte: the stream then passes through unchanged.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from mitmproxy import ctx, exceptions, http
from mitmproxy.hooks import UpdateHook

from callgate.integrations.enforce.tap import StreamTap, refusing, route
from callgate.integrations.otel import record_unjudged, record_verdict
from callgate.proxy_addon import webview
from callgate.proxy_addon.sessions import SessionCapture
from callgate.proxy_addon.settings import Settings, add_options, concerns, read_settings
from callgate.proxy_addon.webview import SHOWN, WebBody, bounded
from callgate.proxy_addon.writer import FixtureWriter, Written, log_written
from callgate.reassemble import Finding, Reassembler
from callgate.reassemble.errors import CallgateError
from callgate.redact import Exchange, request_context

log = logging.getLogger("callgate")

WARNING_MARK, FAIL_MARK, PASS_MARK = ":warning:", ":x:", ":white_check_mark:"


@dataclass
class _Capture:
    tap: StreamTap
    provider: str | None
    live_warned: bool = False


class CallgateAddon:
    def __init__(self) -> None:
        self.settings = Settings()  # the options' defaults, until mitmproxy configures the addon
        self._captures: dict[str, _Capture] = {}
        #: Flows whose ``_finish`` is scheduled (``_finish_soon``), by id.
        self._finishing: dict[str, tuple[asyncio.Handle, http.HTTPFlow, bool]] = {}
        self._writer = FixtureWriter()
        self._sessions = SessionCapture(self._writer)

    def load(self, loader: Any) -> None:
        if log.level == logging.NOTSET:  # the root logger stops INFO; our per-turn lines are INFO
            log.setLevel(logging.INFO)
        add_options(loader)
        webview.register()

    def configure(self, updated: set[str]) -> None:
        if concerns(updated):
            try:
                self.settings = read_settings(ctx.options)
            except ValueError as error:
                raise exceptions.OptionsError(str(error)) from error

    def running(self) -> None:
        # The objects mitmproxy made starting up live as long as it does. Frozen, they are left
        # out of the collector's full sweeps, which the containers a long stream's reading
        # leaves set off, and each of which stalled every stream while it swept them.
        gc.freeze()

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        capture = self._start(flow)
        if capture is not None:
            self._captures[flow.id] = capture
            _stream_through(flow, capture.tap)

    def response(self, flow: http.HTTPFlow) -> None:
        self._finish_soon(flow, ended_cleanly=True)

    def error(self, flow: http.HTTPFlow) -> None:
        self._finish_soon(flow, ended_cleanly=False)

    def websocket_start(self, flow: http.HTTPFlow) -> None:
        self._sessions.start(flow, self.settings)

    def websocket_message(self, flow: http.HTTPFlow) -> None:
        self._sessions.message(flow, self.settings)

    def websocket_end(self, flow: http.HTTPFlow) -> None:
        self._sessions.end(flow, self.settings)

    async def done(self) -> None:
        """At shutdown: judge the flows whose turn was not taken yet, and let fixtures being
        written finish."""
        for handle, flow, ended_cleanly in list(self._finishing.values()):
            handle.cancel()
            self._finish(flow, ended_cleanly)
        await self._writer.close()

    # -- the flow's life -------------------------------------------------------------------------

    def _start(self, flow: http.HTTPFlow) -> _Capture | None:
        """The flow's capture, or None when it is not inspected. A failure here lets the stream
        pass through unchanged, but in enforce mode failing closed: there a flow callgate knows
        it reads, but cannot, gets the provider's error event instead of its body."""
        route = None
        try:
            route = _route(flow, self.settings)
            return None if route is None else self._capture(flow, *route)
        except Exception as error:
            fault = type(error).__name__
            refused = route is not None and self.settings.enforce
            refused = refused and self.settings.on_error == "block"
            log.error(
                "callgate: %s %s: inspection could not start after an internal %s; %s",
                flow.id,
                _where(flow),
                fault,
                "the turn was blocked (on_error block)"
                if refused
                else "the stream was passed through unchanged",
            )
            if route is not None and self.settings.enforce and not refused:
                record_unjudged(route[0], fault)  # a gate's turn passed on, by the setting
            if flow.response is not None:
                flow.response.stream = True
                if refused and route is not None:
                    _enforced_headers(flow, flow.response.headers.get("content-encoding", ""))
                    flow.response.stream = refusing(route[0], route[2], fault)
            return None

    def _capture(
        self, flow: http.HTTPFlow, profile: str, provider: str | None, framing: str
    ) -> _Capture | None:
        schemas, request = request_context(flow.request.get_content(strict=False) or b"", profile)
        engine = Reassembler(profile, schemas, request=request, provider=provider)
        encoding = flow.response.headers.get("content-encoding", "") if flow.response else ""
        try:
            tap = StreamTap(
                engine,
                profile,
                encoding,
                enforce=self.settings.enforce,
                on_finding=lambda f: self._live(flow, f),
                on_failure=lambda kind: self._broken(flow, profile, kind),
                framing=framing,
                max_body=self.settings.max_body,
                defer=_soon(asyncio.get_running_loop()),
                on_error=self.settings.on_error,
            )
        except CallgateError:  # an unknown content-encoding, or its decoder missing
            log.warning(
                "callgate: %s %s: content-encoding %r is not supported; not inspected",
                flow.id,
                _where(flow),
                encoding,
            )
            return None
        return _Capture(tap, provider)

    def _live(self, flow: http.HTTPFlow, finding: Finding) -> None:
        capture = self._captures.get(flow.id)
        if capture is None or capture.live_warned or not finding.blocking:
            return
        capture.live_warned = True
        flow.marked = WARNING_MARK
        flow.comment = f"callgate: {finding.code.value} (stream still running)"
        where = "turn" if finding.slot is None else f"slot={finding.slot}"
        log.warning(
            "callgate: %s %s %s %s event=%s",
            flow.id,
            _where(flow),
            finding.code.value,
            where,
            finding.event,
        )
        ctx.master.addons.trigger(UpdateHook([flow]))

    def _broken(self, flow: http.HTTPFlow, profile: str, kind: str) -> None:
        closed = self.settings.enforce and self.settings.on_error == "block"
        capture = self._captures.get(flow.id)
        judged = capture is not None and capture.tap.judged
        if self.settings.enforce and not closed and not judged:
            record_unjudged(profile, kind)  # a gate's turn passed on, by the setting
        log.error(
            "callgate: %s %s: inspection stopped after an internal %s; %s",
            flow.id,
            _where(flow),
            kind,
            "the turn was blocked unless its verdict was given (on_error block)"
            if closed
            else "the stream was passed through unchanged",
        )

    def _finish_soon(self, flow: http.HTTPFlow, *, ended_cleanly: bool) -> None:
        """Judge the flow right after this hook: mitmproxy sends a streamed response's last
        bytes once the hook returns, so the client does not wait for what the tap has left to
        read, the marks or the fixture."""
        if flow.id in self._captures:
            handle = asyncio.get_running_loop().call_soon(self._finish, flow, ended_cleanly)
            self._finishing[flow.id] = (handle, flow, ended_cleanly)

    def _finish(self, flow: http.HTTPFlow, ended_cleanly: bool) -> None:
        self._finishing.pop(flow.id, None)
        capture = self._captures.pop(flow.id, None)
        if capture is None:
            return
        try:
            self._judge(flow, capture, ended_cleanly)
        except Exception as error:  # the client has every byte; the other flows go on
            log.error(
                "callgate: %s %s: not judged after an internal %s; no fixture written",
                flow.id,
                _where(flow),
                type(error).__name__,
            )

    def _judge(self, flow: http.HTTPFlow, capture: _Capture, ended_cleanly: bool) -> None:
        if capture.tap.over_limit:
            _not_judged(flow, capture.tap.max_body)
            return
        report = capture.tap.close()
        record_verdict(report)
        flow.marked = PASS_MARK if report.executable else FAIL_MARK
        codes = ", ".join(report.blocking_codes) or "-"
        flow.comment = f"callgate: {report.status.value} ({codes})"
        flow.metadata["callgate"] = judged = report.to_dict()
        if self.settings.shows(WebBody.raw):
            _show(flow, b"".join(capture.tap.body), judged, self.settings)  # tells the UI too
        else:
            ctx.master.addons.trigger(UpdateHook([flow]))
        self._record(flow, capture, ended_cleanly)

    def _record(self, flow: http.HTTPFlow, capture: _Capture, ended_cleanly: bool) -> None:
        """Have the flow's fixture written in the writer process; report it once written. The
        tap's events and report go with it when the tap read the body whole: they are the
        recorded body's, and the writer need not parse and judge it again."""
        settings, tap = self.settings, capture.tap
        verdict, body = (tap.close(), tap.packed_body()) if tap.read_whole else (None, None)
        if verdict is None:
            log.info(
                "callgate: %s %s: the stream was not read whole live; its fixture is built by "
                "parsing and judging the recorded body again",
                flow.id,
                _where(flow),
            )
        # The OpenAI SDK closes the connection right after [DONE]: that stream is complete. (The
        # tap has read everything by now: closing it read what was left.)
        # With the tap's events the writer reads no body bytes: they are not joined, nor sent.
        response_body = b"" if body is not None else b"".join(tap.body)
        exchange = _exchange(flow, capture, ended_cleanly or tap.end_marker_seen, response_body)
        future = self._writer.write(
            exchange,
            capture.tap.profile,
            capture.provider,
            settings.out,
            settings.arguments,
            settings.allow_verdict_change,
            capture.tap.framing if settings.shows(WebBody.redacted) else None,
            verdict,
            body,
        )
        loop = asyncio.get_running_loop()
        future.add_done_callback(
            lambda done: loop.call_soon_threadsafe(_report_written, flow, done, settings)
        )


#: How long the tap's reads wait for the stream to pause (``Backlog._look``): short enough that
#: a failing stream is still marked while it runs, long enough that a burst of chunks is sent
#: on before any of it is read.
LOOK_SECONDS = 0.002


def _soon(loop: asyncio.AbstractEventLoop) -> Callable[[Callable[[], None]], object]:
    return lambda look: loop.call_later(LOOK_SECONDS, look)


def _route(flow: http.HTTPFlow, settings: Settings) -> tuple[str, str | None, str] | None:
    """(profile, provider, framing) of a flow to inspect: a successful POST to a known LLM
    endpoint on an inspected host, answered in a framing its profile streams in."""
    response = flow.response
    if response is None or not settings.inspects(flow.request.pretty_host):
        return None
    return route(
        flow.request.method,
        response.status_code,
        _url(flow.request),
        response.headers.get("content-type", ""),
        settings.provider,
    )


def _stream_through(flow: http.HTTPFlow, tap: StreamTap) -> None:
    """Stream the response through ``tap``."""
    assert flow.response is not None
    if tap.enforce:
        _enforced_headers(flow, tap.decompressor.encoding)
    flow.response.stream = tap


def _enforced_headers(flow: http.HTTPFlow, encoding: str) -> None:
    """Enforce mode may replace the end of the body with an error event of another length, so
    a declared length would leave the client waiting for bytes that never come; and it
    releases whole decoded events, so the client gets them decoded."""
    assert flow.response is not None
    declared = flow.response.headers.pop("content-length", None)
    if declared is not None and flow.request.http_version == "HTTP/1.1":
        flow.response.headers["transfer-encoding"] = "chunked"  # keeps the connection
    if encoding not in ("", "identity"):
        flow.response.headers.pop("content-encoding", None)


def _url(request: http.Request) -> str:
    """The request's URL. mitmproxy writes an IPv6 host without the brackets a URL needs, and
    the port would then be read out of the address."""
    host = request.pretty_host
    if ":" not in host:
        return request.pretty_url
    return request.pretty_url.replace(f"//{host}", f"//[{host}]", 1)


def _where(flow: http.HTTPFlow) -> str:
    """Host and path, never the query string (keys travel there)."""
    return f"{flow.request.pretty_host}{flow.request.path.split('?', 1)[0]}"


def _exchange(
    flow: http.HTTPFlow, capture: _Capture, complete: bool, response_body: bytes
) -> Exchange:
    response = flow.response
    assert response is not None
    return Exchange(
        method=flow.request.method,
        url=_url(flow.request),
        request_headers=[(k, v) for k, v in flow.request.headers.items(multi=True)],
        request_body=flow.request.get_content(strict=False) or b"",
        status=response.status_code,
        response_headers=[(k, v) for k, v in response.headers.items(multi=True)],
        response_body=response_body,
        complete=complete,
        capture="proxy",
        error=flow.error.msg if flow.error else None,
        event_times=capture.tap.event_times,
    )


def _not_judged(flow: http.HTTPFlow, max_body: int) -> None:
    flow.marked = FAIL_MARK
    flow.comment = "callgate: not judged (limit_exceeded)"
    log.warning(
        "callgate: %s %s: the body grew past %d bytes (callgate_max_body): not judged, no "
        "fixture written",
        flow.id,
        _where(flow),
        max_body,
    )
    ctx.master.addons.trigger(UpdateHook([flow]))


def _report_written(flow: http.HTTPFlow, done: Future[Written], settings: Settings) -> None:
    written = log_written(flow.id, done)
    if isinstance(written, str):
        _show_redacted_instead(flow, f"no redacted stream to show: {written}", settings)
    elif written[2] is not None:
        _show(flow, written[2], written[1].to_dict(), settings)


def _show(flow: http.HTTPFlow, body: bytes, report: dict[str, Any], settings: Settings) -> None:
    """Give mitmweb a body to show, bounded, and the report the callgate view renders."""
    if flow.response is None:
        return
    flow.metadata[SHOWN] = report
    flow.response.content = bounded(body, settings.web_body_max)
    ctx.master.addons.trigger(UpdateHook([flow]))


def _show_redacted_instead(flow: http.HTTPFlow, why: str, settings: Settings) -> None:
    if settings.shows(WebBody.redacted):
        _show(flow, f": callgate: {why}\n".encode(), flow.metadata.get("callgate", {}), settings)
