"""Anthropic Messages streams: ``events[]`` of ``content_block_*`` and ``message_*`` events.

Wire facts (Anthropic's streaming docs; SDK types ``RawMessageStreamEvent``): each content block
has an ``index``; a ``tool_use`` block starts with its id, name and a placeholder ``input``
(``{}``), grows by ``input_json_delta.partial_json`` and ends with ``content_block_stop``; the
message ends with ``message_delta`` carrying ``stop_reason`` (``tool_use`` when it holds calls),
then ``message_stop``. ``ping`` may come anywhere; ``error`` is a mid-stream failure. Blocks the
client does not execute (text, thinking, server tools and their results) are slots too, so a reused
index is caught whatever its kind, but they are not calls. The docs say new event types may be
added; an unknown one is ``unsupported_event`` until a profile update reads it.

On Amazon Bedrock (``POST /model/<anthropic model>/invoke-with-response-stream``) the same events
come in AWS event-stream messages (``reassemble/eventstream.py``): each a ``chunk`` event whose
JSON payload holds the Anthropic event, base64-encoded, in ``bytes``; a failure is an exception
message (``modelStreamErrorException``, ``throttlingException``, ...), read here as Anthropic's
``error`` event with the exception's name as its type (Bedrock Runtime API reference,
InvokeModelWithResponseStream; recorded streams in the shared corpus).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from callgate.reassemble.codes import Code
from callgate.reassemble.events import (
    Event,
    Problem,
    SlotDelta,
    SlotEnded,
    SlotKey,
    SlotStarted,
    TurnEnded,
)
from callgate.reassemble.eventstream import (
    Message,
    event_message,
    exception_message,
    failure,
    is_exception_name,
    payload_value,
)
from callgate.reassemble.framing import EVENTSTREAM, SSE
from callgate.reassemble.profiles.base import (
    ArgumentSite,
    Profile,
    event_type_in,
    flat_tools,
    is_index,
    provider_error,
    reason_replaced,
)
from callgate.reassemble.profiles.builtin import declared_tools

#: Block types that are not client tool calls, with the delta types each may receive.
_NON_CALL_BLOCKS: dict[str, frozenset[str]] = {
    "text": frozenset({"text_delta", "citations_delta"}),
    "thinking": frozenset({"thinking_delta", "signature_delta"}),
    "redacted_thinking": frozenset(),
    # Server-executed tools stream their input like tool_use, but the client never runs them.
    "server_tool_use": frozenset({"input_json_delta"}),
    "mcp_tool_use": frozenset({"input_json_delta"}),
    "container_upload": frozenset(),
}
_CALL_DELTAS = frozenset({"input_json_delta"})
_CONSUMED_EVENTS = frozenset({"message_start", "message_stop", "ping"})


def _non_call_deltas(block_type: str) -> frozenset[str] | None:
    if block_type in _NON_CALL_BLOCKS:
        return _NON_CALL_BLOCKS[block_type]
    # Results of server tools (web_search_tool_result, tool_search_tool_result, ...) are output.
    if block_type.endswith("_tool_result"):
        return frozenset({"input_json_delta"})
    return None


class MessagesTranslator:
    def __init__(self) -> None:
        self._block_types: dict[int, str] = {}

    #: Where in an event the argument text of ``continuation`` is.
    continuation_pointer = "/delta/partial_json"

    def continuation(self, raw: Any) -> tuple[SlotKey, str] | None:
        """The event most tool turns are made of: a ``content_block_delta`` that adds
        ``partial_json`` to a ``tool_use`` block already started. Its slot and text, which the
        general reading gives as one ``SlotDelta`` at ``/delta/partial_json``, with a fraction
        of the steps (the engine reads it without the event); None for any other event, which
        then takes the general reading. (Subscripts, as in ``ChatTranslator.continuation``: a
        value of any other shape fails on one of them. A negative or boolean index never names
        a started block.)"""
        try:
            if raw["type"] != "content_block_delta":
                return None
            delta, index = raw["delta"], raw["index"]
            partial, delta_type = delta["partial_json"], delta["type"]
        except (KeyError, TypeError):
            return None
        if (
            type(partial) is not str
            or type(index) is not int
            or delta_type != "input_json_delta"
            or self._block_types.get(index) != "tool_use"
        ):
            return None
        return (0, index), partial

    def translate(self, raw: object) -> list[Event]:
        if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
            return [Problem(Code.UNSUPPORTED_EVENT, "event has no type", "")]
        kind = raw["type"]
        if kind in _CONSUMED_EVENTS:
            return []
        handler = {
            "content_block_start": self._start,
            "content_block_delta": self._delta,
            "content_block_stop": self._stop,
            "message_delta": self._message_delta,
            "error": self._error,
        }.get(kind)
        if handler is None:
            return [
                Problem(Code.UNSUPPORTED_EVENT, f"event type {kind[:40]!r} is not known", "/type")
            ]
        return handler(raw)

    @staticmethod
    def _index(raw: Mapping[str, object]) -> int | Problem:
        index = raw.get("index")
        if is_index(index):
            return index
        return Problem(
            Code.INVALID_SLOT, f"block index {index!r} is not a non-negative integer", "/index"
        )

    def _start(self, raw: Mapping[str, object]) -> list[Event]:
        index = self._index(raw)
        if isinstance(index, Problem):
            return [index]
        block = raw.get("content_block")
        block_type = block.get("type") if isinstance(block, dict) else None
        if not isinstance(block, dict) or not isinstance(block_type, str):
            return [Problem(Code.UNSUPPORTED_EVENT, "content_block has no type", "/content_block")]
        self._block_types.setdefault(index, block_type)
        key = (0, index)
        if block_type == "tool_use":
            call_id, name = block.get("id"), block.get("name")
            return [
                SlotStarted(
                    key,
                    "/content_block",
                    call_id=call_id if isinstance(call_id, str) else None,
                    name=name if isinstance(name, str) else None,
                    stated_input=block.get("input"),
                )
            ]
        started = SlotStarted(key, "/content_block", is_call=False)
        if _non_call_deltas(block_type) is None:
            return [
                Problem(
                    Code.UNSUPPORTED_EVENT,
                    f"content block type {block_type[:40]!r} is not known; it could be a call",
                    "/content_block/type",
                    choice=0,
                    slot=index,
                ),
                started,
            ]
        return [started]

    def _delta(self, raw: Mapping[str, object]) -> list[Event]:
        index = self._index(raw)
        if isinstance(index, Problem):
            return [index]
        delta = raw.get("delta")
        delta_type = delta.get("type") if isinstance(delta, dict) else None
        key = (0, index)
        if not isinstance(delta, dict) or not isinstance(delta_type, str):
            return [
                Problem(Code.UNSUPPORTED_EVENT, "delta has no type", "/delta", choice=0, slot=index)
            ]
        block_type = self._block_types.get(index)
        if block_type is None:  # the engine reports delta_before_start
            partial = delta.get("partial_json")
            text = partial if isinstance(partial, str) else None
            return [SlotDelta(key, "/delta", arguments=text)]
        allowed = _CALL_DELTAS if block_type == "tool_use" else _non_call_deltas(block_type)
        if allowed is not None and delta_type not in allowed:
            return [
                Problem(
                    Code.UNSUPPORTED_EVENT,
                    f"{delta_type[:40]!r} delta on a {block_type[:40]!r} block",
                    "/delta/type",
                    choice=0,
                    slot=index,
                )
            ]
        if block_type != "tool_use":
            return [SlotDelta(key, "/delta")]
        partial = delta.get("partial_json")
        if not isinstance(partial, str):
            return [
                Problem(
                    Code.UNSUPPORTED_EVENT,
                    "partial_json is not a string",
                    "/delta/partial_json",
                    choice=0,
                    slot=index,
                )
            ]
        return [SlotDelta(key, "/delta/partial_json", arguments=partial)]

    def _stop(self, raw: Mapping[str, object]) -> list[Event]:
        index = self._index(raw)
        if isinstance(index, Problem):
            return [index]
        return [SlotEnded((0, index), "")]

    @staticmethod
    def _message_delta(raw: Mapping[str, object]) -> list[Event]:
        delta = raw.get("delta")
        if not isinstance(delta, dict):
            return [Problem(Code.UNSUPPORTED_EVENT, "message_delta has no delta", "/delta")]
        reason = delta.get("stop_reason")
        if reason is None:
            return []
        if not isinstance(reason, str):
            return [
                Problem(Code.UNSUPPORTED_EVENT, "stop_reason is not a string", "/delta/stop_reason")
            ]
        return [TurnEnded(0, reason, "/delta/stop_reason")]

    @staticmethod
    def _error(raw: Mapping[str, object]) -> list[Event]:
        error = raw.get("error")
        kind = error.get("type") if isinstance(error, dict) else None
        message = error.get("message") if isinstance(error, dict) else None
        return [provider_error(f"{kind}: {str(message)[:200]}")]


def accepted_reasons(request: Mapping[str, object]) -> frozenset[str]:
    return frozenset({"tool_use"})


def argument_sites(events: list[Any]) -> Iterator[ArgumentSite]:
    """Each tool block's ``partial_json`` fragments, and the ``input`` its start states."""
    for event in events:
        if not isinstance(event, dict):
            continue
        block, delta = event.get("content_block"), event.get("delta")
        if isinstance(block, dict) and "input" in block:
            yield "copy", event.get("index"), block, "input"
        if isinstance(delta, dict) and "partial_json" in delta:
            yield "stream", event.get("index"), delta, "partial_json"


def error_body(message: str, codes: Sequence[str]) -> dict[str, object]:
    """Anthropic's ``error`` event, which the anthropic SDK raises on."""
    return {"type": "error", "error": {"type": "callgate_blocked", "message": message}}


def from_invoke_message(message: Message) -> object:
    """The Anthropic event a Bedrock InvokeModelWithResponseStream message carries."""
    failed = failure(message)
    if failed is not None:
        name, payload = failed
        text = payload.get("message") if isinstance(payload, dict) else payload
        return {"type": "error", "error": {"type": name, "message": str(text)}}
    chunk = payload_value(message.payload)
    if message.header(":event-type") != "chunk":
        return chunk  # no Anthropic event: the translator says so
    encoded = chunk.get("bytes") if isinstance(chunk, dict) else None
    try:
        data = base64.b64decode(encoded if isinstance(encoded, str) else "", validate=True)
    except binascii.Error:
        return "a chunk whose bytes are not base64"
    return payload_value(data) if data else "a chunk without bytes"


def to_invoke_message(event: object) -> bytes:
    """The Bedrock message that sends an Anthropic event: an ``error`` event as an exception
    (``modelStreamErrorException`` unless its type names one), any other as a ``chunk``."""
    if isinstance(event, dict) and event.get("type") == "error":
        error = event.get("error")
        error = error if isinstance(error, dict) else {}
        name = str(error.get("type", ""))
        return exception_message(
            name if is_exception_name(name) else "modelStreamErrorException",
            json.dumps({"message": str(error.get("message", ""))}).encode(),
        )
    data = base64.b64encode(json.dumps(event, ensure_ascii=False).encode()).decode()
    return event_message("chunk", json.dumps({"bytes": data}).encode())


_SCALARS = (str, int, float, bool, type(None))


def names_cannot_repeat(value: Any, text: str) -> bool:
    """The ``names_proof`` of an event that holds one object below its own, and only scalars
    besides (a ``content_block_delta``: nearly every event of a turn): it holds when the text's
    ``:`` characters, less those in the two objects' strings, are exactly their members.

    Why that proves it: outside strings, a ``:`` ends each member name written in the text, and
    an object that repeats a name keeps fewer members than were written; inside strings, with
    no ``\\u`` escape in the text, each ``:`` of a parsed string is one in the text. The two
    objects are all the objects of the value, so when the count equals their members, every
    object keeps every member written."""
    delta = value.get("delta") if type(value) is dict else None
    if type(delta) is not dict:
        return False
    colons = text.count(":") - len(value) - len(delta)
    for holder in (value, delta):
        for field in holder.values():
            if type(field) is str:
                colons -= field.count(":")
            elif field is not delta and not isinstance(field, _SCALARS):
                return False
    return colons == 0


PROFILE = Profile(
    name="anthropic",
    stream_key="events",
    call_reasons=frozenset({"tool_use"}),
    accepted_reasons=accepted_reasons,
    turn_ends_slots=False,
    carries_terminal=event_type_in("message_delta", "message_stop"),
    terminal_pattern=rb"message_delta|message_stop",
    ends_stream=event_type_in("message_stop"),
    cut_short=reason_replaced("stop_reason", "max_tokens"),
    translator=lambda quirks, request: MessagesTranslator(),
    # Vertex AI serves Anthropic models at :streamRawPredict with the same events.
    endpoints=("/messages", ":streamRawPredict"),
    path_framings=((r"/model/[^/]*anthropic[^/]*/invoke-with-response-stream$", EVENTSTREAM),),
    framings=(SSE, EVENTSTREAM),
    from_message=from_invoke_message,
    to_message=to_invoke_message,
    tool_schemas=lambda request: {
        **flat_tools(request, "input_schema"),
        **declared_tools(request),
    },
    version_headers=("anthropic-version", "anthropic-beta"),
    event_lines=True,
    error_body=error_body,
    sniff=lambda first: (
        isinstance(first, dict)
        and str(first.get("type", "")).startswith(("message_", "content_block_"))
    ),
    argument_sites=argument_sites,
    structural_keys=frozenset({"stop_reason"}),
    names_proof=names_cannot_repeat,
)
