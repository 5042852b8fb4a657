"""A recorded response body as the provider's stream events: SSE, JSON lines, a JSON array or
AWS event-stream messages."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from callgate.reassemble import strict_json
from callgate.reassemble.errors import NotApplicable
from callgate.reassemble.eventstream import body_events
from callgate.reassemble.framing import EVENTSTREAM, MEDIA_TYPES, NDJSON, ArrayFramer, element_text
from callgate.reassemble.limits import DOCUMENT_LIMITS
from callgate.reassemble.profiles import PROFILES, framing_for
from callgate.reassemble.sse import SSEError, decode_all, split_at_bad_byte


@dataclass(frozen=True)
class StreamBody:
    #: Each event's JSON value, in order; data that is not strict JSON stays a string so the
    #: engine sees (and reports) it instead of it vanishing.
    events: list[object]
    framing: str
    #: ``data: [DONE]`` was sent (Chat Completions' end-of-stream sentinel).
    done: bool = False
    #: The SSE body ended inside an event (no dispatching blank line).
    incomplete: bool = False


def parse_stream_body(
    body: bytes, content_type: str | None, *, profile: str | None = None
) -> StreamBody:
    """Split ``body`` into events by its content type (``text/event-stream``,
    ``application/x-ndjson``, ``application/json``: a JSON array, or JSON lines when
    ``profile`` streams those; ``application/vnd.amazon.eventstream``, read by ``profile``).
    Raises ``NotApplicable``."""
    kind = (content_type or "").split(";")[0].strip().lower()
    if kind == "text/event-stream":
        return _sse(body, profile)
    if kind in ("application/x-ndjson", "application/jsonl", "application/json-lines") or (
        kind == "application/json" and profile is not None and framing_for(profile, kind) == NDJSON
    ):
        return _json_lines(body)
    if kind == MEDIA_TYPES[EVENTSTREAM][0]:
        return _event_stream(body, profile)
    if kind == "application/json":
        return _json_array(body)
    raise NotApplicable(f"not streamed (content-type {kind or 'missing'})")


def _sse(body: bytes, profile: str | None) -> StreamBody:
    # Read as the proxy reads each event live: the profile's proof spares most events the
    # member-name check, and the values are the same either way (``event_reader``).
    read = event_reader(PROFILES[profile].names_proof) if profile in PROFILES else event_value
    rest: list[object] = []
    try:
        decoded, incomplete = decode_all(body)
    except SSEError as error:  # the events before the bad byte, then the rest as one text event
        decoded, text = split_at_bad_byte(body, error.offset)
        incomplete, rest = True, [text]
    events = [read(event.data) for event in decoded if event.data != "[DONE]"]
    done = any(event.data == "[DONE]" for event in decoded)
    return StreamBody([*events, *rest], "sse", done, incomplete)


def _json_lines(body: bytes) -> StreamBody:
    try:
        lines = body.decode("utf-8-sig").split("\n")  # not splitlines: JSON may hold U+2028
    except UnicodeDecodeError as error:
        raise NotApplicable(f"not UTF-8 at byte {error.start}") from None
    return StreamBody([event_value(line) for line in lines if line.strip()], "jsonl")


def _event_stream(body: bytes, profile: str | None) -> StreamBody:
    """AWS event-stream messages, each read by the profile; a cut or unreadable last message is
    a text event saying why, for the engine to report (``incomplete``)."""
    from_message = PROFILES[profile].from_message if profile is not None else None
    if from_message is None:
        raise NotApplicable("an event stream, which no profile chosen reads")
    events, cut = body_events(body, from_message)
    return StreamBody(events, EVENTSTREAM, incomplete=cut)


def _json_array(body: bytes) -> StreamBody:
    try:
        value = strict_json.loads_bytes(body, DOCUMENT_LIMITS)
    except strict_json.StrictJSONError as error:
        framed = _framed_json_array(body)
        if framed is None:
            raise NotApplicable(f"not a JSON array of chunks: {error.message}") from None
        return framed
    if not isinstance(value, list):
        raise NotApplicable("not streamed: the body is one JSON document, not a list of chunks")
    return StreamBody(value, "json")


def _framed_json_array(body: bytes) -> StreamBody | None:
    """A streamed array the strict parser refuses as a whole, read element by element, as the
    proxy reads it live: cut before its closing bracket (the connection ended: marked
    incomplete), or holding an element that is not strict JSON (kept as text, for the engine to
    report, as a bad SSE event is). None when the body is not such an array."""
    if not body.lstrip().startswith(b"["):
        return None
    framer = ArrayFramer()
    blocks = framer.feed(body)
    if framer.closed and framer.rest().strip() != b"]":
        return None  # something after the array
    events = [event_value(element_text(block, i == 0)) for i, block in enumerate(blocks)]
    return StreamBody(events, "json", incomplete=not framer.closed)


def event_value(text: str | bytes) -> object:
    """One event's JSON value; text that is not strict JSON stays a string, so the engine sees
    (and reports) it instead of it vanishing."""
    try:
        return (
            strict_json.loads(text, DOCUMENT_LIMITS)
            if isinstance(text, str)
            else strict_json.loads_bytes(text, DOCUMENT_LIMITS)
        )
    except strict_json.StrictJSONError:
        return text if isinstance(text, str) else text.decode("utf-8", "replace")


def event_reader(names_proof: Callable[[object, str], bool] | None) -> Callable[[str], object]:
    """``event_value`` for a profile's events. Given the profile's ``names_proof``, a text
    without ``\\u`` escapes is parsed without the member-name check first (a Python call per
    object, a third of the parse of a Chat Completions chunk), and kept when the proof holds
    for it; any other text takes ``event_value``. Either way the value is ``event_value``'s."""
    if names_proof is None:
        return event_value

    def value(text: str) -> object:
        if "\\u" in text:
            return event_value(text)
        try:
            parsed = strict_json.loads(text, DOCUMENT_LIMITS, check_names=False)
        except strict_json.StrictJSONError:  # the full parse fails too (and keeps the text)
            return text
        return parsed if names_proof(parsed, text) else event_value(text)

    return value
