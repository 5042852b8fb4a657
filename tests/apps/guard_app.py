"""An app that gates its tool calls with ``callgate.guard``, run with the real SDKs (the apps
environment) against ``callgate serve``; ``tests/test_guard_sdk.py`` drives it.

    guard_app.py SDK < cases.json > results.json

Each case (a JSON object) streams one turn from the server: its fixture, its mutation, sync or
async, and how the stream is got and guarded (``form``): ``create`` (the SDK's ``Stream`` from
``create(stream=True)``, given to ``guard``), ``stream`` (the SDK's ``.stream()`` helper, given
to ``guard``), ``client-create`` and ``client-stream`` (the same calls through
``callgate.guarded(client)``). After the loop the app runs its tools: from ``g.calls``, or from
the SDK's own final message for a helper. ``compare`` also streams the turn without the guard,
so the test can tell the items apart; ``leave`` leaves the loop after the first item, by
``break`` or by raising. One interpreter runs every case of one SDK: its result is printed
under the case's id, with the traceback of a case that crashed.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import io
import json
import sys
import traceback
from typing import Any

from guard_sdks import ADAPTERS, Sent

import callgate

MESSAGES = [{"role": "user", "content": "Weather in Paris?"}]


def dump(item: Any, case: dict[str, Any]) -> Any:
    if case["sdk"] in ADAPTERS:
        return ADAPTERS[case["sdk"]].dump(item)
    dumped = getattr(item, "model_dump", None)
    return dumped(mode="json", warnings=False) if callable(dumped) else repr(item)


class Tools:
    """The app's tool runner: what it was asked to run."""

    def __init__(self) -> None:
        self.ran: list[Any] = []

    def run(self, name: str, arguments: Any) -> None:
        self.ran.append([name, arguments])


# -- the SDKs' calls --------------------------------------------------------------------------


def sdk_tools(case: dict[str, Any]) -> Any:
    schemas = case["tool_schemas"]
    if case["sdk"] in ADAPTERS:
        return ADAPTERS[case["sdk"]].tools(case, case["mode"] == "async")
    if case["profile"] == "anthropic":
        return [{"name": n, "input_schema": s} for n, s in schemas.items()]
    if case["profile"] == "openai-responses":
        return [
            {"type": "function", "name": n, "parameters": s, "strict": False}
            for n, s in schemas.items()
        ]
    return [
        {"type": "function", "function": {"name": n, "parameters": s}} for n, s in schemas.items()
    ]


def client_of(case: dict[str, Any], asynchronous: bool) -> Any:
    headers = {"x-callgate-mutate": case["kind"]} if case.get("kind") else None
    base = f"{case['base']}/f/{case['fixture']}"
    if case["sdk"] in ADAPTERS:
        case["sent"] = Sent()
        return ADAPTERS[case["sdk"]].client(case, case["sent"])
    if case["profile"] == "anthropic":
        import anthropic

        made = anthropic.AsyncAnthropic if asynchronous else anthropic.Anthropic
        return made(base_url=base, api_key="k", max_retries=0, default_headers=headers)
    import openai

    made = openai.AsyncOpenAI if asynchronous else openai.OpenAI
    return made(base_url=f"{base}/v1", api_key="k", max_retries=0, default_headers=headers)


def request(case: dict[str, Any], client: Any, helper: bool) -> Any:
    """The SDK's stream (a coroutine of it for an async ``create``), or its helper's manager."""
    if case["sdk"] in ADAPTERS:
        return ADAPTERS[case["sdk"]].request(case, client, sdk_tools(case))
    tools, extra = sdk_tools(case), ({} if helper else {"stream": True})
    if case.get("tool_choice") is not None:
        extra["tool_choice"] = case["tool_choice"]
    if case["profile"] == "anthropic":
        call = client.messages.stream if helper else client.messages.create
        return call(model="m", max_tokens=64, messages=MESSAGES, tools=tools, **extra)
    if case["profile"] == "openai-responses":
        call = client.responses.stream if helper else client.responses.create
        return call(model="m", input="Weather in Paris?", tools=tools, **extra)
    call = client.chat.completions.stream if helper else client.chat.completions.create
    return call(model="m", messages=MESSAGES, tools=tools, **extra)


def final_calls(case: dict[str, Any], final: Any) -> list[list[Any]]:
    """(id, name, arguments) of each call in the SDK's own accumulation of the turn: the
    argument text, or the parsed input where the SDK keeps no text (anthropic)."""
    if case["profile"] == "anthropic":
        return [[b.id, b.name, b.input] for b in final.content if b.type == "tool_use"]
    if case["profile"] == "openai-responses":
        return [call for item in final.output for call in responses_call(item)]
    return [
        [c.id, c.function.name, c.function.arguments]
        for choice in final.choices
        for c in choice.message.tool_calls or []
    ]


#: Built-in call item type -> its tool's name and the members its input is made of, as
#: callgate reports such a call (``reassemble/profiles/responses_builtins.py``).
BUILTIN_ITEMS = {
    "shell_call": ("shell", ("action",)),
    "apply_patch_call": ("apply_patch", ("operation",)),
    "local_shell_call": ("local_shell", ("action",)),
    "computer_call": ("computer", ("action", "actions")),
}


def responses_call(item: Any) -> list[list[Any]]:
    """An output item of the SDK's final response as (id, name, input): a function's argument
    text, a custom tool's input, a built-in tool's input members as the wire gave them."""
    if item.type == "function_call":
        return [[item.call_id, item.name, item.arguments]]
    if item.type == "custom_tool_call":
        return [[item.call_id, item.name, item.input]]
    if item.type not in BUILTIN_ITEMS:
        return []
    name, members = BUILTIN_ITEMS[item.type]
    wire = item.model_dump(mode="json", exclude_unset=True)
    given = {member: wire[member] for member in members if member in wire}
    text = json.dumps(given, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return [[item.call_id, name, text]]


def final_of(stream: Any) -> Any:
    for name in ("get_final_message", "get_final_completion", "get_final_response"):
        if hasattr(type(stream._stream if hasattr(stream, "_stream") else stream), name):
            return getattr(stream, name)()
    raise AssertionError("no final accumulation")


def guard(case: dict[str, Any], stream: Any, tools: list[Any]) -> Any:
    return callgate.guard(
        stream, tools, provider=case.get("provider"), tool_choice=case.get("tool_choice")
    )


def guarded_client(case: dict[str, Any], client: Any) -> Any:
    return callgate.guarded(client, provider=case.get("provider"))


# -- one turn, sync ---------------------------------------------------------------------------


def unguarded(case: dict[str, Any]) -> dict[str, Any]:
    client, helper = client_of(case, False), "stream" in case["form"]
    made = request(case, client, helper)
    out: dict[str, Any] = {"items": []}
    try:
        if helper:
            with made as stream:
                for item in stream:
                    out["items"].append(dump(item, case))
                out["sdk_calls"] = final_calls(case, final_of(stream))
        else:
            for item in made:
                out["items"].append(dump(item, case))
            items_calls(case, out)
    except Exception as error:
        out["error"] = type(error).__name__
    return out


def guarded(case: dict[str, Any]) -> dict[str, Any]:
    client, helper = client_of(case, False), "stream" in case["form"]
    through_client = case["form"].startswith("client")
    tools, runner = sdk_tools(case), Tools()
    made = request(case, guarded_client(case, client) if through_client else client, helper)
    if not through_client:
        made = guard(case, made, tools)
    out: dict[str, Any] = {"items": []}
    if helper:
        with made as stream:
            run_sync(case, stream, runner, out, helper=True)
    else:
        run_sync(case, made, runner, out, helper=False)
    out["ran"] = runner.ran
    return out


def run_sync(
    case: dict[str, Any], stream: Any, runner: Tools, out: dict[str, Any], *, helper: bool
) -> None:
    response = response_of(case, stream)
    try:
        for item in stream:
            out["items"].append(dump(item, case))
            if case.get("leave") == "break":
                break
            if case.get("leave") == "raise":
                raise LookupError("the app's own")
        if case.get("leave"):
            out["closed"] = response.is_closed
            return
        ran_from(case, stream, runner, out, helper)
    except callgate.Blocked as blocked:
        out["blocked"] = blocked_of(blocked)
    except LookupError:
        out["raised"] = True
    except Exception as error:
        out["error"] = type(error).__name__
    out["closed"] = response.is_closed


def response_of(case: dict[str, Any], stream: Any) -> Any:
    """The HTTP response of the turn, or what tells whether it is closed."""
    if hasattr(ADAPTERS.get(case["sdk"]), "response"):
        return ADAPTERS[case["sdk"]].response(stream)
    if "sent" in case:
        return case["sent"]
    return stream.response if hasattr(stream, "response") else stream._response


def ran_from(
    case: dict[str, Any], stream: Any, runner: Tools, out: dict[str, Any], helper: bool
) -> None:
    """The app runs its tools: from the SDK's own accumulation (a helper) or from ``calls``."""
    out["calls"] = [[c.id, c.name, c.arguments, c.parsed_arguments] for c in stream.calls]
    out["status"] = stream.report.status.value
    if helper:
        out["sdk_calls"] = final_calls(case, final_of(stream))
        for _, name, arguments in out["sdk_calls"]:
            runner.run(name, arguments)
    else:
        items_calls(case, out)
        for call in stream.calls:
            runner.run(call.name, call.parsed_arguments)


def items_calls(case: dict[str, Any], out: dict[str, Any]) -> None:
    """The calls in the items the app got, for an SDK that accumulates none itself but hands
    each call whole (mistralai): the SDK's own view of the turn's calls."""
    calls = getattr(ADAPTERS.get(case["sdk"]), "calls", None)
    if calls is not None:
        out["sdk_calls"] = calls(out["items"])


def blocked_of(blocked: callgate.Blocked) -> dict[str, Any]:
    return {
        "line": str(blocked),
        "codes": blocked.report.blocking_codes,
        "cause": type(blocked.__cause__).__name__ if blocked.__cause__ else None,
        "error_family": isinstance(blocked, callgate.CallgateError),
    }


# -- one turn, async --------------------------------------------------------------------------


async def unguarded_async(case: dict[str, Any]) -> dict[str, Any]:
    client, helper = client_of(case, True), "stream" in case["form"]
    made = request(case, client, helper)
    out: dict[str, Any] = {"items": []}
    try:
        if helper:
            async with made as stream:
                async for item in stream:
                    out["items"].append(dump(item, case))
                out["sdk_calls"] = final_calls(case, await final_of(stream))
        else:
            async for item in await opened(made):
                out["items"].append(dump(item, case))
            items_calls(case, out)
    except Exception as error:
        out["error"] = type(error).__name__
    return out


async def guarded_async(case: dict[str, Any]) -> dict[str, Any]:
    client, helper = client_of(case, True), "stream" in case["form"]
    through_client = case["form"].startswith("client")
    tools, runner = sdk_tools(case), Tools()
    made = request(case, guarded_client(case, client) if through_client else client, helper)
    out: dict[str, Any] = {"items": []}
    if helper:
        manager = made if through_client else guard(case, made, tools)
        async with manager as stream:
            await run_async(case, stream, runner, out, helper=True)
    else:
        stream = await opened(made)
        stream = stream if through_client else guard(case, stream, tools)
        await run_async(case, stream, runner, out, helper=False)
    out["ran"] = runner.ran
    return out


async def run_async(
    case: dict[str, Any], stream: Any, runner: Tools, out: dict[str, Any], *, helper: bool
) -> None:
    response = response_of(case, stream)
    try:
        async for item in stream:
            out["items"].append(dump(item, case))
            if case.get("leave") == "break":
                break
            if case.get("leave") == "raise":
                raise LookupError("the app's own")
        if case.get("leave"):
            await settle(response)
            out["closed"] = response.is_closed
            return
        out["calls"] = [[c.id, c.name, c.arguments, c.parsed_arguments] for c in stream.calls]
        out["status"] = stream.report.status.value
        if helper:
            out["sdk_calls"] = final_calls(case, await final_of(stream))
            for _, name, arguments in out["sdk_calls"]:
                runner.run(name, arguments)
        else:
            items_calls(case, out)
            for call in stream.calls:
                runner.run(call.name, call.parsed_arguments)
    except callgate.Blocked as blocked:
        out["blocked"] = blocked_of(blocked)
    except LookupError:
        await settle(response)
        out["raised"] = True
    except Exception as error:
        out["error"] = type(error).__name__
    out["closed"] = response.is_closed


async def opened(made: Any) -> Any:
    """The async stream: awaited from its coroutine (cohere's call gives it at once)."""
    return await made if inspect.isawaitable(made) else made


async def settle(response: Any) -> None:
    """An ``async for`` left early is closed when the event loop finalises its iteration: a
    few turns of the loop, not a wait on the clock."""
    for _ in range(10):
        if response.is_closed:
            return
        await asyncio.sleep(0)


# -- the batch --------------------------------------------------------------------------------


#: A tool the app did not give the SDK, in the SDK's shape, where guard() reads the request.
OTHER_TOOL = {
    "openai": {"type": "function", "function": {"name": "other", "parameters": {}}},
    "anthropic": {"name": "other", "input_schema": {"type": "object"}},
}


def other_operation(case: dict[str, Any], tools: Any) -> None:
    """botocore's ``EventStream`` of an operation that streams no model's turn."""
    from botocore.eventstream import EventStream

    callgate.guard(EventStream(io.BytesIO(b""), None, None, "SubscribeToShard"), tools)


def other_provider(case: dict[str, Any], tools: Any) -> None:
    """A litellm stream whose provider stream is litellm's own (Ollama's), not an SDK's."""
    import litellm

    stream = litellm.completion(
        model="ollama/llama3",
        api_base=f"{case['base']}/f/ollama/valid_single_call",
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        stream=True,
    )
    try:
        callgate.guard(stream, tools)
    finally:
        stream.completion_stream.close()


#: A stream of the SDK that guard() cannot read, made the SDK's own way.
OTHER_STREAM = {"boto3": other_operation, "litellm": other_provider}


def misuse(case: dict[str, Any]) -> dict[str, Any]:
    """The one-line ``UsageError`` of each misuse: no tools, a client where a stream belongs, a
    stream something read from already, an object that is no SDK client, a stream of the SDK
    that guard() cannot read (``OTHER_STREAM``)."""
    client, tools = client_of(case, False), sdk_tools(case)
    read_from = request(case, client, False)
    next(iter(read_from))
    attempts = {
        "no tools": lambda: callgate.guard(request(case, client, False)),
        "a client": lambda: callgate.guard(client, tools),
        "read from": lambda: callgate.guard(read_from, tools),
        "not a client": lambda: callgate.guarded(object()),
    }
    if case["sdk"] in OTHER_TOOL:
        other = [*tools, OTHER_TOOL[case["sdk"]]]
        attempts["other tools"] = lambda: callgate.guard(request(case, client, False), other)
    if case["sdk"] in OTHER_STREAM:
        attempts["another stream"] = lambda: OTHER_STREAM[case["sdk"]](case, tools)
    lines = {}
    for name, attempt in attempts.items():
        try:
            attempt()
        except callgate.UsageError as error:
            lines[name] = str(error)
    read_from.close()
    return {"guarded": lines}


def case_result(case: dict[str, Any]) -> dict[str, Any]:
    if case["form"] == "misuse":
        return misuse(case)
    if case["mode"] == "async":
        result = {"guarded": asyncio.run(guarded_async(case))}
        if case.get("compare"):
            result["unguarded"] = asyncio.run(unguarded_async(case))
        return result
    result = {"guarded": guarded(case)}
    if case.get("compare"):
        result["unguarded"] = unguarded(case)
    return result


def main() -> None:
    results = {}
    with contextlib.redirect_stdout(sys.stderr):  # what an SDK prints (litellm) is no result
        for case in json.load(sys.stdin):
            try:
                results[case["id"]] = case_result(case)
            except Exception:  # the case's failure, not the batch's
                results[case["id"]] = {"crash": traceback.format_exc()}
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
