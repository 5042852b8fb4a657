"""What anthropic-sdk-python hands a tool runner for a streamed Messages turn.

How this works: the envelope's events are framed as Anthropic sends them (``event:`` + ``data:``
pairs) and served by an in-memory ``httpx2.MockTransport`` to a real ``anthropic.Anthropic``
client. ``client.messages.stream()`` then does what it does in an app: the SDK's ``Stream`` skips
``ping``, drops data without an event name, raises on ``event: error`` and builds the
``RawMessageStreamEvent`` types; ``MessageStream`` feeds each to ``accumulate_event``. The final
message's ``tool_use`` blocks are what a tool runner receives; their ``input`` dicts are shown as
``json.dumps`` text.

Run: ``PYTHON cli/adapters/anthropic_python.py < envelope.json``; prints one JSON line, or exits
3 with ``{"missing": "anthropic"}`` when the SDK is not importable. Standard library + anthropic.
"""

from __future__ import annotations

import importlib
import json
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

ADAPTER = "anthropic-python"
PACKAGE = "anthropic"


def main() -> int:
    # This folder holds scripts named like libraries (litellm.py): never import from it.
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    try:
        anthropic = importlib.import_module("anthropic")
        http = importlib.import_module("httpx2")
    except ImportError:
        print(json.dumps({"missing": PACKAGE}))
        return 3
    envelope = json.loads(sys.stdin.read())
    result: dict[str, Any] = {"adapter": ADAPTER, "version": metadata.version(PACKAGE),
                              "calls": [], "finish": None, "error": None}
    try:
        message = final_message(mock_client(anthropic, http, sse_body(envelope)), envelope)
        result["calls"], result["finish"] = handed_calls(message)
    except Exception as error:  # whatever the SDK raises is the finding
        result["error"] = {"type": type(error).__name__, "message": str(error)}
    print(json.dumps(result))
    return 0


def sse_body(envelope: dict[str, Any]) -> bytes:
    """The events as ``callgate serve`` frames them: named events, bare data otherwise."""
    frames = []
    for event in envelope["events"]:
        data = json.dumps(event)
        if isinstance(event, dict) and "type" in event:
            frames.append(f"event: {event['type']}\ndata: {data}\n\n".encode())
        else:
            frames.append(f"data: {data}\n\n".encode())
    return b"".join(frames)


def mock_client(anthropic: Any, http: Any, body: bytes) -> Any:
    """A real ``Anthropic`` client whose every request is answered with ``body`` as SSE."""

    def answer(request: Any) -> Any:
        return http.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    transport = http.MockTransport(answer)
    return anthropic.Anthropic(api_key="callgate-diff", base_url="http://callgate.invalid",
                               max_retries=0, http_client=http.Client(transport=transport))


def final_message(client: Any, envelope: dict[str, Any]) -> Any:
    """``get_final_message()`` of ``client.messages.stream()`` over the served events."""
    tools = [{"name": name, "input_schema": schema}
             for name, schema in envelope.get("tool_schemas", {}).items()]
    with client.messages.stream(
            model="callgate-diff", max_tokens=1024, tools=tools,
            messages=[{"role": "user", "content": "callgate diff"}]) as stream:
        return stream.get_final_message()


def handed_calls(message: Any) -> tuple[list[dict[str, Any]], str | None]:
    """The ``tool_use`` blocks (id, name, ``json.dumps(input)``) and the stop reason."""
    calls = [{"id": block.id, "name": block.name,
              "arguments": json.dumps(block.input, ensure_ascii=False)}
             for block in message.content if block.type == "tool_use"]
    stop = message.stop_reason
    return calls, None if stop is None else str(stop)


if __name__ == "__main__":
    sys.exit(main())
