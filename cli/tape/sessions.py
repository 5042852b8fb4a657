"""Tapes of WebSocket sessions (OpenAI Realtime, the Responses API's WebSocket mode): each
response of a session is an entry of the tape, asked for by the client's ``response.create``.

Its shape is the request it answers, as the gate reads one (``SessionGate.asked``): Realtime,
the session's settings as ``session.update`` set them with the ``response.create``'s own, and
the model the URL names; Responses, the ``response.create`` itself. The method is ``WEBSOCKET``.

Replay: the upgrade is accepted, and each ``response.create`` is served the tape's next entry of
its shape, the response's recorded server events (their ids, redacted entry by entry, made the
entry's own: ``<id>_t<number>``); one the tape does not hold gets the provider's
``error`` event with the refusal line (and fails the test, as any request the tape lacks).
Recording: the session is relayed to the upstream as it goes (wsproto on both sockets, one
loop), and when either side closes it is cut into responses as ``callgate import`` cuts a
recorded session; each is written with the shape of the request it answered. A session is
recorded or replayed whole (``Tape.records_session``).
"""

from __future__ import annotations

import contextlib
import json
import selectors
import socket
import ssl
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler
from itertools import repeat
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from callgate.cli.serve_session import accept, play
from callgate.cli.tape import HOP_BY_HOP
from callgate.cli.tape.session import Tape
from callgate.cli.tape.shape import request_shape
from callgate.reassemble.errors import NotApplicable
from callgate.reassemble.mutations import with_own_ids
from callgate.reassemble.profiles import PROFILES, profile_for
from callgate.reassemble.sessions import BY_RESPONSE, SessionGate
from callgate.redact.sessions import Message, session_exchanges

if TYPE_CHECKING:
    from wsproto import WSConnection
    from wsproto.connection import Connection

#: The method of a session's shape.
METHOD = "WEBSOCKET"
#: Headers of the upgrade not forwarded: the connection's own, as for any request, and the
#: WebSocket handshake's, which the upstream's is made with anew.
_HANDSHAKE = HOP_BY_HOP | {
    "sec-websocket-key",
    "sec-websocket-version",
    "sec-websocket-extensions",
    "sec-websocket-protocol",
}
#: One socket's side of the relay: the socket, its WebSocket, the other's, the other socket,
#: and whether it is the client's.
_Side = tuple[
    socket.socket, "Connection | WSConnection", "Connection | WSConnection", socket.socket, bool
]
#: Seconds a session may stay silent both ways before the relay gives up on it.
IDLE_TIMEOUT = 600.0


def session_shape(route: str, rest: str, request: Mapping[str, object] | None) -> dict[str, Any]:
    """The shape of a session's response: the request it answers, with the URL's ``model``
    where the request names none (Realtime names it in the URL)."""
    body = dict(request or {})
    model = parse_qs(urlsplit(rest).query).get("model")
    if model and "model" not in body:
        body["model"] = model[0]
    return request_shape(route, METHOD, rest, json.dumps(body).encode())


def profile_of(upstream: str, rest: str) -> str | None:
    """The profile of a session at ``rest`` below ``upstream`` (the registry's, as the proxy
    reads one), or None for a WebSocket no tape keeps: only sessions cut into responses."""
    profile = profile_for(upstream.rstrip("/") + rest)
    return profile if profile in BY_RESPONSE else None


def replay_session(
    handler: BaseHTTPRequestHandler, tape: Tape, route: str, rest: str, profile: str
) -> None:
    """Accept the upgrade and answer each ``response.create`` from the tape."""
    gate = SessionGate(profile, [], judging=False)
    error_body = PROFILES[profile].error_body

    def answer(text: str) -> list[Any] | None:
        if not gate.read_client_text(text):  # no response.create: nothing to answer
            return None
        shape = session_shape(route, rest, gate.asked)
        decision = tape.decide(shape)
        entry = decision.entry
        if entry is not None and entry.envelope is not None:
            envelope = entry.envelope
            # Each entry's ids were redacted on their own: two responses of a session would
            # share theirs.
            return with_own_ids(
                list(envelope[PROFILES[envelope["profile"]].stream_key]), f"t{entry.number}"
            )
        refusal = decision.refusal
        if decision.record:  # new_episodes, mid-session: nothing goes upstream now
            refusal = "a response a replayed session does not hold is not recorded mid-session"
            tape.recorded(None, shape, refusal)
        elif refusal is None:  # an exchange record where a session's response should be
            refusal = "the tape holds no session's response for this request"
            tape.failed(refusal)
        return [error_body(refusal, [])]

    accept(handler)
    play(handler, [], answer, repeat(0.0))


def record_session(
    handler: BaseHTTPRequestHandler, tape: Tape, route: str, rest: str, upstream: str
) -> str | None:
    """Relay the session to ``upstream`` and record its responses; returns why it could not be
    opened (the caller answers the client), else None."""
    url = upstream.rstrip("/") + rest
    try:
        sock, connection, accepted = _open_upstream(url, handler)
    except (OSError, ssl.SSLError, _Refused) as error:
        return f"upstream {upstream} did not open the session: {error}"
    headers = [("sec-websocket-protocol", accepted)] if accepted else []
    accept(handler, headers)
    try:
        messages = _relay(handler.connection, sock, connection)
    finally:
        sock.close()
    try:
        # The query is never kept (keys travel there); the shape takes its ``model`` alone.
        exchanges = session_exchanges(
            url=url.partition("?")[0],
            request_headers=list(handler.headers.items()),
            status=101,
            response_headers=[],
            messages=messages,
            capture="tape",
        )
    except NotApplicable as error:
        tape.failed(f"{METHOD} {urlsplit(rest).path} ({route}): not recorded: {error}")
        return None
    for exchange in exchanges:
        shape = session_shape(route, rest, json.loads(exchange.request_body))
        if tape.decide(shape).record:
            tape.recorded(exchange, shape)
    return None


class _Refused(Exception):
    """The upstream answered the upgrade with an HTTP response."""


def _open_upstream(
    url: str, handler: BaseHTTPRequestHandler
) -> tuple[socket.socket, WSConnection, str | None]:
    """The upstream's socket and WebSocket, open, and the subprotocol it accepted."""
    from wsproto import ConnectionType, WSConnection
    from wsproto.events import AcceptConnection, RejectConnection, RejectData, Request

    target = urlsplit(url)
    secure = target.scheme == "https"
    port = target.port or (443 if secure else 80)
    sock = socket.create_connection((target.hostname or "", port), timeout=IDLE_TIMEOUT)
    if secure:
        sock = ssl.create_default_context().wrap_socket(sock, server_hostname=target.hostname)
    connection = WSConnection(ConnectionType.CLIENT)
    forwarded = [
        (k.encode("latin-1"), v.encode("latin-1"))
        for k, v in handler.headers.items()
        if k.lower() not in _HANDSHAKE
    ]
    offered = [p.strip() for p in handler.headers.get("sec-websocket-protocol", "").split(",")]
    path = target.path + (f"?{target.query}" if target.query else "")
    request = Request(
        host=target.netloc,
        target=path,
        extra_headers=forwarded,
        subprotocols=[p for p in offered if p],
    )
    sock.sendall(connection.send(request))
    status = None
    while True:
        data = sock.recv(65536)
        connection.receive_data(data or None)
        for event in connection.events():
            if isinstance(event, AcceptConnection):
                return sock, connection, event.subprotocol
            if isinstance(event, RejectConnection):
                status = event.status_code
            elif isinstance(event, RejectData) and event.body_finished:
                sock.close()
                raise _Refused(f"HTTP {status}")
        if not data:
            sock.close()
            raise _Refused(f"HTTP {status}" if status else "the connection closed")


def _relay(client: socket.socket, upstream: socket.socket, up: WSConnection) -> list[Message]:
    """Carry messages both ways until either side closes; the text messages, in order, each
    with whether the client sent it."""
    from wsproto.connection import Connection, ConnectionType

    down = Connection(ConnectionType.SERVER)
    sides: tuple[_Side, _Side] = (
        (client, down, up, upstream, True),
        (upstream, up, down, client, False),
    )
    pieces = {True: "", False: ""}
    kept: list[Message] = []
    client.setblocking(True)
    with selectors.DefaultSelector() as selector:
        for each in sides:
            selector.register(each[0], selectors.EVENT_READ, each)
        while True:
            ready = selector.select(IDLE_TIMEOUT)
            if not ready:
                return kept
            for key, _ in ready:
                side: _Side = key.data
                if not _carry(*side, pieces=pieces, kept=kept):
                    return kept


def _carry(
    sock: socket.socket,
    this: Connection | WSConnection,
    other: Connection | WSConnection,
    other_sock: socket.socket,
    from_client: bool,
    pieces: dict[bool, str],
    kept: list[Message],
) -> bool:
    """Read what ``sock`` has and send its messages on; False once the session is over."""
    from wsproto.events import BytesMessage, CloseConnection, Ping, TextMessage

    try:
        data = sock.recv(65536)
        while isinstance(sock, ssl.SSLSocket) and sock.pending():
            data += sock.recv(sock.pending())
    except OSError:
        data = b""
    this.receive_data(data or None)
    for event in this.events():
        if isinstance(event, TextMessage):
            pieces[from_client] += event.data
            if event.message_finished:
                kept.append((from_client, pieces[from_client]))
                pieces[from_client] = ""
            text = TextMessage(event.data, message_finished=event.message_finished)
            _send(other_sock, other, text)
        elif isinstance(event, BytesMessage):
            data_piece = BytesMessage(event.data, message_finished=event.message_finished)
            _send(other_sock, other, data_piece)
        elif isinstance(event, Ping):
            _send(sock, this, event.response())
        elif isinstance(event, CloseConnection):
            _send(sock, this, event.response())
            _send(other_sock, other, CloseConnection(event.code, event.reason))
            return False
    if not data:
        _send(other_sock, other, CloseConnection(1001, ""))
        return False
    return True


def _send(sock: socket.socket, connection: Connection | WSConnection, event: Any) -> None:
    from wsproto.utilities import LocalProtocolError

    # That side may be gone or closed: the session ends with what came.
    with contextlib.suppress(OSError, LocalProtocolError):
        sock.sendall(connection.send(event))
