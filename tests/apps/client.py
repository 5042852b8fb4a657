"""A user's app, in miniature: one streamed tool-call turn through a real provider SDK.

Run with the SDK virtualenv (``.venv-apps/bin/python``). Prints one JSON line: the arrival time of
each streamed event (seconds since the request started), the event kinds, the finish or stop
reason, the tool calls the SDK assembled, and the exception the SDK raised, if any.

    client.py openai|openai-responses|anthropic|mistral|gemini|ollama BASE_URL [--key KEY]
              [--prompt TEXT]
              [--header NAME=VALUE]
              [--tools SCHEMAS.json]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

TOOLS = {"get_weather": {"type": "object", "properties": {"city": {"type": "string"}},
                         "required": ["city"]}}


def openai_tools(schemas: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": name, "parameters": schema}}
            for name, schema in schemas.items()]


def run_openai(args: argparse.Namespace, out: dict[str, Any]) -> None:
    import openai

    client = openai.OpenAI(base_url=args.base_url, api_key=args.key, max_retries=0,
                           default_headers=args.headers)
    stream = client.chat.completions.create(
        model="gpt-4o-mini", stream=True, messages=[{"role": "user", "content": args.prompt}],
        tools=openai_tools(args.tools))
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


def run_openai_responses(args: argparse.Namespace, out: dict[str, Any]) -> None:
    import openai

    client = openai.OpenAI(base_url=args.base_url, api_key=args.key, max_retries=0,
                           default_headers=args.headers)
    tools = [{"type": "function", "name": name, "parameters": schema}
             for name, schema in args.tools.items()]
    stream = client.responses.create(model="gpt-5", input=args.prompt, tools=tools, stream=True)
    for event in stream:
        out["times"].append(time.monotonic() - START)
        out["kinds"].append(event.type)
        if event.type == "response.completed":
            out["finish"] = event.response.status
            out["tool_calls"] = [{"name": item.name, "arguments": item.arguments}
                                 for item in event.response.output
                                 if item.type == "function_call"]


def run_anthropic(args: argparse.Namespace, out: dict[str, Any]) -> None:
    import anthropic

    client = anthropic.Anthropic(base_url=args.base_url, api_key=args.key, max_retries=0,
                                 default_headers=args.headers)
    tools = [{"name": name, "input_schema": schema} for name, schema in args.tools.items()]
    with client.messages.stream(model="claude-sonnet-4-5", max_tokens=256, tools=tools,
                                messages=[{"role": "user", "content": args.prompt}]) as stream:
        for event in stream:
            out["times"].append(time.monotonic() - START)
            out["kinds"].append(event.type)
        message = stream.get_final_message()
    out["finish"] = message.stop_reason
    out["tool_calls"] = [{"name": b.name, "input": b.input} for b in message.content
                         if b.type == "tool_use"]


def run_mistral(args: argparse.Namespace, out: dict[str, Any]) -> None:
    from mistralai.client import Mistral

    client = Mistral(api_key=args.key, server_url=args.base_url)
    stream = client.chat.stream(model="mistral-small-latest", http_headers=args.headers,
                                messages=[{"role": "user", "content": args.prompt}],
                                tools=openai_tools(args.tools))
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

    client = genai.Client(api_key=args.key, http_options=types.HttpOptions(
        base_url=args.base_url, headers=args.headers))
    tools = [types.Tool(function_declarations=[
        types.FunctionDeclaration(name=name, parameters_json_schema=schema)
        for name, schema in args.tools.items()])]
    config = types.GenerateContentConfig(
        tools=tools, automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True))
    calls = []
    for chunk in client.models.generate_content_stream(model="gemini-2.5-flash",
                                                       contents=args.prompt, config=config):
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
    for part in client.chat(model="qwen3:8b", stream=True, tools=openai_tools(args.tools),
                            messages=[{"role": "user", "content": args.prompt}]):
        out["times"].append(time.monotonic() - START)
        out["kinds"].append("chunk")
        out["finish"] = part.done_reason or out["finish"]
        calls += [{"name": call.function.name, "arguments": dict(call.function.arguments)}
                  for call in part.message.tool_calls or []]
    out["tool_calls"] = calls


START = time.monotonic()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("sdk", choices=["openai", "openai-responses", "anthropic", "mistral",
                                        "gemini", "ollama"])
    parser.add_argument("base_url")
    parser.add_argument("--key", default="sk-test-0000000000000000")
    parser.add_argument("--prompt", default="What is the weather in Oslo?")
    parser.add_argument("--header", action="append", default=[])
    parser.add_argument("--tools", help="JSON file: tool name -> argument schema")
    args = parser.parse_args()
    args.tools = json.loads(Path(args.tools).read_text()) if args.tools else TOOLS
    args.headers = dict(h.split("=", 1) for h in args.header)
    out: dict[str, Any] = {"times": [], "kinds": [], "finish": None, "tool_calls": [],
                           "error": None}
    try:
        runners = {"openai": run_openai, "openai-responses": run_openai_responses,
                   "anthropic": run_anthropic, "mistral": run_mistral, "gemini": run_gemini,
                   "ollama": run_ollama}
        runners[args.sdk](args, out)
    except Exception as error:  # the point: record what the SDK raises
        out["error"] = {"type": type(error).__name__, "message": str(error)[:300]}
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main()
