"""Which recording a parsed document is, and its findings: VCR.py and pytest-recording
cassettes, HAR files, callgate fixtures (a tape's turns among them), a tape's exchange records,
request bodies and raw bodies.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from typing import Any

from callgate.reassemble.profiles import PROFILES
from callgate.redact.leaks import credential_header, json_strings
from callgate.redact.scanning.findings import Kind, ScanFinding
from callgate.redact.scanning.http import (
    PROMPT_FIELDS,
    Headers,
    RecordedExchange,
    body_findings,
    credential_findings,
    header_secrets,
    json_findings,
    prompts,
    scan_exchange,
)
from callgate.redact.scanning.output import unmasked_output, unmasked_record


def scan_document(document: Any) -> list[ScanFinding] | None:
    """The findings in a parsed JSON or YAML document, or None when it is no recording."""
    if isinstance(document, dict):
        if isinstance(document.get("interactions"), list):
            return scan_exchanges(_interactions(document["interactions"]))
        log = document.get("log")
        if isinstance(log, dict) and isinstance(log.get("entries"), list):
            return _har(document)
        if "tape_record" in document:
            return json_findings("", document, request=False) + unmasked_record(document)
        if _is_envelope(document):
            return _envelope(document)
        if _is_request(document):
            return json_findings("", document, request=True)
    if isinstance(document, list) and document and all(isinstance(i, dict) for i in document):
        return json_findings("", document, request=False)  # a body of JSON chunks
    return None


def scan_exchanges(exchanges: Iterable[RecordedExchange]) -> list[ScanFinding]:
    """The findings in recorded exchanges, in order."""
    return [finding for exchange in exchanges for finding in scan_exchange(exchange)]


def scan_body(body: bytes) -> list[ScanFinding]:
    """The findings in a raw response body (SSE, JSON lines, an event stream), by line."""
    return body_findings("", body, request=False)


def _is_request(document: Mapping[str, Any]) -> bool:
    """A model request's body: a conversation, or a prompt field beside the model it is for (a
    ``prompt`` key alone is too common in other JSON to be one)."""
    if "messages" in document or "contents" in document:
        return True
    return "model" in document and not PROMPT_FIELDS.keys().isdisjoint(document)


def _is_envelope(document: Mapping[str, Any]) -> bool:
    name = document.get("profile")
    profile = PROFILES.get(name) if isinstance(name, str) else None
    return profile is not None and profile.stream_key in document


def _envelope(envelope: dict[str, Any]) -> list[ScanFinding]:
    findings = json_findings("", envelope, request=False)
    request = envelope.get("request")
    if isinstance(request, Mapping):
        findings += [ScanFinding(f"/request{p}", Kind.PROMPT, n) for p, n in prompts(request)]
    return findings + unmasked_output(envelope)


# -- cassettes -----------------------------------------------------------------------------------


def _interactions(interactions: list[Any]) -> list[RecordedExchange]:
    return [
        _interaction(f"interaction {number}", item)
        for number, item in enumerate(interactions, 1)
        if isinstance(item, dict)
    ]


def _interaction(label: str, item: Mapping[str, Any]) -> RecordedExchange:
    request, response = _dict(item.get("request")), _dict(item.get("response"))
    # httpx cassettes written by vcrpy before 5.0 keep the response body in "content".
    body = response.get("body", response.get("content"))
    return RecordedExchange(
        label=label,
        url=str(request.get("uri", "")),
        url_field="request.uri",
        request_headers=_vcr_headers(request.get("headers")),
        request_body=_vcr_body(request.get("body")),
        response_headers=_vcr_headers(response.get("headers")),
        response_body=_vcr_body(body),
    )


def _vcr_headers(value: Any) -> Headers:
    """VCR headers map a name to a list of values (or, in old httpx cassettes, to one value)."""
    if not isinstance(value, dict):
        return []
    return [
        (str(name), str(text))
        for name, values in value.items()
        for text in (values if isinstance(values, list) else [values])
    ]


def _vcr_body(value: Any) -> bytes:
    """A cassette body: bytes (``!!binary``), text, or either under ``string``."""
    if isinstance(value, dict):
        value = value.get("string")
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    return b""


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


# -- HAR -----------------------------------------------------------------------------------------

#: The bodies of a HAR entry, by their pointer below the entry, and whether each is a request's.
_HAR_BODIES = {"/request/postData/text": True, "/response/content/text": False}


def _har(document: dict[str, Any]) -> list[ScanFinding]:
    findings = []
    entries = document["log"]["entries"]
    for pointer, text in json_strings(document):
        if not pointer.startswith("/log/entries/"):
            findings += credential_findings(pointer, text)
    for index, entry in enumerate(entries):
        findings += _har_entry(f"/log/entries/{index}", entry)
    return findings


def _har_entry(base: str, entry: Any) -> list[ScanFinding]:
    """An entry's strings; its bodies decoded and walked; a request header named like a
    credential with a token-like value, and that value again anywhere in the entry."""
    headers = _dict(_dict(entry).get("request")).get("headers")
    pairs = {
        f"/request/headers/{index}/value": (_dict(h).get("name"), _dict(h).get("value"))
        for index, h in enumerate(headers if isinstance(headers, list) else [])
    }
    named = {p: (n, v) for p, (n, v) in pairs.items() if isinstance(n, str) and isinstance(v, str)}
    secrets = header_secrets(named.values())
    findings = []
    for pointer, text in json_strings(entry):
        where = base + pointer
        if pointer in _HAR_BODIES:
            holder = _dict(_dict(entry).get(pointer.split("/")[1])).get(pointer.split("/")[2])
            body = _har_bytes(_dict(holder), text)
            findings += body_findings(where, body, request=_HAR_BODIES[pointer], secrets=secrets)
        elif pointer in named and text == named[pointer][1] and credential_header(*named[pointer]):
            findings += credential_findings(where, text) or [
                ScanFinding(where, Kind.CREDENTIAL, "credential-header")
            ]
        else:
            findings += credential_findings(where, text, secrets)
    return findings


def _har_bytes(holder: Mapping[str, Any], text: str) -> bytes:
    if holder.get("encoding", holder.get("_encoding")) == "base64":
        try:
            return base64.b64decode(text, validate=True)
        except binascii.Error:
            pass
    return text.encode("utf-8", "surrogatepass")
