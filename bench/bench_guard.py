"""What ``callgate.guard`` adds to an app's loop over a real SDK stream.

The same turn, one tool call whose arguments come in 2,000 chunks, is streamed through the real
openai and anthropic SDKs from an in-memory transport (``httpx2.MockTransport``, one body chunk
per event, so no network or server timing enters), and iterated with and without ``guard``.
Each is run ROUNDS times, alternating, plain, with ``guard``, and through a client whose transport
is ``callgate.transport()`` (wrapping the same in-memory one); the columns are the fastest turn
of each in milliseconds and each ``ratio`` over the plain one (the target is at most 1.3). The
fastest, not the median: on a machine other work shares, a turn is only ever slowed down by it,
and the fastest of many is the one it slowed least.

``instructions`` counts instead, with valgrind's callgrind: the instructions one turn costs,
plain and guarded (a child that iterates three turns less one that iterates one, so start-up
and imports cancel out). Timings on a shared machine move by more than the guard's cost; the
count does not.

Run: ``make bench`` (or ``PYTHONPATH=. .venv-apps/bin/python bench/bench_guard.py [instructions]``):
it needs the SDKs of the apps environment.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import httpx2
import openai

import callgate

CHUNKS = 2_000
ROUNDS = 30
SCHEMA = {"type": "object", "properties": {"items": {"type": "array"}}}
FRAGMENTS = ['{"items":[', *(f"{n}," for n in range(CHUNKS - 2)), f"{CHUNKS}]", "}"]


def openai_events() -> list[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "created": 1700000000,
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    opening = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f"}}
    calls = [{"index": 0, "function": {"arguments": text}} for text in FRAGMENTS]
    return [
        chunk({"role": "assistant", "tool_calls": [{**opening, "function": {"name": "f"}}]}),
        *(chunk({"tool_calls": [call]}) for call in calls),
        chunk({}, "tool_calls"),
    ]


def anthropic_events() -> list[dict[str, Any]]:
    message = {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    block = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}
    delta = [
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta"}}
        for _ in FRAGMENTS
    ]
    for event, text in zip(delta, FRAGMENTS, strict=True):
        event["delta"]["partial_json"] = text
    return [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": block},
        *delta,
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 9},
        },
        {"type": "message_stop"},
    ]


class Frames(httpx2.SyncByteStream):
    def __init__(self, frames: list[bytes]) -> None:
        self.frames = frames

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.frames)


def transport(frames: list[bytes], gated: bool) -> httpx2.Client:
    """The in-memory upstream; ``gated``: behind ``callgate.transport()``."""

    def answer(request: httpx2.Request) -> httpx2.Response:
        headers = {"content-type": "text/event-stream"}
        return httpx2.Response(200, headers=headers, stream=Frames(frames))

    upstream = httpx2.MockTransport(answer)
    return httpx2.Client(transport=callgate.transport(upstream) if gated else upstream)


def openai_turn(gated: bool = False) -> tuple[Callable[[], Any], list[Any]]:
    frames = [f"data: {json.dumps(e)}\n\n".encode() for e in openai_events()] + [
        b"data: [DONE]\n\n"
    ]
    client = openai.OpenAI(
        api_key="k", base_url="http://bench/v1", http_client=transport(frames, gated)
    )
    tools = [{"type": "function", "function": {"name": "f", "parameters": SCHEMA}}]
    messages = [{"role": "user", "content": "go"}]

    def start() -> Any:
        return client.chat.completions.create(
            model="m", messages=messages, tools=tools, stream=True
        )

    return start, tools


def anthropic_turn(gated: bool = False) -> tuple[Callable[[], Any], list[Any]]:
    frames = [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in anthropic_events()]
    client = anthropic.Anthropic(
        api_key="k", base_url="http://bench", http_client=transport(frames, gated)
    )
    tools = [{"name": "f", "input_schema": SCHEMA}]
    messages = [{"role": "user", "content": "go"}]

    def start() -> Any:
        return client.messages.create(
            model="m", max_tokens=9, messages=messages, tools=tools, stream=True
        )

    return start, tools


def timed(run: Callable[[], object]) -> float:
    began = time.perf_counter()
    run()
    return time.perf_counter() - began


def measure(sdk: str) -> tuple[float, float, float]:
    """The fastest plain, guarded and transport-gated turn, alternating."""
    start, tools = TURNS[sdk]()
    start_gated, _ = TURNS[sdk](gated=True)

    def plain() -> None:
        for _ in start():
            pass

    def guarded() -> None:
        stream = callgate.guard(start(), tools)
        for _ in stream:
            pass
        assert stream.report.status.value == "pass", stream.report.blocking_codes

    def through_transport() -> None:
        for _ in start_gated():
            pass

    runs = (plain, guarded, through_transport)
    for run in runs:  # warm: imports, first connections
        run()
    fastest = [float("inf")] * len(runs)
    for _ in range(ROUNDS):
        for number, run in enumerate(runs):
            fastest[number] = min(fastest[number], timed(run))
    return fastest[0], fastest[1], fastest[2]


TURNS: dict[str, Callable[..., tuple[Callable[[], Any], list[Any]]]] = {
    "openai": openai_turn,
    "anthropic": anthropic_turn,
}


def child(sdk: str, variant: str, turns: int) -> None:
    start, tools = TURNS[sdk]()
    for _ in range(turns):
        stream = callgate.guard(start(), tools) if variant == "guarded" else start()
        for _ in stream:
            pass


def instructions(*arguments: str) -> int:
    """Instructions this script's child run with ``arguments`` executes, by callgrind."""
    valgrind = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    run = subprocess.run(
        [*valgrind, sys.executable, __file__, "--child", *arguments],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    found = re.search(r"Collected : (\d+)", run.stderr)
    if found is None:
        raise RuntimeError(f"callgrind gave no count: {run.stderr[-500:]}")
    return int(found.group(1))


def per_turn(sdk: str, variant: str) -> int:
    return (instructions(sdk, variant, "3") - instructions(sdk, variant, "1")) // 2


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return
    if sys.argv[1:2] == ["instructions"]:
        print(f"one call, {CHUNKS:,} chunks through the real SDK, instructions per turn")
        print(f"{'sdk':<10} {'plain':>14} {'guarded':>14} {'ratio':>6}")
        for name in TURNS:
            plain, guarded = per_turn(name, "plain"), per_turn(name, "guarded")
            print(f"{name:<10} {plain:14,} {guarded:14,} {guarded / plain:6.2f}")
        return
    print(f"one call, {CHUNKS:,} chunks, fastest of {ROUNDS} turns through the real SDK")
    columns = f"{'plain ms':>9} {'guarded ms':>11} {'ratio':>6} {'transport ms':>13} {'ratio':>6}"
    print(f"{'sdk':<10} {columns}")
    for name in TURNS:
        plain, guarded, gated = measure(name)
        print(
            f"{name:<10} {plain * 1e3:9.1f} {guarded * 1e3:11.1f} {guarded / plain:6.2f} "
            f"{gated * 1e3:13.1f} {gated / plain:6.2f}"
        )


if __name__ == "__main__":
    main()
