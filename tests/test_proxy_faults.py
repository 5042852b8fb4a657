"""Faults between the upstream and the client, against the real proxy (observe mode).

The upstream here is a raw socket server, so that it can do what a failing provider or network
does: reset the connection at any byte, stall, send bytes that are not UTF-8, cut a gzip member.
For each fault the client must get exactly the body bytes the upstream sent before it (the
proxy costs the client no byte and invents none), and the turn must leave a fixture whose
verdict says what happened.
"""

from __future__ import annotations

import gzip
import http.client
import json
import os
import socket
import ssl
import struct
import subprocess
import sys
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from callgate.reassemble.profiles import frames
from tests.conftest import CONFORMANCE, blocked_event, load
from tests.proxy_harness import (
    APPS_PYTHON,
    CLIENT,
    Proxy,
    SharedProxy,
    fake_provider,
    fixtures_in,
    post,
    request_body,
)

pytestmark = pytest.mark.proxy

NAME = "openai/valid_fragmented"
EVENTS = list(frames(load(CONFORMANCE / f"{NAME}.json")))
HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def chunked(events: list[bytes]) -> bytes:
    return b"".join(f"{len(e):x}\r\n".encode() + e + b"\r\n" for e in events) + b"0\r\n\r\n"


class FaultyUpstream:
    """Answers each request with ``HEAD`` and then ``body``, whole (then closes the connection)
    or cut after ``cut`` bytes (then resets it; with ``stall``, only after keeping it open and
    silent until released; with ``hold``, it keeps the connection open and silent until the
    other side closes it, and notes that in ``peer_closed``)."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.head, self.body, self.cut, self.stall, self.endless = HEAD, b"", None, False, False
        self.hold, self.answer = False, True
        self.release, self.peer_closed = threading.Event(), threading.Event()
        self.requested = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection: socket.socket) -> None:
        request = b""
        while b"\r\n\r\n" not in request:
            request += connection.recv(65536)
        head, _, body = request.partition(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        while len(body) < length:
            body += connection.recv(65536)
        self.requested.set()
        if self.endless:  # the first event over and over, until the other side goes away
            connection.sendall(self.head)
            event = chunked(EVENTS[:1])[:-5]
            try:
                while not self.release.is_set():
                    connection.sendall(event)
            except OSError:
                pass
            connection.close()
            return
        data = self.head + self.body
        sent = data if self.cut is None else data[: len(self.head) + self.cut]
        connection.sendall(sent if self.answer else b"")
        if self.hold:
            connection.settimeout(10)
            try:
                if connection.recv(1) == b"":
                    self.peer_closed.set()
            except OSError:  # a reset is a close too; a timeout is not
                if not isinstance(sys.exc_info()[1], TimeoutError):
                    self.peer_closed.set()
            connection.close()
            return
        if self.stall:
            self.release.wait(30)
        if self.cut is not None:
            # SO_LINGER with a zero timeout: close sends a reset, as a dropped connection does
            # (and drops what the kernel still holds: only a cut answer ends this way).
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        connection.close()

    def close(self) -> None:
        self.release.set()
        self.listener.close()


@pytest.fixture(scope="module")
def upstream() -> Iterator[FaultyUpstream]:
    """One faulty upstream for the module: each test sets what it answers, and puts back what
    the next test must not inherit."""
    server = FaultyUpstream()
    yield server
    server.close()


#: The tests that share the module's proxy (``proxies``): on one xdist worker, so it starts
#: once.
SHARED = pytest.mark.xdist_group("faults-shared-proxy")


@pytest.fixture(scope="module")
def proxies(
    upstream: FaultyUpstream, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SharedProxy]:
    """The proxy to ``upstream`` the module's tests share, each with its own options and fixture
    folder."""
    shared = SharedProxy(upstream.url, tmp_path_factory.mktemp("proxies"))
    yield shared
    shared.close()


def receive(
    url: str, headers: dict[str, str] | None = None, name: str = NAME
) -> tuple[bytes, bool]:
    """(the body bytes the client got, whether it ended cleanly), asking for conformance
    fixture ``name``'s turn."""
    host, port = url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    connection.request(
        "POST",
        "/v1/chat/completions",
        request_body(name),
        {"content-type": "application/json", **(headers or {})},
    )
    response = connection.getresponse()
    got = bytearray()
    try:
        while piece := response.read1(65536):
            got += piece
    except (http.client.IncompleteRead, ConnectionError) as error:
        partial = getattr(error, "partial", b"")
        got += partial
        return bytes(got), False
    finally:
        connection.close()
    return bytes(got), True


def payload_before(cut: int) -> bytes:
    """The event bytes inside the first ``cut`` bytes of the chunked body."""
    body = chunked(EVENTS)[:cut]
    payload, at = bytearray(), 0
    while at < len(body):
        size_end = body.find(b"\r\n", at)
        if size_end < 0:
            break
        size = int(body[at:size_end], 16)
        if size == 0:
            break
        payload += body[size_end + 2 : size_end + 2 + size]
        at = size_end + 2 + size + 2
    return bytes(payload)


def cuts() -> list[int]:
    """Every event boundary, and the middle of every event, of the chunked body."""
    body, places, at = chunked(EVENTS), [], 0
    for event in EVENTS:
        framed = len(f"{len(event):x}\r\n") + len(event) + 2
        places += [at, at + framed // 2]
        at += framed
    return [*places, at, len(body) - 2]


@SHARED
def test_a_reset_at_any_event_boundary_or_mid_event_costs_the_client_no_byte(
    upstream: FaultyUpstream, proxies: SharedProxy, tmp_path: Path
) -> None:
    upstream.body, verdicts = chunked(EVENTS), {}
    proxy = proxies.take(tmp_path / "fixtures")
    for cut in cuts():
        upstream.cut = cut
        out = tmp_path / "fixtures" / str(cut)
        proxy.set(callgate_out=str(out))
        got, clean = receive(proxy.url)
        assert (got, clean) == (payload_before(cut), False), cut
        fixture = fixtures_in(out, 1)[0]
        verdicts[cut] = (
            len(fixture["chunks"]),
            fixture["expect"]["status"],
            fixture["expect"]["codes"],
            fixture["meta"]["stream"]["complete"],
            fixture["meta"]["stream"].get("error"),
        )
    assert verdicts == {cut: expected_verdict(cut) for cut in cuts()}


def expected_verdict(cut: int) -> tuple[int, str, list[str], bool, str]:
    """What the fixture of a turn reset after ``cut`` body bytes says: the whole events that
    came; no event, nothing to judge; up to the finish chunk, the provider's terminal evidence, a
    pass; less, ``missing_terminal``. ``complete`` once ``data: [DONE]``
    came, as the addon counts a stream whose end marker it saw (clients hang up right after)."""
    whole = payload_before(cut).count(b"\n\n")
    chunks = min(whole, len(EVENTS) - 1)  # [DONE] is no chunk
    finish = next(n for n, event in enumerate(EVENTS, 1) if b'"finish_reason": "tool' in event)
    status, codes = (
        ("not_applicable", [])
        if chunks == 0
        else ("pass", [])
        if chunks >= finish
        else ("fail", ["missing_terminal"])
    )
    return chunks, status, codes, whole == len(EVENTS), "upstream error"


@SHARED
def test_bytes_that_are_not_utf8_pass_through_and_are_reported(
    upstream: FaultyUpstream, proxies: SharedProxy, tmp_path: Path
) -> None:
    broken = [*EVENTS[:2], b'data: {"bad": "\xff\xfe"}\n\n', *EVENTS[2:]]
    upstream.body, upstream.cut = chunked(broken), None
    proxy = proxies.take(tmp_path / "fixtures")
    got, clean = receive(proxy.url)
    fixture = fixtures_in(proxy.out, 1)[0]
    assert (got, clean) == (b"".join(broken), True)
    # The two events before the bad byte, then the rest as text: what came after it (the
    # finish among it) cannot be read, so the terminal evidence is missing too.
    assert (len(fixture["chunks"]), fixture["expect"]) == (
        3,
        {"status": "fail", "codes": ["missing_terminal", "unsupported_event"]},
    )
    assert isinstance(fixture["chunks"][2], str)


@SHARED
def test_a_gzip_body_cut_mid_member_reaches_the_client_as_sent_and_fails_the_turn(
    upstream: FaultyUpstream, proxies: SharedProxy, tmp_path: Path
) -> None:
    compressed = gzip.compress(b"".join(EVENTS))
    # The first cut whose decompressed prefix holds three whole events (the text compresses
    # well: half of the member holds less than one).
    cut = next(
        n
        for n in range(len(compressed))
        if zlib.decompressobj(31).decompress(compressed[:n]).count(b"\n\n") == 3
    )
    upstream.head = HEAD.replace(b"\r\n\r\n", b"\r\ncontent-encoding: gzip\r\n\r\n")
    upstream.body = chunked([compressed[:cut]])[:-5]  # and no terminating chunk
    upstream.cut = None
    try:
        proxy = proxies.take(tmp_path / "fixtures")
        got, clean = receive(proxy.url, {"accept-encoding": "gzip"})
        fixture = fixtures_in(proxy.out, 1)[0]
    finally:
        upstream.head = HEAD
    assert (got, clean) == (compressed[:cut], False)
    assert (len(fixture["chunks"]), fixture["expect"]) == (
        3,
        {"status": "fail", "codes": ["missing_terminal"]},
    )
    assert fixture["meta"]["stream"]["complete"] is False


@SHARED
def test_a_stalled_upstream_keeps_what_came_and_is_recorded_when_the_client_gives_up(
    upstream: FaultyUpstream, proxies: SharedProxy, tmp_path: Path
) -> None:
    upstream.body, upstream.cut, upstream.stall = chunked(EVENTS), len(chunked(EVENTS[:3])), True
    upstream.release.clear()
    try:
        proxy = proxies.take(tmp_path / "fixtures")
        host, port = proxy.url.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=1.5)
        connection.request(
            "POST",
            "/v1/chat/completions",
            request_body(NAME),
            {"content-type": "application/json"},
        )
        response = connection.getresponse()
        got = bytearray()
        with pytest.raises(TimeoutError):
            while piece := response.read1(65536):
                got += piece
        connection.close()  # the client gives up
        fixture = fixtures_in(proxy.out, 1)[0]
    finally:
        upstream.stall = False
        upstream.release.set()
    assert bytes(got) == b"".join(EVENTS[:3])
    assert fixture["expect"] == {"status": "fail", "codes": ["missing_terminal"]}
    assert fixture["meta"]["stream"]["error"] == "client disconnected"


@SHARED
@pytest.mark.parametrize(
    "megabytes", [pytest.param(4, id="4MB"), pytest.param(50, id="50MB", marks=pytest.mark.full)]
)
def test_a_large_event_reaches_the_client_whole_and_the_turn_is_judged(
    upstream: FaultyUpstream, proxies: SharedProxy, tmp_path: Path, megabytes: int
) -> None:
    big = "x" * (megabytes << 20)
    chunk: dict[str, Any] = json.loads(EVENTS[0].removeprefix(b"data: "))
    chunk["choices"][0]["delta"]["content"] = big
    huge = b"data: " + json.dumps(chunk).encode() + b"\n\n"
    events = [huge, *EVENTS[1:]]
    upstream.body, upstream.cut = chunked(events), None
    proxy = proxies.take(tmp_path / "fixtures")
    got, clean = receive(proxy.url)
    fixture = fixtures_in(proxy.out, 1, timeout=120)[0]
    assert clean and got == b"".join(events)
    assert fixture["expect"] == {"status": "pass", "codes": []}
    # Text is masked to its own length: the fixture still says how big the event was.
    assert len(fixture["chunks"][0]["choices"][0]["delta"]["content"]) == len(big)


@SHARED
def test_enforce_mode_never_releases_what_follows_bytes_that_are_not_utf8(
    upstream: FaultyUpstream, proxies: SharedProxy, tmp_path: Path
) -> None:
    # The bad byte sits in the chunk that carries the finish: a client decoding leniently would
    # read finish_reason tool_calls from it and run the calls.
    finish = next(n for n, event in enumerate(EVENTS) if b'"finish_reason": "tool' in event)
    broken = [
        *EVENTS[:finish],
        EVENTS[finish].replace(b'"tool_calls"', b'"tool_calls\xff"'),
        *EVENTS[finish + 1 :],
    ]
    upstream.body, upstream.cut = chunked(broken), None
    proxy = proxies.take(tmp_path / "fixtures", callgate_enforce=True)
    got, clean = receive(proxy.url)
    fixture = fixtures_in(proxy.out, 1)[0]
    codes = ["missing_terminal", "unsupported_event"]
    assert (got, clean) == (b"".join(EVENTS[:finish]) + blocked_event("openai", codes), True)
    assert fixture["expect"] == {"status": "fail", "codes": codes}


def test_a_body_past_the_limit_passes_through_unjudged_and_unrecorded(
    upstream: FaultyUpstream, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    upstream.body, upstream.cut = chunked(EVENTS), None
    # A proxy of its own: its shutdown judges the turn and ends the fixture writes, so what is
    # not logged or written by then never is.
    with Proxy(upstream.url, tmp_path / "fixtures", callgate_max_body=1000) as proxy:
        got, clean = receive(proxy.url)
    assert (got, clean) == (b"".join(EVENTS), True)
    assert not (tmp_path / "fixtures").exists()
    assert [
        r.getMessage().split(": ", 2)[2]
        for r in caplog.records
        if "callgate_max_body" in r.getMessage()
    ] == ["the body grew past 1000 bytes (callgate_max_body): not judged, no fixture written"]


def test_enforce_mode_cuts_a_body_past_the_limit_with_the_error_event(
    upstream: FaultyUpstream, tmp_path: Path
) -> None:
    upstream.body, upstream.cut = chunked(EVENTS), None
    # A proxy of its own, as above: no fixture by its shutdown is no fixture.
    with Proxy(
        upstream.url, tmp_path / "fixtures", callgate_max_body=1000, callgate_enforce=True
    ) as proxy:
        got, clean = receive(proxy.url)
    released = b"".join(e for e in EVENTS if sum(map(len, EVENTS[: EVENTS.index(e) + 1])) <= 1000)
    assert (got, clean) == (released + blocked_event("openai", ["limit_exceeded"]), True)
    assert not (tmp_path / "fixtures").exists()


@SHARED
def test_a_stream_that_never_ends_keeps_streaming_and_holds_no_more_than_the_limit(
    upstream: FaultyUpstream, proxies: SharedProxy, tmp_path: Path
) -> None:
    upstream.endless = True
    upstream.release.clear()
    try:
        proxy = proxies.take(tmp_path / "fixtures", callgate_max_body=100_000)
        host, port = proxy.url.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        connection.request(
            "POST",
            "/v1/chat/completions",
            request_body(NAME),
            {"content-type": "application/json"},
        )
        response = connection.getresponse()
        got = 0
        while got < 5_000_000:  # fifty times the limit
            got += len(response.read1(65536))
        taps = [c.tap for c in proxy.addon._captures.values()]
        connection.close()
    finally:
        upstream.endless = False
        upstream.release.set()
    assert len(taps) == 1 and taps[0].over_limit and taps[0].body == []


def hang_up(connection: http.client.HTTPConnection) -> None:
    """Close at once with a reset, as a client killed or timed out does."""
    if connection.sock is not None:
        connection.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    connection.close()


def receive_then_hang_up(url: str, expected: int | None, upstream: FaultyUpstream) -> bytes:
    """Ask for a turn, read ``expected`` body bytes (``None``: what comes within 0.3 s; a
    negative number: not even the head, once the request reached ``upstream``) and hang up."""
    host, port = url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    upstream.requested.clear()
    connection.request(
        "POST", "/v1/chat/completions", request_body(NAME), {"content-type": "application/json"}
    )
    got = bytearray()
    if expected is not None and expected < 0:
        assert upstream.requested.wait(10)
    else:
        response = connection.getresponse()
        if expected is None:
            assert connection.sock is not None
            connection.sock.settimeout(0.3)
        try:
            while expected is None or len(got) < expected:
                piece = response.read1(65536)
                if not piece:
                    break
                got += piece
        except TimeoutError:
            pass
    hang_up(connection)
    return bytes(got)


@SHARED
@pytest.mark.parametrize("enforce", [False, True], ids=["observe", "enforce"])
def test_a_client_hanging_up_at_any_point_leaves_a_fixture_and_frees_the_upstream(
    upstream: FaultyUpstream, proxies: SharedProxy, tmp_path: Path, enforce: bool
) -> None:
    """Before the answer's head, after it, at every event boundary and in the middle of every
    event: the proxy closes the upstream connection, writes the turn's fixture with what came
    (``client disconnected``), and carries on with the next client."""
    upstream.body, upstream.hold, verdicts, expected = chunked(EVENTS), True, {}, {}
    places, unanswered = [-1, 0, *cuts()[:-1]], []
    try:
        proxy = proxies.take(tmp_path / "fixtures", callgate_enforce=enforce)
        for cut in places:
            upstream.cut, upstream.answer = max(cut, 0), cut >= 0
            upstream.peer_closed.clear()
            out = tmp_path / "fixtures" / str(cut)
            proxy.set(callgate_out=str(out))
            sent = payload_before(max(cut, 0))
            got = receive_then_hang_up(
                proxy.url, -1 if cut < 0 else None if enforce else len(sent), upstream
            )
            assert upstream.peer_closed.wait(10), cut
            if enforce:  # whole events released in order, never more than came
                released = [
                    e for n, e in enumerate(EVENTS) if got.startswith(b"".join(EVENTS[: n + 1]))
                ]
                assert got == b"".join(released) and sent.startswith(got), cut
            else:
                assert got == sent, cut
            if cut < 0:  # no answer, no turn: nothing to judge (looked at once later turns are in)
                unanswered.append(out)
                continue
            fixture = fixtures_in(out, 1)[0]
            verdicts[cut] = (
                len(fixture["chunks"]),
                fixture["expect"]["status"],
                fixture["expect"]["codes"],
                fixture["meta"]["stream"]["complete"],
                fixture["meta"]["stream"].get("error"),
            )
            chunks, status, codes, complete, _ = expected_verdict(cut)
            expected[cut] = (chunks, status, codes, complete, "client disconnected")
        upstream.hold, upstream.cut, upstream.answer = False, None, True
        proxy.set(callgate_out=str(tmp_path / "fixtures" / "after"))
        assert receive(proxy.url) == (b"".join(EVENTS), True)
        assert fixtures_in(tmp_path / "fixtures" / "after", 1)[0]["expect"]["status"] == "pass"
        # One process writes the fixtures, in the order the turns ended: a fixture of a turn
        # that ended before the last one would be in by now.
        assert [out for out in unanswered if out.exists()] == []
    finally:
        upstream.hold, upstream.cut, upstream.answer = False, None, True
    assert verdicts == expected


class Http2Client:
    """HTTP/2 over TLS (ALPN ``h2``, as browsers and httpx with ``http2=True`` ask for it), with
    the h2 library mitmproxy itself uses: several streams on one connection, each read to its
    end or cancelled (``RST_STREAM``) after some bytes."""

    def __init__(self, url: str) -> None:
        import h2.config
        import h2.connection

        host, port = url.removeprefix("http://").split(":")
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        context.set_alpn_protocols(["h2"])
        self.sock = context.wrap_socket(
            socket.create_connection((host, int(port)), timeout=20), server_hostname="localhost"
        )
        assert self.sock.selected_alpn_protocol() == "h2"
        self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self.h2.initiate_connection()
        self.bodies: dict[int, bytearray] = {}
        self.cancel_after: dict[int, int] = {}

    def open(self, path: str, body: bytes, cancel_after: int | None = None) -> int:
        stream = self.h2.get_next_available_stream_id()
        self.h2.send_headers(
            stream,
            [
                (":method", "POST"),
                (":path", path),
                (":authority", "localhost"),
                (":scheme", "https"),
                ("content-type", "application/json"),
                ("content-length", str(len(body))),
            ],
        )
        self.h2.send_data(stream, body, end_stream=True)
        self.bodies[stream] = bytearray()
        if cancel_after is not None:
            self.cancel_after[stream] = cancel_after
        return stream

    def run(self) -> dict[int, tuple[bytes, bool]]:
        """Each stream's body, and whether it ended (rather than being cancelled)."""
        import h2.events

        ended: dict[int, bool] = {}
        self.sock.sendall(self.h2.data_to_send())
        while len(ended) < len(self.bodies):
            data = self.sock.recv(65536)
            assert data, "the proxy closed the connection"
            for event in self.h2.receive_data(data):
                if isinstance(event, h2.events.DataReceived) and event.stream_id not in ended:
                    self.bodies[event.stream_id] += event.data
                    self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                    limit = self.cancel_after.get(event.stream_id)
                    if limit is not None and len(self.bodies[event.stream_id]) >= limit:
                        self.h2.reset_stream(event.stream_id)
                        ended[event.stream_id] = False
                elif isinstance(event, h2.events.StreamEnded):
                    ended[event.stream_id] = True
                elif isinstance(event, h2.events.StreamReset):
                    ended.setdefault(event.stream_id, False)
            self.sock.sendall(self.h2.data_to_send())
        return {stream: (bytes(body), ended[stream]) for stream, body in self.bodies.items()}

    def close(self) -> None:
        self.h2.close_connection()
        self.sock.sendall(self.h2.data_to_send())
        self.sock.close()


@pytest.mark.parametrize("enforce", [False, True], ids=["observe", "enforce"])
def test_http2_streams_on_one_connection_get_what_http1_clients_get(
    tmp_path: Path, enforce: bool
) -> None:
    """mitmproxy speaks HTTP/2 to a client that offers it over TLS (and HTTP/1.1 upstream): a
    good and a blocked turn at once on one connection get, each, the bytes an HTTP/1.1 client
    gets through the same proxy, and a fixture each."""
    provider = fake_provider()
    good, bad = "openai/valid_parallel_interleaved", "openai/reused_index_new_id"
    try:
        with Proxy(provider.url, tmp_path / "fixtures", callgate_enforce=enforce) as proxy:
            client = Http2Client(proxy.url)
            streams = {
                client.open(f"/f/{name}/v1/chat/completions", request_body(name)): name
                for name in (good, bad)
            }
            got = {streams[stream]: body for stream, body in client.run().items()}
            client.close()
            fixtures = fixtures_in(proxy.out, 2)
            proxy.set(callgate_out=str(tmp_path / "http1"))
            over_http1 = {
                name: post(proxy.url, f"/f/{name}/v1/chat/completions", request_body(name))[2]
                for name in (good, bad)
            }
            direct = post(provider.url, f"/f/{bad}/v1/chat/completions", request_body(bad))[2]
    finally:
        provider.close()
    assert got == {name: (over_http1[name], True) for name in (good, bad)}
    assert (got[bad][0] == direct) is not enforce
    if enforce:
        assert got[bad][0].endswith(blocked_event("openai", ["identity_collision"]))
    assert sorted((f["expect"]["status"], f["expect"]["codes"]) for f in fixtures) == [
        ("fail", ["identity_collision"]),
        ("pass", []),
    ]


def test_an_http2_stream_cancelled_mid_turn_is_recorded_and_spares_its_neighbour(
    tmp_path: Path,
) -> None:
    name = "openai/valid_fragmented"
    provider = fake_provider(timing=0.1)
    try:
        with Proxy(provider.url, tmp_path / "fixtures") as proxy:
            client = Http2Client(proxy.url)
            path = f"/f/{name}/v1/chat/completions"
            cancelled = client.open(path, request_body(name), cancel_after=len(EVENTS[0]) + 1)
            whole = client.open(path, request_body(name))
            got = client.run()
            client.close()
            fixtures = fixtures_in(proxy.out, 2)
    finally:
        provider.close()
    assert got[whole] == (b"".join(EVENTS), True)
    assert got[cancelled][1] is False and b"".join(EVENTS).startswith(got[cancelled][0])
    assert sorted((f["expect"]["status"], f["meta"]["stream"].get("error")) for f in fixtures) == [
        ("fail", "client disconnected"),
        ("pass", None),
    ]


@pytest.mark.slow
@pytest.mark.full
def test_two_hundred_streams_at_once_each_reach_their_client_and_their_own_fixture() -> None:
    """``make load`` at a tenth of its length: mitmdump with the addon, 200 clients whose first
    turns are all open at once (the upstream holds each until all are), two turns each. Every
    body reaches its client byte for byte; every turn has one fixture, its own."""
    soak = Path(__file__).resolve().parents[1] / "bench" / "soak_proxy.py"
    done = subprocess.run(
        [sys.executable, str(soak)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, "TURNS": "400", "CLIENTS": "200", "SAMPLE": "100"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        "at most 200 streams open at once; 400 fixtures, 0 turns without one, 0 written "
        "twice" in done.stdout
    ), done.stdout


@SHARED
def test_enforce_mode_never_sends_the_end_marker_of_a_stream_without_its_terminal(
    upstream: FaultyUpstream, proxies: SharedProxy, tmp_path: Path
) -> None:
    """Found by serving every fault to the SDKs through the proxy: a stream cut before its
    finish chunk but closed with ``data: [DONE]`` went out with the [DONE], and the error event
    after it, which openai-python never reads: it had handed on the calls at [DONE]."""
    finish = next(n for n, event in enumerate(EVENTS) if b'"finish_reason": "tool' in event)
    without = [*EVENTS[:finish], EVENTS[-1]]
    assert EVENTS[-1] == b"data: [DONE]\n\n"
    upstream.body, upstream.cut = chunked(without), None
    proxy = proxies.take(tmp_path / "fixtures", callgate_enforce=True)
    got, clean = receive(proxy.url)
    fixture = fixtures_in(proxy.out, 1)[0]
    assert (got, clean) == (
        b"".join(EVENTS[:finish]) + blocked_event("openai", ["missing_terminal"]),
        True,
    )
    assert fixture["expect"] == {"status": "fail", "codes": ["missing_terminal"]}


MISTRAL = "mistral/native_parallel_calls"


def mistral_cut_inside_its_finish_event() -> tuple[bytes, bytes]:
    """(the role chunk's whole event, the body): Mistral's native turn ending right after the
    JSON of the chunk that carries both calls and ``finish_reason``, no blank line after it."""
    role, calls, done = frames(load(CONFORMANCE / f"{MISTRAL}.json"))
    assert b'"finish_reason": "tool_calls"' in calls and done == b"data: [DONE]\n\n"
    return role, role + calls.removesuffix(b"\n\n")


@SHARED
def test_enforce_mode_never_releases_an_event_the_body_ended_inside(
    upstream: FaultyUpstream, proxies: SharedProxy, tmp_path: Path
) -> None:
    """The SSE reader drops an event no blank line ended, so the turn is judged without its
    calls and finish (``missing_terminal``, exit 2, which alone would release what was held);
    mistralai's decoder hands that event out. The client gets the error event instead."""
    role, body = mistral_cut_inside_its_finish_event()
    upstream.body, upstream.cut = chunked([role, body[len(role) :]]), None
    proxy = proxies.take(tmp_path / "fixtures", callgate_enforce=True, callgate_provider="mistral")
    got, clean = receive(proxy.url, name=MISTRAL)
    fixture = fixtures_in(proxy.out, 1)[0]
    assert (got, clean) == (role + blocked_event("mistral", ["missing_terminal"]), True)
    assert fixture["expect"] == {"status": "invalid", "codes": ["missing_terminal"]}
    # Observing, the proxy gives the client the body as it came.
    proxy = proxies.take(tmp_path / "observed", callgate_provider="mistral")
    assert receive(proxy.url, name=MISTRAL) == (body, True)


@SHARED
@pytest.mark.sdk
@pytest.mark.skipif(not APPS_PYTHON.exists(), reason="run `make test` to create .venv-apps")
def test_mistralai_runs_no_call_of_an_event_the_body_ended_inside_through_enforce_mode(
    upstream: FaultyUpstream, proxies: SharedProxy, tmp_path: Path
) -> None:
    """Straight from the upstream, mistralai hands out the unfinished event's two calls and
    its finish; through the proxy in enforce mode it raises on the error event instead."""
    role, body = mistral_cut_inside_its_finish_event()
    upstream.body, upstream.cut = chunked([role, body[len(role) :]]), None
    proxy = proxies.take(tmp_path / "fixtures", callgate_enforce=True, callgate_provider="mistral")
    cases = [
        {"id": to, "argv": ["mistral", url]}
        for to, url in (("direct", upstream.url), ("through", proxy.url))
    ]
    done = subprocess.run(
        [str(APPS_PYTHON), str(CLIENT), "--batch"],
        input="".join(json.dumps(case) + "\n" for case in cases),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    reports = {line["id"]: line["report"] for line in map(json.loads, done.stdout.splitlines())}
    direct, through = reports["direct"], reports["through"]
    assert (direct["error"], direct["finish"]) == (None, "tool_calls")
    assert [call["name"] for call in direct["tool_calls"]] == ["get_weather", "search"]
    assert (through["kinds"], through["finish"], through["tool_calls"]) == (["chunk"], None, [])
    assert through["error"]["type"] == "ResponseValidationError"


def test_the_fixture_writer_runs_below_the_proxys_priority() -> None:
    """Where cores are short, the stream comes first and fixtures are written a little later."""
    from callgate.proxy_addon.writer import FixtureWriter

    writer = FixtureWriter().process()
    try:
        assert writer.submit(os.nice, 0).result(timeout=60) == min(19, os.nice(0) + 10)
    finally:
        writer.shutdown()


def test_the_objects_mitmproxy_made_starting_up_are_frozen_once_it_runs() -> None:
    """They are left out of the collector's full sweeps (see ``CallgateAddon.running``)."""
    import gc

    from callgate.proxy_addon.addon import CallgateAddon

    before = gc.get_freeze_count()
    try:
        CallgateAddon().running()
        assert gc.get_freeze_count() > before
    finally:
        gc.unfreeze()


def test_a_turn_that_ends_just_before_shutdown_is_judged_and_recorded(
    proxies: SharedProxy, tmp_path: Path
) -> None:
    """The addon judges a flow right after its response hook; shutting down before that moment
    still judges it and writes its fixture."""
    import asyncio

    proxies.close()  # mitmproxy keeps one master in a process: the test context makes its own

    from mitmproxy import http as mitm_http
    from mitmproxy.test import taddons, tflow, tutils

    from callgate.proxy_addon.addon import PASS_MARK, CallgateAddon

    envelope = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    body = b"".join(frames(envelope))
    addon = CallgateAddon()

    async def turn_then_shutdown() -> mitm_http.HTTPFlow:
        request = tutils.treq(
            method=b"POST",
            host="api.openai.com",
            port=443,
            scheme=b"https",
            path=b"/v1/chat/completions",
            content=request_body("openai/valid_fragmented"),
            headers=mitm_http.Headers(content_type="application/json"),
        )
        response = tutils.tresp(
            headers=mitm_http.Headers(content_type="text/event-stream"), content=b""
        )
        flow = tflow.tflow(req=request, resp=response)
        addon.responseheaders(flow)
        stream = flow.response.stream  # type: ignore[union-attr]
        assert callable(stream) and stream(body) == body and stream(b"") == b""
        addon.response(flow)
        assert flow.marked == ""  # judged after the hook, not in it
        await addon.done()
        return flow

    with taddons.context(addon) as context:
        context.configure(addon, callgate_out=str(tmp_path))
        flow = asyncio.run(turn_then_shutdown())
    assert flow.marked == PASS_MARK
    assert [json.loads(path.read_text())["expect"] for path in tmp_path.glob("*.json")] == [
        {"status": "pass", "codes": []}
    ]
