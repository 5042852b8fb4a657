"""What LiteLLM hands a tool runner for a streamed Chat Completions turn.

How this works: ``litellm.stream_chunk_builder`` is LiteLLM's own accumulator (what
``completion(stream=True)`` users call to rebuild the response); it is given the envelope's chunk
dicts (dicts and ``ModelResponseStream`` objects give the same result). The rebuilt first choice's
``message.tool_calls`` (id, function name, argument text) and ``finish_reason`` are reported.
``LITELLM_LOCAL_MODEL_COST_MAP`` keeps the import from fetching the price list over the network.
Not exercised here: litellm is not installed in this project's environments.

Run: ``PYTHON cli/adapters/litellm.py < envelope.json``; prints one JSON line, or exits 3 with
``{"missing": "litellm"}`` when it is not importable. Standard library + litellm only.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

ADAPTER = "litellm"
PACKAGE = "litellm"


def main() -> int:
    # This folder holds scripts named like libraries (this very file): never import from it.
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        litellm = importlib.import_module("litellm")
    except ImportError:
        print(json.dumps({"missing": PACKAGE}))
        return 3
    envelope = json.loads(sys.stdin.read())
    result: dict[str, Any] = {"adapter": ADAPTER, "version": metadata.version(PACKAGE),
                              "calls": [], "finish": None, "error": None}
    try:
        response = litellm.stream_chunk_builder(chunks=envelope["chunks"])
        result["calls"], result["finish"] = handed_calls(response)
    except Exception as error:  # whatever the library raises is the finding
        result["error"] = {"type": type(error).__name__, "message": str(error)}
    print(json.dumps(result))
    return 0


def handed_calls(response: Any) -> tuple[list[dict[str, Any]], str | None]:
    """The first choice's tool calls (id, name, argument text) and its finish reason."""
    if response is None or not response.choices:
        return [], None
    choice = response.choices[0]
    calls = [{"id": call.id, "name": call.function.name, "arguments": call.function.arguments}
             for call in getattr(choice.message, "tool_calls", None) or []]
    finish = choice.finish_reason
    return calls, None if finish is None else str(finish)


if __name__ == "__main__":
    sys.exit(main())
