"""A recorded HTTP exchange as a recorder stored it, scanned part by part: the URL, each
header, and both bodies (their content-encoding undone, JSON walked string by string), with the
prompt fields of the request body.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from callgate.redact.leaks import (
    MIN_SECRET_CHARS,
    credential_header,
    find_leaks,
    json_strings,
    pointer_token,
)
from callgate.redact.scanning.findings import Kind, ScanFinding
from callgate.redact.scanning.text import credential_patterns, inflated

Headers = list[tuple[str, str]]

#: Where each API puts a request's prompt, by the pattern a finding names.
PROMPT_FIELDS = {
    "messages": "messages",
    "contents": "contents",
    "input": "input",
    "prompt": "prompt",
    "system": "system",
    "systemInstruction": "system",
    "system_instruction": "system",
    "instructions": "instructions",
}
#: What marks a tool's result inside a prompt: a role, a content type, or a key of its own.
_TOOL_ROLES = frozenset({"tool", "function", "ipython"})
_TOOL_TYPES = frozenset({"tool_result", "function_call_output", "tool-result", "function_result"})
_TOOL_KEYS = frozenset({"functionResponse", "function_response", "toolResult"})


@dataclass(frozen=True, kw_only=True)
class RecordedExchange:
    """One exchange of a cassette or a flow file, bodies as stored (possibly compressed)."""

    #: Where it is in its file: "interaction 2", "flow 5".
    label: str
    url: str
    #: What the file calls the URL field: "request.uri" in a cassette, "request.url" elsewhere.
    url_field: str = "request.url"
    request_headers: Headers
    request_body: bytes
    response_headers: Headers
    response_body: bytes


def scan_exchange(exchange: RecordedExchange) -> list[ScanFinding]:
    """The exchange's findings. A request header's credential of no known format is also looked
    for, in every encoding the leak gate knows, in the URL, the other headers and the bodies
    (``credential-from-exchange``), as the leak gate does before a fixture is written."""
    label = exchange.label
    secrets = header_secrets(exchange.request_headers)
    findings = credential_findings(f"{label} {exchange.url_field}", exchange.url, secrets)
    for name, value in exchange.request_headers:
        findings += _header(f"{label} request.headers.{name.lower()}", name, value)
    findings += body_findings(
        f"{label} request.body", exchange.request_body, request=True, secrets=secrets
    )
    for name, value in exchange.response_headers:
        where = f"{label} response.headers.{name.lower()}"
        findings += credential_findings(where, value, secrets)
    findings += body_findings(
        f"{label} response.body", exchange.response_body, request=False, secrets=secrets
    )
    return findings


def header_secrets(headers: Iterable[tuple[str, str]]) -> frozenset[str]:
    """The values of request headers named like credentials (``credential_header``), and the
    token after their scheme: what must not appear anywhere else in the exchange."""
    return frozenset(
        token
        for name, value in headers
        if credential_header(name, value)
        for token in (value, value.partition(" ")[2].strip())
        if len(token) >= MIN_SECRET_CHARS
    )


def _header(where: str, name: str, value: str) -> list[ScanFinding]:
    found = credential_findings(where, value)
    if not found and credential_header(name, value):
        found.append(ScanFinding(where, Kind.CREDENTIAL, "credential-header"))
    return found


def body_findings(
    where: str, body: bytes, *, request: bool, secrets: Collection[str] = ()
) -> list[ScanFinding]:
    """A body's findings, gzip or zlib undone: JSON is walked (each string named by its pointer
    after ``where``); any other text (SSE, JSON lines) line by line, each line's JSON walked.
    A request body's prompt fields are prompt findings. ``secrets``: see ``scan_exchange``."""
    text = inflated(body).decode("utf-8", "replace")
    if not text.strip():
        return []
    document = _json(text)
    if document is not _NOT_JSON:
        return json_findings(where, document, request=request, secrets=secrets)
    # Server-sent events and JSON lines: each line on its own, its JSON walked.
    findings = []
    for number, line in enumerate(text.split("\n"), 1):
        data = line[5:] if line.startswith("data:") else line
        event = _json(data) if data.strip() else _NOT_JSON
        at = f"{where} line {number}".lstrip()
        if event is not _NOT_JSON:
            findings += json_findings(at, event, request=False, secrets=secrets)
        else:
            findings += credential_findings(at, line, secrets)
    return findings


_NOT_JSON = object()


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _NOT_JSON


def json_findings(
    where: str, document: Any, *, request: bool, secrets: Collection[str] = ()
) -> list[ScanFinding]:
    """Credentials in every string of ``document`` (keys too), and, for a request body, its
    prompt fields. Locations are ``where`` then the JSON pointer."""
    prefix = f"{where} " if where else ""
    findings = []
    for pointer, text in json_strings(document):
        findings += credential_findings(f"{prefix}{pointer or '/'}".rstrip(), text, secrets)
    if request and isinstance(document, Mapping):
        findings += [ScanFinding(f"{prefix}{p}", Kind.PROMPT, n) for p, n in prompts(document)]
    return findings


def prompts(request: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(JSON pointer, pattern) of each non-empty prompt field of a request, and of each tool
    result inside one."""
    for field, pattern in PROMPT_FIELDS.items():
        value = request.get(field)
        if value not in (None, "", [], {}):
            yield f"/{field}", pattern
            yield from ((p, "tool-result") for p in _tool_results(value, f"/{field}"))


def _tool_results(value: object, path: str) -> Iterator[str]:
    if isinstance(value, dict):
        if (
            _text(value.get("role")) in _TOOL_ROLES
            or _text(value.get("type")) in _TOOL_TYPES
            or not _TOOL_KEYS.isdisjoint(value)
        ):
            yield path
            return
        for key, child in value.items():
            token = pointer_token(key)
            yield from _tool_results(child, f"{path}/{token}")
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _tool_results(child, f"{path}/{index}")


def credential_findings(where: str, text: str, secrets: Collection[str] = ()) -> list[ScanFinding]:
    """The credentials in ``text``: each known format, else any encoding of one of
    ``secrets``."""
    names = credential_patterns(text)
    if not names and secrets and find_leaks(text, secrets):
        names = ["credential-from-exchange"]
    return [ScanFinding(where, Kind.CREDENTIAL, name) for name in names]


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
