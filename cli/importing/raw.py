"""Reads bare response bodies (.sse, .jsonl/.ndjson, a .json array of chunks, and a binary AWS
.eventstream) into one ``Exchange`` each, its request taken from the command line; a .json file
holding a HAR or a cassette goes to that format's reader instead.
"""

from __future__ import annotations

import json
import re

from callgate.cli.importing.cassettes import cassette_items
from callgate.cli.importing.common import RawRequest, Skipped, load_json
from callgate.cli.importing.har import har_items
from callgate.reassemble.errors import InputError
from callgate.reassemble.eventstream import PRELUDE, starts_a_message
from callgate.reassemble.framing import EVENTSTREAM, MEDIA_TYPES
from callgate.redact.exchange import Exchange

_SSE_LINE = re.compile(rb"(?:\A|[\r\n])(?:data:|event:|id:|:)")


def read_sse(data: bytes, raw: RawRequest) -> list[Exchange | Skipped]:
    if not _SSE_LINE.search(data):
        raise InputError("not an SSE body: no line starts with data:, event:, id: or :")
    return [raw.exchange(data, "text/event-stream")]


def read_jsonl(data: bytes, raw: RawRequest) -> list[Exchange | Skipped]:
    try:
        lines = data.decode("utf-8-sig").split("\n")  # not splitlines: JSON may hold U+2028
    except UnicodeDecodeError as error:
        raise InputError(f"not JSON lines: not UTF-8 (byte {error.start})") from None
    for number, line in enumerate(lines, 1):
        if line.strip():
            try:
                json.loads(line)
            except (json.JSONDecodeError, RecursionError) as error:
                problem = error.msg if isinstance(error, json.JSONDecodeError) else "too deep"
                raise InputError(f"not JSON lines: line {number}: {problem}") from None
    return [raw.exchange(data, "application/x-ndjson")]


def read_json(data: bytes, raw: RawRequest) -> list[Exchange | Skipped]:
    """A .json file: a HAR, a VCR cassette saved as JSON, or a raw array of chunks."""
    document = load_json(data, "not JSON")
    if isinstance(document, dict) and "log" in document:
        return har_items(document)
    if isinstance(document, dict) and "interactions" in document:
        return cassette_items(document)
    if not isinstance(document, list):
        found = "an object" if isinstance(document, dict) else f"a {type(document).__name__}"
        raise InputError(f"a .json body must be a JSON array of chunks, not {found}")
    return [raw.exchange(data, "application/json")]


def read_eventstream(data: bytes, raw: RawRequest) -> list[Exchange | Skipped]:
    """A body of AWS event-stream messages (Bedrock), as it came off the wire."""
    if not starts_a_message(data):
        raise InputError(
            f"not an AWS event stream: the first {PRELUDE} bytes are no message "
            "prelude (or its CRC is wrong)"
        )
    return [raw.exchange(data, MEDIA_TYPES[EVENTSTREAM][0])]
