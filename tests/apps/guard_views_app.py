"""An app that streams through the SDK's response views of a ``callgate.guarded`` client, run
with the real SDKs (the apps environment) against ``callgate serve``; ``tests/test_guard_views.py``
drives it.

    guard_views_app.py < cases.json > results.json

Each case streams one turn: ``create(stream=True)`` through ``with_raw_response`` (the response,
then ``parse()``) or ``with_streaming_response`` (a with block around the response, then
``parse()``), the view taken on the resource (``client.chat.completions.with_raw_response``), on
the client (``client.with_raw_response.chat.completions``) or, for Chat Completions, on
``client.chat``; sync or async. The app runs its tools from the guarded stream's ``calls`` after
the loop. It also streams the turn from an unguarded client the same way, so the test can tell
the items apart. One interpreter runs every case; each result is printed under the case's id.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import sys
import traceback
from typing import Any

import callgate

MESSAGES = [{"role": "user", "content": "Weather in Paris?"}]
#: Where each profile's streaming method is, from the client.
RESOURCE = {
    "openai": ("chat", "completions"),
    "openai-responses": ("responses",),
    "anthropic": ("messages",),
}


def client_of(case: dict[str, Any], guarded: bool) -> Any:
    headers = {"x-callgate-mutate": case["kind"]} if case.get("kind") else None
    base = f"{case['base']}/f/{case['fixture']}"
    asynchronous = case["mode"] == "async"
    if case["profile"] == "anthropic":
        import anthropic

        made: Any = anthropic.AsyncAnthropic if asynchronous else anthropic.Anthropic
        base_url = base
    else:
        import openai

        made = openai.AsyncOpenAI if asynchronous else openai.OpenAI
        base_url = f"{base}/v1"
    client = made(base_url=base_url, api_key="k", max_retries=0, default_headers=headers)
    return callgate.guarded(client) if guarded else client


def create_of(case: dict[str, Any], client: Any) -> Any:
    """The view's ``create``: the view taken where the case says."""
    path, view = RESOURCE[case["profile"]], case["view"]
    at = {"client": 0, "chat": 1, "resource": len(path)}[case["where"]]
    found = client
    for name in (*path[:at], view, *path[at:]):
        found = getattr(found, name)
    return found.create


def arguments(case: dict[str, Any]) -> dict[str, Any]:
    schemas = case["tool_schemas"]
    if case["profile"] == "anthropic":
        tools = [{"name": n, "input_schema": s} for n, s in schemas.items()]
        return {"model": "m", "max_tokens": 64, "messages": MESSAGES, "tools": tools}
    if case["profile"] == "openai-responses":
        tools = [
            {"type": "function", "name": n, "parameters": s, "strict": False}
            for n, s in schemas.items()
        ]
        return {"model": "m", "input": "Weather in Paris?", "tools": tools}
    tools = [
        {"type": "function", "function": {"name": n, "parameters": s}} for n, s in schemas.items()
    ]
    return {"model": "m", "messages": MESSAGES, "tools": tools}


def dump(item: Any) -> Any:
    return item.model_dump(mode="json", warnings=False)


def streamed(case: dict[str, Any], guarded: bool) -> dict[str, Any]:
    create, items = create_of(case, client_of(case, guarded)), []
    seen: dict[str, Any] = {"items": items}
    try:
        if case["view"] == "with_raw_response":
            stream = create(**arguments(case), stream=True).parse()
            items += [dump(item) for item in stream]
        else:
            with create(**arguments(case), stream=True) as response:
                stream = response.parse()
                items += [dump(item) for item in stream]
    except callgate.Blocked as blocked:
        return seen | {"blocked": blocked.report.blocking_codes}
    return seen | ({"calls": calls_of(stream)} if guarded else {})


async def streamed_async(case: dict[str, Any], guarded: bool) -> dict[str, Any]:
    create, items = create_of(case, client_of(case, guarded)), []
    seen: dict[str, Any] = {"items": items}
    try:
        if case["view"] == "with_raw_response":
            stream = (await create(**arguments(case), stream=True)).parse()
            if inspect.isawaitable(stream):  # anthropic's async response parses async
                stream = await stream
            items += [dump(item) async for item in stream]
        else:
            async with create(**arguments(case), stream=True) as response:
                stream = await response.parse()
                items += [dump(item) async for item in stream]
    except callgate.Blocked as blocked:
        return seen | {"blocked": blocked.report.blocking_codes}
    return seen | ({"calls": calls_of(stream)} if guarded else {})


def calls_of(stream: Any) -> list[list[Any]]:
    return [[call.name, call.parsed_arguments] for call in stream.calls]


def run(case: dict[str, Any]) -> dict[str, Any]:
    if case["mode"] == "async":
        return {
            "guarded": asyncio.run(streamed_async(case, True)),
            "unguarded": asyncio.run(streamed_async(case, False)),
        }
    return {"guarded": streamed(case, True), "unguarded": streamed(case, False)}


def main() -> None:
    results = {}
    for case in json.load(sys.stdin):
        try:
            results[case["id"]] = run(case)
        except Exception:  # one case's crash is its result; the others still run
            results[case["id"]] = {"crash": traceback.format_exc()}
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
