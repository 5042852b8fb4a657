"""google-genai's side of ``guard_app.py``: its client, its tools and its streamed call.

google-genai keeps no stream object, so the app cannot ask it for its HTTP response; it records
the responses its HTTP client received (an ``event_hooks`` hook) to tell whether they are
closed. Async turns go through an ``httpx.AsyncClient`` the app hands the SDK: without one,
google-genai streams through aiohttp when it is installed, and aiohttp's session takes no hooks.
Sync turns give the tools as ``types.Tool`` objects, async turns as dicts: both are
shapes the app hands the SDK.
"""

from __future__ import annotations

from typing import Any


class Sent:
    """The HTTP responses the client received: closed when every one is."""

    def __init__(self) -> None:
        self.responses: list[Any] = []

    def record(self, response: Any) -> None:
        self.responses.append(response)

    async def record_async(self, response: Any) -> None:
        self.responses.append(response)

    @property
    def is_closed(self) -> bool:
        return bool(self.responses) and all(r.is_closed for r in self.responses)


def tools(case: dict[str, Any], asynchronous: bool) -> list[Any]:
    from google.genai import types

    declarations = [
        {"name": name, "parameters_json_schema": schema}
        for name, schema in case["tool_schemas"].items()
    ]
    if asynchronous:
        return [{"function_declarations": declarations}]
    made = [types.FunctionDeclaration(**declaration) for declaration in declarations]
    return [types.Tool(function_declarations=made)]


def client(case: dict[str, Any], asynchronous: bool, sent: Sent) -> Any:
    import httpx
    from google import genai
    from google.genai import types

    headers = {"x-callgate-mutate": case["kind"]} if case.get("kind") else {}
    options = types.HttpOptions(
        base_url=f"{case['base']}/f/{case['fixture']}/",
        headers=headers,
        client_args={"event_hooks": {"response": [sent.record]}},
        httpx_async_client=httpx.AsyncClient(event_hooks={"response": [sent.record_async]}),
        retry_options=types.HttpRetryOptions(attempts=1),
    )
    return genai.Client(api_key="k", http_options=options)


def request(case: dict[str, Any], made: Any) -> Any:
    """The SDK's generator (a coroutine of it, async): ``made`` is the sync client, which
    closes its HTTP clients when it goes, so the app keeps it for the async call too."""
    from google.genai import types

    asynchronous = case["mode"] == "async"
    config = types.GenerateContentConfig(tools=tools(case, asynchronous))
    models = made.aio.models if asynchronous else made.models
    return models.generate_content_stream(
        model="gemini-test", contents="Weather in Paris?", config=config
    )


def dump(item: Any) -> Any:
    """The response as the app reads it, without the HTTP headers the SDK copies onto each
    (they hold the server's clock)."""
    return item.model_dump(mode="json", warnings=False, exclude={"sdk_http_response"})
