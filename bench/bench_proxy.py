"""What the callgate addon costs a proxied app, beside plain streaming mitmproxy.

Three mitmdump processes in turn, each in reverse mode in front of the same upstream on
loopback: plain (a script that only sets ``flow.response.stream = True``, as the addon does),
the addon observing, and the addon in enforce mode. The upstream (standard library, in this
process) streams OpenAI-shaped tool-call turns with chunked transfer encoding, one flush per
event, in two shapes: ``bench``, two interleaved calls in small chunks, and ``sdk``, one call
whose arguments come in 8-character fragments in chunks with every member OpenAI sends its SDK,
answering a request with messages; the clients (``http.client``, threads of this process) read
each body as it comes.

Per setup and workload, the median of ``ROUNDS`` rounds with the three setups alternated: the
proxy's CPU per 1,000 events (user + system time from ``/proc`` of the mitmdump process, and of
it with the processes it started, the addon's fixture writer: a workload ends when its fixtures
are on disk), time to first byte and the lag from the upstream's last byte to the client's last
byte (p50 and p95). Every body must reach the client byte for byte as the upstream sent it.

Run: ``make bench`` (or ``python bench/bench_proxy.py``).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from callgate.cli.loopback import free_port, wait_listening

BIN = Path(sys.executable).parent
#: (clients, turns per client, events per turn, shape): ``bench``, two interleaved calls in
#: small chunks; ``sdk``, chunks as OpenAI sends them to its SDK (``sdk_turn``).
WORKLOADS = (
    (1, 100, 50, "bench"),
    (1, 10, 2000, "bench"),
    (20, 10, 50, "bench"),
    (20, 1, 2000, "bench"),
    (1, 100, 50, "sdk"),
    (20, 10, 50, "sdk"),
    (1, 10, 2000, "sdk"),
)
#: The messages of an ``sdk`` turn's request: the prompt the redactor takes out.
MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant. Use the tools when asked."},
    {"role": "user", "content": "Collect the readings of every sensor in the north wing."},
]
#: Rounds per workload, the three setups alternated in each; the table gives medians.
ROUNDS = 5
#: The request's tools: the turns pass, so enforce mode releases them unchanged.
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "f",
            "parameters": {
                "type": "object",
                "properties": {"v": {"type": "array", "items": {"type": "integer"}}},
            },
        },
    }
]
#: The most the proxy with its fixture writer may take of plain mitmdump's CPU, by setup.
TARGETS = {"observe": "<= 2.0", "enforce": "<= 2.2"}
PLAIN_SCRIPT = "def responseheaders(flow):\n    flow.response.stream = True\n"
TICKS = os.sysconf("SC_CLK_TCK")


def chat_chunk(entry: dict[str, object] | None, finish: str | None = None) -> bytes:
    """One Chat Completions SSE event: a delta with one tool-call entry (or none), as the
    benchmark's upstream sends it."""
    delta = {"tool_calls": [entry]} if entry else {}
    data = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-bench",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(data)}\n\n".encode()


def turn(events: int, seed: int) -> bytes:
    """An SSE body: two interleaved calls, ``events`` chunks in all, then ``[DONE]``. ``seed``
    is the first argument value, so that each turn's fixture differs (fixtures are named by
    their content)."""
    body = [
        chat_chunk(
            {
                "index": i,
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": "f", "arguments": f'{{"v":[{seed},'},
            }
        )
        for i in (0, 1)
    ]
    fragments = events - 3
    for n in range(fragments):
        last = n >= fragments - 2
        body.append(
            chat_chunk({"index": n % 2, "function": {"arguments": f"{n}]}}" if last else f"{n},"}})
        )
    return b"".join([*body, chat_chunk(None, "tool_calls"), b"data: [DONE]\n\n"])


def sdk_chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    """One Chat Completions SSE event with every member OpenAI sends its SDK: the system
    fingerprint, the service tier, and ``logprobs: null`` in the choice."""
    data = {
        "id": "chatcmpl-Bd8Xk2mQp7RtV9wLz3YcN5aH1fJ",
        "object": "chat.completion.chunk",
        "created": 1767225600,
        "model": "gpt-4.1-2025-04-14",
        "service_tier": "default",
        "system_fingerprint": "fp_b3f1157249",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    return f"data: {json.dumps(data)}\n\n".encode()


def sdk_turn(events: int, seed: int) -> bytes:
    """An SSE body as OpenAI streams one call: the role, the call's id and name, its arguments
    in 8-character fragments (the chunks its streams mostly carry), the finish, ``[DONE]``;
    ``events`` chunks in all. ``seed`` opens the arguments, so that each fixture differs."""
    fragments = events - 4
    values = ",".join(str(100 + (seed * 7 + n) % 900) for n in range(fragments * 2))
    text = f'{{"v":[{seed},{values}'
    text = text[: 8 * fragments - 2].rstrip(",") + "]}"
    pieces = [text[n : n + 8] for n in range(0, len(text), 8)]
    pieces += [""] * (fragments - len(pieces))
    start = {
        "index": 0,
        "id": f"call_{seed:024d}",
        "type": "function",
        "function": {"name": "f", "arguments": ""},
    }
    body = [
        sdk_chunk({"role": "assistant", "content": None, "refusal": None}),
        sdk_chunk({"tool_calls": [start]}),
        *(sdk_chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in pieces),
        sdk_chunk({}, "tool_calls"),
    ]
    return b"".join([*body, b"data: [DONE]\n\n"])


SHAPES = {"bench": turn, "sdk": sdk_turn}


def events_of(body: bytes) -> list[bytes]:
    """A turn's SSE events, each with its blank line: what the upstream flushes one by one."""
    return [event + b"\n\n" for event in body.split(b"\n\n")[:-1]]


class Upstream(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, hold_first: int = 0) -> None:
        """``hold_first``: the first that many turns each send one event, then wait until all
        of them have, so that that many streams are open through the proxy at once."""
        super().__init__(("127.0.0.1", 0), _Handler)
        self.last_byte: dict[str, float] = {}
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        self.gate = threading.Barrier(hold_first) if hold_first else None
        self.held, self.open_streams, self.peak_streams = 0, 0, 0
        self.lock = threading.Lock()
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def stream_opened(self) -> bool:
        """Count an open stream; whether this one waits at the gate."""
        with self.lock:
            self.open_streams += 1
            self.peak_streams = max(self.peak_streams, self.open_streams)
            wait = self.gate is not None and self.held < self.gate.parties
            self.held += wait
            return wait

    def stream_closed(self) -> None:
        with self.lock:
            self.open_streams -= 1


class _Handler(BaseHTTPRequestHandler):
    server: Upstream
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["content-length"])))
        body = SHAPES[request["shape"]](request["events"], request["seed"])
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        wait = self.server.stream_opened()
        try:
            for n, event in enumerate(events_of(body)):
                self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
                self.wfile.flush()
                if wait and n == 0 and self.server.gate is not None:
                    self.server.gate.wait(120)
            self.server.last_byte[self.headers["x-turn"]] = time.perf_counter()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        finally:
            self.server.stream_closed()

    def log_message(self, *args: object) -> None:
        pass


def mitmdump(
    kind: str, upstream: str, folder: Path, *options: str
) -> tuple[subprocess.Popen[bytes], int]:
    """mitmdump in front of ``upstream``: ``plain``, or the addon in ``observe`` or ``enforce``
    mode; ``options`` are added to its command line."""
    port = free_port()
    command = [
        str(BIN / "mitmdump"),
        "--mode",
        f"reverse:{upstream}",
        "--listen-host",
        "127.0.0.1",
        "--listen-port",
        str(port),
        "--set",
        f"confdir={folder / 'conf'}",
        "--set",
        "flow_detail=0",
        "-q",
    ]
    if kind == "plain":
        script = folder / "plain.py"
        script.write_text(PLAIN_SCRIPT)
        command += ["-s", str(script)]
    else:
        addon = subprocess.run(
            [str(BIN / "callgate"), "addon-path"], capture_output=True, text=True, check=True
        ).stdout.strip()
        command += [
            "-s",
            addon,
            "--set",
            f"callgate_out={folder / 'fixtures'}",
            "--set",
            f"callgate_enforce={'true' if kind == 'enforce' else 'false'}",
        ]
    command += options
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not wait_listening(port, lambda: process.poll() is None):
        raise RuntimeError(f"mitmdump ({kind}) did not start")
    return process, port


def cpu_seconds(pid: int) -> float:
    """User + system time of one process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def tree_cpu_seconds(pid: int) -> float:
    """User + system time of a process and every process it started (the addon's fixture
    writer), as they are now."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    tree, grown = {pid}, True
    while grown:
        more = {child for child, parent in parents.items() if parent in tree} - tree
        tree |= more
        grown = bool(more)
    total = 0.0
    for member in tree:
        with contextlib.suppress(OSError):
            total += cpu_seconds(member)
    return total


def client(
    port: int,
    name: str,
    seeds: range,
    events: int,
    shape: str,
    results: list[tuple[str, float, float]],
) -> None:
    request = {"events": events, "shape": shape, "tools": TOOLS, "stream": True}
    if shape == "sdk":
        request |= {"model": "gpt-4.1", "messages": MESSAGES}
    for seed in seeds:
        label = f"{name}-{seed}"
        expected = SHAPES[shape](events, seed)
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        start = time.perf_counter()
        connection.request(
            "POST",
            "/v1/chat/completions",
            json.dumps({**request, "seed": seed}),
            {"content-type": "application/json", "x-turn": label},
        )
        response = connection.getresponse()
        pieces, first = [], 0.0
        while piece := response.read1(65536):
            first = first or time.perf_counter()
            pieces.append(piece)
        last = time.perf_counter()
        connection.close()
        if b"".join(pieces) != expected:
            raise AssertionError(f"turn {label}: the client got other bytes than the upstream sent")
        results.append((label, first - start, last))


def fixtures_written(folder: Path, count: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(list(folder.glob("*.json"))) >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"{count} fixtures were not written in {timeout} s")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def run(
    kind: str, upstream: Upstream, workload: tuple[int, int, int, str], folder: Path
) -> dict[str, float]:
    clients, turns, events, shape = workload
    process, port = mitmdump(kind, upstream.url, folder)
    try:
        results: list[tuple[str, float, float]] = []
        client(port, "warm-up", range(1), events, shape, [])
        if kind != "plain":
            fixtures_written(folder / "fixtures", 1)
        before, before_tree = cpu_seconds(process.pid), tree_cpu_seconds(process.pid)
        threads = [
            threading.Thread(
                target=client,
                args=(
                    port,
                    f"c{n}",
                    range(1 + n * turns, 1 + (n + 1) * turns),
                    events,
                    shape,
                    results,
                ),
            )
            for n in range(clients)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if kind != "plain":
            fixtures_written(folder / "fixtures", 1 + clients * turns)
        cpu = cpu_seconds(process.pid) - before
        cpu_tree = tree_cpu_seconds(process.pid) - before_tree
    finally:
        process.terminate()
        process.wait(30)
    lags = [last - upstream.last_byte[label] for label, _, last in results]
    firsts = [first for _, first, _ in results]
    return {
        "cpu_per_1k": cpu / (clients * turns * events) * 1000,
        "tree_per_1k": cpu_tree / (clients * turns * events) * 1000,
        "ttfb_p50": statistics.median(firsts),
        "lag_p50": statistics.median(lags),
        "lag_p95": percentile(lags, 0.95),
    }


def rows(
    rounds: int = ROUNDS, workloads: tuple[tuple[int, int, int, str], ...] = WORKLOADS
) -> Iterator[str]:
    upstream = Upstream()
    yield (
        f"{'workload':<24} {'setup':<8} {'CPU ms/1k ev':>12} {'x plain':>8} "
        f"{'+writer ms':>10} {'x plain':>8} {'target':>8} "
        f"{'TTFB p50 ms':>11} {'lag p50 ms':>10} {'lag p95 ms':>10}"
    )
    kinds = ("plain", "observe", "enforce")
    for workload in workloads:
        clients, turns, events, shape = workload
        name = f"{clients} x {turns} x {events} {shape}"
        runs: dict[str, list[dict[str, float]]] = {kind: [] for kind in kinds}
        for _ in range(rounds):  # alternated, so that a slow spell of the machine hits all three
            for kind in kinds:
                with tempfile.TemporaryDirectory() as folder:
                    runs[kind].append(run(kind, upstream, workload, Path(folder)))
        medians = {
            kind: {
                key: statistics.median(figures[key] for figures in runs[kind])
                for key in runs[kind][0]
            }
            for kind in kinds
        }
        plain = medians["plain"]
        for kind in kinds:
            figures = medians[kind]
            yield (
                f"{name:<24} {kind:<8} {figures['cpu_per_1k'] * 1000:>12.1f} "
                f"{figures['cpu_per_1k'] / plain['cpu_per_1k']:>8.2f} "
                f"{figures['tree_per_1k'] * 1000:>10.1f} "
                f"{figures['tree_per_1k'] / plain['tree_per_1k']:>8.2f} "
                f"{TARGETS.get(kind, ''):>8} "
                f"{figures['ttfb_p50'] * 1000:>11.1f} {figures['lag_p50'] * 1000:>10.1f} "
                f"{figures['lag_p95'] * 1000:>10.1f}"
            )


def main() -> None:
    """``python bench/bench_proxy.py [SHAPE...]``: the workloads of those shapes, or all."""
    shapes = sys.argv[1:] or list(SHAPES)
    if unknown := sorted(set(shapes) - set(SHAPES)):
        sys.exit(f"bench_proxy: no shape {unknown[0]!r}; shapes: {', '.join(SHAPES)}")
    print(
        "clients x turns per client x events per turn; bodies byte-identical in every run; "
        f"medians of {ROUNDS} alternated rounds"
    )
    for row in rows(workloads=tuple(w for w in WORKLOADS if w[3] in shapes)):
        print(row, flush=True)


if __name__ == "__main__":
    main()
