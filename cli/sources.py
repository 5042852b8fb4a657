"""Readers behind ``callgate import``: recordings users already have, as unredacted ``Exchange``s.

How this works: ``read_source`` picks a reader from ``_READERS`` by extension (or, for an unknown
extension, by sniffing the first bytes). Each reader parses the whole file with the format's own
library (``json``, mitmproxy's ``FlowReader``, PyYAML) and converts each recorded exchange on its
own: a streamed POST becomes an ``Exchange`` with any content-encoding removed, anything else (a
GET, a JSON response, a body the recorder did not keep, a malformed entry) becomes a ``Skipped``
so the rest of the file still imports. A file that cannot be used at all raises ``SourceError``.

Exchanges hold keys and prompts: no message here quotes a body, a header or a URL query string.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from redact.exchange import Exchange

_T = TypeVar("_T")
_Headers = list[tuple[str, str]]

#: Media types whose body is a stream of chunks (SSE, and newline-delimited JSON as Ollama sends).
_STREAM_TYPES = ("text/event-stream", "application/x-ndjson")
_SSE_LINE = re.compile(rb"(?:\A|[\r\n])(?:data:|event:|id:|:)")
_HAR_START = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"log"')
_TNETSTRING_START = re.compile(rb"\A\d+:")
_UNKNOWN = "unknown recording format (expected .har, .flow, .yaml, .sse, .jsonl or .json)"


class SourceError(Exception):
    """The whole file cannot be imported. ``str()`` is one line naming the problem (not the path,
    which the caller prefixes); it never quotes the file's content."""


@dataclass(frozen=True)
class Skipped:
    """One exchange in a file that is not a streamed LLM exchange, or is broken."""

    #: Where it is in the file: "entry 3", "interaction 2", "flow 5".
    label: str
    #: One short line, e.g. "not a streamed response (content-type application/json)".
    reason: str


class _Skip(Exception):
    """Raised while converting one exchange; ``_convert`` turns it into a ``Skipped``."""


@dataclass(frozen=True)
class _Raw:
    """What a bare body file cannot say about its request: given on the command line."""

    url: str
    request_body: bytes

    def exchange(self, body: bytes, content_type: str) -> Exchange:
        return Exchange(
            method="POST", url=self.url, request_headers=[], request_body=self.request_body,
            status=200, response_headers=[("content-type", content_type)], response_body=body,
            capture="import:raw")


_Reader = Callable[[bytes, _Raw], list[Exchange | Skipped]]


def read_source(
    path: Path, *, request_body: bytes | None = None, url: str | None = None
) -> list[Exchange | Skipped]:
    """The exchanges recorded in ``path``, in file order, each an ``Exchange`` or a ``Skipped``.

    Formats: HAR (.har, .zhar, or JSON with ``log.entries``), mitmproxy flow files (.flow/.mitm or
    tnetstring content), VCR.py / pytest-recording cassettes (.yaml/.yml, or JSON with
    ``interactions``), and raw bodies (.sse, .jsonl, .json array of chunks). ``request_body``
    (default ``b"{}"``) and ``url`` (default ``""``) describe the request of a raw body and are
    ignored for the other formats. Raises ``SourceError`` if the file is unreadable or unusable.
    """
    try:
        data = path.read_bytes()
    except OSError as error:
        raise SourceError(f"cannot read: {error.strerror or error}") from None
    if not data.strip():
        raise SourceError("empty file")
    reader = _READERS.get(path.suffix.lower()) or _sniff(data)
    return reader(data, _Raw(url or "", b"{}" if request_body is None else request_body))


def _sniff(data: bytes) -> _Reader:
    """The reader for a file whose extension says nothing."""
    if _HAR_START.match(data):
        return _read_har
    if _TNETSTRING_START.match(data):
        return _read_flows
    try:
        document = _load_yaml(data)
    except SourceError:
        document = None
    if isinstance(document, dict) and "interactions" in document:
        return _read_cassette
    raise SourceError(_UNKNOWN)


def _convert(label: str, convert: Callable[[Any], Exchange], item: Any) -> Exchange | Skipped:
    try:
        return convert(item)
    except _Skip as skip:
        return Skipped(label, str(skip))


def _field(holder: Any, path: str, kind: type[_T]) -> _T:
    """``holder[a][b]`` for ``path`` "a.b"; the exchange is skipped unless it is a ``kind``."""
    value = holder
    for key in path.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    if not isinstance(value, kind):
        raise _Skip(f"malformed: {path} is missing or not a {kind.__name__}")
    return value


def _short(text: object, limit: int = 80) -> str:
    """The first line of ``text``, cut to ``limit`` characters."""
    lines = str(text).strip().splitlines() or ["?"]
    line = lines[0]
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _header(headers: _Headers, name: str) -> str:
    return next((value for key, value in headers if key.lower() == name), "")


def _media_type(headers: _Headers) -> str:
    return _header(headers, "content-type").split(";")[0].strip().lower()


def _require_stream(method: str, url: str, headers: _Headers, body: bytes) -> None:
    """Skip anything but a POST answered with a stream (SSE, NDJSON, or Gemini's JSON array)."""
    if method.upper() != "POST":
        raise _Skip(f"method {_short(method, 16)}")
    media_type = _media_type(headers)
    if media_type in _STREAM_TYPES:
        return
    # Gemini without ?alt=sse streams one JSON array; an error there is a single object.
    gemini = "streamGenerateContent" in urlsplit(url).path
    if gemini and media_type in ("application/json", "") and not body.lstrip().startswith(b"{"):
        return
    raise _Skip(f"not a streamed response (content-type {_short(media_type, 60) or 'missing'})")


def _decode_content(body: bytes, headers: _Headers) -> bytes:
    """``body`` without its Content-Encoding, where the recorder had not already removed it."""
    codings = [c.strip().lower() for c in _header(headers, "content-encoding").split(",")]
    for coding in reversed([c for c in codings if c not in ("", "identity")]):
        body = _undo_coding("gzip" if coding == "x-gzip" else coding, body)
    return body


def _undo_coding(coding: str, body: bytes) -> bytes:
    from mitmproxy.net import encoding  # brotli and zstd come with mitmproxy

    # Recorders often store the decoded body under the original header: decode only what really
    # is compressed. gzip and zstd have magic bytes; br and deflate do not, so a failure there
    # means "already decoded".
    magic = {"gzip": b"\x1f\x8b", "zstd": b"\x28\xb5\x2f\xfd"}.get(coding)
    if coding not in ("gzip", "zstd", "br", "deflate"):
        raise _Skip(f"unsupported content-encoding {_short(coding, 20)}")
    if magic is not None and not body.startswith(magic):
        return body
    try:
        decoded = encoding.decode(body, coding)
    except ValueError:
        if magic is not None:
            raise _Skip(f"response body is not valid {coding} (truncated?)") from None
        return body
    return decoded if isinstance(decoded, bytes) else body


def _load_json(data: bytes, what: str) -> Any:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise SourceError(f"{what}: not UTF-8 (byte {error.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        ends = " (the file ends there: truncated?)" if error.pos >= len(text.rstrip()) else ""
        where = f"line {error.lineno} column {error.colno}"
        raise SourceError(f"{what}: {error.msg} at {where}{ends}") from None
    except RecursionError:
        raise SourceError(f"{what}: nested too deeply") from None


def _read_har(data: bytes, raw: _Raw) -> list[Exchange | Skipped]:
    # mitmproxy's save.har zlib-compresses *.zhar files; JSON cannot start with zlib's header.
    if data[:1] == b"x" and int.from_bytes(data[:2], "big") % 31 == 0:
        try:
            data = zlib.decompress(data)
        except zlib.error:
            raise SourceError("not a HAR file: broken zlib compression") from None
    return _har_items(_load_json(data, "not a HAR file"))


def _har_items(document: Any) -> list[Exchange | Skipped]:
    log = document.get("log") if isinstance(document, dict) else None
    entries = log.get("entries") if isinstance(log, dict) else None
    if not isinstance(entries, list):
        raise SourceError("not a HAR file: no log.entries list")
    creator = log.get("creator") if isinstance(log, dict) else None
    mitmproxy = isinstance(creator, dict) and creator.get("name") == "mitmproxy"
    convert = functools.partial(_har_entry, mitmproxy=mitmproxy)
    return [_convert(f"entry {n}", convert, entry) for n, entry in enumerate(entries, 1)]


def _har_entry(entry: Any, *, mitmproxy: bool) -> Exchange:
    method, url = _field(entry, "request.method", str), _field(entry, "request.url", str)
    response, status = _field(entry, "response", dict), _field(entry, "response.status", int)
    error = response.get("_error")
    if status == 0:
        raise _Skip(f"no response ({_short(error) if error else 'none recorded'})")
    request_headers = _har_headers(entry["request"].get("headers"))
    response_headers = _har_headers(response.get("headers"))
    content = _field(response, "content", dict)
    body = _decode_content(_har_text(content, response_headers, mitmproxy) or b"", response_headers)
    _require_stream(method, url, response_headers, body)
    if not body:  # mitmproxy writes "" for a streamed body it did not keep; browsers omit it
        raise _Skip("no response body stored")
    post_data = entry["request"].get("postData")
    request_body = _har_text(post_data, request_headers, mitmproxy) if post_data else None
    return Exchange(
        method=method, url=url, request_headers=request_headers, request_body=request_body or b"",
        status=status, response_headers=response_headers, response_body=body,
        complete=not error, capture="import:har", error=_short(error) if error else None)


def _har_headers(value: Any) -> _Headers:
    """HAR headers: ``{"name", "value"}`` objects (browsers, mitmproxy) or pairs (Slack)."""
    headers: _Headers = []
    for header in value if isinstance(value, list) else []:
        pair = (header.get("name"), header.get("value")) if isinstance(header, dict) else header
        name, text = pair if isinstance(pair, list | tuple) and len(pair) == 2 else (None, None)
        if not isinstance(name, str) or not isinstance(text, str):
            raise _Skip("malformed: a header is not a name/value pair")
        if not name.startswith(":"):  # HTTP/2 pseudo-headers repeat method and URL (and query)
            headers.append((name, text))
    return headers


def _har_text(holder: Any, headers: _Headers, mitmproxy: bool) -> bytes | None:
    """The bytes of a HAR ``content`` or ``postData``: base64, or text in the body's charset."""
    text = holder.get("text") if isinstance(holder, dict) else None
    if text is None:
        return None
    if not isinstance(text, str):
        raise _Skip("malformed: body text is not a string")
    if holder.get("encoding", holder.get("_encoding")) == "base64":
        try:
            return base64.b64decode(text, validate=True)
        except binascii.Error:
            raise _Skip("malformed: body is not valid base64") from None
    return _encode_text(text, _har_charset(headers, mitmproxy))


def _har_charset(headers: _Headers, mitmproxy: bool) -> str:
    """The charset the recorder decoded the body with, to get the same bytes back.

    Browsers write Unicode text. mitmproxy's ``get_text`` decodes with the content-type's charset,
    else UTF-8 for JSON types, else latin-1: so an SSE body with UTF-8 in it appears as mojibake
    in a mitmproxy HAR, and only latin-1 gives the original bytes back.
    """
    content_type = _header(headers, "content-type")
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


def _read_flows(data: bytes, raw: _Raw) -> list[Exchange | Skipped]:
    if data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):  # FlowReader reads HAR too
        return _read_har(data, raw)
    from mitmproxy import exceptions, io

    flows: list[Any] = []
    try:
        for flow in io.FlowReader(BytesIO(data)).stream():
            flows.append(flow)
    # Any exception: mitmproxy's deserialiser raises more than FlowReadException on bad state.
    except Exception as error:
        if not flows:
            known = isinstance(error, exceptions.FlowReadException)
            problem = _short(error) if known else f"{type(error).__name__} in the first flow"
            raise SourceError(f"not a mitmproxy flow file: {problem}") from None
        flows.append(None)  # a writer that was killed leaves a partial last flow: keep the rest
    return [_convert(f"flow {n}", _flow_exchange, flow) for n, flow in enumerate(flows, 1)]


def _flow_exchange(flow: Any) -> Exchange:
    from mitmproxy import http

    if flow is None:
        raise _Skip("file is truncated or corrupt from here on")
    if not isinstance(flow, http.HTTPFlow):
        raise _Skip(f"not an HTTP flow ({flow.type})")
    request, response = flow.request, flow.response
    error = _short(flow.error.msg) if flow.error else None
    if response is None:
        raise _Skip(f"no response ({error or 'none recorded'})")
    response_headers = _mitmproxy_headers(response.headers)
    body = _flow_content(response, response_headers)
    _require_stream(request.method, request.pretty_url, response_headers, body or b"")
    if body is None:
        raise _Skip("no response body stored (streamed without store_streamed_bodies)")
    request_headers = _mitmproxy_headers(request.headers)
    return Exchange(
        method=request.method, url=request.pretty_url, request_headers=request_headers,
        request_body=_flow_content(request, request_headers) or b"",
        status=response.status_code, response_headers=response_headers, response_body=body,
        complete=flow.error is None, capture="import:flow", error=error)


def _mitmproxy_headers(headers: Any) -> _Headers:
    # As mitmproxy's own Headers.items(): UTF-8, undecodable bytes kept as surrogates.
    return [
        (name.decode("utf-8", "surrogateescape"), value.decode("utf-8", "surrogateescape"))
        for name, value in headers.fields
    ]


def _flow_content(message: Any, headers: _Headers) -> bytes | None:
    """A mitmproxy message's body with content-encoding removed; None if it was not stored."""
    try:
        content = message.get_content()
    except ValueError:
        coding = _short(_header(headers, "content-encoding"), 20)
        raise _Skip(f"body is not valid {coding} (truncated?)") from None
    return content if isinstance(content, bytes) else None


def _read_cassette(data: bytes, raw: _Raw) -> list[Exchange | Skipped]:
    return _cassette_items(_load_yaml(data))


def _load_yaml(data: bytes) -> Any:
    import yaml

    # The libyaml loader when present: cassettes of long streams are slow in pure Python.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(data, Loader=loader)  # a safe loader, as yaml.safe_load
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark  # str(error) would quote the document
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        raise SourceError(f"not a VCR cassette: {_short(error.problem)}{where}") from None
    except (yaml.YAMLError, RecursionError) as error:
        raise SourceError(f"not a VCR cassette: not YAML ({type(error).__name__})") from None


def _cassette_items(document: Any) -> list[Exchange | Skipped]:
    interactions = document.get("interactions") if isinstance(document, dict) else None
    if not isinstance(interactions, list):
        raise SourceError("not a VCR cassette: no interactions list")
    numbered = enumerate(interactions, 1)
    return [_convert(f"interaction {n}", _interaction, item) for n, item in numbered]


def _interaction(item: Any) -> Exchange:
    method, url = _field(item, "request.method", str), _field(item, "request.uri", str)
    response = _field(item, "response", dict)
    response_headers = _vcr_headers(response.get("headers"))
    if "status_code" in response:  # httpx cassettes written by vcrpy before 5.0
        status, body = _field(response, "status_code", int), _vcr_body(response.get("content"))
    else:
        status = _field(response, "status.code", int)
        body = _vcr_body(_field(response, "body", dict).get("string"))
    # decode_compressed_response=False keeps gzip bytes (a !!binary string) under their header.
    body = _decode_content(body, response_headers)
    _require_stream(method, url, response_headers, body)
    return Exchange(
        method=method, url=url, request_headers=_vcr_headers(item["request"].get("headers")),
        request_body=_vcr_body(item["request"].get("body")),
        status=status, response_headers=response_headers, response_body=body,
        capture="import:vcr")


def _vcr_headers(value: Any) -> _Headers:
    """VCR headers map a name to a list of values (or, in old httpx cassettes, to one value)."""
    if not isinstance(value, dict):
        return []
    headers: _Headers = []
    for name, values in value.items():
        for text in values if isinstance(values, list) else [values]:
            if not isinstance(text, str | int):
                raise _Skip("malformed: a header value is not text")
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
    raise _Skip("malformed: a body is neither text nor binary")


def _read_sse(data: bytes, raw: _Raw) -> list[Exchange | Skipped]:
    if not _SSE_LINE.search(data):
        raise SourceError("not an SSE body: no line starts with data:, event:, id: or :")
    return [raw.exchange(data, "text/event-stream")]


def _read_jsonl(data: bytes, raw: _Raw) -> list[Exchange | Skipped]:
    try:
        lines = data.decode("utf-8-sig").split("\n")  # not splitlines: JSON may hold U+2028
    except UnicodeDecodeError as error:
        raise SourceError(f"not JSON lines: not UTF-8 (byte {error.start})") from None
    for number, line in enumerate(lines, 1):
        if line.strip():
            try:
                json.loads(line)
            except (json.JSONDecodeError, RecursionError) as error:
                problem = error.msg if isinstance(error, json.JSONDecodeError) else "too deep"
                raise SourceError(f"not JSON lines: line {number}: {problem}") from None
    return [raw.exchange(data, "application/x-ndjson")]


def _read_json(data: bytes, raw: _Raw) -> list[Exchange | Skipped]:
    """A .json file: a HAR, a VCR cassette saved as JSON, or a raw array of chunks."""
    document = _load_json(data, "not JSON")
    if isinstance(document, dict) and "log" in document:
        return _har_items(document)
    if isinstance(document, dict) and "interactions" in document:
        return _cassette_items(document)
    if not isinstance(document, list):
        found = "an object" if isinstance(document, dict) else f"a {type(document).__name__}"
        raise SourceError(f"a .json body must be a JSON array of chunks, not {found}")
    return [raw.exchange(data, "application/json")]


_READERS: dict[str, _Reader] = {
    ".har": _read_har, ".zhar": _read_har, ".flow": _read_flows, ".mitm": _read_flows,
    ".yaml": _read_cassette, ".yml": _read_cassette, ".json": _read_json,
    ".sse": _read_sse, ".jsonl": _read_jsonl, ".ndjson": _read_jsonl}
