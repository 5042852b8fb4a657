"""What openai-python hands a tool runner for a streamed Chat Completions turn.

How this works: the envelope's chunks are framed as the provider sends them (``data:`` lines, then
``data: [DONE]`` unless the recording had none) and served by an in-memory ``httpx2.MockTransport``
to a real ``openai.OpenAI`` client, so the SDK's own ``Stream`` decodes the SSE, builds the
``ChatCompletionChunk`` objects and raises ``APIError`` for error data, exactly as in an app. Each
chunk goes to ``ChatCompletionStreamState.handle_chunk`` (the documented helper for
``create(stream=True)``, with the envelope's schemas as non-strict function tools), then
``get_final_completion()``; its first choice's ``tool_calls`` are what a tool runner receives.

Run: ``PYTHON cli/adapters/openai_python.py < envelope.json``; prints one JSON line, or exits 3
with ``{"missing": "openai"}`` when the SDK is not importable. Standard library + openai only.
"""

from __future__ import annotations

import importlib
import json
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

ADAPTER = "openai-python"
PACKAGE = "openai"


def main() -> int:
    # This folder holds scripts named like libraries (litellm.py): never import from it.
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    try:
        openai = importlib.import_module("openai")
        http = importlib.import_module("httpx2")
        streaming = importlib.import_module("openai.lib.streaming.chat._completions")
    except ImportError:
        print(json.dumps({"missing": PACKAGE}))
        return 3
    envelope = json.loads(sys.stdin.read())
    result: dict[str, Any] = {"adapter": ADAPTER, "version": metadata.version(PACKAGE),
                              "calls": [], "finish": None, "error": None}
    try:
        client = mock_client(openai, http, sse_body(envelope))
        completion = accumulate(client, streaming.ChatCompletionStreamState, tools(envelope))
        result["calls"], result["finish"] = handed_calls(completion)
    except Exception as error:  # whatever the SDK raises is the finding
        result["error"] = {"type": type(error).__name__, "message": str(error)}
    print(json.dumps(result))
    return 0


def sse_body(envelope: dict[str, Any]) -> bytes:
    """The chunks as ``callgate serve`` frames them for a Chat Completions client."""
    frames = [b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in envelope["chunks"]]
    meta = envelope.get("meta")
    stream = meta.get("stream") if isinstance(meta, dict) else None
    if not isinstance(stream, dict) or stream.get("done", True):
        frames.append(b"data: [DONE]\n\n")
    return b"".join(frames)


def mock_client(openai: Any, http: Any, body: bytes) -> Any:
    """A real ``OpenAI`` client whose every request is answered with ``body`` as SSE."""

    def answer(request: Any) -> Any:
        return http.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    transport = http.MockTransport(answer)
    return openai.OpenAI(api_key="callgate-diff", base_url="http://callgate.invalid/v1",
                         max_retries=0, http_client=http.Client(transport=transport))


def tools(envelope: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": name, "parameters": schema}}
            for name, schema in envelope.get("tool_schemas", {}).items()]


def accumulate(client: Any, state_class: Any, input_tools: list[dict[str, Any]]) -> Any:
    """Stream the turn through the SDK and return ``get_final_completion()``."""
    state = state_class(input_tools=input_tools)
    stream = client.chat.completions.create(
        model="callgate-diff", messages=[{"role": "user", "content": "callgate diff"}],
        tools=input_tools, stream=True)
    with stream:
        for chunk in stream:
            state.handle_chunk(chunk)
    return state.get_final_completion()


def handed_calls(completion: Any) -> tuple[list[dict[str, Any]], str | None]:
    """The first choice's tool calls (id, name, argument text) and its finish reason."""
    if not completion.choices:
        return [], None
    choice = completion.choices[0]
    calls = [{"id": call.id, "name": call.function.name, "arguments": call.function.arguments}
             for call in choice.message.tool_calls or []]
    finish = choice.finish_reason
    return calls, None if finish is None else str(finish)


if __name__ == "__main__":
    sys.exit(main())
