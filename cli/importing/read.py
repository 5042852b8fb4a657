"""Readers behind ``callgate import``: recordings users already have, as unredacted ``Exchange``s.

How this works: ``read_source`` picks a reader from ``_READERS`` by extension (or, for an unknown
extension, by sniffing the first bytes). Each reader, one module per format (``har``, ``flows``,
``cassettes``, ``raw``), parses the whole file with the format's own library (``json``,
mitmproxy's ``FlowReader``, PyYAML) and converts each recorded exchange on its own: a streamed
POST becomes an ``Exchange`` with any content-encoding removed, anything else (a GET, a JSON
response, a body the recorder did not keep, a malformed entry) becomes a ``Skipped`` so the rest
of the file still imports. A file that cannot be used at all raises ``InputError``. What the
readers share lives in ``common``.

Exchanges hold keys and prompts: no message in this package quotes a body, a header or a URL
query string.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from callgate.cli.importing.cassettes import cassette_items, read_cassette
from callgate.cli.importing.common import RawRequest, Skipped, load_yaml
from callgate.cli.importing.flows import read_flows
from callgate.cli.importing.har import read_har
from callgate.cli.importing.raw import read_eventstream, read_json, read_jsonl, read_sse
from callgate.reassemble.errors import InputError
from callgate.reassemble.eventstream import starts_a_message
from callgate.redact.exchange import Exchange

__all__ = ["InputError", "Skipped", "read_source"]

_HAR_START = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"log"')
_TNETSTRING_START = re.compile(rb"\A\d+:")
_UNKNOWN = (
    "unknown recording format (expected .har, .flow, .yaml, .sse, .jsonl, .json or .eventstream)"
)

_Reader = Callable[[bytes, RawRequest], list[Exchange | Skipped]]


def read_source(
    path: Path, *, request_body: bytes | None = None, url: str | None = None
) -> list[Exchange | Skipped]:
    """The exchanges recorded in ``path``, in file order, each an ``Exchange`` or a ``Skipped``.

    Formats: HAR (.har, .zhar, or JSON with ``log.entries``), mitmproxy flow files (.flow/.mitm or
    tnetstring content), VCR.py / pytest-recording cassettes (.yaml/.yml, or JSON with
    ``interactions``), and raw bodies (.sse, .jsonl, .json array of chunks, .eventstream or a body
    that starts with an event-stream message prelude). ``request_body``
    (default ``b"{}"``) and ``url`` (default ``""``) describe the request of a raw body and are
    ignored for the other formats. Raises ``InputError`` if the file is unreadable or unusable.
    """
    try:
        data = path.read_bytes()
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror or error}") from None
    if not data.strip():
        raise InputError("empty file")
    reader = _READERS.get(path.suffix.lower()) or _sniff(data)
    return reader(data, RawRequest(url or "", b"{}" if request_body is None else request_body))


def _sniff(data: bytes) -> _Reader:
    """The reader for a file whose extension says nothing."""
    if _HAR_START.match(data):
        return read_har
    if starts_a_message(data):
        return read_eventstream
    if _TNETSTRING_START.match(data):
        return read_flows
    try:
        document = load_yaml(data)
    except InputError:
        document = None
    if isinstance(document, dict) and "interactions" in document:
        return lambda _data, _raw: cassette_items(document)  # parsed once, here
    raise InputError(_UNKNOWN)


_READERS: dict[str, _Reader] = {
    ".har": read_har,
    ".zhar": read_har,
    ".flow": read_flows,
    ".mitm": read_flows,
    ".yaml": read_cassette,
    ".yml": read_cassette,
    ".json": read_json,
    ".sse": read_sse,
    ".jsonl": read_jsonl,
    ".ndjson": read_jsonl,
    ".eventstream": read_eventstream,
}
