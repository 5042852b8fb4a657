"""A recorded response body as the provider's stream events: SSE, JSON lines, a JSON array or
AWS event-stream messages.

How this works: the media type (and the profile, for JSON lines served as ``application/json``
and for event streams) names the framing. SSE and a streamed array the strict parser refuses as
a whole are read by the framing's reader (``readers``), as the proxy reads them live, so import
and the proxy's verdict see the same events; a JSON array is first parsed whole, JSON lines are
split at line feeds of the decoded text, and event-stream messages are read by the profile
(``eventstream.body_events``).
"""

from __future__ import annotations

from dataclasses import dataclass

from callgate.reassemble import strict_json
from callgate.reassemble.errors import NotApplicable
from callgate.reassemble.eventstream import body_events
from callgate.reassemble.framing import EVENTSTREAM, MEDIA_TYPES, NDJSON, SSE
from callgate.reassemble.limits import DOCUMENT_LIMITS
from callgate.reassemble.profiles import PROFILES, framing_for
from callgate.reassemble.readers import ArrayReader, SSEReader, event_value


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
    # member-name check, and the values are the same either way (``readers.event_reader``).
    reader = SSEReader(PROFILES.get(profile) if profile is not None else None, lambda: body)
    events = [*reader.read(body), *reader.read(b"")]
    return StreamBody(events, SSE, reader.ended, reader.incomplete)


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
    reader = ArrayReader(None, lambda: body)
    events = reader.read(body)
    if reader.closed and reader.rest().strip() != b"]":
        return None  # something after the array
    return StreamBody(list(events), "json", incomplete=not reader.closed)
