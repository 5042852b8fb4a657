"""Instructions per event of the proxy's tap, counted by valgrind's callgrind: repeatable where
timings are not (they move with the machine by more than many a change).

The count is the difference between a 2,500- and a 500-event turn of ``bench_proxy.turn``, so
start-up and the verdict cancel out. The turn is fed a chunk per event, as the benchmark's
upstream sends it, and read 400 chunks at a time as of one moment: the tap groups chunks by when
they came, and under valgrind's slowness a real clock would split the groups differently from
run to run.

Run: ``python bench/instructions_tap.py`` (needs valgrind).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import bench_proxy

SHORT, LONG = 500, 2500
READ_EVERY = 400


def feed(events: int, enforce: bool) -> None:
    """One turn through a tap as the addon builds it."""
    from callgate.proxy_addon.tap import StreamTap
    from callgate.reassemble import Reassembler
    from callgate.redact import request_context

    time.monotonic = lambda: 0.0  # every chunk came at one moment (see the docstring)
    body = bench_proxy.turn(LONG + 3, 7)
    chunks = [event + b"\n\n" for event in body.split(b"\n\n")[:-1]]
    # Every turn ends as the long one does: each call's last fragment, the finish chunk, [DONE].
    chunks = chunks[:events] + chunks[-4:]
    request = json.dumps({"tools": bench_proxy.TOOLS}).encode()
    schemas, parameters = request_context(request, "openai")
    engine = Reassembler("openai", schemas, request=parameters, provider="openai")
    asked: list = []
    tap = StreamTap(engine, "openai", "", enforce=enforce, on_finding=lambda finding: None,
                    on_failure=lambda kind: None, defer=asked.append)
    for n, chunk in enumerate(chunks, 1):
        tap(chunk)
        if n % READ_EVERY == 0:
            while asked:  # the first look finds the chunks fresh, the next one reads them
                asked.pop()()
    tap(b"")
    assert tap.close().exit_code == 0


def instructions(events: int, mode: str) -> int:
    run = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                          sys.executable, __file__, str(events), mode],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONHASHSEED": "0"})
    found = re.search(r"Collected : (\d+)", run.stderr)
    if found is None:
        raise RuntimeError(f"callgrind gave no count: {run.stderr[-500:]}")
    return int(found.group(1))


def main() -> None:
    if len(sys.argv) == 3:
        feed(int(sys.argv[1]), sys.argv[2] == "enforce")
        return
    print("mode     instructions per event")
    for mode in ("observe", "enforce"):
        per_event = (instructions(LONG, mode) - instructions(SHORT, mode)) // (LONG - SHORT)
        print(f"{mode:<8} {per_event:>22,}")


if __name__ == "__main__":
    main()
