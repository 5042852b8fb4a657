"""What every reader of recordings shares: the per-exchange ``Skipped``, the raw request of a bare
body, and helpers that read fields, headers, encoded bodies, JSON and YAML.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from callgate.reassemble.errors import InputError, NotApplicable, SetupError
from callgate.reassemble.framing import EVENTSTREAM, JSON_ARRAY, MEDIA_TYPES, NDJSON, SSE
from callgate.reassemble.profiles import framing_for, profile_for
from callgate.redact.encoding import CODINGS, decode_whole
from callgate.redact.exchange import Exchange

_T = TypeVar("_T")
Headers = list[tuple[str, str]]

#: Media types whose body is a stream of chunks (SSE, newline-delimited JSON as Ollama sends, and
#: Bedrock's AWS event stream).
_STREAM_TYPES = (MEDIA_TYPES[SSE][0], MEDIA_TYPES[NDJSON][0], MEDIA_TYPES[EVENTSTREAM][0])


@dataclass(frozen=True)
class Skipped:
    """One exchange in a file that is not a streamed LLM exchange, or is broken."""

    #: Where it is in the file: "entry 3", "interaction 2", "flow 5".
    label: str
    #: One short line, e.g. "not a streamed response (content-type application/json)".
    reason: str


@dataclass(frozen=True)
class RawRequest:
    """What a bare body file cannot say about its request: given on the command line."""

    url: str
    request_body: bytes

    def exchange(self, body: bytes, content_type: str) -> Exchange:
        return Exchange(
            method="POST",
            url=self.url,
            request_headers=[],
            request_body=self.request_body,
            status=200,
            response_headers=[("content-type", content_type)],
            response_body=body,
            capture="import:raw",
        )


def convert_item(label: str, convert: Callable[[Any], Exchange], item: Any) -> Exchange | Skipped:
    try:
        return convert(item)
    except NotApplicable as skip:
        return Skipped(label, str(skip))


def convert_items(
    label: str, convert: Callable[[Any], list[Exchange]], item: Any
) -> list[Exchange | Skipped]:
    """``convert_item`` for an item that holds several exchanges (a WebSocket session)."""
    try:
        return list(convert(item))
    except NotApplicable as skip:
        return [Skipped(label, str(skip))]


def field(holder: Any, path: str, kind: type[_T]) -> _T:
    """``holder[a][b]`` for ``path`` "a.b"; the exchange is skipped unless it is a ``kind``."""
    value = holder
    for key in path.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    if not isinstance(value, kind):
        raise NotApplicable(f"malformed: {path} is missing or not a {kind.__name__}")
    return value


def short(text: object, limit: int = 80) -> str:
    """The first line of ``text``, cut to ``limit`` characters."""
    lines = str(text).strip().splitlines() or ["?"]
    line = lines[0]
    return line if len(line) <= limit else line[: limit - 3] + "..."


def header_value(headers: Headers, name: str) -> str:
    return next((value for key, value in headers if key.lower() == name), "")


def _media_type(headers: Headers) -> str:
    return header_value(headers, "content-type").split(";")[0].strip().lower()


def require_stream(method: str, url: str, headers: Headers, body: bytes) -> None:
    """Skip anything but a POST answered with a stream (SSE, NDJSON, or Gemini's JSON array)."""
    if method.upper() != "POST":
        raise NotApplicable(f"method {short(method, 16)}")
    media_type = _media_type(headers)
    if media_type in _STREAM_TYPES:
        return
    # Gemini without ?alt=sse streams one JSON array, where an error is a single object; Ollama
    # labels its JSON lines application/json too, where a reply that is not streamed is one line.
    profile = profile_for(url)
    framing = framing_for(profile, "application/json") if profile is not None else None
    if media_type not in ("application/json", ""):
        framing = None
    if framing == JSON_ARRAY and not body.lstrip().startswith(b"{"):
        return
    if framing == NDJSON and len([line for line in body.split(b"\n") if line.strip()]) > 1:
        return
    shown = short(media_type, 60) or "missing"
    raise NotApplicable(f"not a streamed response (content-type {shown})")


def decode_content(body: bytes, headers: Headers) -> bytes:
    """``body`` without its Content-Encoding, where the recorder had not already removed it."""
    codings = [c.strip().lower() for c in header_value(headers, "content-encoding").split(",")]
    for coding in reversed([c for c in codings if c not in ("", "identity")]):
        body = _undo_coding("gzip" if coding == "x-gzip" else coding, body)
    return body


def _undo_coding(coding: str, body: bytes) -> bytes:
    # Recorders often store the decoded body under the original header: decode only what really
    # is compressed. gzip and zstd have magic bytes; br and deflate do not, so a failure there
    # means "already decoded".
    magic = {"gzip": b"\x1f\x8b", "zstd": b"\x28\xb5\x2f\xfd"}.get(coding)
    if coding not in CODINGS:
        raise NotApplicable(f"unsupported content-encoding {short(coding, 20)}")
    if magic is not None and not body.startswith(magic):
        return body
    try:
        return decode_whole(body, coding)
    except SetupError as missing:
        raise NotApplicable(str(missing)) from None
    except InputError:
        if magic is not None:
            raise NotApplicable(f"response body is not valid {coding} (truncated?)") from None
        return body


def load_json(data: bytes, what: str) -> Any:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InputError(f"{what}: not UTF-8 (byte {error.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        ends = " (the file ends there: truncated?)" if error.pos >= len(text.rstrip()) else ""
        where = f"line {error.lineno} column {error.colno}"
        raise InputError(f"{what}: {error.msg} at {where}{ends}") from None
    except RecursionError:
        raise InputError(f"{what}: nested too deeply") from None


def load_yaml(data: bytes) -> Any:
    import yaml

    # The libyaml loader when present: cassettes of long streams are slow in pure Python.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(data, Loader=loader)  # a safe loader, as yaml.safe_load
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark  # str(error) would quote the document
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        raise InputError(f"not a VCR cassette: {short(error.problem)}{where}") from None
    except (yaml.YAMLError, RecursionError) as error:
        raise InputError(f"not a VCR cassette: not YAML ({type(error).__name__})") from None
