"""Reads VCR.py and pytest-recording cassettes (YAML, or the same document saved as JSON): each
item of ``interactions`` becomes an ``Exchange`` or a ``Skipped``.
"""

from __future__ import annotations

from typing import Any

from callgate.cli.importing.common import (
    Headers,
    RawRequest,
    Skipped,
    convert_item,
    decode_content,
    field,
    load_yaml,
    require_stream,
)
from callgate.reassemble.errors import InputError, NotApplicable
from callgate.redact.exchange import Exchange


def read_cassette(data: bytes, raw: RawRequest) -> list[Exchange | Skipped]:
    return cassette_items(load_yaml(data))


def cassette_items(document: Any) -> list[Exchange | Skipped]:
    interactions = document.get("interactions") if isinstance(document, dict) else None
    if not isinstance(interactions, list):
        raise InputError("not a VCR cassette: no interactions list")
    numbered = enumerate(interactions, 1)
    return [convert_item(f"interaction {n}", _interaction, item) for n, item in numbered]


def _interaction(item: Any) -> Exchange:
    method, url = field(item, "request.method", str), field(item, "request.uri", str)
    response = field(item, "response", dict)
    response_headers = _vcr_headers(response.get("headers"))
    if "status_code" in response:  # httpx cassettes written by vcrpy before 5.0
        status, body = field(response, "status_code", int), _vcr_body(response.get("content"))
    else:
        status = field(response, "status.code", int)
        body = _vcr_body(field(response, "body", dict).get("string"))
    # decode_compressed_response=False keeps gzip bytes (a !!binary string) under their header.
    body = decode_content(body, response_headers)
    require_stream(method, url, response_headers, body)
    return Exchange(
        method=method,
        url=url,
        request_headers=_vcr_headers(item["request"].get("headers")),
        request_body=_vcr_body(item["request"].get("body")),
        status=status,
        response_headers=response_headers,
        response_body=body,
        capture="import:vcr",
    )


def _vcr_headers(value: Any) -> Headers:
    """VCR headers map a name to a list of values (or, in old httpx cassettes, to one value)."""
    if not isinstance(value, dict):
        return []
    headers: Headers = []
    for name, values in value.items():
        for text in values if isinstance(values, list) else [values]:
            if not isinstance(text, str | int):
                raise NotApplicable("malformed: a header value is not text")
            headers.append((str(name), str(text)))
    return headers


def _vcr_body(value: Any) -> bytes:
    """A cassette body: bytes (``!!binary``), text (VCR stores UTF-8 bodies as text), or null."""
    if value is None:
        return b""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    raise NotApplicable("malformed: a body is neither text nor binary")
