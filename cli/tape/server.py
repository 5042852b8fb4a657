"""The loopback server SDK clients talk to instead of their provider: one test's tape while
``callgate_tape`` is in use, or a folder of tapes for ``callgate tape serve``.

Which tape and route a request is for is the ``Tapes`` it serves: for the fixture's one tape,
each ``SdkRoute`` under ``/<name>/`` (``OPENAI_BASE_URL`` becomes
``http://127.0.0.1:PORT/openai/v1``); for a folder, ``/t/<tape>/`` (``callgate.cli.tape.shelf``).

A replayed streamed turn goes out as ``callgate serve`` sends fixtures (the profile's framing,
chunked, a flush per event); any other exchange with its recorded status, content type and body.
Recording forwards the request upstream with the standard library's ``http.client`` (no
mitmproxy: it runs in the app's own environment, beside the SDKs) and relays the response as it
arrives, chunk by chunk, while keeping a copy for the tape; ``Accept-Encoding: identity``
upstream, so what is relayed is what is kept. A request that carries the replay's dummy key is
never sent upstream.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.client import HTTPConnection, HTTPException, HTTPResponse, HTTPSConnection
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol
from urllib.parse import urlsplit

from callgate.cli.serve import LoopbackServer, send_chunk, send_envelope
from callgate.cli.serve_session import asks_upgrade
from callgate.cli.tape import DUMMY_KEY, HOP_BY_HOP
from callgate.cli.tape.session import Tape
from callgate.cli.tape.shape import request_shape
from callgate.cli.tape.store import Entry
from callgate.reassemble.errors import CallgateError
from callgate.reassemble.providers import SDK_ROUTES
from callgate.redact import Exchange
from callgate.redact.encoding import decode_whole

ROUTES = {route.name: route for route in SDK_ROUTES}
#: Seconds to wait on a silent upstream: a model may think for minutes before its first byte.
UPSTREAM_TIMEOUT = 600.0


@dataclass(frozen=True)
class Located:
    """The tape a request is for, its route, and its path below the route (``/v1/...``)."""

    tape: Tape
    route: str
    rest: str


@dataclass(frozen=True)
class Refused:
    """A request no tape takes: answered with ``status`` and ``message`` in ``route``'s shape."""

    status: int
    message: str
    route: str = SDK_ROUTES[0].name


class Tapes(Protocol):
    """What a ``TapeServer`` serves: the tape of each request's path."""

    def locate(self, path: str, mutation: str | None) -> Located | Refused:
        """The tape, route and API path of a request to ``path``; ``mutation`` is its
        ``x-callgate-mutate`` header."""
        ...

    def base_path(self, route: str) -> str:
        """The path below the server's URL to give ``route``'s SDK as its base URL."""
        ...


@dataclass(frozen=True)
class OneTape:
    """The fixture's tape: ``/<route>/`` then the API's path."""

    tape: Tape

    def locate(self, path: str, mutation: str | None) -> Located | Refused:
        route, _, rest = path.lstrip("/").partition("/")
        if route not in ROUTES:
            return Refused(404, f"callgate tape: no route {route!r} (one of {', '.join(ROUTES)})")
        return Located(self.tape, route, "/" + rest)

    def base_path(self, route: str) -> str:
        return f"/{route}{ROUTES[route].sdk_path}"


class TapeServer:
    """Serves ``tapes`` (one ``Tape``, or any ``Tapes``) on ``host`` (a free port unless
    ``port``); ``upstreams`` overrides where a route records from (route name -> base URL)."""

    def __init__(
        self,
        tapes: Tape | Tapes,
        upstreams: dict[str, str] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.tapes = OneTape(tapes) if isinstance(tapes, Tape) else tapes
        self.upstreams = {name: route.upstream for name, route in ROUTES.items()}
        self.upstreams.update(upstreams or {})
        handler = type("Handler", (_Handler,), {"tape_server": self})
        self.server = LoopbackServer((host, port), handler)
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def base_url(self, route: str) -> str:
        """What to give ``route``'s SDK as its base URL (``KeyError`` for an unknown route)."""
        return self.url + self.tapes.base_path(route)

    def start(self) -> TapeServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _Handler(BaseHTTPRequestHandler):
    tape_server: TapeServer
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self._handle()

    def do_GET(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: request lines would go to the test's stderr for every call."""

    def _handle(self) -> None:
        try:
            body = self._body()
        except ValueError:
            self.close_connection = True
            self._error(SDK_ROUTES[0].name, 400, "callgate tape: a malformed chunked body")
            return
        located = self.tape_server.tapes.locate(self.path, self.headers.get("x-callgate-mutate"))
        if isinstance(located, Refused):
            self._error(located.route, located.status, located.message)
            return
        tape, route, rest = located.tape, located.route, located.rest
        if asks_upgrade(self):
            self._session(tape, route, rest)
            return
        shape = request_shape(route, self.command, rest, body)
        decision = tape.decide(shape)
        if decision.refusal is not None:
            self._error(route, 400, decision.refusal)
        elif decision.entry is not None:
            self._replay(decision.entry)
        elif any(DUMMY_KEY in value for value in self.headers.values()):
            message = (
                f"callgate tape: not recorded: the request carries the replay's dummy key; set "
                f"{' or '.join(ROUTES[route].key_variables) or 'the API key'} to record"
            )
            self._error(route, 401, message)
            tape.recorded(None, shape, message.removeprefix("callgate tape: "))
        else:
            self._forward(tape, route, rest, body, shape)

    def _session(self, tape: Tape, route: str, rest: str) -> None:
        """A WebSocket session (``callgate.cli.tape.sessions``): replayed, or relayed upstream
        and recorded, whole."""
        from callgate.cli.tape import sessions  # only for WebSocket sessions

        upstream = self.tape_server.upstreams[route]
        profile = sessions.profile_of(upstream, rest)
        if profile is None:
            path = urlsplit(rest).path
            self._error(route, 400, f"callgate tape: no session a tape keeps is served at {path}")
            return
        if not tape.records_session(sessions.METHOD, urlsplit(rest).path):
            sessions.replay_session(self, tape, route, rest, profile)
            return
        if any(DUMMY_KEY in value for value in self.headers.values()):
            message = (
                f"not recorded: the session carries the replay's dummy key; set "
                f"{' or '.join(ROUTES[route].key_variables) or 'the API key'} to record"
            )
            self._error(route, 401, f"callgate tape: {message}")
            tape.failed(f"{sessions.METHOD} {urlsplit(rest).path} ({route}): {message}")
            return
        why = sessions.record_session(self, tape, route, rest, upstream)
        if why is not None:
            self._error(route, 502, f"callgate tape: {why}")
            tape.failed(f"{sessions.METHOD} {urlsplit(rest).path} ({route}): {why}")

    def _body(self) -> bytes:
        """The request body, sent with a length or chunked (HTTP/1.1's two ways)."""
        if "chunked" not in (self.headers.get("transfer-encoding") or "").lower():
            return self.rfile.read(int(self.headers.get("content-length") or 0))
        body = bytearray()
        while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
            body += self.rfile.read(size)
            self.rfile.readline()  # the CRLF after each chunk
        while self.rfile.readline().strip():  # trailers, up to the blank line
            pass
        return bytes(body)

    def _replay(self, entry: Entry) -> None:
        if entry.envelope is not None:
            send_envelope(self, dict(entry.envelope))
            return
        assert entry.record is not None
        response = entry.record["response"]
        if "json" in response:
            data = json.dumps(response["json"], ensure_ascii=False).encode()
        else:
            data = str(response.get("text", "")).encode()
        self.send_response(response["status"])
        if response.get("content_type"):
            self.send_header("content-type", response["content_type"])
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _forward(
        self, tape: Tape, route: str, rest: str, body: bytes, shape: dict[str, Any]
    ) -> None:
        upstream = self.tape_server.upstreams[route]
        target = urlsplit(upstream)
        kind = HTTPSConnection if target.scheme == "https" else HTTPConnection
        connection = kind(target.hostname or "", target.port, timeout=UPSTREAM_TIMEOUT)
        headers = {
            name: value for name, value in self.headers.items() if name.lower() not in HOP_BY_HOP
        }
        headers["accept-encoding"] = "identity"
        try:
            connection.request(self.command, target.path.rstrip("/") + rest, body, headers)
            response = connection.getresponse()
        except (OSError, HTTPException) as error:
            connection.close()
            self._error(route, 502, f"callgate tape: upstream {upstream} could not be reached")
            tape.recorded(None, shape, f"upstream {upstream} could not be reached: {error}")
            return
        try:
            kept, complete = self._relay(response)
            decoded = decode_whole(kept, response.getheader("content-encoding") or "")
        except CallgateError as error:
            tape.recorded(None, shape, f"not recorded: {error}")
            return
        except BaseException:
            tape.recorded(None, shape, "not recorded: the relay failed")
            raise
        finally:
            connection.close()
        exchange = Exchange(
            method=self.command,
            url=upstream.rstrip("/") + rest,
            request_headers=list(self.headers.items()),
            request_body=body,
            status=response.status,
            response_headers=response.getheaders(),
            response_body=decoded,
            complete=complete,
            capture="tape",
            error=None if complete else "upstream error",
        )
        tape.recorded(exchange, shape)

    def _relay(self, response: HTTPResponse) -> tuple[bytes, bool]:
        """Send the upstream's answer on as it arrives; return the body and whether it ended."""
        self.send_response(response.status, response.reason)
        for name, value in response.getheaders():
            if name.lower() not in HOP_BY_HOP:
                self.send_header(name, value)
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        kept = bytearray()
        try:
            while data := response.read1(65536):
                kept += data
                send_chunk(self, bytes(data))
        except (OSError, HTTPException):
            self.close_connection = True
            return bytes(kept), False
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        return bytes(kept), True

    def _error(self, route: str, status: int, message: str) -> None:
        """The error in the route's own shape, so its SDK raises it with the message."""
        error = ROUTES[route].error_body(status, message)
        data = json.dumps(error).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
