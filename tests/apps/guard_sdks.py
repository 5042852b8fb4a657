"""The SDKs of ``guard_app.py`` that stream through a plain generator: google-genai and cohere.
Each has its client, its tools, its streamed call and its items' dump (``ADAPTERS``).

These SDKs keep no stream object, so the app cannot ask one for its HTTP response; it records
the responses its HTTP client received (an ``event_hooks`` hook) to tell whether they are
closed. google-genai's async turns go through an ``httpx.AsyncClient`` the app hands the SDK:
without one, google-genai streams through aiohttp when it is installed, and aiohttp's session
takes no hooks. Sync turns give google-genai the tools as ``types.Tool`` objects, async turns
as dicts: both are shapes the app hands the SDK.
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


def mutation_headers(case: dict[str, Any]) -> dict[str, str]:
    return {"x-callgate-mutate": case["kind"]} if case.get("kind") else {}


class Gemini:
    @staticmethod
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

    @staticmethod
    def client(case: dict[str, Any], sent: Sent) -> Any:
        """The sync client, kept for the async call too: it closes its HTTP clients when it
        goes."""
        import httpx
        from google import genai
        from google.genai import types

        options = types.HttpOptions(
            base_url=f"{case['base']}/f/{case['fixture']}/",
            headers=mutation_headers(case),
            client_args={"event_hooks": {"response": [sent.record]}},
            httpx_async_client=httpx.AsyncClient(event_hooks={"response": [sent.record_async]}),
            retry_options=types.HttpRetryOptions(attempts=1),
        )
        return genai.Client(api_key="k", http_options=options)

    @staticmethod
    def request(case: dict[str, Any], made: Any, tools: list[Any]) -> Any:
        """The SDK's generator (a coroutine of it, async)."""
        from google.genai import types

        config = types.GenerateContentConfig(tools=tools)
        models = made.aio.models if case["mode"] == "async" else made.models
        return models.generate_content_stream(
            model="gemini-test", contents="Weather in Paris?", config=config
        )

    @staticmethod
    def dump(item: Any) -> Any:
        """The response as the app reads it, without the HTTP headers the SDK copies onto each
        (they hold the server's clock)."""
        return item.model_dump(mode="json", warnings=False, exclude={"sdk_http_response"})


class Cohere:
    @staticmethod
    def tools(case: dict[str, Any], asynchronous: bool) -> list[Any]:
        return [
            {"type": "function", "function": {"name": name, "parameters": schema}}
            for name, schema in case["tool_schemas"].items()
        ]

    @staticmethod
    def client(case: dict[str, Any], sent: Sent) -> Any:
        import cohere
        import httpx

        base = f"{case['base']}/f/{case['fixture']}"
        headers = mutation_headers(case)
        if case["mode"] == "async":
            hooks: Any = {"response": [sent.record_async]}
            web: Any = httpx.AsyncClient(headers=headers, event_hooks=hooks)
            return cohere.AsyncClientV2(api_key="k", base_url=base, httpx_client=web)
        web = httpx.Client(headers=headers, event_hooks={"response": [sent.record]})
        return cohere.ClientV2(api_key="k", base_url=base, httpx_client=web)

    @staticmethod
    def request(case: dict[str, Any], made: Any, tools: list[Any]) -> Any:
        """The SDK's generator (async generator, async)."""
        messages = [{"role": "user", "content": "Weather in Paris?"}]
        return made.chat_stream(model="command-test", messages=messages, tools=tools)

    @staticmethod
    def dump(item: Any) -> Any:
        return item.model_dump(mode="json", warnings=False)


ADAPTERS: dict[str, Any] = {"gemini": Gemini, "cohere": Cohere}
