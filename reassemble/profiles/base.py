"""What every provider profile is made of: the ``Profile`` record and the helpers profiles share.

A profile holds every wire fact of one streaming API, so that the engine, the redactor, the
proxy and ``callgate serve`` ask it instead of knowing providers themselves:

- reading: a translator from one raw event to provider-neutral events
  (``callgate.reassemble.events``), the terminal reasons, whether the turn's end ends its slots;
- the request: the URL path endings it serves and how the request names its tools and schemas;
- the stream: how it is framed (SSE with or without ``event:`` lines, a JSON array,
  newline-delimited JSON, AWS event-stream messages), its end marker, which events carry the
  terminal evidence (what enforce mode holds back), and its error event;
- redaction: where arguments sit in an event, and which string fields are structure.

A translator keeps only the state it needs to read the wire format (which block index is which
kind, the next free slot for index-less calls); what a slot *is* and whether the turn may run is
the engine's business.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeGuard

from callgate.reassemble.codes import Code
from callgate.reassemble.events import Event, Problem
from callgate.reassemble.eventstream import Message
from callgate.reassemble.framing import SSE, WEBSOCKET

#: Where a profile's events hold tool-call arguments, for the redactor:
#: ``(kind, call key, container, field)``. ``stream`` fragments of one call (same key) are masked
#: as one text; each ``copy`` (a full restatement of a call's arguments, text or object) is masked
#: alone; a ``piece`` is part of one string value (Vertex ``partialArgs``). ``text`` and
#: ``text_copy`` are the same for free-form input (a shell command, a diff, a custom tool's
#: text, or a built-in item's input object holding such texts), masked as free text.
ArgumentSite = tuple[str, object, dict[str, Any], str]
#: ``(call key, container, member)``: an event's one ``stream`` site (its field is
#: ``"arguments"``) and the event's member under which nothing else is text or an id.
FragmentSite = tuple[object, dict[str, Any], str]
#: String fields of stream events that are structure, not content, whatever the profile.
STRUCTURAL_KEYS = frozenset(
    {"type", "object", "role", "model", "system_fingerprint", "service_tier", "name", "status"}
)


def sites_event_by_event(
    fragment_site: Callable[[Any], FragmentSite | None],
    event_sites: Callable[[Any, int], Iterator[ArgumentSite]],
    events: list[Any],
    covered: dict[int, set[str]] | None = None,
) -> Iterator[ArgumentSite]:
    """``argument_sites`` of a profile whose events each hold their own sites: those of event
    number ``n`` (``event_sites``), or, for an event that is one call's argument fragment
    (``fragment_site``, most of a long stream), its one site, found in a few steps. Given
    ``covered``, each such event's member under which nothing else is text or an id is noted
    there, by the event's ``id()``: redaction's scrub passes over it."""
    for number, event in enumerate(events):
        fragment = fragment_site(event)
        if fragment is None:
            yield from event_sites(event, number)
            continue
        key, container, member = fragment
        if covered is not None:
            covered[id(event)] = {member}
        yield "stream", key, container, "arguments"


def is_index(value: object) -> TypeGuard[int]:
    """A slot or choice index on the wire: a non-negative integer, and not a boolean (which
    Python counts as an int)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class Translator(Protocol):
    def translate(self, raw: object) -> list[Event]:
        """The neutral events one raw provider event amounts to, in order."""
        ...


def _never(raw: object) -> bool:
    return False


def _no_event(raw: object) -> object | None:
    return None


@dataclass(frozen=True, kw_only=True)
class Profile:
    name: str
    #: The envelope key holding this profile's stream: "chunks" or "events".
    stream_key: str
    #: Terminal reasons that claim the turn made tool calls ("tool_calls", "tool_use").
    call_reasons: frozenset[str]
    #: Terminal reasons that properly end a choice holding calls, given the request parameters.
    accepted_reasons: Callable[[Mapping[str, object]], frozenset[str]]
    #: Whether the end of a turn also ends its slots (Chat Completions), or each slot has its
    #: own end event (Anthropic ``content_block_stop``).
    turn_ends_slots: bool
    #: Build a translator for one stream, given the quirks in force and the request parameters.
    translator: Callable[[frozenset[str], Mapping[str, object]], Translator]
    #: Whether a call must carry an id (Gemini's functionCall.id is optional).
    requires_call_id: bool = True
    #: Whether each call arrives whole in one event (Gemini, Ollama): there are no fragments to
    #: cut, repeat or move after the end.
    whole_calls: bool = False
    #: Whether the message that holds a turn's calls is itself its terminal evidence (Gemini
    #: Live's ``toolCall``): there is no terminal apart from the calls to drop, repeat or
    #: restate, and the calls of a turn share their one message.
    calls_are_terminal: bool = False
    #: Whether a call names its slot in a field (an index) that another call could reuse;
    #: Gemini's calls have none, their slot is their position.
    slot_field: bool = True
    #: Whether an argument fragment may state its call's id and name again (Chat Completions'
    #: indexed call entries).
    fragments_restate_identity: bool = False
    #: Whether the SSE stream ends with ``data: [DONE]`` (Chat Completions).
    done_sentinel: bool = False
    #: Whether a raw event carries the turn's terminal evidence, or follows it (what a proxy in
    #: enforce mode holds back until the verdict is known).
    carries_terminal: Callable[[object], bool] = _never
    #: Whether a raw event is the last that belongs to the turn (besides ``[DONE]``); None when
    #: no event is (Chat Completions, Gemini), which spares the tap a call per event.
    ends_stream: Callable[[object], bool] | None = None
    #: A regular expression (bytes) found in the JSON text of every event that carries the
    #: terminal evidence or ends the stream, unless the text spells it with ``\\u`` escapes:
    #: enforce mode releases an SSE event without a match (nor ``[DONE]``, nor such an escape)
    #: before reading it, and reads it later, before any event that can decide. Empty:
    #: every event is read before it goes.
    terminal_pattern: bytes = b""
    #: A copy of an event that carries the terminal evidence as the provider sends it when the
    #: output hit its token limit instead (None when this event states no reason).
    cut_short: Callable[[object], object | None] = _no_event
    #: A copy of an event that carries the terminal evidence as the provider sends it when the
    #: user interrupted the turn (an OpenAI Realtime ``response.done`` cancelled by
    #: ``turn_detected``); None for an API whose turns are not cancelled that way.
    cancelled: Callable[[object], object | None] | None = None
    #: The message with which the provider withdraws calls it sent, by their ids (Gemini Live's
    #: ``toolCallCancellation``); None for an API that has none.
    withdrawal: Callable[[list[str]], object] | None = None
    #: Given an event's value, parsed without the member-name check, and its JSON text (which
    #: holds no ``\\u`` escape), whether the event's own shape proves that no object in the text
    #: repeats a name; False sends the text to the full strict parse (``readers.event_reader``).
    #: None: every event takes the full parse.
    names_proof: Callable[[object, str], bool] | None = None

    # -- the request -------------------------------------------------------------------------
    #: URL path endings of the endpoints that stream this profile ("/chat/completions").
    endpoints: tuple[str, ...]
    #: Provider names for which this profile reads an endpoint another profile also serves
    #: (Mistral's /v1/chat/completions).
    claims: frozenset[str] = frozenset()
    #: Tool name -> argument JSON Schema, from a request body.
    tool_schemas: Callable[[Mapping[str, Any]], dict[str, Any]]
    #: Request headers that pin the API version and hold no secret ("anthropic-version").
    version_headers: tuple[str, ...] = ()

    # -- the stream --------------------------------------------------------------------------
    #: Whether each SSE event has an ``event:`` line named after its ``type`` (Anthropic).
    event_lines: bool = False
    #: The framings the API streams in (``framing.SSE``, ``JSON_ARRAY``, ``NDJSON``,
    #: ``EVENTSTREAM``): the first is what it sends unless the request asks for SSE (Gemini's
    #: ``alt=sse``) or its path names another (``path_framings``).
    framings: tuple[str, ...] = (SSE,)
    #: URL path patterns (regular expressions) it also serves, each with the framing its
    #: responses stream in there (Anthropic models on Bedrock's InvokeModelWithResponseStream).
    path_framings: tuple[tuple[str, str], ...] = ()
    #: AWS event-stream (Bedrock): the event one decoded message stands for, and the message
    #: that sends an event (``callgate serve``, enforce mode's error).
    from_message: Callable[[Message], object] | None = None
    to_message: Callable[[object], bytes] | None = None
    #: The provider's own error event, given callgate's message and the blocking codes: what
    #: enforce mode sends instead of a failing turn's terminal, so the provider's SDK raises.
    error_body: Callable[[str, Sequence[str]], dict[str, object]]
    #: Whether a first event could only be this profile's (an importer's last resort).
    sniff: Callable[[object], bool] = _never

    # -- redaction ---------------------------------------------------------------------------
    #: Where this profile's events hold tool-call arguments.
    argument_sites: Callable[[list[Any]], Iterator[ArgumentSite]]
    #: The short path of ``argument_sites`` for an event that is one call's argument fragment
    #: (Chat Completions' ``fragment_site``): the site's key and object, and the event's member
    #: under which redaction has nothing else to scrub; None for any other event. None here when
    #: the profile has no short path. With it, the proxy's tap and fixture writer also build a
    #: fragment like one before it from that one's value (``fragment_templates``).
    fragment_site: Callable[[Any], FragmentSite | None] | None = None
    #: With ``fragment_site``, for a profile whose events each hold their own sites: the sites
    #: of event number ``n``; ``argument_sites`` is then ``sites_event_by_event`` of the two,
    #: which redaction calls itself to note the fragments it passes over in the same pass.
    event_sites: Callable[[Any, int], Iterator[ArgumentSite]] | None = None
    #: String fields of this profile's events that are structure ("finish_reason").
    structural_keys: frozenset[str] = frozenset()
    #: Where this profile's events hold audio or other media as base64 text (a Realtime
    #: ``response.output_audio.delta``, a Gemini Live ``inlineData``): ``(container, field)``
    #: pairs, which redaction replaces by their length and digest (``redact.mask.media_stand_in``).
    media_sites: Callable[[list[Any]], Iterator[tuple[dict[str, Any], str]]] | None = None

    @property
    def over_websocket(self) -> bool:
        """Whether the API streams a WebSocket session's messages, not an HTTP body (which the
        proxy's body tap, ``serve``'s HTTP answers and ``import`` of a body read)."""
        return WEBSOCKET in self.framings

    def message_frame(self, event: object) -> bytes:
        """One event as the AWS event-stream message this profile's provider sends."""
        if self.to_message is None:
            raise ValueError(f"{self.name} streams no event-stream messages")
        return self.to_message(event)

    def sse_frame(self, event: object) -> bytes:
        """One event as this profile's SSE framing sends it."""
        data = json.dumps(event, ensure_ascii=False)
        if self.event_lines and isinstance(event, dict) and "type" in event:
            return f"event: {event['type']}\ndata: {data}\n\n".encode()
        return f"data: {data}\n\n".encode()


def event_type_in(*types: str) -> Callable[[object], bool]:
    """A test on the ``type`` field of a raw event (Anthropic, OpenAI Responses)."""
    return lambda raw: isinstance(raw, dict) and raw.get("type") in types


def any_item_has(items: str, key: str) -> Callable[[object], bool]:
    """A test that some entry of the raw event's list ``items`` has a non-null ``key``
    (``choices[].finish_reason``, Gemini's ``candidates[].finishReason``)."""

    def test(raw: object) -> bool:
        entries = raw.get(items) if isinstance(raw, dict) else None
        return isinstance(entries, list) and any(
            isinstance(entry, dict) and entry.get(key) is not None for entry in entries
        )

    return test


def reason_replaced(key: str, reason: str) -> Callable[[object], object | None]:
    """A ``cut_short`` for APIs that state why the output ended in a field: a copy of the event
    with every string ``key`` in it set to ``reason``."""

    def cut_short(raw: object) -> object | None:
        event, found = copy.deepcopy(raw), False
        stack = [event]
        while stack:
            value = stack.pop()
            if isinstance(value, dict):
                if isinstance(value.get(key), str):
                    value[key], found = reason, True
                stack.extend(value.values())
            elif isinstance(value, list):
                stack.extend(value)
        return event if found else None

    return cut_short


def provider_error(detail: str, pointer: str = "/error") -> Problem:
    """The provider said in the stream that the turn failed: ``stream_error`` with its words."""
    return Problem(Code.STREAM_ERROR, f"provider sent an error: {detail}", pointer)


def error_event(raw: Mapping[str, object]) -> list[Event]:
    """An OpenAI ``error`` event (Responses, Realtime) as the provider error: the recorded wire
    shape nests ``{type, code, message}`` under ``error``; openai-python's type is flat."""
    error = raw.get("error")
    body = error if isinstance(error, dict) else raw
    detail = body.get("message") or body.get("code") or body.get("type")
    return [provider_error(str(detail)[:200], "/error" if isinstance(error, dict) else "")]


def openai_error(message: str, codes: Sequence[str]) -> dict[str, object]:
    """OpenAI's error object, which OpenAI-compatible SDKs raise on (``APIError``)."""
    return {
        "error": {
            "message": message,
            "type": "callgate_blocked",
            "code": codes[0] if codes else "blocked",
            "param": None,
        }
    }


def function_tools(request: Mapping[str, Any]) -> dict[str, Any]:
    """Chat Completions tools (``tools[].function``; a function without ``parameters`` takes
    none) and the legacy ``functions[]``."""
    schemas: dict[str, Any] = {}
    for tool in _dicts(request.get("tools")) + _dicts(request.get("functions")):
        function = tool.get("function", tool)
        if not isinstance(function, dict):
            continue
        schema = function.get("parameters", function.get("input_schema"))
        if "function" in tool and schema is None:
            schema = {"type": "object", "properties": {}}  # OpenAI: no parameters = none
        _keep(schemas, function.get("name"), schema)
    return schemas


def flat_tools(request: Mapping[str, Any], schema_key: str) -> dict[str, Any]:
    """Tools listed flat, ``{"name", <schema_key>}`` (Anthropic ``input_schema``, Responses
    ``parameters``). A tool without a schema (Anthropic-defined tools such as computer use) is
    left out: a call to one is then ``unknown_tool`` until the user supplies a schema."""
    schemas: dict[str, Any] = {}
    for tool in _dicts(request.get("tools")):
        _keep(schemas, tool.get("name"), tool.get(schema_key))
    return schemas


def _keep(schemas: dict[str, Any], name: object, schema: object) -> None:
    if isinstance(name, str) and isinstance(schema, dict | bool):
        schemas[name] = schema


def _dicts(value: object) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
