"""The values each command's options take, kept apart from the commands themselves: the CLI is
built from these without importing any command's module, so a command imports only what it
runs (``callgate check`` does not load the proxy, the scanner or the redactor to show its
options). Where a choice is a value of a module's own enum (``WebBody``, ``ArgumentMode``, the
scan's ``Kind``), this one holds the same values, converted by value in the command; a test
keeps the two equal."""

from __future__ import annotations

from enum import StrEnum


class ReportFormat(StrEnum):
    """``check --report``."""

    json = "json"
    text = "text"


class ReplayFormat(StrEnum):
    """``replay --report``."""

    text = "text"
    json = "json"
    junit = "junit"
    sarif = "sarif"
    html = "html"


class ScanFormat(StrEnum):
    """``scan --report``."""

    text = "text"
    sarif = "sarif"


class ScanKind(StrEnum):
    """``scan --kind``: ``callgate.redact.scanning.Kind``'s values."""

    CREDENTIAL = "credential"
    PROMPT = "prompt"
    OUTPUT = "output"


class AdapterName(StrEnum):
    """``diff --adapter``."""

    openai_python = "openai-python"
    anthropic_python = "anthropic-python"
    langchain = "langchain"
    litellm = "litellm"
    ollama_python = "ollama-python"
    cohere_python = "cohere-python"
    boto3 = "boto3"
    langchain_aws = "langchain-aws"
    vercel_ai = "vercel-ai"
    vercel_ai_anthropic = "vercel-ai-anthropic"


class DiffReport(StrEnum):
    """``diff --mutations --report``."""

    text = "text"
    markdown = "markdown"
    html = "html"


class OnError(StrEnum):
    """``record --on-error``."""

    #: A turn callgate cannot judge is blocked: the error event, never its end.
    block = "block"
    #: Availability first: its bytes go on unjudged.
    pass_ = "pass"


class ProxyMode(StrEnum):
    """``record --mode``."""

    #: The app points its base URL at the proxy; no CA needed.
    reverse = "reverse"
    #: The app uses ``HTTPS_PROXY`` and trusts callgate's mitmproxy CA.
    regular = "regular"


class WebBodyChoice(StrEnum):
    """``record --web-body``: ``callgate.proxy_addon.webview.WebBody``'s values."""

    redacted = "redacted"
    raw = "raw"
    none = "none"


class Arguments(StrEnum):
    """``--arguments``: ``callgate.redact.ArgumentMode``'s values."""

    MASK = "mask"
    KEEP = "keep"
    DROP = "drop"
