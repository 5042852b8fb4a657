"""``callgate serve`` for WebSocket sessions: an OpenAI Realtime session fixture, or turns of the
Responses API played over its WebSocket mode; the upgrade, then the recorded server events,
paced by what the client asks.

A session is a conversation, so it is sent in parts (``session_parts``): the events before any
response as soon as the socket opens (Realtime's ``session.created``), then the next response
(or the responses recorded in flight together, with the events after them) each time the client
sends ``response.create``. A Responses fixture is one response; a scenario (``/s/<name>/``)
gives its next turn at each ``response.create``, as it does at each HTTP request. Other client
events get no answer of their own: what the server said to them is in the fixture, in its place.
A ``response.create`` after the last part gets the provider's ``error`` event. A Gemini Live
session (``live_parts``) goes in the parts its server sends between the client's ``setup``,
``clientContent`` and ``toolResponse``; its recorded close frame closes the socket. The socket stays
open until the client closes it, as the server's does. ``x-callgate-abort-after: N`` drops the
connection, without a close frame, after N events; ``x-callgate-mutate`` and the timing apply as
they do over HTTP.

The WebSocket protocol itself is wsproto's (sans-I/O, RFC 6455); this module reads and writes
the handler's socket.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

from callgate.reassemble.profiles import PROFILES
from callgate.reassemble.sessions import GEMINI_LIVE, session_parts

if TYPE_CHECKING:
    from wsproto.connection import Connection

#: The client event that asks for the next response.
ASKS_NEXT = "response.create"
#: The members of a Gemini Live client message that ask for the server's next part, as the
#: API names them and as google-genai sends them (``client_content``, ``tool_response``).
LIVE_ASKS = frozenset({"setup", "clientContent", "client_content", "toolResponse", "tool_response"})


def asks_upgrade(handler: BaseHTTPRequestHandler) -> bool:
    """Whether the request asks to open a WebSocket."""
    return (
        handler.headers.get("upgrade", "").lower() == "websocket"
        and "sec-websocket-key" in handler.headers
    )


def refuse(handler: BaseHTTPRequestHandler, message: str) -> None:
    """A WebSocket request ``serve`` cannot answer: 400, with the reason as the body."""
    body = json.dumps({"error": {"message": message, "type": "callgate_serve"}}).encode()
    handler.send_response(400)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def fixture_parts(envelope: dict[str, Any]) -> list[list[Any]]:
    """The parts of one fixture's session (``session_parts``; Gemini Live's, ``live_parts``)."""
    profile = envelope["profile"]
    events = envelope[PROFILES[profile].stream_key]
    return live_parts(events) if profile == GEMINI_LIVE else session_parts(events, profile)


def live_parts(events: list[Any]) -> list[list[Any]]:
    """A Gemini Live session in the parts its server sends: nothing as the socket opens, then,
    at each client message that asks (``setup``, ``clientContent``, ``toolResponse``), the
    messages up to the next one that waits for the client: ``setupComplete``, a ``toolCall`` (its
    answer is the client's), a completed model turn. What comes after the last goes with it (the
    close frame a fixture records among it)."""
    parts: list[list[Any]] = [[]]
    waiting = True  # the next message starts a part
    for event in events:
        if waiting:
            parts.append([])
        parts[-1].append(event)
        waiting = _waits_for_client(event)
    return parts


def _waits_for_client(event: object) -> bool:
    if not isinstance(event, dict):
        return False
    content = event.get("serverContent")
    turn_done = isinstance(content, dict) and content.get("turnComplete") is True
    return "setupComplete" in event or "toolCall" in event or turn_done


def serve_session(
    handler: BaseHTTPRequestHandler,
    profile: str,
    parts: list[list[Any]],
    waits: Iterator[float],
    *,
    abort_after: int = -1,
) -> None:
    """Accept the WebSocket ``handler``'s request asks for and play the session's ``parts`` on
    it, one at a time, until the client closes (or ``abort_after`` events are sent)."""
    first, rest = parts[0], parts[1:]
    error_body = PROFILES[profile].error_body

    def answer(text: str) -> list[Any] | None:
        if not asks_next(text, profile):
            return None
        if rest:
            return rest.pop(0)
        return [error_body("callgate serve: the fixture has no more responses", [])]

    accept(handler)
    play(handler, first, answer, waits, abort_after)


def accept(handler: BaseHTTPRequestHandler, headers: Sequence[tuple[str, str]] = ()) -> None:
    """Answer ``handler``'s WebSocket request: the upgrade (with ``headers`` besides)."""
    from wsproto.utilities import generate_accept_token  # only when a session is served

    key = handler.headers["sec-websocket-key"].encode()
    handler.send_response(101)
    handler.send_header("upgrade", "websocket")
    handler.send_header("connection", "Upgrade")
    handler.send_header("sec-websocket-accept", generate_accept_token(key).decode())
    for name, value in headers:
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.flush()
    handler.close_connection = True


def play(
    handler: BaseHTTPRequestHandler,
    first: list[Any],
    answer: Callable[[str], list[Any] | None],
    waits: Iterator[float],
    abort_after: int = -1,
) -> None:
    """Play a session on ``handler``'s accepted WebSocket: ``first`` at once, then what
    ``answer`` gives for each text message the client sends (None: nothing), until the client
    closes (or ``abort_after`` events are sent)."""
    _Session(handler, answer, waits, abort_after).play(first)


class _Session:
    def __init__(
        self,
        handler: BaseHTTPRequestHandler,
        answer: Callable[[str], list[Any] | None],
        waits: Iterator[float],
        abort_after: int,
    ) -> None:
        from wsproto.connection import Connection, ConnectionType

        self._handler = handler
        self._socket: Connection = Connection(ConnectionType.SERVER)
        self._answer_to = answer
        self._waits, self._left = waits, abort_after
        self._text = ""  # a text message arriving in pieces

    def play(self, first: list[Any]) -> None:
        from wsproto.connection import ConnectionState

        if not self._send(first):
            return
        while self._socket.state is ConnectionState.OPEN:
            data = self._handler.rfile.read1(65536)
            self._socket.receive_data(data or None)
            for event in self._socket.events():
                if not self._answer(event):
                    return

    def _answer(self, event: object) -> bool:
        """Whether the session goes on after the client's ``event``."""
        from wsproto.connection import ConnectionState
        from wsproto.events import CloseConnection, Ping, TextMessage

        if isinstance(event, CloseConnection):
            if self._socket.state is not ConnectionState.CLOSED:
                self._write(self._socket.send(event.response()))
            return False
        if isinstance(event, Ping):
            self._write(self._socket.send(event.response()))
        elif isinstance(event, TextMessage):
            self._text += event.data
            if event.message_finished:
                text, self._text = self._text, ""
                events = self._answer_to(text)
                if events is not None:
                    return self._send(events)
        return True

    def _send(self, events: list[Any]) -> bool:
        """Send ``events``; False when the connection was dropped on purpose, or closed as a
        recorded close frame (Gemini Live's ``{"close": ...}`` entry) says."""
        from wsproto.events import CloseConnection

        for event in events:
            wait = next(self._waits)
            if wait:
                time.sleep(wait)
            frame = close_frame(event)
            if frame is not None:
                self._write(self._socket.send(CloseConnection(*frame)))
                return False
            self._send_text(message_text(event))
            self._left -= 1
            if self._left == 0:
                self._handler.connection.shutdown(socket.SHUT_RDWR)
                return False
        return True

    def _send_text(self, text: str) -> None:
        from wsproto.events import TextMessage

        self._write(self._socket.send(TextMessage(data=text)))

    def _write(self, data: bytes) -> None:
        self._handler.wfile.write(data)
        self._handler.wfile.flush()


def close_frame(event: object) -> tuple[int, str] | None:
    """The code and reason of a close frame a session fixture records as an entry (Gemini
    Live's ``{"close": {"code", "reason"}}``), or None for a message."""
    if not isinstance(event, dict) or list(event) != ["close"]:
        return None
    frame = event["close"]
    code = frame.get("code") if isinstance(frame, dict) else None
    if not isinstance(code, int) or isinstance(code, bool):
        return None
    return code, str(frame.get("reason") or "")


def message_text(event: object) -> str:
    """A recorded event as the server sends it: compact JSON (a text kept as text)."""
    if isinstance(event, str):
        return event
    return json.dumps(event, ensure_ascii=False, separators=(",", ":"))


def asks_next(text: str, profile: str) -> bool:
    """Whether a client's message asks for the next part: ``response.create``; Gemini Live's
    ``setup``, ``clientContent`` or ``toolResponse``."""
    try:
        event = json.loads(text)
    except ValueError:
        return False
    if not isinstance(event, dict):
        return False
    if profile == GEMINI_LIVE:
        return not LIVE_ASKS.isdisjoint(event)
    return event.get("type") == ASKS_NEXT
