"""Reads HAR files (browsers' "Save all as HAR", mitmproxy's ``save.har``, zlib-compressed .zhar):
each entry in ``log.entries`` becomes an ``Exchange`` or a ``Skipped``.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
import zlib
from typing import Any

from callgate.cli.importing.common import (
    Headers,
    RawRequest,
    Skipped,
    convert_item,
    convert_items,
    decode_content,
    field,
    header_value,
    load_json,
    require_stream,
    short,
)
from callgate.reassemble.errors import InputError, NotApplicable
from callgate.redact.exchange import Exchange
from callgate.redact.sessions import session_exchanges


def read_har(data: bytes, raw: RawRequest) -> list[Exchange | Skipped]:
    # mitmproxy's save.har zlib-compresses *.zhar files; JSON cannot start with zlib's header.
    if data[:1] == b"x" and int.from_bytes(data[:2], "big") % 31 == 0:
        try:
            data = zlib.decompress(data)
        except zlib.error:
            raise InputError("not a HAR file: broken zlib compression") from None
    return har_items(load_json(data, "not a HAR file"))


def har_items(document: Any) -> list[Exchange | Skipped]:
    log = document.get("log") if isinstance(document, dict) else None
    entries = log.get("entries") if isinstance(log, dict) else None
    if not isinstance(entries, list):
        raise InputError("not a HAR file: no log.entries list")
    creator = log.get("creator") if isinstance(log, dict) else None
    mitmproxy = isinstance(creator, dict) and creator.get("name") == "mitmproxy"
    convert = functools.partial(_har_entry, mitmproxy=mitmproxy)
    items: list[Exchange | Skipped] = []
    for number, entry in enumerate(entries, 1):
        if isinstance(entry, dict) and "_webSocketMessages" in entry:
            items += convert_items(f"entry {number}", _har_session, entry)
        else:
            items.append(convert_item(f"entry {number}", convert, entry))
    return items


def _har_session(entry: Any) -> list[Exchange]:
    """A WebSocket entry (Chrome's and mitmproxy's ``_webSocketMessages``: ``type`` "send" or
    "receive", ``opcode`` 1 for text, ``data``): one exchange per response of its session."""
    messages = entry["_webSocketMessages"]
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise NotApplicable("malformed: _webSocketMessages is not a list of messages")
    return session_exchanges(
        url=field(entry, "request.url", str),
        request_headers=_har_headers(entry["request"].get("headers")),
        status=field(entry, "response.status", int),
        response_headers=_har_headers(field(entry, "response", dict).get("headers")),
        messages=[
            (m.get("type") == "send", m["data"])
            for m in messages
            if m.get("opcode") == 1 and isinstance(m.get("data"), str)
        ],
        capture="import:har",
    )


def _har_entry(entry: Any, *, mitmproxy: bool) -> Exchange:
    method, url = field(entry, "request.method", str), field(entry, "request.url", str)
    response, status = field(entry, "response", dict), field(entry, "response.status", int)
    error = response.get("_error")
    if status == 0:
        raise NotApplicable(f"no response ({short(error) if error else 'none recorded'})")
    request_headers = _har_headers(entry["request"].get("headers"))
    response_headers = _har_headers(response.get("headers"))
    content = field(response, "content", dict)
    body = decode_content(_har_text(content, response_headers, mitmproxy) or b"", response_headers)
    require_stream(method, url, response_headers, body)
    if not body:  # mitmproxy writes "" for a streamed body it did not keep; browsers omit it
        raise NotApplicable("no response body stored")
    post_data = entry["request"].get("postData")
    request_body = _har_text(post_data, request_headers, mitmproxy) if post_data else None
    return Exchange(
        method=method,
        url=url,
        request_headers=request_headers,
        request_body=request_body or b"",
        status=status,
        response_headers=response_headers,
        response_body=body,
        complete=not error,
        capture="import:har",
        error=short(error) if error else None,
    )


def _har_headers(value: Any) -> Headers:
    """HAR headers: ``{"name", "value"}`` objects (browsers, mitmproxy) or pairs (Slack)."""
    headers: Headers = []
    for header in value if isinstance(value, list) else []:
        pair = (header.get("name"), header.get("value")) if isinstance(header, dict) else header
        name, text = pair if isinstance(pair, list | tuple) and len(pair) == 2 else (None, None)
        if not isinstance(name, str) or not isinstance(text, str):
            raise NotApplicable("malformed: a header is not a name/value pair")
        if not name.startswith(":"):  # HTTP/2 pseudo-headers repeat method and URL (and query)
            headers.append((name, text))
    return headers


def _har_text(holder: Any, headers: Headers, mitmproxy: bool) -> bytes | None:
    """The bytes of a HAR ``content`` or ``postData``: base64, or text in the body's charset."""
    text = holder.get("text") if isinstance(holder, dict) else None
    if text is None:
        return None
    if not isinstance(text, str):
        raise NotApplicable("malformed: body text is not a string")
    if holder.get("encoding", holder.get("_encoding")) == "base64":
        try:
            return base64.b64decode(text, validate=True)
        except binascii.Error:
            raise NotApplicable("malformed: body is not valid base64") from None
    return _encode_text(text, _har_charset(headers, mitmproxy))


def _har_charset(headers: Headers, mitmproxy: bool) -> str:
    """The charset the recorder decoded the body with, to get the same bytes back.

    Browsers write Unicode text. mitmproxy's ``get_text`` decodes with the content-type's charset,
    else UTF-8 for JSON types, else latin-1: so an SSE body with UTF-8 in it appears as mojibake
    in a mitmproxy HAR, and only latin-1 gives the original bytes back.
    """
    content_type = header_value(headers, "content-type")
    match = re.search(r"charset=\"?([\w.:-]+)", content_type, re.IGNORECASE)
    if match:
        return match.group(1)
    return "latin-1" if mitmproxy and "json" not in content_type.lower() else "utf-8"


def _encode_text(text: str, charset: str) -> bytes:
    # surrogateescape: mitmproxy writes undecodable bytes as lone surrogates (\udc80-\udcff).
    try:
        return text.encode(charset, "surrogateescape")
    except (LookupError, UnicodeError):  # an unknown charset, or text that was never in it
        return text.encode("utf-8", "surrogatepass")
