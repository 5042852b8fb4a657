"""Engine speed and memory against stream length, side by side with a naive baseline.

The baseline is the accumulator most apps write: a dict keyed by tool-call index, argument
strings appended with ``+=`` and one ``json.loads`` at the end, with no checks at all. Both run
over the same OpenAI-shaped chunks (two interleaved calls, one short fragment per chunk), at
growing lengths. The columns to read: ``us/event`` should stay flat as the stream grows (linear
time), ``peak KiB/event`` likewise (linear memory), and ``ratio`` is callgate's cost over the
baseline's.

Run: ``make bench`` (or ``python bench/bench_engine.py``).
"""

from __future__ import annotations

import gc
import json
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from callgate.reassemble import Reassembler

SIZES = (1_000, 10_000, 100_000)
SCHEMAS = {"f": {"type": "object", "properties": {"items": {"type": "array"}}}, "g": True}


def stream(events: int) -> list[dict[str, Any]]:
    """Two calls whose arguments are JSON arrays built one short fragment per chunk."""

    def chunk(entry: dict[str, Any] | None, finish: str | None = None) -> dict[str, Any]:
        delta = {"tool_calls": [entry]} if entry else {}
        return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    out = [
        chunk(
            {
                "index": i,
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": "fg"[i], "arguments": '{"items":['},
            }
        )
        for i in (0, 1)
    ]
    body = events - 4
    for n in range(body):
        slot = n % 2
        text = f"{n}," if n < body - 2 else f"{n}]}}"
        out.append(chunk({"index": slot, "function": {"arguments": text}}))
    return [*out, chunk(None, "tool_calls")]


def run_callgate(chunks: list[dict[str, Any]]) -> Any:
    engine = Reassembler("openai", SCHEMAS)
    for raw in chunks:
        engine.feed(raw)
    report = engine.close()
    assert report.executable, report.blocking_codes
    return report


def run_naive(chunks: list[dict[str, Any]]) -> Any:
    calls: dict[int, dict[str, str]] = {}
    for raw in chunks:
        for entry in raw["choices"][0]["delta"].get("tool_calls", []):
            call = calls.setdefault(entry["index"], {"name": "", "arguments": ""})
            call["name"] += entry.get("function", {}).get("name", "")
            call["arguments"] += entry["function"]["arguments"]
    return [json.loads(c["arguments"]) for c in calls.values()]


def measure(
    fn: Callable[[list[dict[str, Any]]], Any], chunks: list[dict[str, Any]], repeats: int = 3
) -> tuple[float, int]:
    best = float("inf")
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        fn(chunks)
        best = min(best, time.perf_counter() - start)
    tracemalloc.start()
    fn(chunks)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return best, peak


def main() -> None:
    print(
        f"{'events':>8} {'callgate us/event':>18} {'baseline us/event':>18} {'ratio':>6} "
        f"{'callgate peak KiB/event':>24}"
    )
    for size in SIZES:
        chunks = stream(size)
        ours, peak = measure(run_callgate, chunks)
        theirs, _ = measure(run_naive, chunks)
        print(
            f"{size:>8} {ours / size * 1e6:>18.2f} {theirs / size * 1e6:>18.2f} "
            f"{ours / theirs:>6.1f} {peak / size / 1024:>24.3f}"
        )


if __name__ == "__main__":
    main()
