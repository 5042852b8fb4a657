"""The callgate mitmproxy addon: hooks only; the work is in ``tap``, ``reassemble`` and ``redact``.

Load it with ``mitmdump -s "$(callgate addon-path)"`` (``proxy_addon/script.py``) or through
``callgate record``. For every
streamed response of a known LLM endpoint it installs a tap that forwards each chunk unchanged
and checks the stream as it passes (whenever it pauses for a few milliseconds, and at least every
tenth of a second), marks the flow as soon as a blocking finding is read, and once the client has
the whole response judges the turn and has a redacted fixture written off the event loop
(``writer``).
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mitmproxy import ctx, exceptions, http
from mitmproxy.hooks import UpdateHook

from callgate.proxy_addon import webview
from callgate.proxy_addon.tap import StreamTap
from callgate.proxy_addon.webview import SHOWN, WebBody, bounded
from callgate.proxy_addon.writer import FixtureWriter, Written
from callgate.reassemble import Finding, Reassembler, Report
from callgate.reassemble.errors import CallgateError
from callgate.reassemble.profiles import framing_for, profile_for
from callgate.reassemble.providers import provider_from_url
from callgate.redact import (
    ArgumentMode,
    Exchange,
    NotApplicable,
    RedactionRefused,
    request_context,
)

log = logging.getLogger("callgate")

WARNING_MARK, FAIL_MARK, PASS_MARK = ":warning:", ":x:", ":white_check_mark:"


@dataclass
class _Capture:
    tap: StreamTap
    provider: str | None
    live_warned: bool = False


class CallgateAddon:
    def __init__(self) -> None:
        self._captures: dict[str, _Capture] = {}
        #: Flows whose ``_finish`` is scheduled (``_finish_soon``), by id.
        self._finishing: dict[str, tuple[asyncio.Handle, http.HTTPFlow, bool]] = {}
        self._writer = FixtureWriter()

    def load(self, loader: Any) -> None:
        if log.level == logging.NOTSET:  # the root logger stops INFO; our per-turn lines are INFO
            log.setLevel(logging.INFO)
        loader.add_option(
            "callgate_out", str, "callgate-fixtures", "Folder where redacted fixtures are written."
        )
        loader.add_option(
            "callgate_arguments",
            str,
            "mask",
            "Tool-call arguments in fixtures: mask, keep or drop.",
            choices=[mode.value for mode in ArgumentMode],
        )
        loader.add_option(
            "callgate_provider",
            str,
            "",
            "Provider name to assume (default: from the upstream host).",
        )
        loader.add_option(
            "callgate_enforce",
            bool,
            False,
            "Hold terminal events until the verdict; replace them by an error "
            "event when the turn fails.",
        )
        loader.add_option(
            "callgate_hosts",
            Sequence[str],
            [],
            "Only inspect these hosts (default: every known LLM endpoint).",
        )
        loader.add_option(
            "callgate_allow_raw_dump",
            bool,
            False,
            "Allow mitmproxy's own unredacted writers (-w, hardump) alongside.",
        )
        loader.add_option(
            "callgate_allow_verdict_change",
            bool,
            False,
            "Write fixtures even when redaction changes their verdict.",
        )
        loader.add_option(
            "callgate_web_body",
            str,
            WebBody.redacted.value,
            "The body mitmweb shows of a judged flow, kept in memory only: the "
            "redacted stream the fixture holds, the raw stream, or none.",
            choices=[kind.value for kind in WebBody],
        )
        loader.add_option(
            "callgate_max_body",
            int,
            64 << 20,
            "Largest response body judged and recorded, in bytes once decoded; a "
            "longer one passes through (observe) or is cut with an error event "
            "(enforce), and is neither judged nor recorded.",
        )
        loader.add_option(
            "callgate_web_body_max",
            int,
            4 << 20,
            "Largest body kept for mitmweb, in bytes; a longer one keeps its head and tail.",
        )
        webview.register()

    def running(self) -> None:
        # The tens of thousands of objects mitmproxy made starting up live as long as it does.
        # Frozen, they are left out of the collector's full sweeps, which the containers a long
        # stream's reading leaves set off: such a sweep stalled every stream for 55-60 ms.
        gc.freeze()

    def configure(self, updated: set[str]) -> None:
        raw_writers = [
            name for name in ("save_stream_file", "hardump") if getattr(ctx.options, name, None)
        ]
        if raw_writers and not ctx.options.callgate_allow_raw_dump:
            raise exceptions.OptionsError(
                f"callgate: {' and '.join(raw_writers)} would write unredacted traffic to disk; "
                "remove it or set callgate_allow_raw_dump=true"
            )

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        capture = self._start(flow)
        if capture is None:
            return
        assert flow.response is not None
        self._captures[flow.id] = capture
        if ctx.options.callgate_enforce:
            # Enforce mode may replace the end of the body with an error event of another length,
            # so a declared length would leave the client waiting for bytes that never come; and
            # it releases whole decoded events, so the client gets them decoded.
            declared = flow.response.headers.pop("content-length", None)
            if declared is not None and flow.request.http_version == "HTTP/1.1":
                flow.response.headers["transfer-encoding"] = "chunked"  # keeps the connection
            if capture.tap.decompressor.encoding not in ("", "identity"):
                flow.response.headers.pop("content-encoding", None)
        flow.response.stream = capture.tap

    def response(self, flow: http.HTTPFlow) -> None:
        self._finish_soon(flow, ended_cleanly=True)

    def error(self, flow: http.HTTPFlow) -> None:
        self._finish_soon(flow, ended_cleanly=False)

    def _finish_soon(self, flow: http.HTTPFlow, *, ended_cleanly: bool) -> None:
        """Judge the flow right after this hook: mitmproxy sends a streamed response's last
        bytes once the hook returns, so the client does not wait for what the tap has left to
        read, the marks or the fixture."""
        if flow.id in self._captures:
            handle = asyncio.get_running_loop().call_soon(self._finish, flow, ended_cleanly)
            self._finishing[flow.id] = (handle, flow, ended_cleanly)

    async def done(self) -> None:
        """At shutdown: judge the flows whose turn was not taken yet, and let fixtures being
        written finish."""
        for handle, flow, ended_cleanly in list(self._finishing.values()):
            handle.cancel()
            self._finish(flow, ended_cleanly)
        await self._writer.close()

    # -- the flow's life -------------------------------------------------------------------------

    def _start(self, flow: http.HTTPFlow) -> _Capture | None:
        response = flow.response
        if response is None or flow.request.method != "POST":
            return None
        if not 200 <= response.status_code < 300:
            return None
        hosts = ctx.options.callgate_hosts
        if hosts and flow.request.pretty_host not in hosts:
            return None
        provider = ctx.options.callgate_provider or provider_from_url(flow.request.pretty_url)
        profile = profile_for(flow.request.pretty_url, provider)
        if profile is None:
            return None
        media_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
        framing = framing_for(profile, media_type)
        return None if framing is None else self._capture(flow, profile, provider, framing)

    def _capture(
        self, flow: http.HTTPFlow, profile: str, provider: str | None, framing: str
    ) -> _Capture | None:
        schemas, request = request_context(flow.request.get_content(strict=False) or b"", profile)
        engine = Reassembler(profile, schemas, request=request, provider=provider)
        encoding = flow.response.headers.get("content-encoding", "") if flow.response else ""
        try:
            capture = _Capture(
                StreamTap(
                    engine,
                    profile,
                    encoding,
                    enforce=ctx.options.callgate_enforce,
                    on_finding=lambda f: self._live(flow, f),
                    on_failure=lambda kind: self._broken(flow, kind),
                    framing=framing,
                    max_body=ctx.options.callgate_max_body,
                    defer=_soon(asyncio.get_running_loop()),
                ),
                provider,
            )
        except CallgateError:  # an unknown content-encoding, or its decoder missing
            log.warning(
                "callgate: %s %s: content-encoding %r is not supported; not inspected",
                flow.id,
                _where(flow),
                encoding,
            )
            return None
        return capture

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

    def _broken(self, flow: http.HTTPFlow, kind: str) -> None:
        log.error(
            "callgate: %s %s: inspection stopped after an internal %s; the stream was "
            "passed through unchanged",
            flow.id,
            _where(flow),
            kind,
        )

    def _finish(self, flow: http.HTTPFlow, ended_cleanly: bool) -> None:
        self._finishing.pop(flow.id, None)
        capture = self._captures.pop(flow.id, None)
        if capture is None:
            return
        if capture.tap.over_limit:
            flow.marked = FAIL_MARK
            flow.comment = "callgate: not judged (limit_exceeded)"
            log.warning(
                "callgate: %s %s: the body grew past %d bytes (callgate_max_body): not "
                "judged, no fixture written",
                flow.id,
                _where(flow),
                ctx.options.callgate_max_body,
            )
            ctx.master.addons.trigger(UpdateHook([flow]))
            return
        report = capture.tap.close()
        flow.marked = PASS_MARK if report.executable else FAIL_MARK
        codes = ", ".join(report.blocking_codes) or "-"
        flow.comment = f"callgate: {report.status.value} ({codes})"
        flow.metadata["callgate"] = judged = report.to_dict()
        if ctx.options.callgate_web_body == WebBody.raw and _viewed():
            _show(flow, b"".join(capture.tap.body), judged)  # which also tells the UI
        else:
            ctx.master.addons.trigger(UpdateHook([flow]))
        # The OpenAI SDK closes the connection right after [DONE]: that stream is complete. (The
        # tap has read everything by now: closing it read what was left.)
        exchange = _exchange(flow, capture, ended_cleanly or capture.tap.end_marker_seen)
        # The live report is the unredacted verdict, unless the tap broke and stopped reading.
        self._write_later(flow, exchange, capture, None if capture.tap.broken else report)

    def _write_later(
        self, flow: http.HTTPFlow, exchange: Exchange, capture: _Capture, verdict: Report | None
    ) -> None:
        out = Path(ctx.options.callgate_out)
        mode = ArgumentMode(ctx.options.callgate_arguments)
        allow = ctx.options.callgate_allow_verdict_change
        shown = ctx.options.callgate_web_body == WebBody.redacted and _viewed()
        future = self._writer.write(
            exchange,
            capture.tap.profile,
            capture.provider,
            out,
            mode,
            allow,
            capture.tap.framing if shown else None,
            verdict,
        )
        loop = asyncio.get_running_loop()
        future.add_done_callback(
            lambda done: loop.call_soon_threadsafe(_report_written, flow, done)
        )


#: How long the tap's reads wait for the stream to pause (``StreamTap._look``): short enough that
#: a failing stream is still marked while it runs, long enough that a burst of chunks is sent
#: on before any of it is read.
LOOK_SECONDS = 0.002


def _soon(loop: asyncio.AbstractEventLoop) -> Callable[[Callable[[], None]], object]:
    return lambda look: loop.call_later(LOOK_SECONDS, look)


def _viewed() -> bool:
    """Whether a user interface shows flows (mitmweb, the mitmproxy console): mitmdump shows
    none, so the body for it is not built."""
    return "web_port" in ctx.options or "console_layout" in ctx.options


def _where(flow: http.HTTPFlow) -> str:
    """Host and path, never the query string (keys travel there)."""
    return f"{flow.request.pretty_host}{flow.request.path.split('?', 1)[0]}"


def _exchange(flow: http.HTTPFlow, capture: _Capture, complete: bool) -> Exchange:
    response = flow.response
    assert response is not None
    return Exchange(
        method=flow.request.method,
        url=flow.request.pretty_url,
        request_headers=[(k, v) for k, v in flow.request.headers.items(multi=True)],
        request_body=flow.request.get_content(strict=False) or b"",
        status=response.status_code,
        response_headers=[(k, v) for k, v in response.headers.items(multi=True)],
        response_body=b"".join(capture.tap.body),
        complete=complete,
        capture="proxy",
        error=flow.error.msg if flow.error else None,
        event_times=capture.tap.event_times,
    )


def _report_written(flow: http.HTTPFlow, done: Future[Written]) -> None:
    error = done.exception()
    if isinstance(error, NotApplicable | RedactionRefused):
        log.warning("callgate: %s: no fixture written: %s", flow.id, error)
        _show_redacted_instead(flow, f"no redacted stream to show: {error}")
    elif error is not None:
        log.error("callgate: %s: no fixture written: internal %s", flow.id, type(error).__name__)
        _show_redacted_instead(flow, f"no redacted stream to show: internal {type(error).__name__}")
    else:
        path, report, shown = done.result()
        codes = ", ".join(report.blocking_codes) or "-"
        log.info("callgate: %s %s -> %s (%s)", flow.id, report.status.value, path, codes)
        if shown is not None:
            _show(flow, shown, report.to_dict())


def _show(flow: http.HTTPFlow, body: bytes, report: dict[str, Any]) -> None:
    """Give mitmweb a body to show, bounded, and the report the callgate view renders."""
    if flow.response is None:
        return
    flow.metadata[SHOWN] = report
    flow.response.content = bounded(body, ctx.options.callgate_web_body_max)
    ctx.master.addons.trigger(UpdateHook([flow]))


def _show_redacted_instead(flow: http.HTTPFlow, why: str) -> None:
    if ctx.options.callgate_web_body == WebBody.redacted and _viewed():
        _show(flow, f": callgate: {why}\n".encode(), flow.metadata.get("callgate", {}))
