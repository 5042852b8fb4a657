"""``callgate.transport()`` under the real openai and anthropic SDKs: each case's turn read
through a client whose ``http_client`` carries the transport, and again through a plain client.

Run by ``tests/test_transport_sdk.py`` in the apps environment: ``APP_SERVE_URL`` is a
``callgate serve`` of the conformance fixtures, ``APP_CASES`` a JSON list of ``{"id", "sdk",
"fixture", "form", "tools"}``; the form ``create`` (``stream=True``), ``stream`` (the helper),
``post`` (the client's own ``post(..., stream=True)``, as litellm calls it) or ``raw``
(``with_raw_response``, then ``parse()``). Prints one JSON line per case, sync and async: what
the app saw through the transport, whether it is what it saw without it, what was raised, and
the verdicts the transport told.
"""

from __future__ import annotations

import inspect
from typing import Any

import anthropic
import httpx
import httpx2
import openai
from app_cases import run_cases

import callgate

PROMPT = [{"role": "user", "content": "Weather in Oslo?"}]


def library(case: dict[str, Any]) -> Any:
    """The HTTP library the case's SDK builds on: httpx2 for anthropic's 2.x, httpx for openai."""
    return httpx2 if case["sdk"] == "anthropic" else httpx


def client_of(case: dict[str, Any], url: str, asynchronous: bool, gated: bool) -> Any:
    """The case's SDK client, its ``http_client`` carrying callgate's transport when ``gated``
    (its verdicts told to ``VERDICTS``)."""
    base = f"{url}/f/{case['fixture']}"
    web = library(case)
    http_client: Any = None
    if gated:
        settings = {"library": web.__name__, "on_verdict": told}
        if asynchronous:
            http_client = web.AsyncClient(transport=callgate.async_transport(**settings))
        else:
            http_client = web.Client(transport=callgate.transport(**settings))
    options = {"api_key": "callgate-test", "max_retries": 0, "http_client": http_client}
    if case["sdk"] == "anthropic":
        made = anthropic.AsyncAnthropic if asynchronous else anthropic.Anthropic
        return made(base_url=base, **options)
    made = openai.AsyncOpenAI if asynchronous else openai.OpenAI
    return made(base_url=f"{base}/v1", **options)


def request_of(case: dict[str, Any]) -> tuple[Any, str, dict[str, Any], Any, Any]:
    """(the resource, the post path, the request, its model, its stream item type)."""
    tools = case["tools"]
    if case["sdk"] == "anthropic":
        asked = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": PROMPT}
        types = anthropic.types
        return (
            "messages",
            "/v1/messages",
            {**asked, "tools": tools},
            types.Message,
            (types.RawMessageStreamEvent),
        )
    if case["sdk"] == "openai-responses":
        asked = {"model": "gpt-5.1", "input": "Weather in Oslo?", "tools": tools}
        types = openai.types.responses
        return "responses", "/responses", asked, types.Response, types.ResponseStreamEvent
    asked = {"model": "gpt-4o-mini", "messages": PROMPT, "tools": tools}
    chat = openai.types.chat
    return "chat", "/chat/completions", asked, chat.ChatCompletion, chat.ChatCompletionChunk


VERDICTS: list[Any] = []


def told(report: Any) -> None:
    VERDICTS.append([report.status.value, report.blocking_codes])


def seen(item: Any) -> Any:
    return item.model_dump(mode="json") if hasattr(item, "model_dump") else repr(item)


def resource(client: Any, name: str) -> Any:
    return client.chat.completions if name == "chat" else getattr(client, name)


def read(case: dict[str, Any], client: Any) -> list[Any]:
    name, path, asked, model, item = request_of(case)
    form = case["form"]
    if form == "stream":
        with resource(client, name).stream(**asked) as stream:
            return [seen(event) for event in stream]
    if form == "post":
        stream_cls = (anthropic.Stream if case["sdk"] == "anthropic" else openai.Stream)[item]
        made = client.post(
            path, body={**asked, "stream": True}, cast_to=model, stream=True, stream_cls=stream_cls
        )
    elif form == "raw":
        made = resource(client, name).with_raw_response.create(**asked, stream=True).parse()
    else:
        made = resource(client, name).create(**asked, stream=True)
    return [seen(event) for event in made]


async def read_async(case: dict[str, Any], client: Any) -> list[Any]:
    name, path, asked, model, item = request_of(case)
    form = case["form"]
    if form == "stream":
        async with resource(client, name).stream(**asked) as stream:
            return [seen(event) async for event in stream]
    if form == "post":
        stream_cls = (anthropic.AsyncStream if case["sdk"] == "anthropic" else openai.AsyncStream)[
            item
        ]
        made = await client.post(
            path, body={**asked, "stream": True}, cast_to=model, stream=True, stream_cls=stream_cls
        )
    elif form == "raw":
        raw = await resource(client, name).with_raw_response.create(**asked, stream=True)
        made = raw.parse()  # the legacy raw response parses at once, even async
        if inspect.isawaitable(made):
            made = await made
    else:
        made = await resource(client, name).create(**asked, stream=True)
    return [seen(event) async for event in made]


def outcome(items: list[Any], direct: Any, raised: Exception | None) -> Any:
    verdicts = list(VERDICTS)
    VERDICTS.clear()
    return {
        "items": len(items),
        "same": items == direct,
        "raised": None if raised is None else [type(raised).__name__, str(raised)],
        "verdicts": verdicts,
    }


def run(case: dict[str, Any], url: str) -> Any:
    try:
        direct: Any = read(case, client_of(case, url, False, gated=False))
    except Exception as error:  # the SDK's own refusal of a broken turn
        direct = repr(error)
    items: list[Any] = []
    try:
        items = read(case, client_of(case, url, False, gated=True))
    except Exception as error:
        return outcome(items, direct, error)
    return outcome(items, direct, None)


async def run_async(case: dict[str, Any], url: str) -> Any:
    try:
        direct: Any = await read_async(case, client_of(case, url, True, gated=False))
    except Exception as error:
        direct = repr(error)
    items: list[Any] = []
    try:
        items = await read_async(case, client_of(case, url, True, gated=True))
    except Exception as error:
        return outcome(items, direct, error)
    return outcome(items, direct, None)


def main() -> None:
    run_cases(run, run_async)


if __name__ == "__main__":
    main()
