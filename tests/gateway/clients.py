"""The apps behind the gateway: the real openai and anthropic SDKs, one case after another in one
interpreter (.venv-gateway). Reads the cases as JSON on stdin, writes one JSON result per case:
what the SDK raised (its class), the turn's end as the app saw it, and the calls it assembled.

A case: ``{"name", "endpoint": "chat" | "messages" | "responses", "model", "tools",
"tool_choice", "prompt"}`` (``tool_choice`` sent when it is not null).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anthropic
import openai


def raised(error: BaseException) -> dict[str, Any]:
    return {"raised": f"{type(error).__module__}.{type(error).__name__}", "message": str(error)}


def asked(case: dict[str, Any]) -> dict[str, Any]:
    return {} if case.get("tool_choice") is None else {"tool_choice": case["tool_choice"]}


def chat(base: str, key: str, case: dict[str, Any]) -> dict[str, Any]:
    client = openai.OpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0)
    calls: dict[tuple[int, int], dict[str, Any]] = {}
    ended: list[str] = []
    result: dict[str, Any] = {"raised": None}
    try:
        stream = client.chat.completions.create(
            model=case["model"],
            stream=True,
            messages=[{"role": "user", "content": case["prompt"]}],
            tools=case["tools"],
            **asked(case),
        )
        for chunk in stream:
            for choice in chunk.choices:
                for delta in choice.delta.tool_calls or []:
                    slot = calls.setdefault(
                        (choice.index, delta.index), {"id": None, "name": None, "arguments": ""}
                    )
                    slot["id"] = slot["id"] or delta.id
                    if delta.function is not None:
                        slot["name"] = slot["name"] or delta.function.name
                        slot["arguments"] += delta.function.arguments or ""
                if choice.finish_reason:
                    ended.append(choice.finish_reason)
    except Exception as error:
        result = raised(error)
    return {**result, "ended": ended, "calls": [calls[k] for k in sorted(calls)]}


def messages(base: str, key: str, case: dict[str, Any]) -> dict[str, Any]:
    client = anthropic.Anthropic(base_url=base, api_key=key, max_retries=0)
    ended: list[str] = []
    calls: list[dict[str, Any]] = []
    result: dict[str, Any] = {"raised": None}
    try:
        with client.messages.stream(
            model=case["model"],
            max_tokens=100,
            messages=[{"role": "user", "content": case["prompt"]}],
            tools=case["tools"],
            **asked(case),
        ) as stream:
            for event in stream:
                if event.type in ("message_delta", "message_stop"):
                    ended.append(event.type)
            final = stream.get_final_message()
        calls = [
            {"id": b.id, "name": b.name, "arguments": json.dumps(b.input)}
            for b in final.content
            if b.type == "tool_use"
        ]
    except Exception as error:
        result = raised(error)
    return {**result, "ended": ended, "calls": calls}


#: Responses events that end the turn or hand the app a complete call.
RESPONSE_ENDS = {"response.completed", "response.function_call_arguments.done"}


def responses(base: str, key: str, case: dict[str, Any]) -> dict[str, Any]:
    """Plain iteration first (what it saw), then the ``stream()`` helper (what it raised)."""
    client = openai.OpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0)
    request = {"model": case["model"], "input": case["prompt"], "tools": case["tools"]}
    request |= asked(case)
    ended, failed = [], False
    try:
        for event in client.responses.create(stream=True, **request):
            item = getattr(event, "item", None)
            if event.type in RESPONSE_ENDS or (
                event.type == "response.output_item.done" and item.type == "function_call"
            ):
                ended.append(event.type)
            failed = failed or event.type == "response.failed"
    except Exception as error:
        return {**raised(error), "ended": ended, "calls": [], "failed": failed}
    result: dict[str, Any] = {"raised": None}
    calls: list[dict[str, Any]] = []
    try:
        with client.responses.stream(**request) as stream:
            for _ in stream:
                pass
            final = stream.get_final_response()
        calls = [
            {"id": o.call_id, "name": o.name, "arguments": o.arguments}
            for o in final.output
            if o.type == "function_call"
        ]
    except Exception as error:
        result = raised(error)
    return {**result, "ended": ended, "calls": calls, "failed": failed}


ENDPOINTS = {"chat": chat, "messages": messages, "responses": responses}


def main() -> None:
    base, key = sys.argv[1], sys.argv[2]
    for case in json.load(sys.stdin):
        result = ENDPOINTS[case["endpoint"]](base, key, case)
        print(json.dumps({"name": case["name"], **result}), flush=True)


if __name__ == "__main__":
    main()
