"""What a real accumulator hands a tool runner for one streamed turn (``callgate diff``'s runner).

How this works: ``PYTHON runner.py ADAPTER < envelope.json`` runs in an interpreter that has the
adapter's library, which need not be callgate's own (so: standard library plus that library, no
callgate imports). It prints one JSON line, ``{"adapter", "version", "calls", "finish", "error"}``,
or exits 3 with ``{"missing": "<pip package>"}`` when the library is not importable. Libraries are
imported with ``importlib`` so that mypy checks this file the same whether or not they are
installed in callgate's environment.

- openai-python: the chunks are framed as the provider sends them and served by an in-memory
  ``httpx2.MockTransport`` to a real ``OpenAI`` client, so the SDK's own ``Stream`` decodes the
  SSE and raises ``APIError`` on error data; each chunk goes to
  ``ChatCompletionStreamState.handle_chunk``, then ``get_final_completion()``.
- anthropic-python: the events, framed as Anthropic sends them, go to a real ``Anthropic`` client
  the same way; ``client.messages.stream()`` feeds ``accumulate_event`` and
  ``get_final_message()``'s ``tool_use`` blocks are what a tool runner receives.
- langchain: a ``ChatOpenAI(streaming=True)`` over the same in-memory transport, ``invoke``d with
  the tools bound: ``_stream`` ``model_dump()``s each SDK chunk into
  ``_convert_chunk_to_generation_chunk`` and ``generate_from_stream`` sums them; the returned
  ``AIMessage.tool_calls`` is what a tool runner receives.
- litellm: ``litellm.completion(model="openai/...", stream=True)`` with a real ``OpenAI`` client
  over that transport, the ``ModelResponseStream`` chunks collected and handed to
  ``litellm.stream_chunk_builder``, as litellm documents.

- ollama-python: the body (``wire``, framed by callgate before the runner starts: one JSON line
  per chunk, as Ollama sends them) goes to a real ``ollama.Client`` over an in-memory
  ``httpx.MockTransport``; the calls of every ``message.tool_calls`` are collected as Ollama's
  streaming tool example does (its models keep no id).

- cohere-python: the events, framed as Cohere sends them, go to a real ``ClientV2`` over the
  in-memory transport; ``chat_stream``'s calls are joined by index as Cohere's streaming tool-use
  guide does, from ``tool-call-start`` and its ``tool-call-delta`` fragments.
- boto3 (Bedrock ConverseStream): the AWS event-stream body (``wire``, framed the same way)
  answers a real ``bedrock-runtime`` client's request from a
  ``before-send`` hook; the events are accumulated as the Bedrock user guide's streaming tool-use
  example does: one tool use at a time, its input fragments joined, parsed with ``json.loads``
  at ``contentBlockStop`` (a tool use that streamed no input is not kept).

- langchain-aws: a ``ChatBedrockConverse`` over that same client, the tools bound,
  ``stream()``ed and its chunks summed as LangChain documents; the sum's ``tool_calls`` is what
  a tool runner receives (``invalid_tool_calls`` are not run).

Parsed arguments (Anthropic ``input``, LangChain ``args``, Ollama ``arguments``, Bedrock
``input``) are shown as ``json.dumps`` text.
"""

from __future__ import annotations

import base64
import contextlib
import importlib
import io
import json
import os
import sys
from collections.abc import Callable
from importlib import metadata
from typing import Any

Calls = tuple[list[dict[str, Any]], str | None]


def main() -> int:
    adapter = sys.argv[1]
    package, modules, hand_on = ADAPTERS[adapter]
    try:
        libraries = [importlib.import_module(name) for name in modules]
    except ImportError:
        print(json.dumps({"missing": package}))
        return 3
    given = json.loads(sys.stdin.read())
    # --many: a list of envelopes, one result line each (one start-up for all of them).
    for envelope in given if "--many" in sys.argv[2:] else [given]:
        result: dict[str, Any] = {
            "adapter": adapter,
            "version": metadata.version(package),
            "calls": [],
            "finish": None,
            "error": None,
        }
        try:
            # A library's print() must not break the result lines.
            with contextlib.redirect_stdout(sys.stderr):
                result["calls"], result["finish"] = hand_on(envelope, *libraries)
        except Exception as error:  # whatever the library raises is the finding
            result["error"] = {"type": type(error).__name__, "message": str(error)}
        print(json.dumps(result), flush=True)
    return 0


def sse_body(envelope: dict[str, Any]) -> bytes:
    """The stream as ``callgate serve`` frames it: Anthropic's named events, or ``data:`` lines
    ending with ``data: [DONE]`` unless the recording had none."""
    if "events" in envelope:
        return b"".join(
            f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode()
            if isinstance(e, dict) and "type" in e
            else f"data: {json.dumps(e)}\n\n".encode()
            for e in envelope["events"]
        )
    frames = [f"data: {json.dumps(chunk)}\n\n".encode() for chunk in envelope["chunks"]]
    meta = envelope.get("meta")
    stream = meta.get("stream") if isinstance(meta, dict) else None
    if not isinstance(stream, dict) or stream.get("done", True):
        frames.append(b"data: [DONE]\n\n")
    return b"".join(frames)


def served_by(http: Any, envelope: dict[str, Any]) -> Any:
    """An HTTP client whose every request is answered with the envelope's stream as SSE."""
    body = sse_body(envelope)

    def answer(request: Any) -> Any:
        return http.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    return http.Client(transport=http.MockTransport(answer))


def finished(calls: list[dict[str, Any]], finish: object) -> Calls:
    return calls, None if finish is None else str(finish)


def function_tools(envelope: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": name, "parameters": schema}}
        for name, schema in envelope.get("tool_schemas", {}).items()
    ]


def openai_client(openai: Any, http: Any, envelope: dict[str, Any]) -> Any:
    return openai.OpenAI(
        api_key="callgate-diff",
        base_url="http://callgate.invalid/v1",
        max_retries=0,
        http_client=served_by(http, envelope),
    )


def chat_calls(tool_calls: Any) -> list[dict[str, Any]]:
    """A Chat Completions message's tool calls (a custom tool call has input, no function)."""
    return [
        {"id": call.id, "name": call.custom.name, "arguments": call.custom.input}
        if call.type == "custom"
        else {"id": call.id, "name": call.function.name, "arguments": call.function.arguments}
        for call in tool_calls or []
    ]


def openai_python(envelope: dict[str, Any], openai: Any, http: Any, streaming: Any) -> Calls:
    tools = function_tools(envelope)
    client = openai_client(openai, http, envelope)
    state = streaming.ChatCompletionStreamState(input_tools=tools)
    with client.chat.completions.create(
        model="callgate-diff",
        messages=[{"role": "user", "content": "callgate diff"}],
        tools=tools,
        stream=True,
    ) as stream:
        for chunk in stream:
            state.handle_chunk(chunk)
    choices = state.get_final_completion().choices
    if not choices:
        return [], None
    return finished(chat_calls(choices[0].message.tool_calls), choices[0].finish_reason)


def anthropic_python(envelope: dict[str, Any], anthropic: Any, http: Any) -> Calls:
    tools = [
        {"name": name, "input_schema": schema}
        for name, schema in envelope.get("tool_schemas", {}).items()
    ]
    client = anthropic.Anthropic(
        api_key="callgate-diff",
        base_url="http://callgate.invalid",
        max_retries=0,
        http_client=served_by(http, envelope),
    )
    with client.messages.stream(
        model="callgate-diff",
        max_tokens=1024,
        tools=tools,
        messages=[{"role": "user", "content": "callgate diff"}],
    ) as stream:
        message = stream.get_final_message()
    calls = [
        {
            "id": block.id,
            "name": block.name,
            "arguments": json.dumps(block.input, ensure_ascii=False),
        }
        for block in message.content
        if block.type == "tool_use"
    ]
    return finished(calls, message.stop_reason)


def langchain(envelope: dict[str, Any], langchain_openai: Any, http: Any) -> Calls:
    model = langchain_openai.ChatOpenAI(
        model="callgate-diff",
        api_key="callgate-diff",
        base_url="http://callgate.invalid/v1",
        max_retries=0,
        streaming=True,
        http_client=served_by(http, envelope),
    )
    tools = function_tools(envelope)
    message = (model.bind_tools(tools) if tools else model).invoke("callgate diff")
    calls = [
        {
            "id": call.get("id"),
            "name": call.get("name"),
            "arguments": json.dumps(call.get("args"), ensure_ascii=False),
        }
        for call in message.tool_calls
    ]
    return finished(calls, message.response_metadata.get("finish_reason"))


def litellm(envelope: dict[str, Any], library: Any, openai: Any, http: Any) -> Calls:
    library.suppress_debug_info = True
    client = openai_client(openai, http, envelope)
    messages = [{"role": "user", "content": "callgate diff"}]
    stream = library.completion(
        model="openai/callgate-diff",
        messages=messages,
        tools=function_tools(envelope) or None,
        stream=True,
        client=client,
    )
    response = library.stream_chunk_builder(chunks=list(stream), messages=messages)
    if response is None or not response.choices:
        return [], None
    choice = response.choices[0]
    return finished(chat_calls(getattr(choice.message, "tool_calls", None)), choice.finish_reason)


def ollama_python(envelope: dict[str, Any], ollama: Any, http: Any) -> Calls:
    body = base64.b64decode(envelope["wire"])

    def answer(request: Any) -> Any:
        return http.Response(200, headers={"content-type": "application/x-ndjson"}, content=body)

    client = ollama.Client(host="http://callgate.invalid", transport=http.MockTransport(answer))
    calls, finish = [], None
    for part in client.chat(
        model="callgate-diff",
        stream=True,
        tools=function_tools(envelope),
        messages=[{"role": "user", "content": "callgate diff"}],
    ):
        finish = part.done_reason or finish
        calls += [
            {
                "id": None,
                "name": call.function.name,
                "arguments": json.dumps(call.function.arguments, ensure_ascii=False),
            }
            for call in part.message.tool_calls or []
        ]
    return finished(calls, finish)


def cohere_python(envelope: dict[str, Any], cohere: Any, http: Any) -> Calls:
    client = cohere.ClientV2(
        api_key="callgate-diff",
        base_url="http://callgate.invalid",
        httpx_client=served_by(http, envelope),
    )
    calls: dict[int, dict[str, Any]] = {}
    finish = None
    for event in client.chat_stream(
        model="callgate-diff",
        tools=function_tools(envelope),
        messages=[{"role": "user", "content": "callgate diff"}],
    ):
        if event.type == "tool-call-start":
            call = event.delta.message.tool_calls
            calls[event.index] = {
                "id": call.id,
                "name": call.function.name,
                "arguments": call.function.arguments or "",
            }
        elif event.type == "tool-call-delta" and event.index in calls:
            calls[event.index]["arguments"] += event.delta.message.tool_calls.function.arguments
        elif event.type == "message-end":
            finish = event.delta.finish_reason
    return finished(list(calls.values()), finish)


def bedrock_client(envelope: dict[str, Any], boto3: Any, awsrequest: Any, response: Any) -> Any:
    """A real ``bedrock-runtime`` client whose ConverseStream requests are answered, before they
    are sent, with the envelope's event-stream body."""
    data = base64.b64decode(envelope["wire"])
    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url="http://callgate.invalid",
        aws_access_key_id="callgate",
        aws_secret_access_key="callgate-diff",
    )
    headers = {"content-type": "application/vnd.amazon.eventstream"}

    def answer(request: Any, **_: Any) -> Any:
        raw = response.HTTPResponse(
            body=io.BytesIO(data), headers=headers, status=200, preload_content=False
        )
        return awsrequest.AWSResponse(request.url, 200, headers, raw)

    client.meta.events.register("before-send.bedrock-runtime.ConverseStream", answer)
    return client


def boto3_converse(envelope: dict[str, Any], boto3: Any, awsrequest: Any, response: Any) -> Calls:
    client = bedrock_client(envelope, boto3, awsrequest, response)
    tools = [
        {"toolSpec": {"name": name, "inputSchema": {"json": schema}}}
        for name, schema in envelope.get("tool_schemas", {}).items()
    ]
    stream = client.converse_stream(
        modelId="callgate-diff",
        messages=[{"role": "user", "content": [{"text": "diff"}]}],
        **({"toolConfig": {"tools": tools}} if tools else {}),
    )["stream"]
    calls: list[dict[str, Any]] = []
    tool: dict[str, Any] = {}
    finish = None
    for event in stream:
        if "contentBlockStart" in event:
            tool = dict(event["contentBlockStart"]["start"].get("toolUse", {}))
        elif "contentBlockDelta" in event and "toolUse" in event["contentBlockDelta"]["delta"]:
            tool["input"] = (
                tool.get("input", "") + event["contentBlockDelta"]["delta"]["toolUse"]["input"]
            )
        elif "contentBlockStop" in event and "input" in tool:
            calls.append(
                {
                    "id": tool.get("toolUseId"),
                    "name": tool.get("name"),
                    "arguments": json.dumps(json.loads(tool["input"]), ensure_ascii=False),
                }
            )
            tool = {}
        elif "messageStop" in event:
            finish = event["messageStop"]["stopReason"]
    return finished(calls, finish)


def langchain_aws(
    envelope: dict[str, Any], library: Any, boto3: Any, awsrequest: Any, response: Any
) -> Calls:
    model = library.ChatBedrockConverse(
        client=bedrock_client(envelope, boto3, awsrequest, response),
        model="anthropic.claude-3-haiku-20240307-v1:0",
        region_name="us-east-1",
    )
    tools = function_tools(envelope)
    summed = None
    for chunk in (model.bind_tools(tools) if tools else model).stream("callgate diff"):
        summed = chunk if summed is None else summed + chunk
    if summed is None:
        return [], None
    calls = [
        {
            "id": call.get("id"),
            "name": call.get("name"),
            "arguments": json.dumps(call.get("args"), ensure_ascii=False),
        }
        for call in summed.tool_calls
    ]
    return finished(calls, summed.response_metadata.get("stopReason"))


#: adapter -> (pip package, modules to import, what it hands on given the envelope and modules).
ADAPTERS: dict[str, tuple[str, tuple[str, ...], Callable[..., Calls]]] = {
    "openai-python": (
        "openai",
        ("openai", "httpx2", "openai.lib.streaming.chat._completions"),
        openai_python,
    ),
    "anthropic-python": ("anthropic", ("anthropic", "httpx2"), anthropic_python),
    "langchain": ("langchain-openai", ("langchain_openai", "httpx2"), langchain),
    "litellm": ("litellm", ("litellm", "openai", "httpx2"), litellm),
    "ollama-python": ("ollama", ("ollama", "httpx"), ollama_python),
    "cohere-python": ("cohere", ("cohere", "httpx"), cohere_python),
    "boto3": ("boto3", ("boto3", "botocore.awsrequest", "urllib3.response"), boto3_converse),
    "langchain-aws": (
        "langchain-aws",
        ("langchain_aws", "boto3", "botocore.awsrequest", "urllib3.response"),
        langchain_aws,
    ),
}

if __name__ == "__main__":
    # Keeps litellm's import from fetching its price list over the network.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    sys.exit(main())
