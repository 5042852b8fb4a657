"""The addon's WebSocket half: OpenAI Realtime sessions and the Responses API's WebSocket mode,
judged response by response as they pass.

How this works: a WebSocket to an inspected host whose path the ``openai-realtime`` profile
serves (``/v1/realtime``), or the ``openai-responses`` one (``/v1/responses``), gets a
``SessionGate`` (``callgate.reassemble.sessions``). The client's messages set the tools and
settings the responses are judged by (Realtime's ``session.update``; each Responses
``response.create`` is its response's request); each server message is read as it passes.
When a response is judged the flow is marked (one ❌ for the session once any response is
blocked) and the response is written as a fixture of its own: its server messages and the
session's settings, redacted as an HTTP turn is (audio replaced by its length and digest, text
masked), in the writer process. In enforce mode the message that
ends a response whose calls may not run (its ``response.done``; for the Responses API its
``response.completed``, ``.incomplete`` or ``.failed``) is replaced, in place, by the provider's
``error`` event, in the response's lane: the openai SDK hands that to the app as an event like
any other, so an app that runs a response's calls at its end runs none. A Gemini Live session
(``BidiGenerateContent``) is judged whole when it closes, by the tools of the client's ``setup``,
and written as one fixture with its close frame: a ``toolCallCancellation`` can withdraw a call
an earlier ``toolCall`` made, so no single message ends a turn. Enforce mode withholds nothing
of it, and says so as it starts: the Live API ends a session in error only by its close frame,
which mitmproxy gives an addon no way to send (mitmproxy/mitmproxy#4773).

The client's own messages (its audio, its prompts) are read for the settings only
(``SessionGate.read_client_text``) and never written; nor is the URL's ``?model=``: a query
string's values are kept out of fixtures, as keys travel there. A failure of callgate's own
stops the session's inspection and passes it through, but in enforce mode with
``callgate_on_error`` ``block``: then the message it failed on becomes the provider's error event
and the server's later messages are withheld, so no response ends unjudged (``_broken``).
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass

from mitmproxy import ctx, http
from mitmproxy.hooks import UpdateHook
from mitmproxy.websocket import WebSocketMessage

from callgate.integrations.otel import record_verdict
from callgate.proxy_addon.settings import Settings
from callgate.proxy_addon.writer import FixtureWriter, log_written
from callgate.reassemble.framing import WEBSOCKET
from callgate.reassemble.gate import Blocked, Unjudged
from callgate.reassemble.profiles import PROFILES, profile_for
from callgate.reassemble.sessions import (
    BY_RESPONSE,
    SESSION,
    SESSION_PROFILES,
    Ended,
    SessionGate,
)
from callgate.redact import Exchange

log = logging.getLogger("callgate")

FAIL_MARK, PASS_MARK = ":x:", ":white_check_mark:"


@dataclass
class _Session:
    profile: str  # "" for a session whose start failed
    gate: SessionGate | None = None
    judged: int = 0
    blocked: int = 0
    #: callgate failed on the session under enforce and ``block``: the server's messages are
    #: withheld from the client from then on.
    withheld: bool = False


class SessionCapture:
    """The WebSocket sessions under inspection, by flow id."""

    def __init__(self, writer: FixtureWriter) -> None:
        self._writer = writer
        self._sessions: dict[str, _Session] = {}

    def start(self, flow: http.HTTPFlow, settings: Settings) -> None:
        try:
            self._start(flow, settings)
        except Exception as error:
            self._broken(flow, settings, error)

    def _start(self, flow: http.HTTPFlow, settings: Settings) -> None:
        if not settings.inspects(flow.request.pretty_host):
            return
        profile = profile_for(flow.request.pretty_url, settings.provider)
        if profile is None:
            return
        if profile not in SESSION_PROFILES:
            return  # a WebSocket to an HTTP endpoint: no session callgate reads
        if settings.enforce and profile not in BY_RESPONSE:
            # Said, not silent: the user asked for enforcement this session cannot have.
            log.warning(
                "callgate: %s %s: %s sessions are judged when they close; enforce withholds none "
                "of their messages (mitmproxy cannot close a WebSocket)",
                flow.id,
                _where(flow),
                profile,
            )
        session = _Session(profile)
        session.gate = SessionGate(
            profile,
            [],
            on_end=lambda ended: self._ended(flow, session, ended, settings),
            on_error=settings.on_error,
        )
        self._sessions[flow.id] = session

    def message(self, flow: http.HTTPFlow, settings: Settings) -> None:
        session = self._sessions.get(flow.id)
        if session is None or flow.websocket is None:
            return
        message = flow.websocket.messages[-1]
        if session.withheld:
            if not message.from_client:
                message.drop()
            return
        try:
            assert session.gate is not None
            if message.from_client:
                session.gate.read_client_text(message.content.decode("utf-8", "replace"))
                return
            try:
                session.gate.read_text(message.content.decode("utf-8", "replace"))
            except (Blocked, Unjudged) as refused:
                if settings.enforce:
                    message.content = _error_event(session.profile, refused, message.content)
        except Exception as error:  # callgate's own: the session is not inspected any more
            self._broken(flow, settings, error, message)

    def end(self, flow: http.HTTPFlow, settings: Settings) -> None:
        session = self._sessions.pop(flow.id, None)
        if session is None or session.gate is None:
            return
        try:
            websocket = flow.websocket
            if websocket is not None:
                session.gate.read_close(websocket.close_code, websocket.close_reason or "")
            session.gate.close()
        except (Blocked, Unjudged):
            pass  # marked and written by ``_ended``; the socket is gone, nothing to withhold
        except Exception as error:
            self._broken(flow, settings, error)
            self._sessions.pop(flow.id, None)  # the flow is over: nothing more to withhold

    # -- the session's life ----------------------------------------------------------------------

    def _ended(
        self, flow: http.HTTPFlow, session: _Session, ended: Ended, settings: Settings
    ) -> None:
        """A response was judged: the flow marked, the verdict counted, the fixture written."""
        report = ended.report
        session.judged += 1
        if report is None or report.exit_code == 1:
            session.blocked += 1
        flow.marked = FAIL_MARK if session.blocked else PASS_MARK
        if report is None:
            flow.comment = f"callgate: response {ended.response_id} not judged"
            log.error(
                "callgate: %s %s: response %s not judged; no fixture written",
                flow.id,
                _where(flow),
                ended.response_id,
            )
            ctx.master.addons.trigger(UpdateHook([flow]))
            return
        record_verdict(report)
        codes = ", ".join(report.blocking_codes) or "-"
        # A Gemini Live session is one turn: no count of responses to give.
        turn = "session" if ended.response_id == SESSION else f"response {ended.response_id}"
        verdict = f"{turn} {report.status.value} ({codes})"
        flow.comment = (
            f"callgate: {verdict}"
            if ended.response_id == SESSION
            else f"callgate: {session.blocked} of {session.judged} responses blocked; "
            f"last: {verdict}"
        )
        (log.warning if report.exit_code == 1 else log.info)(
            "callgate: %s %s %s", flow.id, _where(flow), verdict
        )
        ctx.master.addons.trigger(UpdateHook([flow]))
        exchange = _exchange(flow, ended)
        future = self._writer.write(
            exchange,
            session.profile,
            settings.provider,
            settings.out,
            settings.arguments,
            settings.allow_verdict_change,
            None,
            report,
            (ended.texts, WEBSOCKET, False, False),
        )
        loop = asyncio.get_running_loop()
        future.add_done_callback(
            lambda done: loop.call_soon_threadsafe(log_written, f"{flow.id} {turn}", done)
        )

    def _broken(
        self,
        flow: http.HTTPFlow,
        settings: Settings,
        error: Exception,
        message: WebSocketMessage | None = None,
    ) -> None:
        """callgate failed on the session: it passes through unchanged from here on, but under
        enforce and ``block``, where the message it failed on becomes the provider's error event
        (when the server sent it) and the server's later messages are withheld. mitmproxy's
        WebSocket layer has no way to close a connection from an addon (``flow.kill()`` does not
        reach it), so the client is left without them; a response it never sees end is one its
        calls never run for."""
        closed = settings.enforce and settings.on_error == "block"
        session = self._sessions.pop(flow.id, None)
        log.error(
            "callgate: %s %s: session inspection stopped after an internal %s; %s",
            flow.id,
            _where(flow),
            type(error).__name__,
            "the server's messages are withheld from here on (on_error block)"
            if closed
            else "the session was passed through unchanged",
        )
        if not closed:
            return
        profile = session.profile if session is not None else ""
        self._sessions[flow.id] = _Session(profile, withheld=True)
        if message is not None and not message.from_client and profile:
            unjudged = f"callgate could not judge this session ({type(error).__name__}), so no"
            body = PROFILES[profile].error_body(f"{unjudged} call of it may run", ["unjudged"])
            message.content = json.dumps(body, separators=(",", ":")).encode()


def _error_event(profile: str, refused: Blocked | Unjudged, withheld: bytes) -> bytes:
    """The provider's ``error`` event that stands in for a blocked response's end
    (``withheld``), in its lane (``stream_id``) where it has one."""
    codes = refused.report.blocking_codes if isinstance(refused, Blocked) else []
    body = PROFILES[profile].error_body(str(refused), codes)
    try:
        lane = json.loads(withheld).get("stream_id")
    except (ValueError, AttributeError):
        lane = None
    if isinstance(lane, str):
        body = {**body, "stream_id": lane}
    return json.dumps(body, separators=(",", ":")).encode()


def _where(flow: http.HTTPFlow) -> str:
    """Host and path, never the query string (keys travel there)."""
    return f"{flow.request.pretty_host}{flow.request.path.split('?', 1)[0]}"


def _exchange(flow: http.HTTPFlow, ended: Ended) -> Exchange:
    """One response of the session as an exchange: the upgrade request's URL and headers, the
    session's settings as its body, the response's server messages as its events."""
    response = flow.response
    assert response is not None
    return Exchange(
        method=flow.request.method,
        url=flow.request.pretty_url,
        request_headers=[(k, v) for k, v in flow.request.headers.items(multi=True)],
        request_body=json.dumps(ended.request or {}).encode(),
        status=response.status_code,
        response_headers=[(k, v) for k, v in response.headers.items(multi=True)],
        response_body=b"",
        capture="proxy",
    )
