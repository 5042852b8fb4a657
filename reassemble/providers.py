"""Which provider served an exchange, from its URL: the names the quirk registry uses.

A provider is who served a stream (openrouter, groq, azure-openai, ...); a profile is the wire
format it speaks (``callgate.reassemble.profiles``). Many providers speak one profile.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

#: Host suffix -> provider name (the names the quirk registry uses). First match wins.
_HOSTS: tuple[tuple[str, str], ...] = (
    ("api.openai.com", "openai"),
    (".openai.azure.com", "azure-openai"),
    (".cognitiveservices.azure.com", "azure-openai"),
    ("api.anthropic.com", "anthropic"),
    ("api.mistral.ai", "mistral"),
    ("openrouter.ai", "openrouter"),
    ("api.groq.com", "groq"),
    ("api.cerebras.ai", "cerebras"),
    ("api.cohere.com", "cohere"),
    ("api.cohere.ai", "cohere"),
    ("ollama.com", "ollama"),
    ("api.deepseek.com", "deepseek"),
    ("api.x.ai", "xai"),
    ("api.together.xyz", "together"),
    ("api.fireworks.ai", "fireworks"),
    ("api.avian.io", "avian"),
    ("api.z.ai", "zai"),
    ("api.writer.com", "writer"),
    ("ai-gateway.vercel.sh", "vercel-ai-gateway"),
    ("router.huggingface.co", "huggingface-router"),
    ("dashscope.aliyuncs.com", "alibaba-dashscope"),
    ("dashscope-intl.aliyuncs.com", "alibaba-dashscope"),
)


def provider_from_url(url: str) -> str | None:
    """The provider serving ``url``, when its host is a known one."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if host == "generativelanguage.googleapis.com" and "/openai/" in parts.path:
        return "gemini-openai-compat"
    if host.endswith("aiplatform.googleapis.com") and "/publishers/anthropic/" in parts.path:
        return "anthropic-vertex"
    if host.endswith("aiplatform.googleapis.com") and "/publishers/google/" in parts.path:
        return "gemini-vertex"
    if host == "generativelanguage.googleapis.com":
        return "gemini"
    if parts.port == 11434:
        return "ollama"
    if host.startswith("bedrock-runtime") and host.endswith(".amazonaws.com"):
        return "bedrock"  # bedrock-runtime.<region>.amazonaws.com, and its -fips hosts
    return next(
        (
            name
            for suffix, name in _HOSTS
            if host == suffix.lstrip(".")
            or host.endswith(suffix if suffix.startswith(".") else "." + suffix)
        ),
        None,
    )


@dataclass(frozen=True, kw_only=True)
class SdkRoute:
    """How the provider's official SDK is pointed elsewhere, for tapes: ``callgate_tape`` serves
    each route under ``/<name>/`` on loopback and sets ``base_url_variables`` to
    ``http://127.0.0.1:PORT/<name><sdk_path>``."""

    name: str
    #: Where recording forwards to by default.
    upstream: str
    #: The environment variables the SDK (and the frameworks over it) read a base URL from;
    #: empty when it reads none (pass ``callgate_tape.base_url(name)`` to the client instead).
    base_url_variables: tuple[str, ...]
    #: What the SDK expects after the host in its base URL (the OpenAI SDK's ``/v1``).
    sdk_path: str
    #: The API key variables the SDK reads; a replayed test gets a dummy key in the first when
    #: none of them is set (none for an API that takes no key).
    key_variables: tuple[str, ...]
    #: An error answer in the API's own shape (status, message), so its SDK raises the message.
    error_body: Callable[[int, str], dict[str, Any]]
    #: The request paths only this API has (a regular expression matched at the start), by
    #: which ``callgate tape serve`` tells a request's route; None for an API whose paths are
    #: another's (Mistral's are OpenAI's) or the first route's, which takes every path unclaimed.
    paths: str | None = None


def _openai_error(status: int, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": "callgate"}}


def _anthropic_error(status: int, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}


def _google_error(status: int, message: str) -> dict[str, Any]:
    return {"error": {"code": status, "message": message, "status": "INVALID_ARGUMENT"}}


def _ollama_error(status: int, message: str) -> dict[str, Any]:
    return {"error": message}


# Sources: openai-python and anthropic-sdk-python read OPENAI_BASE_URL / ANTHROPIC_BASE_URL;
# langchain-openai reads OPENAI_API_BASE first (langchain_openai/chat_models/base.py);
# google-genai reads GOOGLE_GEMINI_BASE_URL (google/genai/_base_url.py) and GEMINI_API_KEY or
# GOOGLE_API_KEY; mistralai reads no base URL variable (``Mistral(server_url=...)``);
# ollama-python reads OLLAMA_HOST (ollama/_client.py) and a local Ollama takes no key.
SDK_ROUTES: tuple[SdkRoute, ...] = (
    SdkRoute(
        name="openai",
        upstream="https://api.openai.com",
        base_url_variables=("OPENAI_BASE_URL", "OPENAI_API_BASE"),
        sdk_path="/v1",
        key_variables=("OPENAI_API_KEY",),
        error_body=_openai_error,
    ),
    SdkRoute(
        name="anthropic",
        upstream="https://api.anthropic.com",
        base_url_variables=("ANTHROPIC_BASE_URL",),
        sdk_path="",
        key_variables=("ANTHROPIC_API_KEY",),
        error_body=_anthropic_error,
        paths=r"/v1/messages\b",
    ),
    SdkRoute(
        name="mistral",
        upstream="https://api.mistral.ai",
        base_url_variables=(),
        sdk_path="",
        key_variables=("MISTRAL_API_KEY",),
        error_body=_openai_error,
    ),
    SdkRoute(
        name="gemini",
        upstream="https://generativelanguage.googleapis.com",
        base_url_variables=("GOOGLE_GEMINI_BASE_URL",),
        sdk_path="",
        key_variables=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        error_body=_google_error,
        paths=r"/v1(alpha|beta)/|.*:(stream)?[gG]enerateContent\b",
    ),
    SdkRoute(
        name="ollama",
        upstream="http://localhost:11434",
        base_url_variables=("OLLAMA_HOST",),
        sdk_path="",
        key_variables=(),
        error_body=_ollama_error,
        paths=r"/api/",
    ),
)


def route_of_path(path: str) -> SdkRoute:
    """The route whose API has request ``path`` (``/v1/messages``: Anthropic's); the first
    route, OpenAI's, whose paths other APIs copy, when no route claims it."""
    claims = (route for route in SDK_ROUTES if route.paths and re.match(route.paths, path))
    return next(claims, SDK_ROUTES[0])
