"""The proxy's framers against body length, side by side with what a non-streaming reader does.

The proxy cuts each response body into whole events as the bytes pass
(``callgate.reassemble.framing``):
``EventFramer`` for SSE, ``ArrayFramer`` for Gemini's streamed JSON array. Both are fed the body in
1 KiB pieces, as a network delivers it. The baselines see the whole body at once, which a proxy
cannot wait for: ``bytes.split`` on the blank line for SSE, and ``json.loads`` of the whole array.
The columns to read: ``us/event`` should stay flat as the body grows (linear time), and ``ratio``
is the framer's cost over its baseline's.

Run: ``make bench`` (or ``python bench/bench_framing.py``).
"""

from __future__ import annotations

import gc
import json
import time
from collections.abc import Callable

from callgate.reassemble.framing import ArrayFramer, Blocks, EventFramer

SIZES = (1_000, 10_000, 100_000)
PIECE = 1024


def chunk(n: int) -> dict[str, object]:
    """A Gemini-shaped chunk whose text holds the characters the array framer looks at."""
    return {"candidates": [{"content": {"parts": [{"text": f'part {n}: "[x]" {{y}} \\ '}],
                                        "role": "model"}, "index": 0}],
            "modelVersion": "gemini-2.5-flash"}


def sse_body(events: int) -> bytes:
    return b"".join(f"data: {json.dumps(chunk(n))}\n\n".encode() for n in range(events))


def array_body(events: int) -> bytes:
    elements = (json.dumps(chunk(n), indent=2).encode() for n in range(events))
    return b"[" + b"\n,\r\n".join(elements) + b"\n]"


def framed(make: Callable[[], Blocks]) -> Callable[[bytes], int]:
    def run(body: bytes) -> int:
        framer, count = make(), 0
        for start in range(0, len(body), PIECE):
            count += len(framer.feed(body[start:start + PIECE]))
        return count
    return run


def split_sse(body: bytes) -> int:
    return len(body.split(b"\n\n")) - 1


def load_array(body: bytes) -> int:
    return len(json.loads(body))


def best_of(fn: Callable[[bytes], int], body: bytes, events: int, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        assert fn(body) == events
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    print(f"{'body':>6} {'events':>8} {'MiB':>7} {'framer us/event':>16} "
          f"{'baseline us/event':>18} {'ratio':>6}")
    for name, make_body, framer, baseline in (
            ("sse", sse_body, framed(EventFramer), split_sse),
            ("array", array_body, framed(ArrayFramer), load_array)):
        for size in SIZES:
            body = make_body(size)
            ours, theirs = best_of(framer, body, size), best_of(baseline, body, size)
            print(f"{name:>6} {size:>8} {len(body) / 2**20:>7.1f} {ours / size * 1e6:>16.2f} "
                  f"{theirs / size * 1e6:>18.2f} {ours / theirs:>6.1f}")


if __name__ == "__main__":
    main()
