"""What LangChain (langchain-openai + langchain-core) hands a tool runner for a streamed turn.

How this works: as ``ChatOpenAI._stream`` does, each chunk dict goes through the model's
``_convert_chunk_to_generation_chunk`` (starting from ``AIMessageChunk``, the class following the
previous chunk's), and the generation chunks are summed as ``generate_from_stream`` sums them
(``AIMessageChunk.__add__`` merges the tool-call chunks). The summed message's ``tool_calls`` are
what a LangGraph ``ToolNode`` runs; their ``args`` dicts are shown as ``json.dumps`` text. The
chunks are fed as dicts, which is what ``_stream`` makes of the SDK's chunks (``model_dump()``).
Not exercised here: langchain-openai is not installed in this project's environments.

Run: ``PYTHON cli/adapters/langchain.py < envelope.json``; prints one JSON line, or exits 3 with
``{"missing": "langchain-openai"}`` when it is not importable. Standard library + langchain only.
"""

from __future__ import annotations

import importlib
import json
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

ADAPTER = "langchain"
PACKAGE = "langchain-openai"


def main() -> int:
    # This folder holds scripts named like libraries (this very file): never import from it.
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    try:
        chat_openai = importlib.import_module("langchain_openai").ChatOpenAI
        chunk_class = importlib.import_module("langchain_core.messages").AIMessageChunk
    except ImportError:
        print(json.dumps({"missing": PACKAGE}))
        return 3
    envelope = json.loads(sys.stdin.read())
    result: dict[str, Any] = {"adapter": ADAPTER, "version": metadata.version(PACKAGE),
                              "calls": [], "finish": None, "error": None}
    try:
        model = chat_openai(model="callgate-diff", api_key="callgate-diff")
        total = summed_generation(model, chunk_class, envelope["chunks"])
        result["calls"], result["finish"] = handed_calls(total)
    except Exception as error:  # whatever the library raises is the finding
        result["error"] = {"type": type(error).__name__, "message": str(error)}
    print(json.dumps(result))
    return 0


def summed_generation(model: Any, chunk_class: Any, chunks: list[Any]) -> Any:
    """The sum of the generation chunks ``ChatOpenAI._stream`` would yield, or None."""
    total: Any = None
    for chunk in chunks:
        generation = model._convert_chunk_to_generation_chunk(chunk, chunk_class, {})
        if generation is None:
            continue
        chunk_class = generation.message.__class__
        total = generation if total is None else total + generation
    return total


def handed_calls(total: Any) -> tuple[list[dict[str, Any]], str | None]:
    """The message's ``tool_calls`` (id, name, ``json.dumps(args)``) and its finish reason."""
    if total is None:
        return [], None
    calls = [{"id": call.get("id"), "name": call.get("name"),
              "arguments": json.dumps(call.get("args"), ensure_ascii=False)}
             for call in getattr(total.message, "tool_calls", None) or []]
    finish = (total.generation_info or {}).get("finish_reason")
    return calls, None if finish is None else str(finish)


if __name__ == "__main__":
    sys.exit(main())
