"""Which provider served an exchange, from its URL: the names the quirk registry uses.

A provider is who served a stream (openrouter, groq, azure-openai, ...); a profile is the wire
format it speaks (``callgate.reassemble.profiles``). Many providers speak one profile.
"""

from __future__ import annotations

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
    return next((name for suffix, name in _HOSTS if host == suffix.lstrip(".")
                 or host.endswith(suffix if suffix.startswith(".") else "." + suffix)), None)
