"""``callgate serve``: a fake provider on loopback that streams fixtures with real framing.

Point a real app or SDK at it (``OPENAI_BASE_URL=http://127.0.0.1:PORT/v1``) and watch what it does
with adversarial streams. Chat Completions fixtures go out as ``data:`` lines ending with ``data:
[DONE]`` (unless the fixture's ``meta.stream.done`` says the recording had none); Anthropic
fixtures as ``event:`` + ``data:`` pairs; Gemini fixtures as ``data:`` lines when the request asks
``alt=sse``, else as Gemini's streamed JSON array (``application/json``). The body is sent with
chunked transfer encoding, one flush per event, so clients see events as they are sent.

Which fixture: the URL prefix ``/f/<name>/`` (``<name>`` is the fixture's path relative to the
served folder, without ``.json``) followed by the provider's own path, or the header ``x-callgate-
fixture: <name>``; otherwise the fixtures in turn. For an agent loop, which asks again after each
tool turn, the prefix ``/s/<name>/`` plays a scenario (``callgate.cli.scenarios``): a folder's
fixtures in name order, or the fixtures a ``<name>.scenario.json`` lists, one per request; after
the last turn a request gets a 400 saying the scenario has ended. The position is the server's,
per scenario, shared by every connection; ``POST /s/<name>/reset`` starts it over.

Timing: ``fast`` (no pause), a number of seconds between events, or ``recorded``: the gaps the
proxy measured when it captured the fixture (``meta.stream.event_times_ms``; fast where a fixture
has none). Request headers simulate
faults: ``x-callgate-abort-after: N`` cuts the connection after N events, ``x-callgate-compress:
gzip`` compresses the body (flushed per event), and ``x-callgate-mutate: KIND`` (or ``--mutate
KIND`` for every request) serves the fixture's variant of that kind
(``callgate.reassemble.mutations``), or a 422 saying why the kind cannot apply to it; in a
scenario, to its tool turns only (a text turn is served as it is).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import cycle, repeat
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from callgate.cli import serve_session
from callgate.cli.files import find_fixtures, load_envelope
from callgate.cli.loopback import split_listen, taken
from callgate.cli.scenarios import PREFIX, Answer, Scenarios, collect_scenarios, scenario_files
from callgate.reassemble.errors import InputError, NotApplicable, UsageError
from callgate.reassemble.framing import JSON_ARRAY, MEDIA_TYPES
from callgate.reassemble.mutations import KINDS, mutate
from callgate.reassemble.profiles import PROFILES, framed, framing_of_request, serves
from callgate.reassemble.sessions import BY_RESPONSE, SESSION_PROFILES


def collect(paths: Sequence[Path]) -> dict[str, dict[str, Any]]:
    """Fixtures by name, found as ``callgate replay`` finds them. Raises ``InputError`` for a
    file that is not an envelope, or a folder that holds neither a fixture nor a scenario."""
    return {name: load_envelope(path) for name, path in fixture_files(paths).items()}


def collect_served(
    paths: Sequence[Path],
) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    """The fixtures and the scenarios under ``paths`` (``collect``, ``collect_scenarios``)."""
    files = fixture_files(paths)
    fixtures = {name: load_envelope(path) for name, path in files.items()}
    return fixtures, collect_scenarios(paths, fixtures, files)


def fixture_files(paths: Sequence[Path]) -> dict[str, Path]:
    """The file of each fixture name: its path under its served folder, without ``.json``."""
    files: dict[str, Path] = {}
    for root in paths:
        for path in find_fixtures([root]):
            if path.is_dir():
                if scenario_files(path):
                    continue
                raise InputError("no *.json fixture in this folder", path)
            name = path.relative_to(root).with_suffix("") if root.is_dir() else Path(path.stem)
            files[name.as_posix()] = path
    return files


class LoopbackServer(ThreadingHTTPServer):
    """The server ``serve`` and the tapes run: a thread per connection, quiet about clients
    that hang up."""

    daemon_threads = True
    # socketserver's default backlog of 5 refuses connections when a test suite opens dozens at
    # once (a proxy in front then answers 502); the kernel caps this at somaxconn anyway.
    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients hang up (the OpenAI SDK closes after [DONE]); that is not an error here."""


def pauses(envelope: dict[str, Any], timing: float | str) -> Iterator[float]:
    """Seconds to wait before each frame: recorded gaps, or a fixed pause after the first."""
    recorded = envelope.get("meta", {}).get("stream", {}).get("event_times_ms")
    if timing == "recorded" and isinstance(recorded, list):
        previous = 0
        for millis in recorded:
            yield max(0.0, (millis - previous) / 1000)
            previous = millis
    first = True
    while True:
        yield 0.0 if first or timing == "recorded" else float(timing)
        first = False


class FakeProvider:
    """The server; ``url`` is its base URL. ``timing``: seconds between events (0 = fast) or
    ``"recorded"``."""

    def __init__(
        self,
        fixtures: dict[str, dict[str, Any]],
        host: str = "127.0.0.1",
        port: int = 0,
        timing: float | str = 0.0,
        mutate: str | None = None,
        scenarios: Mapping[str, Sequence[str]] | None = None,
        log: Callable[[str], None] | None = None,
    ) -> None:
        if not fixtures:
            raise ValueError("no fixtures to serve")
        self.fixtures, self.timing, self.mutate = fixtures, timing, mutate
        #: Where one line per request goes (``serve -v``), or None.
        self.log = log
        self.scenarios = Scenarios(scenarios or {}, fixtures)
        self._order = list(fixtures)
        #: Request path -> the fixtures whose API serves it (``choose``).
        self._serving: dict[str, list[str]] = {}
        self._turn = 0
        self._lock = threading.Lock()
        handler = type("Handler", (_Handler,), {"provider": self})
        self.server = LoopbackServer((host, port), handler)
        self.url = f"http://{host}:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> FakeProvider:
        self._thread.start()
        return self

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def choose(self, path: str, header: str | None) -> tuple[str, dict[str, Any]] | None:
        if header:
            return (header, self.fixtures[header]) if header in self.fixtures else None
        if path.startswith("/f/"):
            name = next(
                (
                    n
                    for n in sorted(self.fixtures, key=len, reverse=True)
                    if path.startswith(f"/f/{n}/")
                ),
                None,
            )
            return (name, self.fixtures[name]) if name else None
        # No fixture named: those of an API that serves the path, in turn (a folder of several
        # APIs answers each SDK with its own).
        serving = self._serving.get(path)
        if serving is None:
            serving = [n for n in self._order if serves(self.fixtures[n]["profile"], path)]
            self._serving[path] = serving
        if not serving:
            return None
        with self._lock:
            name = serving[self._turn % len(serving)]
            self._turn += 1
        return name, self.fixtures[name]


def send_envelope(
    handler: BaseHTTPRequestHandler,
    envelope: dict[str, Any],
    waits: Iterator[float] | None = None,
    *,
    abort_after: int = -1,
    gzip: bool = False,
) -> None:
    """Answer ``handler``'s request with the envelope's stream in its profile's framing (Gemini's
    JSON array unless the request asked ``alt=sse``), chunked, one flush per event. ``waits``:
    seconds before each frame; ``abort_after``: cut the connection after that many frames."""
    url = urlsplit(handler.path)
    framing = framing_of_request(
        envelope["profile"], url.path, asks_sse=parse_qs(url.query).get("alt") == ["sse"]
    )
    handler.send_response(200)
    # Gemini names the charset of its JSON array.
    charset = "; charset=UTF-8" if framing == JSON_ARRAY else ""
    handler.send_header("content-type", MEDIA_TYPES[framing][0] + charset)
    handler.send_header("transfer-encoding", "chunked")
    if gzip:
        handler.send_header("content-encoding", "gzip")
    handler.end_headers()
    frames: Iterator[bytes] = framed(envelope, framing)
    pieces = split_pieces(envelope)
    if pieces:  # split_events: the framed stream re-cut into pieces of these sizes, in turn
        frames, waits = recut(b"".join(frames), pieces), None
        # Each piece its own TCP segment, as far as the sender decides it.
        handler.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    compressor = zlib.compressobj(wbits=31) if gzip else None
    for number, (frame, wait) in enumerate(zip(frames, waits or repeat(0.0), strict=False)):
        if number == abort_after:
            _abort(handler)
            return
        if wait:
            time.sleep(wait)
        data = (
            compressor.compress(frame) + compressor.flush(zlib.Z_SYNC_FLUSH)
            if compressor
            else frame
        )
        send_chunk(handler, data)
    if compressor:
        send_chunk(handler, compressor.flush())
    handler.wfile.write(b"0\r\n\r\n")
    handler.wfile.flush()


def split_pieces(envelope: dict[str, Any]) -> list[int]:
    """The piece sizes a ``split_events`` variant asks to be sent in (none: one per event)."""
    meta = envelope.get("meta")
    mutation = meta.get("mutation") if isinstance(meta, dict) else None
    pieces = mutation.get("pieces") if isinstance(mutation, dict) else None
    if (
        isinstance(pieces, list)
        and pieces
        and all(type(size) is int and size > 0 for size in pieces)
    ):
        return pieces
    return []


def recut(data: bytes, sizes: list[int]) -> Iterator[bytes]:
    """``data`` in pieces of ``sizes`` bytes, in turn."""
    at = 0
    for size in cycle(sizes):
        if at >= len(data):
            return
        yield data[at : at + size]
        at += size


def send_chunk(handler: BaseHTTPRequestHandler, data: bytes) -> None:
    """One chunk of a chunked body, flushed at once."""
    if data:
        handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        handler.wfile.flush()


def _abort(handler: BaseHTTPRequestHandler) -> None:
    """Cut the connection mid-body, as a failing upstream does."""
    handler.wfile.flush()
    handler.connection.shutdown(socket.SHUT_RDWR)
    handler.close_connection = True


class _Handler(BaseHTTPRequestHandler):
    provider: FakeProvider
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        if serve_session.asks_upgrade(self):
            self._open_session()
            return
        if self.path.startswith(PREFIX):
            answer = self.provider.scenarios.status(urlsplit(self.path).path)
            self._json(answer.status, answer.body)
            return
        self._error(404, "serve answers GET only at /s/<scenario>/status")

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        if self.path.startswith(PREFIX):
            self._play_scenario()
            return
        named = self.headers.get("x-callgate-fixture")
        chosen = self.provider.choose(self.path, named)
        if chosen is None and (named or self.path.startswith("/f/")):
            self._error(404, "no such fixture")
            return
        if chosen is None:
            self._error(
                404,
                f"no fixture served here answers {urlsplit(self.path).path}: /f/<fixture>/ then "
                "the provider's path picks one",
            )
            return
        self._serve(*chosen)

    def _open_session(self) -> None:
        """A WebSocket: the session fixture chosen as for a POST (or a scenario's turns, one per
        ``response.create``), played as the client asks."""
        kind = self.headers.get("x-callgate-mutate") or self.provider.mutate
        if self.path.startswith(PREFIX):
            self._open_scenario(kind)
            return
        named = self.headers.get("x-callgate-fixture")
        chosen = self.provider.choose(self.path, named)
        if chosen is None:
            self._refuse(f"no session fixture served here answers {urlsplit(self.path).path}")
            return
        name, envelope = chosen
        profile = envelope["profile"]
        if profile not in SESSION_PROFILES:
            self._refuse(f"{name} is an HTTP stream ({profile}), not a session")
            return
        if kind:
            try:
                envelope = mutate(envelope, kind, name)
            except (NotApplicable, KeyError) as refused:
                self._refuse(f"{name}: cannot serve {kind}: {refused}")
                return
        self._said(101, f"{name}{f' ({kind})' if kind else ''}")
        serve_session.serve_session(
            self,
            profile,
            serve_session.fixture_parts(envelope),
            pauses(envelope, self.provider.timing),
            abort_after=int(self.headers.get("x-callgate-abort-after") or -1),
        )

    def _open_scenario(self, kind: str | None) -> None:
        """A scenario over a WebSocket: nothing as the socket opens, then its next turn at each
        ``response.create`` (a tool turn mutated as asked). Each connection plays the scenario
        from its first turn: a socket is one conversation."""
        path = urlsplit(self.path).path
        turns = self.provider.scenarios.turns_of(path)
        if turns is None:
            self._refuse(self.provider.scenarios.status(path).body["error"]["message"])
            return
        profile = self.provider.fixtures[turns[0].fixture]["profile"]
        if profile not in BY_RESPONSE:
            self._refuse(f"scenario {path}: {profile} turns are HTTP streams, not a session")
            return
        parts: list[list[Any]] = [[]]  # nothing as the socket opens
        for turn in turns:
            envelope = self.provider.fixtures[turn.fixture]
            if kind and turn.has_call:
                try:
                    envelope = mutate(envelope, kind, turn.fixture)
                except (NotApplicable, KeyError) as refused:
                    self._refuse(f"{turn.fixture}: cannot serve {kind}: {refused}")
                    return
            parts.append(list(envelope[PROFILES[profile].stream_key]))
        self._said(101, f"scenario {path}{f' ({kind})' if kind else ''}")
        serve_session.serve_session(
            self,
            profile,
            parts,
            repeat(0.0),
            abort_after=int(self.headers.get("x-callgate-abort-after") or -1),
        )

    def _refuse(self, message: str) -> None:
        self._said(400, message)
        serve_session.refuse(self, message)

    def _play_scenario(self) -> None:
        """The scenario's next turn, its tool turns mutated as asked, its text turns as they
        are; or the scenario's own answer (unknown, ended, reset)."""
        turn = self.provider.scenarios.play(urlsplit(self.path).path)
        if isinstance(turn, Answer):
            self._json(turn.status, turn.body)
            return
        self._serve(turn.fixture, self.provider.fixtures[turn.fixture], mutable=turn.has_call)

    def _serve(self, name: str, envelope: dict[str, Any], *, mutable: bool = True) -> None:
        profile = envelope["profile"]
        if PROFILES[profile].over_websocket:
            self._error(400, f"{name} is a WebSocket session ({profile}): serve answers HTTP")
            return
        kind = self.headers.get("x-callgate-mutate") or self.provider.mutate
        if kind and mutable:
            try:
                envelope = mutate(envelope, kind, name)
            except (NotApplicable, KeyError) as refused:
                self._error(422, f"{name}: cannot serve {kind}: {refused}")
                return
        self._said(200, f"{name}{f' ({kind})' if kind and mutable else ''}")
        send_envelope(
            self,
            envelope,
            pauses(envelope, self.provider.timing),
            abort_after=int(self.headers.get("x-callgate-abort-after") or -1),
            gzip=self.headers.get("x-callgate-compress") == "gzip",
        )

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"error": {"message": message, "type": "callgate_serve"}})

    def _json(self, status: int, document: dict[str, Any]) -> None:
        error = document.get("error")
        self._said(status, error["message"] if isinstance(error, dict) else json.dumps(document))
        body = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: http.server's request lines; ``serve -v`` writes its own (``_said``)."""

    def _said(self, status: int, what: str) -> None:
        if self.provider.log is not None:
            self.provider.log(f"callgate serve: {self.command} {self.path} -> {status} {what}")


def parse_timing(value: str) -> float | str:
    """``fast``, ``recorded`` or a number of seconds; ``UsageError`` otherwise."""
    if value in ("fast", "recorded"):
        return 0.0 if value == "fast" else value
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise UsageError(f"--timing takes fast, recorded or seconds, not {value!r}")
    return seconds


#: The sample fixtures that come with callgate (``--samples``): ``<api>/pass.json`` and
#: ``<api>/fail.json`` for each API.
SAMPLES = Path(__file__).resolve().parent / "samples"


def run_serve(
    paths: Sequence[Path],
    listen: str,
    timing: str,
    kind: str | None = None,
    log: Callable[[str], None] | None = None,
    samples: bool = False,
) -> int:
    """Serve until interrupted; ``log`` gets one line per request (``-v``); ``samples`` serves
    ``SAMPLES`` too. Raises ``UsageError`` for a bad option and ``InputError`` for a path that
    holds no fixture."""
    pause = parse_timing(timing)
    if kind is not None and kind not in KINDS:
        raise UsageError(f"--mutate: unknown kind {kind!r} (one of {', '.join(KINDS)})")
    if not paths and not samples:
        raise UsageError("serve: give fixture files or folders, or --samples")
    host, port = split_listen(listen)
    fixtures, scenarios = collect_served(paths)
    shipped = collect([SAMPLES]) if samples else {}
    fixtures |= {n: e for n, e in shipped.items() if n not in fixtures}  # the paths' names win
    try:
        provider = FakeProvider(fixtures, host, port, pause, kind, scenarios, log)
    except OSError as error:  # the address is in use, or not this machine's
        raise taken(host, port, error) from None
    print(
        f"callgate serve: {len(fixtures)} fixtures, {len(scenarios)} scenarios on {provider.url} "
        f"(e.g. OPENAI_BASE_URL={provider.url}/v1, ANTHROPIC_BASE_URL={provider.url})"
    )
    if shipped:
        print(
            f"samples: /f/<api>/pass/ and /f/<api>/fail/ (e.g. "
            f"OPENAI_BASE_URL={provider.url}/f/openai/fail/v1) for "
            + ", ".join(sorted({name.split("/")[0] for name in shipped}))
        )
    with contextlib.suppress(KeyboardInterrupt):
        provider.server.serve_forever()
    return 0
