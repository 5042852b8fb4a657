"""A user's app, in miniature: one streamed tool-call turn through a real provider SDK
(``openai-loop``: an agent loop of several, each turn in the report's ``turns``).

Run with the SDK virtualenv (``.venv-apps/bin/python``). Prints one JSON line: the arrival time of
each streamed event (seconds since the request started), the event kinds, the finish or stop
reason, the tool calls the SDK assembled, and the exception the SDK raised, if any.

    client.py openai|openai-loop|openai-responses|anthropic|mistral|gemini|ollama|cohere|bedrock|
              bedrock-invoke BASE_URL [--key KEY] [--prompt TEXT]
              [--header NAME=VALUE]
              [--tools SCHEMAS.json] [--turns N]

    client.py --batch

The batch form runs many turns in one interpreter, so the SDKs are imported once: each line of
standard input is one case, ``{"id": ID, "argv": [SDK, BASE_URL, ...]}`` with ``argv`` as the
one-turn form takes it, and each case's result is one line on standard output as soon as it
ends: ``{"id": ID, "report": REPORT}``, or ``{"id": ID, "crash": TRACEBACK}`` where the one-turn
form would have exited non-zero. A case's crash is its own result; the next case still runs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

TOOLS = {
    "get_weather": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    }
}


def openai_tools(schemas: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": name, "parameters": schema}}
        for name, schema in schemas.items()
    ]


def run_openai(args: argparse.Namespace, out: dict[str, Any]) -> None:
    import openai

    client = openai.OpenAI(
        base_url=args.base_url, api_key=args.key, max_retries=0, default_headers=args.headers
    )
    stream = client.chat.completions.create(
        model="gpt-4o-mini",
        stream=True,
        messages=[{"role": "user", "content": args.prompt}],
        tools=openai_tools(args.tools),
    )
    calls: dict[int, dict[str, str]] = {}
    for chunk in stream:
        out["times"].append(time.monotonic() - START)
        out["kinds"].append("chunk")
        for choice in chunk.choices:
            out["finish"] = choice.finish_reason or out["finish"]
            for call in choice.delta.tool_calls or []:
                slot = calls.setdefault(call.index or 0, {"name": "", "arguments": ""})
                slot["name"] += (call.function.name or "") if call.function else ""
                slot["arguments"] += (call.function.arguments or "") if call.function else ""
    out["tool_calls"] = list(calls.values())


def run_openai_loop(args: argparse.Namespace, out: dict[str, Any]) -> None:
    """An agent loop, as agent frameworks run one: each turn's tool calls are run (each answered
    ``"sunny"``) and sent back with the conversation, until a turn calls no tool or ``--turns``
    turns were made. ``out["turns"]``: each turn's finish reason, calls (with their ids) and
    text."""
    import openai

    client = openai.OpenAI(
        base_url=args.base_url, api_key=args.key, max_retries=0, default_headers=args.headers
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": args.prompt}]
    out["turns"] = []
    for _ in range(args.turns):
        turn = openai_loop_turn(client, messages, openai_tools(args.tools))
        out["turns"].append(turn)
        if not turn["tool_calls"]:
            return
        calls = [
            {
                "id": c["id"],
                "type": "function",
                "function": {k: c[k] for k in ("name", "arguments")},
            }
            for c in turn["tool_calls"]
        ]
        messages.append({"role": "assistant", "content": turn["text"] or None, "tool_calls": calls})
        messages += [{"role": "tool", "tool_call_id": c["id"], "content": "sunny"} for c in calls]


def openai_loop_turn(client: Any, messages: list[Any], tools: list[Any]) -> dict[str, Any]:
    """One streamed turn of the loop: its finish reason, calls accumulated by index, and text."""
    stream = client.chat.completions.create(
        model="gpt-4o-mini", stream=True, messages=messages, tools=tools
    )
    turn: dict[str, Any] = {"finish": None, "tool_calls": [], "text": ""}
    calls: dict[int, dict[str, str]] = {}
    for chunk in stream:
        for choice in chunk.choices:
            turn["finish"] = choice.finish_reason or turn["finish"]
            turn["text"] += choice.delta.content or ""
            for call in choice.delta.tool_calls or []:
                slot = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                slot["id"] += call.id or ""
                slot["name"] += (call.function.name or "") if call.function else ""
                slot["arguments"] += (call.function.arguments or "") if call.function else ""
    turn["tool_calls"] = list(calls.values())
    return turn


def run_openai_responses(args: argparse.Namespace, out: dict[str, Any]) -> None:
    import openai

    client = openai.OpenAI(
        base_url=args.base_url, api_key=args.key, max_retries=0, default_headers=args.headers
    )
    tools = [
        {"type": "function", "name": name, "parameters": schema}
        for name, schema in args.tools.items()
    ]
    stream = client.responses.create(model="gpt-5", input=args.prompt, tools=tools, stream=True)
    for event in stream:
        out["times"].append(time.monotonic() - START)
        out["kinds"].append(event.type)
        if event.type == "response.completed":
            out["finish"] = event.response.status
            out["tool_calls"] = [
                {"name": item.name, "arguments": item.arguments}
                for item in event.response.output
                if item.type == "function_call"
            ]


def run_anthropic(args: argparse.Namespace, out: dict[str, Any]) -> None:
    import anthropic

    client = anthropic.Anthropic(
        base_url=args.base_url, api_key=args.key, max_retries=0, default_headers=args.headers
    )
    tools = [{"name": name, "input_schema": schema} for name, schema in args.tools.items()]
    with client.messages.stream(
        model="claude-sonnet-4-5",
        max_tokens=256,
        tools=tools,
        messages=[{"role": "user", "content": args.prompt}],
    ) as stream:
        for event in stream:
            out["times"].append(time.monotonic() - START)
            out["kinds"].append(event.type)
        message = stream.get_final_message()
    out["finish"] = message.stop_reason
    out["tool_calls"] = [
        {"name": b.name, "input": b.input} for b in message.content if b.type == "tool_use"
    ]


def run_mistral(args: argparse.Namespace, out: dict[str, Any]) -> None:
    from mistralai.client import Mistral

    client = Mistral(api_key=args.key, server_url=args.base_url)
    stream = client.chat.stream(
        model="mistral-small-latest",
        http_headers=args.headers,
        messages=[{"role": "user", "content": args.prompt}],
        tools=openai_tools(args.tools),
    )
    calls = []
    for event in stream:
        out["times"].append(time.monotonic() - START)
        out["kinds"].append("chunk")
        for choice in event.data.choices:
            out["finish"] = choice.finish_reason or out["finish"]
            for call in choice.delta.tool_calls or []:
                calls.append({"name": call.function.name, "arguments": call.function.arguments})
    out["tool_calls"] = calls


def run_gemini(args: argparse.Namespace, out: dict[str, Any]) -> None:
    """google-genai: streams with ``alt=sse``; the calls are run after the turn, not per chunk."""
    from google import genai
    from google.genai import types

    client = genai.Client(
        api_key=args.key,
        http_options=types.HttpOptions(base_url=args.base_url, headers=args.headers),
    )
    tools = [
        types.Tool(
            function_declarations=[
                types.FunctionDeclaration(name=name, parameters_json_schema=schema)
                for name, schema in args.tools.items()
            ]
        )
    ]
    config = types.GenerateContentConfig(
        tools=tools, automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True)
    )
    calls = []
    for chunk in client.models.generate_content_stream(
        model="gemini-2.5-flash", contents=args.prompt, config=config
    ):
        out["times"].append(time.monotonic() - START)
        out["kinds"].append("chunk")
        for candidate in chunk.candidates or []:
            out["finish"] = candidate.finish_reason or out["finish"]
        calls += [{"name": call.name, "args": call.args} for call in chunk.function_calls or []]
    out["tool_calls"] = calls


def run_ollama(args: argparse.Namespace, out: dict[str, Any]) -> None:
    """ollama-python: each line is a ``ChatResponse``; calls arrive whole in ``message``."""
    import ollama

    client = ollama.Client(host=args.base_url, headers=args.headers)
    calls = []
    for part in client.chat(
        model="qwen3:8b",
        stream=True,
        tools=openai_tools(args.tools),
        messages=[{"role": "user", "content": args.prompt}],
    ):
        out["times"].append(time.monotonic() - START)
        out["kinds"].append("chunk")
        out["finish"] = part.done_reason or out["finish"]
        calls += [
            {"name": call.function.name, "arguments": dict(call.function.arguments)}
            for call in part.message.tool_calls or []
        ]
    out["tool_calls"] = calls


def run_cohere(args: argparse.Namespace, out: dict[str, Any]) -> None:
    """cohere-python v2 ``chat_stream``, accumulated as Cohere's streaming tool-use guide does:
    a call's arguments joined from ``tool-call-delta`` by its index."""
    import cohere

    client = cohere.ClientV2(api_key=args.key, base_url=args.base_url)
    calls: dict[int, dict[str, str]] = {}
    for event in client.chat_stream(
        model="command-a-03-2025",
        tools=openai_tools(args.tools),
        messages=[{"role": "user", "content": args.prompt}],
    ):
        out["times"].append(time.monotonic() - START)
        out["kinds"].append(event.type)
        if event.type == "tool-call-start":
            call = event.delta.message.tool_calls
            calls[event.index] = {
                "name": call.function.name,
                "arguments": call.function.arguments or "",
            }
        elif event.type == "tool-call-delta":
            calls[event.index]["arguments"] += event.delta.message.tool_calls.function.arguments
        elif event.type == "message-end":
            out["finish"] = event.delta.finish_reason
    out["tool_calls"] = list(calls.values())


def bedrock_client(args: argparse.Namespace) -> Any:
    import boto3

    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=args.base_url,
        aws_access_key_id="AKIDCALLGATETEST",
        aws_secret_access_key="secret",
    )
    for name, value in args.headers.items():  # boto3 takes extra headers through an event hook
        client.meta.events.register(
            "before-send.bedrock-runtime.*",
            lambda request, name=name, value=value, **_: request.headers.__setitem__(name, value),
        )
    return client


def run_bedrock(args: argparse.Namespace, out: dict[str, Any]) -> None:
    """boto3 ``converse_stream``, accumulated as the AWS examples do: a call's input fragments
    joined per content block, parsed at ``contentBlockStop``."""
    response = bedrock_client(args).converse_stream(
        modelId="anthropic.claude-3-haiku-20240307-v1:0",
        messages=[{"role": "user", "content": [{"text": args.prompt}]}],
        toolConfig={
            "tools": [
                {"toolSpec": {"name": name, "inputSchema": {"json": schema}}}
                for name, schema in args.tools.items()
            ]
        },
    )
    calls: dict[int, dict[str, Any]] = {}
    for event in response["stream"]:
        out["times"].append(time.monotonic() - START)
        ((kind, payload),) = event.items()
        out["kinds"].append(kind)
        index = payload.get("contentBlockIndex")
        if kind == "contentBlockStart" and "toolUse" in payload["start"]:
            calls[index] = {"name": payload["start"]["toolUse"]["name"], "input": ""}
        elif kind == "contentBlockDelta" and "toolUse" in payload["delta"]:
            calls[index]["input"] += payload["delta"]["toolUse"]["input"]
        elif kind == "messageStop":
            out["finish"] = payload["stopReason"]
    out["tool_calls"] = [
        {"name": c["name"], "input": json.loads(c["input"] or "{}")} for c in calls.values()
    ]


def run_bedrock_invoke(args: argparse.Namespace, out: dict[str, Any]) -> None:
    """boto3 ``invoke_model_with_response_stream`` with an Anthropic model: each chunk's bytes is
    an Anthropic event."""
    body = {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 256,
        "messages": [{"role": "user", "content": args.prompt}],
        "tools": [{"name": name, "input_schema": schema} for name, schema in args.tools.items()],
    }
    response = bedrock_client(args).invoke_model_with_response_stream(
        modelId="anthropic.claude-3-haiku-20240307-v1:0", body=json.dumps(body)
    )
    calls: dict[int, dict[str, Any]] = {}
    for event in response["body"]:
        out["times"].append(time.monotonic() - START)
        chunk = json.loads(event["chunk"]["bytes"])
        out["kinds"].append(chunk["type"])
        if chunk["type"] == "content_block_start" and chunk["content_block"]["type"] == "tool_use":
            calls[chunk["index"]] = {"name": chunk["content_block"]["name"], "input": ""}
        elif chunk["type"] == "content_block_delta" and chunk["index"] in calls:
            calls[chunk["index"]]["input"] += chunk["delta"].get("partial_json", "")
        elif chunk["type"] == "message_delta":
            out["finish"] = chunk["delta"]["stop_reason"]
    out["tool_calls"] = [
        {"name": c["name"], "input": json.loads(c["input"] or "{}")} for c in calls.values()
    ]


#: When the current turn's request started: the times in a report count from here.
START = time.monotonic()
RUNNERS = {
    "openai": run_openai,
    "openai-loop": run_openai_loop,
    "openai-responses": run_openai_responses,
    "anthropic": run_anthropic,
    "mistral": run_mistral,
    "gemini": run_gemini,
    "ollama": run_ollama,
    "cohere": run_cohere,
    "bedrock": run_bedrock,
    "bedrock-invoke": run_bedrock_invoke,
}


def parser(exit_on_error: bool) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(exit_on_error=exit_on_error)
    parser.add_argument("sdk", choices=list(RUNNERS))
    parser.add_argument("base_url")
    parser.add_argument("--key", default="sk-test-0000000000000000")
    parser.add_argument("--prompt", default="What is the weather in Oslo?")
    parser.add_argument("--header", action="append", default=[])
    parser.add_argument("--tools", help="JSON file: tool name -> argument schema")
    parser.add_argument("--turns", type=int, default=4, help="openai-loop: its turn limit")
    return parser


def turn(argv: list[str], exit_on_error: bool = True) -> dict[str, Any]:
    """One turn as ``argv`` describes it: the report (what the SDK raised is in it)."""
    global START
    args = parser(exit_on_error).parse_args(argv)
    args.tools = json.loads(Path(args.tools).read_text()) if args.tools else TOOLS
    args.headers = dict(h.split("=", 1) for h in args.header)
    out: dict[str, Any] = {
        "times": [],
        "kinds": [],
        "finish": None,
        "tool_calls": [],
        "error": None,
    }
    START = time.monotonic()
    try:
        RUNNERS[args.sdk](args, out)
    except Exception as error:  # the point: record what the SDK raises
        out["error"] = {"type": type(error).__name__, "message": str(error)[:300]}
    return out


def batch() -> None:
    """Each case on standard input in turn, one line each, until its end."""
    for text in sys.stdin:
        case = json.loads(text)
        try:
            line = {"id": case["id"], "report": turn(case["argv"], exit_on_error=False)}
        except (Exception, SystemExit) as error:  # the case's result, not the batch's
            line = {"id": case["id"], "crash": "".join(traceback.format_exception(error))}
        print(json.dumps(line, default=str), flush=True)


def main() -> None:
    if sys.argv[1:] == ["--batch"]:
        batch()
    else:
        print(json.dumps(turn(sys.argv[1:]), default=str))


if __name__ == "__main__":
    main()
