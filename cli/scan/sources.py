"""One file's findings: the file read and parsed as its format says, then handed to the scan.

Formats: VCR.py and pytest-recording cassettes (.yaml/.yml, or the same document in .json),
HAR (.har, .zhar, or JSON with ``log.entries``), mitmproxy flow files (.flow/.mitm, or
tnetstring content), callgate fixtures, a tape's turns and exchange records and request bodies
(.json), and raw bodies (.sse, .jsonl/.ndjson, .eventstream). Anything else is no recording.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable
from io import BytesIO
from pathlib import Path
from typing import Any

from callgate.cli.extras import PROXY_EXTRA
from callgate.cli.importing.common import load_json, load_yaml, short
from callgate.reassemble.errors import InputError
from callgate.redact.scanning import (
    RecordedExchange,
    ScanFinding,
    scan_body,
    scan_document,
    scan_exchanges,
)

_JSON_SUFFIXES = (".json", ".har", ".zhar")
_YAML_SUFFIXES = (".yaml", ".yml")
_FLOW_SUFFIXES = (".flow", ".mitm")
_BODY_SUFFIXES = (".sse", ".jsonl", ".ndjson", ".eventstream")
_HAR_START = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"log"')
_TNETSTRING_START = re.compile(rb"\A\d+:")
#: Keys of recordings (cassettes, HAR, fixtures, tape records, request bodies), quoted or not.
_RECORDING_KEYS = re.compile(
    rb"""["']?\b(?:interactions|log|entries|profile|tape_record|messages|contents)\b["']?\s*:"""
)


def scan_file(path: Path) -> list[ScanFinding] | None:
    """The findings in ``path``, or None when it holds no recording. Raises ``InputError`` when
    it cannot be read, or has a recording's name and cannot be parsed."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror or error}") from None
    suffix = path.suffix.lower()
    if suffix in _BODY_SUFFIXES:
        return scan_body(data)
    if suffix in _FLOW_SUFFIXES or (suffix not in _JSON_SUFFIXES and _TNETSTRING_START.match(data)):
        return _flows(data)
    if suffix in _JSON_SUFFIXES or _HAR_START.match(data):
        return _parsed(data, _json)
    if suffix in _YAML_SUFFIXES:
        return _parsed(data, load_yaml) if data.strip() else None
    return None


def _parsed(data: bytes, parse: Callable[[bytes], Any]) -> list[ScanFinding] | None:
    """The findings of a document, or None for one that is no recording. A file that does not
    parse is unreadable when it names what a recording holds; without any of those names it is
    other JSON or YAML (a template, JSON with comments), not a broken recording."""
    try:
        document = parse(data)
    except InputError:
        if _RECORDING_KEYS.search(data):
            raise
        return None
    return scan_document(document)


def _json(data: bytes) -> Any:
    # mitmproxy's save.har zlib-compresses *.zhar files; JSON cannot start with zlib's header.
    if data[:1] == b"x" and int.from_bytes(data[:2], "big") % 31 == 0:
        try:
            data = zlib.decompress(data)
        except zlib.error:
            raise InputError("not JSON: broken zlib compression") from None
    return load_json(data, "not JSON")


def _flows(data: bytes) -> list[ScanFinding]:
    try:
        from mitmproxy import http, io
    except ImportError:
        raise InputError(f"a mitmproxy flow file needs mitmproxy: {PROXY_EXTRA}") from None
    exchanges = []
    try:
        for number, flow in enumerate(io.FlowReader(BytesIO(data)).stream(), 1):
            if isinstance(flow, http.HTTPFlow):
                exchanges.append(_flow_exchange(f"flow {number}", flow))
    # Any exception: mitmproxy's deserialiser raises more than FlowReadException on bad state.
    except Exception as error:
        raise InputError(f"not a mitmproxy flow file: {short(error)}") from None
    return scan_exchanges(exchanges)


def _flow_exchange(label: str, flow: Any) -> RecordedExchange:
    request, response = flow.request, flow.response
    return RecordedExchange(
        label=label,
        url=request.pretty_url,
        request_headers=_headers(request.headers),
        request_body=_content(request),
        response_headers=_headers(response.headers) if response is not None else [],
        response_body=_content(response) if response is not None else b"",
    )


def _headers(headers: Any) -> list[tuple[str, str]]:
    return [
        (name.decode("utf-8", "surrogateescape"), value.decode("utf-8", "surrogateescape"))
        for name, value in headers.fields
    ]


def _content(message: Any) -> bytes:
    """A message's body without its content-encoding, or as stored when that fails."""
    content = message.get_content(strict=False)
    return content if isinstance(content, bytes) else b""
