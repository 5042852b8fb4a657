"""The proxy's framers against body length, side by side with what a non-streaming reader does.

The proxy cuts each response body into whole events as the bytes pass
(``callgate.reassemble.framing``):
``EventFramer`` for SSE, ``ArrayFramer`` for Gemini's streamed JSON array, ``LineFramer`` for
Ollama's JSON lines, and ``MessageFramer`` with ``eventstream.decode`` for Bedrock's AWS event
stream. Each is fed the body in 1 KiB pieces, as a network delivers it. The baselines see the whole
body at once, which a proxy cannot wait for: ``bytes.split`` on the blank line for SSE and on the
line feed for JSON lines, ``json.loads`` of the whole array, and botocore's ``EventStreamBuffer``
(what boto3 reads Bedrock with, also checking both CRCs) for the event stream.
The columns to read: ``us/event`` should stay flat as the body grows (linear time), and ``ratio``
is the framer's cost over its baseline's.

Run: ``make bench`` (or ``python bench/bench_framing.py``).
"""

from __future__ import annotations

import gc
import json
import time
from collections.abc import Callable

from botocore.eventstream import EventStreamBuffer

from callgate.reassemble.eventstream import MessageFramer, decode, event_message
from callgate.reassemble.framing import ArrayFramer, Blocks, EventFramer, LineFramer

SIZES = (1_000, 10_000, 100_000)
PIECE = 1024


def chunk(n: int) -> dict[str, object]:
    """A Gemini-shaped chunk whose text holds the characters the array framer looks at."""
    return {
        "candidates": [
            {
                "content": {"parts": [{"text": f'part {n}: "[x]" {{y}} \\ '}], "role": "model"},
                "index": 0,
            }
        ],
        "modelVersion": "gemini-2.5-flash",
    }


def sse_body(events: int) -> bytes:
    return b"".join(f"data: {json.dumps(chunk(n))}\n\n".encode() for n in range(events))


def array_body(events: int) -> bytes:
    elements = (json.dumps(chunk(n), indent=2).encode() for n in range(events))
    return b"[" + b"\n,\r\n".join(elements) + b"\n]"


def lines_body(events: int) -> bytes:
    return b"".join(json.dumps(chunk(n)).encode() + b"\n" for n in range(events))


def messages_body(events: int) -> bytes:
    return b"".join(event_message("chunk", json.dumps(chunk(n)).encode()) for n in range(events))


def framed(make: Callable[[], Blocks]) -> Callable[[bytes], int]:
    def run(body: bytes) -> int:
        framer, count = make(), 0
        for start in range(0, len(body), PIECE):
            count += len(framer.feed(body[start : start + PIECE]))
        return count

    return run


def framed_and_decoded(body: bytes) -> int:
    framer, count = MessageFramer(), 0
    for start in range(0, len(body), PIECE):
        for block in framer.feed(body[start : start + PIECE]):
            decode(block)
            count += 1
    return count


def split_lines(body: bytes) -> int:
    return len(body.split(b"\n")) - 1


def botocore_messages(body: bytes) -> int:
    buffer = EventStreamBuffer()
    buffer.add_data(body)
    return sum(1 for _ in buffer)


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
    print(
        f"{'body':>6} {'events':>8} {'MiB':>7} {'framer us/event':>16} "
        f"{'baseline us/event':>18} {'ratio':>6}"
    )
    for name, make_body, framer, baseline in (
        ("sse", sse_body, framed(EventFramer), split_sse),
        ("array", array_body, framed(ArrayFramer), load_array),
        ("lines", lines_body, framed(LineFramer), split_lines),
        ("events", messages_body, framed_and_decoded, botocore_messages),
    ):
        for size in SIZES:
            body = make_body(size)
            ours, theirs = best_of(framer, body, size), best_of(baseline, body, size)
            print(
                f"{name:>6} {size:>8} {len(body) / 2**20:>7.1f} {ours / size * 1e6:>16.2f} "
                f"{theirs / size * 1e6:>18.2f} {ours / theirs:>6.1f}"
            )


if __name__ == "__main__":
    main()
