"""From a captured exchange (or an existing envelope) to a fixture that is safe to keep.

How this works, default deny: nothing from the exchange enters the envelope unless a rule here
keeps it. The request keeps its tools (as ``tool_schemas``) and a short list of non-prompt
parameters; prompts, system text, tool results and every other field are dropped, leaving only
counts. Headers keep a short allow-list of version pins; the query string is dropped whole. The
response keeps every event in order with its structure: ids become pseudonyms, free text is masked
to the same length, tool-call arguments are masked by ``callgate.redact.mask`` (or kept, or
dropped).
Then two gates, both before anything can be written: the verdict of the redacted envelope must
equal the verdict of the unredacted one, and no credential from the exchange, in any encoding,
nor any known credential format, may remain.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from callgate.reassemble import Report, check, strict_json
from callgate.reassemble.body import StreamBody, parse_stream_body
from callgate.reassemble.envelope import fixture_text
from callgate.reassemble.errors import NotApplicable, RedactionRefused
from callgate.reassemble.framing import WEBSOCKET
from callgate.reassemble.limits import DOCUMENT_LIMITS
from callgate.reassemble.profiles import (
    PROFILES,
    profile_for,
    profile_of_events,
    version_headers,
)
from callgate.reassemble.providers import provider_from_url
from callgate.reassemble.readers import event_value
from callgate.redact.exchange import Exchange
from callgate.redact.fragment_lines import FragmentLines
from callgate.redact.leaks import find_leaks, secrets_of
from callgate.redact.stream import (
    REQUEST_PARAMETERS,
    ArgumentMode,
    redacted_copy,
    request_parameters,
)

POLICY = {"name": "callgate-default", "version": 1}
#: Headers kept (into ``meta.headers``) because they pin versions and hold no secret.
KEPT_HEADERS = (
    "content-type",
    *version_headers(),
    "x-stainless-package-version",
    "x-stainless-lang",
    "x-stainless-runtime",
    "x-stainless-runtime-version",
)
_PRODUCT = re.compile(r"[A-Za-z][\w.-]*/[\w.+-]+")


@dataclass(frozen=True)
class Redacted:
    envelope: dict[str, Any]
    report: Report
    #: ``envelope`` as a fixture stores it (``callgate.reassemble.envelope.fixture_bytes``): the
    #: text the leak gate passed.
    data: bytes


def redact_exchange(
    exchange: Exchange,
    *,
    profile: str | None = None,
    provider: str | None = None,
    arguments: ArgumentMode = ArgumentMode.MASK,
    allow_verdict_change: bool = False,
    keep_text: bool = False,
    verdict: Report | None = None,
    body: StreamBody | None = None,
    lines: FragmentLines | None = None,
) -> Redacted:
    """The safe envelope for one exchange. ``keep_text`` keeps the model's free text (for
    tapes, which replay it to the app). ``verdict`` is the report the unredacted stream already
    got (the proxy judges it as it passes): the verdict gate compares with it instead of
    checking the unredacted envelope again. ``body``: the response body's events as they were
    already read (the proxy reads them as they pass), which spares parsing the body again.
    ``lines``: what wrote ``body``'s events (``FragmentLines.parse``), leaving out those it
    writes from a template; it needs the ``profile`` and the ``verdict``, since those events
    are not there to read. Raises ``NotApplicable`` or ``RedactionRefused``."""
    if lines is not None and (body is None or profile is None or verdict is None):
        raise ValueError("lines need the body they parsed, its profile and its verdict")
    provider = provider or provider_from_url(exchange.url)
    envelope = recorded_envelope(
        exchange, profile=profile, provider=provider, keep_text=keep_text, body=body
    )
    return _redacted(
        envelope,
        arguments,
        allow_verdict_change,
        secrets_of(exchange),
        pin_expectation=True,
        owned=True,
        keep_text=keep_text,
        before=verdict,
        lines=lines,
    )


def recorded_envelope(
    exchange: Exchange,
    *,
    profile: str | None = None,
    provider: str | None = None,
    keep_text: bool = False,
    body: StreamBody | None = None,
) -> dict[str, Any]:
    """The exchange as an envelope before any redaction: what ``check`` of the recorded turn
    judges. It holds prompts and secrets: never write it. Raises ``NotApplicable``."""
    provider = provider or provider_from_url(exchange.url)
    profile = profile or profile_for(exchange.url, provider)
    if body is None and exchange.messages is not None:
        _require_session(exchange)
        body = StreamBody([event_value(text) for text in exchange.messages], WEBSOCKET)
    elif body is None:
        body = _stream_body(exchange, profile)
    elif body.framing == WEBSOCKET:
        _require_session(exchange)
    else:
        _require_stream(exchange)
    profile = profile or profile_of_events(body.events)
    if profile is None:
        raise NotApplicable(f"no profile reads endpoint {urlsplit(exchange.url).path or '/'}")
    request = request_json(exchange.request_body)
    envelope = _raw_envelope(profile, provider, request, body)
    envelope["meta"] = _meta(exchange, request, body, provider, keep_text)
    return envelope


def redact_envelope(
    envelope: Mapping[str, Any],
    *,
    arguments: ArgumentMode = ArgumentMode.MASK,
    allow_verdict_change: bool = False,
    secrets: Collection[str] = (),
    pin_expectation: bool = False,
) -> Redacted:
    """Redact an envelope's stream and request; idempotent. ``secrets`` are credential values
    from the capture that must not remain; ``pin_expectation`` writes the redacted verdict into
    ``expect``. Raises ``RedactionRefused`` when the verdict would change (unless allowed) or a
    secret remains, and ``callgate.reassemble.EnvelopeError`` for a non-envelope."""
    return _redacted(
        envelope,
        arguments,
        allow_verdict_change,
        secrets,
        pin_expectation=pin_expectation,
        owned=False,
    )


def _redacted(
    envelope: Mapping[str, Any],
    arguments: ArgumentMode,
    allow_verdict_change: bool,
    secrets: Collection[str],
    *,
    pin_expectation: bool,
    owned: bool,
    keep_text: bool = False,
    before: Report | None = None,
    lines: FragmentLines | None = None,
) -> Redacted:
    before = check(envelope) if before is None else before
    out = redacted_copy(envelope, arguments, owned=owned, keep_text=keep_text, lines=lines)
    after = check(out)
    preserved = _verdict(before) == _verdict(after)
    if not preserved and not allow_verdict_change:
        raise RedactionRefused(_change_message(before, after))
    redaction = out.setdefault("meta", {}).setdefault("redaction", {})
    # A verdict changed by an earlier pass stays changed: re-redacting must not launder it.
    preserved = preserved and redaction.get("verdict_preserved", True)
    redaction.update(
        {
            "policy": POLICY["name"],
            "policy_version": POLICY["version"],
            "arguments": arguments.value,
            "verdict_preserved": preserved,
        }
    )
    if keep_text:
        redaction["text"] = "keep"
    if not preserved:
        redaction["verdict_changed"] = True
        redaction.setdefault(
            "original_verdict", {"status": before.status.value, "codes": before.blocking_codes}
        )
    if pin_expectation:
        out["expect"] = {"status": after.status.value, "codes": after.blocking_codes}
    text = fixture_text(out, None if lines is None else lines.lines)
    refuse_leaks(out, secrets, text)
    return Redacted(out, after, text.encode())


def _verdict(report: Report) -> tuple[str, list[str]]:
    return report.status.value, report.blocking_codes


def _change_message(before: Report, after: Report) -> str:
    gained = sorted(
        {
            (f.choice, f.slot, f.code.value, f.detail.get("keyword", ""))
            for f in after.findings
            if f.blocking
        }
        - {
            (f.choice, f.slot, f.code.value, f.detail.get("keyword", ""))
            for f in before.findings
            if f.blocking
        }
    )
    lost = sorted(set(before.blocking_codes) - set(after.blocking_codes))
    where = (
        "; ".join(
            f"choice {c} slot {s}: {code}{' (' + k + ')' if k else ''}"
            for c, s, code, k in gained[:3]
        )
        or f"lost {', '.join(lost)}"
    )
    return (
        f"masking would change the verdict ({before.status.value} -> "
        f"{after.status.value}): {where}; use --arguments keep, or --allow-verdict-change"
    )


def refuse_leaks(
    document: Mapping[str, Any], secrets: Collection[str], text: str | None = None
) -> None:
    """The last gate before anything is written: ``RedactionRefused`` naming the first place
    where a credential from ``secrets``, or a known credential format, remains. ``text``: the
    document as it will be written (see ``find_leaks``), searched instead of writing it again."""
    leaks = find_leaks(document, secrets, text)
    if leaks:
        first = leaks[0]
        raise RedactionRefused(
            f"a secret would be written at {first.path} (caught by "
            f"{first.caught_by}); nothing was written"
        )


# -- the exchange ------------------------------------------------------------------------------


def _require_stream(exchange: Exchange) -> None:
    if exchange.method.upper() != "POST":
        raise NotApplicable(f"method {exchange.method} is not a model call")
    if not 200 <= exchange.status < 300:
        raise NotApplicable(f"HTTP status {exchange.status}")


def _require_session(exchange: Exchange) -> None:
    """A WebSocket session's messages are an exchange's when its upgrade was accepted."""
    if exchange.status != 101:
        raise NotApplicable(f"HTTP status {exchange.status}: no WebSocket was opened")


def _stream_body(exchange: Exchange, profile: str | None) -> StreamBody:
    _require_stream(exchange)
    return parse_stream_body(
        exchange.response_body, exchange.header("content-type", response=True), profile=profile
    )


def request_json(body: bytes) -> dict[str, Any]:
    """A request body's JSON object; empty when the body is not one."""
    try:
        value = strict_json.loads_bytes(body, DOCUMENT_LIMITS) if body.strip() else {}
    except strict_json.StrictJSONError:
        return {}
    return value if isinstance(value, dict) else {}


def _raw_envelope(
    profile: str, provider: str | None, request: Mapping[str, Any], body: StreamBody
) -> dict[str, Any]:
    envelope: dict[str, Any] = {
        "description": f"Captured {profile} stream" + (f" from {provider}" if provider else ""),
        "envelope_version": 1,
        "profile": profile,
    }
    if provider:
        envelope["provider"] = provider
    envelope["tool_schemas"] = tool_schemas(request, profile)
    envelope["request"] = request_parameters(request)
    envelope[PROFILES[profile].stream_key] = body.events
    return envelope


def request_context(body: bytes, profile: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(tool schemas, non-prompt request parameters) of a request body for ``profile``; empty
    when unreadable."""
    request = request_json(body)
    return tool_schemas(request, profile), request_parameters(request)


def tool_schemas(request: Mapping[str, Any], profile: str) -> dict[str, Any]:
    """Tool name -> argument schema, read from a request body as ``profile``'s API names them;
    a tool the provider defines (Anthropic's computer use, OpenAI's shell) by its definition,
    which the schema callgate ships for it stands for. A tool the provider runs itself is left
    out."""
    return PROFILES[profile].tool_schemas(request)


def _function(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    """What declares a tool: its ``function`` object (OpenAI Chat), else the entry itself."""
    function = tool.get("function", tool)
    return function if isinstance(function, dict) else {}


def _list(value: object) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _meta(
    exchange: Exchange,
    request: Mapping[str, Any],
    body: StreamBody,
    provider: str | None,
    keep_text: bool,
) -> dict[str, Any]:
    tools = [_function(t).get("name") for t in _list(request.get("tools"))]
    roles = Counter(str(m.get("role")) for m in _list(request.get("messages")))
    meta: dict[str, Any] = {
        "capture": exchange.capture,
        "provider": provider,
        "model": request.get("model"),
        "endpoint": urlsplit(exchange.url).path,
        "sdk": _sdk(exchange),
        "headers": _kept_headers(exchange),
        "tools": [t for t in tools if isinstance(t, str)],
        "parallel_tool_calls": request.get("parallel_tool_calls"),
        "messages_by_role": dict(sorted(roles.items())),
        "stream": {
            "framing": body.framing,
            "events": len(body.events),
            "done": body.done,
            "incomplete_event": body.incomplete,
            "complete": exchange.complete,
        },
        "redaction": {"removed": sorted(_removed(exchange, request, keep_text))},
    }
    if exchange.event_times and len(exchange.event_times) == len(body.events):
        meta["stream"]["event_times_ms"] = [round(t * 1000) for t in exchange.event_times]
    if exchange.error:
        meta["stream"]["error"] = (
            "client disconnected" if "client" in exchange.error.lower() else "upstream error"
        )
    return meta


def _sdk(exchange: Exchange) -> dict[str, str]:
    sdk = {}
    version = exchange.header("x-stainless-package-version")
    if version:
        sdk["package_version"] = version
    agent = _PRODUCT.match(exchange.header("user-agent") or "")
    if agent:
        sdk["user_agent"] = agent.group()
    return sdk


def _kept_headers(exchange: Exchange) -> dict[str, str]:
    kept = {
        name: value[:80] for name in KEPT_HEADERS if (value := exchange.header(name)) is not None
    }
    response_type = exchange.header("content-type", response=True)
    if response_type:
        kept["response-content-type"] = response_type[:80]
    return kept


def _removed(exchange: Exchange, request: Mapping[str, Any], keep_text: bool) -> set[str]:
    removed = {"headers", "provider_ids"} | (set() if keep_text else {"output_text"})
    if urlsplit(exchange.url).query:
        removed.add("query_string")
    # Everything but the kept parameters and the tools: prompts, instructions, user ids, ...
    removed |= {
        f"request.{key}" for key in request if key not in REQUEST_PARAMETERS and key != "tools"
    }
    return removed
