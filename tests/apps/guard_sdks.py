"""The SDKs of ``guard_app.py`` besides openai and anthropic: google-genai, cohere, boto3,
litellm, ollama and mistralai.
Each has its client, its tools, its streamed call and its items' dump (``ADAPTERS``).

These SDKs keep no stream object, or keep its HTTP response private, so the app records the
responses its HTTP client received (an ``event_hooks`` hook, botocore's ``after-call`` event) to
tell whether they are closed. google-genai's async turns go through an ``httpx.AsyncClient``
the app hands the SDK: without one, google-genai streams through aiohttp when it is installed,
and aiohttp's session takes no hooks. Sync turns give google-genai the tools as ``types.Tool``
objects, async turns as dicts; mistralai gets dicts sync and its ``Tool`` models async: all are
shapes the app hands the SDK.
"""

from __future__ import annotations

import json
import os
from typing import Any


class Sent:
    """The HTTP responses the client received: closed when every one is."""

    def __init__(self) -> None:
        self.responses: list[Any] = []

    def record(self, response: Any) -> None:
        self.responses.append(response)

    async def record_async(self, response: Any) -> None:
        self.responses.append(response)

    def record_botocore(self, http_response: Any, **_: Any) -> None:
        self.responses.append(http_response.raw)

    @property
    def is_closed(self) -> bool:
        return bool(self.responses) and all(
            getattr(r, "is_closed", None) or getattr(r, "closed", False) for r in self.responses
        )


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


class Bedrock:
    """boto3's bedrock-runtime: ``converse_stream`` for the Bedrock Converse fixtures,
    ``invoke_model_with_response_stream`` (an Anthropic model) for the Anthropic ones."""

    @staticmethod
    def tools(case: dict[str, Any], asynchronous: bool) -> Any:
        schemas = case["tool_schemas"].items()
        if case["profile"] == "anthropic":
            return [{"name": name, "input_schema": schema} for name, schema in schemas]
        return {
            "tools": [{"toolSpec": {"name": n, "inputSchema": {"json": s}}} for n, s in schemas]
        }

    @staticmethod
    def client(case: dict[str, Any], sent: Sent) -> Any:
        import boto3

        made = boto3.client(
            "bedrock-runtime",
            region_name="us-east-1",
            endpoint_url=f"{case['base']}/f/{case['fixture']}",
            aws_access_key_id="k",
            aws_secret_access_key="s",
        )
        headers = mutation_headers(case)

        def add_headers(request: Any, **_: Any) -> None:
            request.headers.update(headers)

        made.meta.events.register("before-send.bedrock-runtime", add_headers)
        made.meta.events.register("after-call.bedrock-runtime", sent.record_botocore)
        return made

    @staticmethod
    def request(case: dict[str, Any], made: Any, tools: Any) -> Any:
        """botocore's ``EventStream``, from the response."""
        if case["profile"] == "anthropic":
            body = {
                "anthropic_version": "bedrock-2023-05-31",
                "max_tokens": 64,
                "messages": [{"role": "user", "content": "Weather in Paris?"}],
                "tools": tools,
            }
            model = "anthropic.claude-test"
            return made.invoke_model_with_response_stream(modelId=model, body=json.dumps(body))[
                "body"
            ]
        messages = [{"role": "user", "content": [{"text": "Weather in Paris?"}]}]
        return made.converse_stream(modelId="m", messages=messages, toolConfig=tools)["stream"]

    @staticmethod
    def dump(item: Any) -> Any:
        return repr(item)


class LiteLLM:
    """litellm's ``completion(stream=True)`` and ``acompletion``, to an OpenAI-compatible
    server (litellm streams through openai-python's client there)."""

    @staticmethod
    def tools(case: dict[str, Any], asynchronous: bool) -> Any:
        return [
            {"type": "function", "function": {"name": name, "parameters": schema}}
            for name, schema in case["tool_schemas"].items()
        ]

    @staticmethod
    def client(case: dict[str, Any], sent: Sent) -> Any:
        """litellm has no client: its module is called."""
        os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # no fetch from the network
        import litellm

        return litellm

    @staticmethod
    def request(case: dict[str, Any], made: Any, tools: Any) -> Any:
        """litellm's ``CustomStreamWrapper`` (a coroutine of it, async)."""
        call = made.acompletion if case["mode"] == "async" else made.completion
        extra = {"tool_choice": case["tool_choice"]} if case.get("tool_choice") else {}
        return call(
            model="openai/m",
            api_base=f"{case['base']}/f/{case['fixture']}/v1",
            api_key="k",
            messages=[{"role": "user", "content": "Weather in Paris?"}],
            tools=tools,
            stream=True,
            max_retries=0,
            extra_headers=mutation_headers(case),
            **extra,
        )

    @staticmethod
    def response(stream: Any) -> Any:
        """The HTTP response of the openai stream litellm reads."""
        return stream.completion_stream.response

    @staticmethod
    def dump(item: Any) -> Any:
        """The chunk as the app reads it, without ``created``: litellm stamps it from its own
        clock when it makes the chunk, not from the wire."""
        return item.model_dump(mode="json", warnings=False, exclude={"created"})


class Ollama:
    @staticmethod
    def tools(case: dict[str, Any], asynchronous: bool) -> Any:
        return Cohere.tools(case, asynchronous)

    @staticmethod
    def client(case: dict[str, Any], sent: Sent) -> Any:
        import ollama

        host = f"{case['base']}/f/{case['fixture']}"
        headers = mutation_headers(case)
        if case["mode"] == "async":
            hooks: Any = {"response": [sent.record_async]}
            return ollama.AsyncClient(host=host, headers=headers, event_hooks=hooks)
        return ollama.Client(host=host, headers=headers, event_hooks={"response": [sent.record]})

    @staticmethod
    def request(case: dict[str, Any], made: Any, tools: Any) -> Any:
        """The SDK's generator (a coroutine of its async generator, async)."""
        messages = [{"role": "user", "content": "Weather in Paris?"}]
        return made.chat(model="m", messages=messages, tools=tools, stream=True)

    @staticmethod
    def dump(item: Any) -> Any:
        return item.model_dump(mode="json", warnings=False)


class Mistral:
    """mistralai's ``chat.stream`` and ``chat.stream_async``: the stream keeps its HTTP
    response. The SDK has no accumulation of a turn's calls: what it gives of them is the calls
    in its items (``calls``), each whole as Mistral sends them."""

    @staticmethod
    def tools(case: dict[str, Any], asynchronous: bool) -> Any:
        """Dicts for sync turns, the SDK's ``Tool`` models for async ones: both are shapes the
        app hands the SDK."""
        if not asynchronous:
            return Cohere.tools(case, asynchronous)
        from mistralai.client import models

        return [
            models.Tool(function=models.Function(name=name, parameters=schema))
            for name, schema in case["tool_schemas"].items()
        ]

    @staticmethod
    def client(case: dict[str, Any], sent: Sent) -> Any:
        from mistralai.client import Mistral as Client

        return Client(api_key="k", server_url=f"{case['base']}/f/{case['fixture']}")

    @staticmethod
    def request(case: dict[str, Any], made: Any, tools: Any) -> Any:
        """The SDK's ``EventStream`` (a coroutine of its ``EventStreamAsync``, async)."""
        call = made.chat.stream_async if case["mode"] == "async" else made.chat.stream
        extra = {"tool_choice": case["tool_choice"]} if case.get("tool_choice") else {}
        messages = [{"role": "user", "content": "Weather in Paris?"}]
        headers = mutation_headers(case)
        return call(model="m", messages=messages, tools=tools, http_headers=headers, **extra)

    @staticmethod
    def response(stream: Any) -> Any:
        return stream.response

    @staticmethod
    def dump(item: Any) -> Any:
        return item.model_dump(mode="json", warnings=False)

    @staticmethod
    def calls(items: list[Any]) -> list[list[Any]]:
        """(id, name, arguments) of each call in the items the app got, in order."""
        return [
            [call["id"], call["function"]["name"], call["function"]["arguments"]]
            for item in items
            for choice in item["data"]["choices"]
            for call in choice["delta"].get("tool_calls") or []
        ]


#: The SDK -> its adapter.
ADAPTERS: dict[str, Any] = {
    "google-genai": Gemini,
    "cohere": Cohere,
    "boto3": Bedrock,
    "litellm": LiteLLM,
    "ollama": Ollama,
    "mistralai": Mistral,
}
