"""``callgate.guard(stream)`` with no ``tools=``: the openai and anthropic SDKs' streams keep the
request they sent, and the guard reads its tools and ``tool_choice`` there.

Run by ``tests/test_guard_request.py`` in the apps environment: ``APP_SERVE_URL`` is a
``callgate serve`` of the conformance fixtures, ``APP_CASES`` a JSON list of ``{"id", "sdk",
"fixture", "form", "tools", "tool_choice", "tools_given"}``; the form ``create``,
``stream`` (the helper), ``guarded`` (``create`` on a ``callgate.guarded`` client) or ``post``
(the guarded client's own ``post(..., stream=True)``). Prints
one JSON line per case: the turn's status and calls, or what was raised.
"""

from __future__ import annotations

from typing import Any

import anthropic
import openai
from app_cases import run_cases

import callgate

#: The forms whose stream comes back guarded from a ``callgate.guarded`` client.
GUARDED = ("guarded", "post")


def stream_of(case: dict[str, Any], url: str, asynchronous: bool) -> Any:
    """The SDK's stream (or its ``.stream()`` manager) of the case's turn."""
    base = f"{url}/f/{case['fixture']}"
    asked: dict[str, Any] = {"tools": case["tools"]}
    if case["tool_choice"] is not None:
        asked["tool_choice"] = case["tool_choice"]
    if case["sdk"] == "anthropic":
        client: Any = (anthropic.AsyncAnthropic if asynchronous else anthropic.Anthropic)(
            base_url=base, api_key="callgate-test", max_retries=0
        )
        message = {"model": "claude-sonnet-4-5", "max_tokens": 1024}
        message["messages"] = [{"role": "user", "content": "Weather in Oslo?"}]
        if case["form"] == "post":  # the client's own post, as a framework may call it
            return callgate.guarded(client).post(
                "/v1/messages",
                body={**message, **asked, "stream": True},
                cast_to=anthropic.types.Message,
                stream=True,
                stream_cls=(anthropic.AsyncStream if asynchronous else anthropic.Stream)[
                    anthropic.types.RawMessageStreamEvent
                ],
            )
        if case["form"] == "stream":
            return client.messages.stream(**message, **asked)
        return client.messages.create(**message, **asked, stream=True)
    client = (openai.AsyncOpenAI if asynchronous else openai.OpenAI)(
        base_url=f"{base}/v1", api_key="callgate-test", max_retries=0
    )
    if case["form"] == "guarded":  # its streams come back guarded, by the call's own arguments
        client = callgate.guarded(client)
    if case["sdk"] == "openai-responses":
        if case["form"] == "stream":
            return client.responses.stream(model="gpt-5.1", input="Weather in Oslo?", **asked)
        return client.responses.create(
            model="gpt-5.1", input="Weather in Oslo?", **asked, stream=True
        )
    chat = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Weather?"}]}
    if case["form"] == "post":  # litellm streams Chat Completions through the client's post
        return callgate.guarded(client).post(
            "/chat/completions",
            body={**chat, **asked, "stream": True},
            cast_to=openai.types.chat.ChatCompletion,
            stream=True,
            stream_cls=(openai.AsyncStream if asynchronous else openai.Stream)[
                openai.types.chat.ChatCompletionChunk
            ],
        )
    if case["form"] == "stream":
        return client.chat.completions.stream(**chat, **asked)
    return client.chat.completions.create(**chat, **asked, stream=True)


def outcome(guarded: Any) -> dict[str, Any]:
    return {
        "status": guarded.report.status.value,
        "calls": [[c.name, c.arguments] for c in guarded.calls],
    }


def run(case: dict[str, Any], url: str) -> dict[str, Any]:
    given = {"tools": case["tools"]} if case["tools_given"] else {}
    try:
        made = stream_of(case, url, False)
        if case["form"] == "stream":
            with callgate.guard(made, **given) as guarded:
                for _ in guarded:
                    pass
                return outcome(guarded)
        guarded = made if case["form"] in GUARDED else callgate.guard(made, **given)
        for _ in guarded:
            pass
        return outcome(guarded)
    except (callgate.Blocked, callgate.UsageError) as error:
        return {"raised": type(error).__name__, "line": str(error)}


async def run_async(case: dict[str, Any], url: str) -> dict[str, Any]:
    given = {"tools": case["tools"]} if case["tools_given"] else {}
    try:
        made = stream_of(case, url, True)
        if case["form"] == "stream":
            async with callgate.guard(made, **given) as guarded:
                async for _ in guarded:
                    pass
                return outcome(guarded)
        made = await made
        guarded = made if case["form"] in GUARDED else callgate.guard(made, **given)
        async for _ in guarded:
            pass
        return outcome(guarded)
    except (callgate.Blocked, callgate.UsageError) as error:
        return {"raised": type(error).__name__, "line": str(error)}


def main() -> None:
    run_cases(run, run_async)


if __name__ == "__main__":
    main()
