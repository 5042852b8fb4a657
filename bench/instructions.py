"""Instructions counted by valgrind's callgrind: repeatable where timings are not (on a shared
machine they move by more than many a change). Each figure is the difference between two runs
of one child process that differ only in how much work they do, so start-up cancels out:

- **tap**, per event: a 2,500- and a 500-event turn of ``bench_proxy.turn`` through the proxy's
  tap, observing and in enforce mode (the verdict cancels out too). The turn is fed a chunk per
  event, as the benchmark's upstream sends it, and read 400 chunks at a time as of one moment:
  the tap groups chunks by when they came, and under valgrind's slowness a real clock would
  split the groups differently from run to run.
- **writer**, per fixture: one turn's fixture built and written three times against once, as
  the proxy's writer process builds it (the live verdict and the events the tap read handed
  over, packed and pickled as the writer process gets them; the packing is the proxy's), for
  the benchmark's 50- and 2,000-event turns and for a turn of 529 events that carries one
  10.5 KB argument (a file's text, 20 characters an event).
- **parse**, per chunk of ``bench_floor``'s stream: ``json.loads`` (the floor), the strict parser,
  and ``json.loads`` with the engine's ``feed``, each less what building the chunk texts costs,
  against the floor with the target beside it.
- **replay**, per pass over the bundled conformance fixtures: three passes against one, both
  after a first that compiles the tool schemas, as across the copies ``bench_replay`` judges;
  and the floor the same way, reading each file and ``json.loads``-ing it.

Run: ``make instructions`` (needs valgrind: ``apt-get install valgrind``), or
``python bench/instructions.py tap|writer|replay|parse`` for one part.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).parent))

import bench_proxy

if TYPE_CHECKING:
    from callgate.integrations.enforce.tap import StreamTap

ROOT = Path(__file__).resolve().parents[1]
CONFORMANCE = ROOT / "fixtures" / "conformance"
SHORT, LONG = 500, 2500
READ_EVERY = 400
#: Chunks of ``bench_floor``'s stream parsed in the small and the large run (``parse``).
PARSE_SMALL, PARSE_LARGE = 3_200, 16_000
#: The writer's turns, by name: events in the benchmark's turn, or 0 for the long argument.
WRITER_TURNS = {"50 events": 50, "2,000 events": 2000, "one 10.5 KB argument": 0}
REQUEST = json.dumps(
    {
        "model": "gpt-bench",
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
        "tools": bench_proxy.TOOLS,
    }
).encode()


def tap(events: int, mode: str) -> None:
    """One turn through a tap as the addon builds it."""
    time.monotonic = lambda: 0.0  # every chunk came at one moment (see the docstring)
    body = bench_proxy.turn(LONG + 3, 7)
    chunks = bench_proxy.events_of(body)
    # Every turn ends as the long one does: each call's last fragment, the finish chunk, [DONE].
    assert tapped(chunks[:events] + chunks[-4:], enforce=mode == "enforce").close().exit_code == 0


def tapped(chunks: list[bytes], *, enforce: bool) -> StreamTap:
    """The live report on a turn of the benchmark's tools, its chunks fed to a tap as the
    addon builds it."""
    from callgate.integrations.enforce.tap import StreamTap
    from callgate.reassemble import Reassembler
    from callgate.redact import request_context

    schemas, parameters = request_context(REQUEST, "openai")
    engine = Reassembler("openai", schemas, request=parameters, provider="openai")
    asked: list[Callable[[], object]] = []
    stream = StreamTap(
        engine,
        "openai",
        "",
        enforce=enforce,
        on_finding=lambda finding: None,
        on_failure=lambda kind: None,
        defer=asked.append,
    )
    for n, chunk in enumerate(chunks, 1):
        stream(chunk)
        if n % READ_EVERY == 0:
            while asked:  # the first look finds the chunks fresh, the next one reads them
                asked.pop()()
    stream(b"")
    stream.close()
    return stream


def long_argument_turn() -> bytes:
    """A Chat Completions turn whose one call writes a file: 10.5 KB of arguments, 20
    characters a chunk."""
    arguments = json.dumps(
        {"path": "src/app.py", "content": "def f(x):\n    return x * 2  # double it\n" * 250}
    )
    first = bench_proxy.chat_chunk(
        {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": ""}}
    )
    rest = [
        bench_proxy.chat_chunk({"index": 0, "function": {"arguments": arguments[i : i + 20]}})
        for i in range(0, len(arguments), 20)
    ]
    return b"".join([first, *rest, bench_proxy.chat_chunk(None, "tool_calls"), b"data: [DONE]\n\n"])


def writer(events: int, times: int) -> None:
    """Build and write one turn's fixture ``times`` times, as the proxy's writer process does."""
    from callgate.proxy_addon.writer import write_fixture
    from callgate.redact import ArgumentMode, Exchange

    body = bench_proxy.turn(events, 7) if events else long_argument_turn()
    chunks = bench_proxy.events_of(body)
    exchange = Exchange(
        method="POST",
        url="http://127.0.0.1:1/v1/chat/completions",
        request_headers=[
            ("content-type", "application/json"),
            ("authorization", "Bearer sk-abcdefghijklmnopqrstuvwxyz123456"),
        ],
        request_body=REQUEST,
        status=200,
        response_headers=[("content-type", "text/event-stream")],
        response_body=body,
        capture="proxy",
        # A time for each event, as the proxy's tap keeps them (``[DONE]`` is no event).
        event_times=[0.001 * n for n in range(len(chunks) - 1)],
    )
    tap = tapped(chunks, enforce=False)
    verdict, read = tap.close(), pickle.dumps(tap.packed_body())
    with tempfile.TemporaryDirectory() as out:
        for _ in range(times):
            # The events cross to the writer process packed and pickled (``packed_body``).
            body = pickle.loads(read)
            write_fixture(
                exchange,
                "openai",
                "openai",
                Path(out),
                ArgumentMode.MASK,
                False,
                None,
                verdict,
                body,
            )


def replay(kind: str, passes: int) -> None:
    from callgate.cli.replay.runner import replay as judge_all

    files = sorted(CONFORMANCE.rglob("*.json"))
    if kind == "floor":
        for _ in range(passes):
            for path in files:
                json.loads(path.read_bytes())
        return
    for _ in range(1 + passes):  # the first pass compiles the tool schemas
        judge_all([CONFORMANCE], 1)


def parse(kind: str, chunks: int) -> None:
    """``bench_floor``'s stream of ``chunks`` chunk texts, built, then parsed as ``kind`` says:
    not at all (what building costs), by ``json.loads``, by the strict parser, or by
    ``json.loads`` and fed to the engine."""
    import bench_floor

    from callgate.reassemble import Reassembler, strict_json

    texts = bench_floor.stream(chunks // bench_floor.CALLS)
    if kind == "floor":
        for text in texts:
            json.loads(text)
    elif kind == "strict":
        for text in texts:
            strict_json.loads(text)
    elif kind == "engine":
        engine = Reassembler("openai", {"f": True})
        for text in texts:
            engine.feed(json.loads(text))
        assert engine.close().executable


def instructions(*arguments: str) -> int:
    """Instructions this script's child run with ``arguments`` executes, by callgrind."""
    run = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            __file__,
            "--child",
            *arguments,
        ],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    found = re.search(r"Collected : (\d+)", run.stderr)
    if found is None:
        raise RuntimeError(f"callgrind gave no count: {run.stderr[-500:]}")
    return int(found.group(1))


def difference(kind: str, argument: str, small: int, large: int) -> int:
    return (
        instructions(kind, argument, str(large)) - instructions(kind, argument, str(small))
    ) // (large - small)


def child(kind: str, argument: str, amount: int) -> None:
    if kind == "tap":
        tap(amount, argument)
    elif kind == "writer":
        writer(int(argument), amount)
    elif kind == "parse":
        parse(argument, amount)
    else:
        replay(argument, amount)


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return
    parts = sys.argv[1:] or ["tap", "writer", "replay", "parse"]
    if "tap" in parts:
        print("tap, instructions per event")
        for mode in ("observe", "enforce"):
            print(f"  {mode:<22} {difference('tap', mode, SHORT, LONG):>16,}")
    if "writer" in parts:
        print("writer, instructions per fixture")
        for name, events in WRITER_TURNS.items():
            print(f"  {name:<22} {difference('writer', str(events), 1, 3):>16,}")
    if "replay" in parts:
        fixtures = len(list(CONFORMANCE.rglob("*.json")))
        print(f"replay, instructions per pass over {fixtures} fixtures")
        floor = difference("replay", "floor", 1, 3)
        judged = difference("replay", "replay", 1, 3)
        print(f"  {'floor: read + json.loads':<22} {floor:>16,}")
        print(f"  {'replay, 1 process':<22} {judged:>16,}  {judged / floor:.2f}x the floor")

    if "parse" in parts:
        print("parse, instructions per chunk of bench_floor's stream (building it left out)")
        built = difference("parse", "none", PARSE_SMALL, PARSE_LARGE)
        floor = difference("parse", "floor", PARSE_SMALL, PARSE_LARGE) - built
        for kind, name, target in (("engine", "json.loads + feed", 1.5), ("strict", "strict", 1.3)):
            count = difference("parse", kind, PARSE_SMALL, PARSE_LARGE) - built
            print(f"  {name:<22} {count:>16,}  {count / floor:.2f}x the floor (target {target})")
        print(f"  {'floor: json.loads':<22} {floor:>16,}")


if __name__ == "__main__":
    main()
