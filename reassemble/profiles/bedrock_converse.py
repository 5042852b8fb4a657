"""Amazon Bedrock ConverseStream (``POST /model/<id>/converse-stream``): ``events[]``, each in the
``{"<eventType>": payload}`` form the AWS SDKs hand out.

Wire facts (the Bedrock Runtime API reference for ConverseStream; botocore's ``bedrock-runtime``
service model; recorded streams in the shared corpus): the body is AWS event-stream messages
(``reassemble/eventstream.py``), each event's type in ``:event-type`` and its JSON in the
payload, which Bedrock pads with a random-length ``p`` string. A turn is ``messageStart``, then per
content block ``contentBlockStart`` (tool calls only: ``start.toolUse`` with ``toolUseId`` and
``name``; text and reasoning blocks have none), ``contentBlockDelta`` (``delta.toolUse.input``, a
fragment of the arguments text; or ``text``, ``reasoningContent``, ``citation``, ``image``,
output) and ``contentBlockStop``, each with ``contentBlockIndex``; then ``messageStop`` with
``stopReason`` (``tool_use`` when the turn holds calls; ``end_turn``, ``max_tokens``,
``stop_sequence``, ``guardrail_intervened``, ``content_filtered`` otherwise) and ``metadata``
(usage, the last event). A failure mid-stream is an exception message (``:message-type:
exception``): ``internalServerException``, ``modelStreamErrorException``,
``throttlingException``, ``validationException``, ``serviceUnavailableException``, on which
boto3 raises ``EventStreamError``.

A call's arguments are its input fragments; a call that sends none, or only ``""``, takes ``{}``
(Bedrock sends a single ``""`` for a tool without parameters), as an Anthropic ``tool_use`` block
does. A ``toolResult`` block (a tool the provider ran) is output, never a call. An event type,
a start or a delta the profile does not know is ``unsupported_event``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from callgate.reassemble.codes import Code
from callgate.reassemble.events import Event, Problem, SlotDelta, SlotEnded, SlotStarted, TurnEnded
from callgate.reassemble.eventstream import (
    Message,
    event_message,
    exception_message,
    failure,
    is_exception_name,
    payload_value,
)
from callgate.reassemble.framing import EVENTSTREAM
from callgate.reassemble.profiles.base import (
    ArgumentSite,
    Profile,
    is_index,
    provider_error,
    reason_replaced,
)

#: Delta members that are output, not calls.
_OUTPUT_DELTAS = frozenset({"text", "reasoningContent", "citation", "image", "toolResult"})
#: Block starts that are output: a tool the provider ran, media, reasoning.
_OUTPUT_STARTS = frozenset({"toolResult", "image", "reasoningContent", "text", "citation"})
_BOOKKEEPING = frozenset({"messageStart", "metadata"})


class ConverseTranslator:
    def __init__(self) -> None:
        self._is_call: dict[int, bool] = {}  # block index -> whether the block is a tool call

    def translate(self, raw: object) -> list[Event]:
        if not isinstance(raw, dict) or len(raw) != 1:
            return [
                Problem(Code.UNSUPPORTED_EVENT, "event is not one {eventType: payload} object", "")
            ]
        ((kind, payload),) = raw.items()
        pointer = f"/{kind}"
        if kind in _BOOKKEEPING:
            return []
        if is_exception_name(kind):
            message = payload.get("message") if isinstance(payload, dict) else payload
            return [provider_error(f"{kind}: {str(message)[:160]}", pointer)]
        if not isinstance(payload, dict):
            return [
                Problem(Code.UNSUPPORTED_EVENT, f"{kind[:40]} payload is not an object", pointer)
            ]
        if kind == "messageStop":
            reason = payload.get("stopReason")
            if not isinstance(reason, str):
                return [
                    Problem(
                        Code.UNSUPPORTED_EVENT,
                        "stopReason is not a string",
                        pointer + "/stopReason",
                    )
                ]
            return [TurnEnded(0, reason, pointer + "/stopReason")]
        if kind not in ("contentBlockStart", "contentBlockDelta", "contentBlockStop"):
            return [
                Problem(Code.UNSUPPORTED_EVENT, f"event type {kind[:40]!r} is not known", pointer)
            ]
        index = payload.get("contentBlockIndex")
        if not is_index(index):
            return [
                Problem(
                    Code.INVALID_SLOT,
                    f"contentBlockIndex {str(index)[:40]!r} is not a non-negative integer",
                    pointer + "/contentBlockIndex",
                )
            ]
        key = (0, index)
        if kind == "contentBlockStop":
            # A block that neither started nor grew (an empty text block) ends nothing.
            return [SlotEnded(key, pointer)] if index in self._is_call else []
        if kind == "contentBlockStart":
            return self._start(key, payload.get("start"), pointer + "/start")
        return self._delta(key, payload.get("delta"), pointer + "/delta")

    def _start(self, key: tuple[int, int], start: object, pointer: str) -> list[Event]:
        if not isinstance(start, dict) or len(start) > 1:
            return [
                Problem(
                    Code.UNSUPPORTED_EVENT,
                    "start is not an object of one member",
                    pointer,
                    choice=key[0],
                    slot=key[1],
                )
            ]
        member = next(iter(start), None)
        if member is None or member in _OUTPUT_STARTS:
            self._is_call[key[1]] = False
            return [SlotStarted(key, pointer, is_call=False)]
        if member != "toolUse":
            return [
                Problem(
                    Code.UNSUPPORTED_EVENT,
                    f"block start {member[:40]!r} is not known",
                    f"{pointer}/{member}",
                    choice=key[0],
                    slot=key[1],
                )
            ]
        tool = start["toolUse"]
        if not isinstance(tool, dict):
            return [
                Problem(
                    Code.UNSUPPORTED_EVENT,
                    "toolUse is not an object",
                    pointer + "/toolUse",
                    choice=key[0],
                    slot=key[1],
                )
            ]
        self._is_call[key[1]] = True
        call_id, name = tool.get("toolUseId"), tool.get("name")
        return [
            SlotStarted(
                key,
                pointer + "/toolUse",
                call_id=call_id if isinstance(call_id, str) else None,
                name=name if isinstance(name, str) else None,
                stated_input={},
            )
        ]

    def _delta(self, key: tuple[int, int], delta: object, pointer: str) -> list[Event]:
        if not isinstance(delta, dict) or len(delta) != 1:
            return [
                Problem(
                    Code.UNSUPPORTED_EVENT,
                    "delta is not an object of one member",
                    pointer,
                    choice=key[0],
                    slot=key[1],
                )
            ]
        ((member, value),) = delta.items()
        is_call = self._is_call.get(key[1])
        if member in _OUTPUT_DELTAS:
            if is_call:
                return [
                    Problem(
                        Code.UNSUPPORTED_EVENT,
                        f"a {member} delta on a toolUse block",  # one of _OUTPUT_DELTAS
                        f"{pointer}/{member}",
                        choice=key[0],
                        slot=key[1],
                    )
                ]
            if is_call is None:  # text and reasoning blocks start with their first delta
                self._is_call[key[1]] = False
                return [SlotStarted(key, pointer, is_call=False)]
            return []
        if member != "toolUse":
            return [
                Problem(
                    Code.UNSUPPORTED_EVENT,
                    f"delta {member[:40]!r} is not known",
                    f"{pointer}/{member}",
                    choice=key[0],
                    slot=key[1],
                )
            ]
        if is_call is False:
            return [
                Problem(
                    Code.UNSUPPORTED_EVENT,
                    "a toolUse delta on a block that is not a tool call",
                    pointer + "/toolUse",
                    choice=key[0],
                    slot=key[1],
                )
            ]
        text = value.get("input") if isinstance(value, dict) else None
        if not isinstance(text, str):
            return [
                Problem(
                    Code.UNSUPPORTED_EVENT,
                    "toolUse.input is not a string",
                    pointer + "/toolUse/input",
                    choice=key[0],
                    slot=key[1],
                )
            ]
        return [SlotDelta(key, pointer + "/toolUse/input", arguments=text)]


def accepted_reasons(request: Mapping[str, object]) -> frozenset[str]:
    return frozenset({"tool_use"})


def tool_schemas(request: Mapping[str, Any]) -> dict[str, Any]:
    """``toolConfig.tools[].toolSpec``: ``name`` and ``inputSchema.json``."""
    config = request.get("toolConfig")
    tools = config.get("tools") if isinstance(config, dict) else None
    schemas: dict[str, Any] = {}
    for tool in tools if isinstance(tools, list) else []:
        spec = tool.get("toolSpec") if isinstance(tool, dict) else None
        schema = spec.get("inputSchema") if isinstance(spec, dict) else None
        schema = schema.get("json") if isinstance(schema, dict) else None
        if (
            isinstance(spec, dict)
            and isinstance(spec.get("name"), str)
            and isinstance(schema, dict | bool)
        ):
            schemas[spec["name"]] = schema
    return schemas


def argument_sites(events: list[Any]) -> Iterator[ArgumentSite]:
    """Each call's ``delta.toolUse.input`` fragments."""
    for event in events:
        payload = event.get("contentBlockDelta") if isinstance(event, dict) else None
        delta = payload.get("delta") if isinstance(payload, dict) else None
        tool = delta.get("toolUse") if isinstance(delta, dict) else None
        if isinstance(payload, dict) and isinstance(tool, dict) and "input" in tool:
            yield "stream", payload.get("contentBlockIndex"), tool, "input"


def error_body(message: str, codes: Sequence[str]) -> dict[str, object]:
    """Bedrock's exception for a failed model stream, on which boto3 raises."""
    return {"modelStreamErrorException": {"message": message}}


def from_message(message: Message) -> object:
    """``{"<eventType>": payload}``, or ``{"<exceptionType>": payload}`` for an exception; an
    ``error`` message is ``{"<errorCode>": {"message": ...}}``."""
    failed = failure(message)
    if failed is not None:
        return dict([failed])
    return {message.header(":event-type"): payload_value(message.payload)}


def to_message(event: object) -> bytes:
    """The message that sends ``event`` (an event of another shape goes as its JSON, for the
    reader to refuse)."""
    if isinstance(event, dict) and len(event) == 1:
        ((kind, payload),) = event.items()
        data = json.dumps(payload, ensure_ascii=False).encode()
        send = exception_message if is_exception_name(kind) else event_message
        return send(kind, data)
    return event_message("unknown", json.dumps(event, ensure_ascii=False).encode())


def _type_in(*kinds: str) -> Any:
    return lambda raw: isinstance(raw, dict) and any(kind in raw for kind in kinds)


PROFILE = Profile(
    name="bedrock-converse",
    stream_key="events",
    call_reasons=frozenset({"tool_use"}),
    accepted_reasons=accepted_reasons,
    turn_ends_slots=False,
    carries_terminal=_type_in("messageStop", "metadata"),
    ends_stream=_type_in("metadata"),
    cut_short=reason_replaced("stopReason", "max_tokens"),
    translator=lambda quirks, request: ConverseTranslator(),
    endpoints=("/converse-stream",),
    tool_schemas=tool_schemas,
    framings=(EVENTSTREAM,),
    from_message=from_message,
    to_message=to_message,
    error_body=error_body,
    sniff=lambda first: isinstance(first, dict) and list(first) == ["messageStart"],
    argument_sites=argument_sites,
    structural_keys=frozenset({"stopReason"}),
)
