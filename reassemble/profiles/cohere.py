"""Cohere v2 chat streams (``POST /v2/chat`` with ``stream: true``): ``events[]`` named by ``type``.

Wire facts (Cohere's "Streaming for tool use" guide, docs.cohere.com/docs/tool-use-streaming;
recorded streams in the shared corpus): SSE with an ``event:`` line named after each event's
``type``, then a final ``data: [DONE]`` without one. A call opens with ``tool-call-start``
(``index``, and under ``delta.message.tool_calls`` its ``id``, ``function.name`` and
``function.arguments``, ``""`` so far), grows by ``tool-call-delta`` fragments of
``function.arguments`` and closes with ``tool-call-end``. The turn ends with ``message-end``,
whose ``delta.finish_reason`` is ``TOOL_CALL`` when it holds calls; ``ERROR`` (with
``delta.error``) is a failure the API reports in a stream that is otherwise HTTP 200. Text
(``content-*``), the model's plan (``tool-plan-delta``), citations and ``debug`` events are
output, not calls. cohere-python (7.3.1) raises on none of these in-stream shapes: a ``message-end``
with ``ERROR`` reaches the app as that finish reason, and an event it cannot read is skipped with
a warning, so enforce mode's error event needs the app to look at ``finish_reason``.

A call that closes without any argument text (a tool without parameters: ``tool-call-start`` with
``""``, then ``tool-call-end``) takes ``{}``, as an Anthropic ``tool_use`` block does; the tool's
schema then decides whether ``{}`` is enough. An unknown event type is ``unsupported_event`` until
the profile reads it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from callgate.reassemble.codes import Code
from callgate.reassemble.events import Event, Problem, SlotDelta, SlotEnded, SlotStarted, TurnEnded
from callgate.reassemble.profiles.base import (
    ArgumentSite,
    Profile,
    event_type_in,
    function_tools,
    is_index,
    provider_error,
    reason_replaced,
)

#: Events that carry output or bookkeeping only (``debug`` is in cohere-python 7.3.1's
#: ``StreamedChatResponseV2`` union beside the others).
_OUTPUT_EVENTS = frozenset(
    {
        "message-start",
        "content-start",
        "content-delta",
        "content-end",
        "tool-plan-delta",
        "citation-start",
        "citation-end",
        "debug",
    }
)
_CALL = "/delta/message/tool_calls"


class ChatV2Translator:
    def translate(self, raw: object) -> list[Event]:
        if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
            return [Problem(Code.UNSUPPORTED_EVENT, "event has no type", "")]
        kind = raw["type"]
        if kind in _OUTPUT_EVENTS:
            return []
        if kind == "message-end":
            return _message_end(raw)
        if kind not in ("tool-call-start", "tool-call-delta", "tool-call-end"):
            return [
                Problem(Code.UNSUPPORTED_EVENT, f"event type {kind[:40]!r} is not known", "/type")
            ]
        index = raw.get("index")
        if not is_index(index):
            return [
                Problem(
                    Code.INVALID_SLOT,
                    f"tool call index {str(index)[:40]!r} is not a non-negative integer",
                    "/index",
                )
            ]
        key = (0, index)
        if kind == "tool-call-end":
            return [SlotEnded(key, "")]
        call = _tool_call(raw)
        if not isinstance(call, dict):
            return [
                Problem(
                    Code.UNSUPPORTED_EVENT,
                    "tool_calls is not an object",
                    _CALL,
                    choice=0,
                    slot=index,
                )
            ]
        function = call.get("function", {})
        if not isinstance(function, dict):
            return [
                Problem(
                    Code.UNSUPPORTED_EVENT,
                    "function is not an object",
                    f"{_CALL}/function",
                    choice=0,
                    slot=index,
                )
            ]
        arguments = function.get("arguments")
        if arguments is not None and not isinstance(arguments, str):
            return [
                Problem(
                    Code.UNSUPPORTED_EVENT,
                    "arguments is not a string",
                    f"{_CALL}/function/arguments",
                    choice=0,
                    slot=index,
                )
            ]
        if kind == "tool-call-delta":
            return [
                SlotDelta(
                    key,
                    f"{_CALL}/function/arguments",
                    arguments=arguments or "",
                    call_id=_text(call.get("id")),
                    name=_text(function.get("name")),
                )
            ]
        started = SlotStarted(
            key,
            _CALL,
            call_id=_text(call.get("id")),
            name=_text(function.get("name")),
            stated_input={},
        )
        if arguments:  # arguments given whole at the start: the first fragment
            return [started, SlotDelta(key, f"{_CALL}/function/arguments", arguments=arguments)]
        return [started]


def _tool_call(event: Mapping[str, object]) -> object:
    """``delta.message.tool_calls`` of an event (one call, an object), or None."""
    delta = event.get("delta")
    message = delta.get("message") if isinstance(delta, dict) else None
    return message.get("tool_calls") if isinstance(message, dict) else None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _message_end(raw: Mapping[str, object]) -> list[Event]:
    delta = raw.get("delta")
    if not isinstance(delta, dict):
        return [Problem(Code.UNSUPPORTED_EVENT, "message-end has no delta", "/delta")]
    events: list[Event] = []
    error = delta.get("error")
    reason = delta.get("finish_reason")
    if error is not None or reason == "ERROR":
        events.append(provider_error(str(error or "finish_reason ERROR")[:200], "/delta"))
    if not isinstance(reason, str):
        events.append(
            Problem(Code.UNSUPPORTED_EVENT, "finish_reason is not a string", "/delta/finish_reason")
        )
    else:
        events.append(TurnEnded(0, reason, "/delta/finish_reason"))
    return events


def accepted_reasons(request: Mapping[str, object]) -> frozenset[str]:
    return frozenset({"TOOL_CALL"})


def argument_sites(events: list[Any]) -> Iterator[ArgumentSite]:
    """Each call's ``function.arguments`` fragments, from its start on."""
    for event in events:
        if not isinstance(event, dict) or event.get("type") not in (
            "tool-call-start",
            "tool-call-delta",
        ):
            continue
        call = _tool_call(event)
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and "arguments" in function:
            yield "stream", event.get("index"), function, "arguments"


def error_body(message: str, codes: Sequence[str]) -> dict[str, object]:
    """Cohere's own way of ending a stream that failed: ``message-end`` with ``ERROR``."""
    return {"type": "message-end", "delta": {"finish_reason": "ERROR", "error": message}}


PROFILE = Profile(
    name="cohere",
    stream_key="events",
    call_reasons=frozenset({"TOOL_CALL"}),
    accepted_reasons=accepted_reasons,
    turn_ends_slots=False,
    done_sentinel=True,
    carries_terminal=event_type_in("message-end"),
    terminal_pattern=rb"message-end",
    ends_stream=event_type_in("message-end"),
    cut_short=reason_replaced("finish_reason", "MAX_TOKENS"),
    translator=lambda quirks, request: ChatV2Translator(),
    requires_call_id=True,
    endpoints=("/v2/chat",),
    tool_schemas=function_tools,
    event_lines=True,
    error_body=error_body,
    sniff=lambda first: (
        isinstance(first, dict)
        and first.get("type") == "message-start"
        and isinstance(first.get("delta"), dict)
    ),
    argument_sites=argument_sites,
    structural_keys=frozenset({"finish_reason"}),
)
