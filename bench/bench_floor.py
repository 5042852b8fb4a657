"""The engine and the strict parser against the parse floor, and openai-python beside them.

One stream: 16 tool calls interleaved, 20,000 argument fragments each, one fragment per Chat
Completions chunk (320,017 chunk texts as a provider sends them). Side by side, best of three,
garbage collector off while timing (as ``timeit`` does):

- floor: ``json.loads`` of each chunk text, the value dropped: what any reader pays;
- callgate: ``json.loads`` and ``Reassembler.feed`` per chunk, then ``close``: the verdict;
- strict: ``strict_json.loads`` of each chunk text (what the proxy and importers parse with);
- openai-python: ``json.loads``, the SDK's own chunk construction and
  ``ChatCompletionStreamState.handle_chunk`` per chunk, then ``get_final_completion``: the
  accumulator most apps run. It runs once (it is the slowest row) in the SDK environment
  (``.venv-apps``, made by ``make test``); without it that row is left out.

Run: ``make bench`` (or ``python bench/bench_floor.py [FRAGMENTS]``).
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from callgate.reassemble import Reassembler, strict_json

ROOT = Path(__file__).resolve().parents[1]
APPS_PYTHON = ROOT / ".venv-apps" / "bin" / "python"
CALLS = 16
#: The most the engine (``json.loads`` and ``feed``) and the strict parser may take, x the floor.
ENGINE_TARGET, STRICT_TARGET = 1.5, 1.3
#: Timed in the SDK's interpreter: reads the chunk texts from the file named by argv[1].
OPENAI_PYTHON = """
import gc, json, sys, time
from openai._models import construct_type
from openai.lib.streaming.chat._completions import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk
texts = json.load(open(sys.argv[1]))
gc.disable()
start = time.perf_counter()
state = ChatCompletionStreamState()
for text in texts:
    state.handle_chunk(construct_type(type_=ChatCompletionChunk, value=json.loads(text)))
state.get_final_completion()
print(time.perf_counter() - start)
"""


def chunk(entry: dict[str, object] | None, finish: str | None = None) -> str:
    delta = {"tool_calls": [entry]} if entry else {}
    return json.dumps(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "created": 1767225600,
            "model": "gpt-bench",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
    )


def stream(fragments: int) -> list[str]:
    """Each call's arguments are ``{"v":[0,1,...]}``, one number per fragment."""
    texts = [
        chunk(
            {
                "index": i,
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": "f", "arguments": '{"v":['},
            }
        )
        for i in range(CALLS)
    ]
    for n in range(fragments):
        piece = f"{n}," if n < fragments - 1 else f"{n}]}}"
        texts += [chunk({"index": i, "function": {"arguments": piece}}) for i in range(CALLS)]
    return [*texts, chunk(None, "tool_calls")]


def best_of_three(run: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(3):
        gc.disable()
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
        gc.enable()
    return best


def openai_python(texts: list[str]) -> float | None:
    if not APPS_PYTHON.exists():
        return None
    with tempfile.NamedTemporaryFile("w", suffix=".json") as file:
        json.dump(texts, file)
        file.flush()
        done = subprocess.run(
            [str(APPS_PYTHON), "-c", OPENAI_PYTHON, file.name],
            capture_output=True,
            text=True,
            check=False,
        )
    return float(done.stdout) if done.returncode == 0 else None


def main() -> None:
    fragments = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    texts = stream(fragments)

    def floor() -> None:
        for text in texts:
            json.loads(text)

    def callgate() -> None:
        engine = Reassembler("openai", {"f": True})
        for text in texts:
            engine.feed(json.loads(text))
        assert engine.close().executable

    def strict() -> None:
        for text in texts:
            strict_json.loads(text)

    base = best_of_three(floor)
    rows = [
        ("floor: json.loads", base, ""),
        ("callgate: json.loads + feed", best_of_three(callgate), f"<= {ENGINE_TARGET:.2f}"),
        ("strict_json.loads", best_of_three(strict), f"<= {STRICT_TARGET:.2f}"),
        ("openai-python accumulator", openai_python(texts), ""),
    ]
    print(f"{CALLS} calls x {fragments} fragments = {len(texts)} chunks")
    print(f"{'':<30} {'us/chunk':>9} {'x floor':>8} {'target':>8}")
    for name, seconds, target in rows:
        if seconds is None:
            print(f"{name:<30} {'(no .venv-apps: make test creates it)':>18}")
            continue
        print(f"{name:<30} {seconds / len(texts) * 1e6:>9.2f} {seconds / base:>8.2f} {target:>8}")


if __name__ == "__main__":
    main()
