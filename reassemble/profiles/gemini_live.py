"""Gemini Live sessions (``BidiGenerateContent`` over a WebSocket): ``events[]``, the server
messages of one session, each one message's JSON.

Wire facts (google-genai 3.6's ``LiveServerMessage``, ``LiveServerToolCall`` and
``LiveServerToolCallCancellation`` in ``google/genai/types.py``; the Live API reference): a
message holds one or more of ``setupComplete``, ``serverContent`` (the model's turn: text and
audio parts, ``interrupted``, ``generationComplete``, ``turnComplete``, transcriptions),
``toolCall``, ``toolCallCancellation``, ``usageMetadata``, ``goAway``,
``sessionResumptionUpdate`` and the voice activity signals. A ``toolCall`` is the "request for
the client to execute the ``function_calls`` and return the responses with the matching
``id``s": its calls come whole (``{id, name, args}``), and the message itself is the evidence
that they may run. A ``toolCallCancellation`` names the ``ids`` of calls that "should have been
not executed and should be cancelled" (it "occurs only in cases where the clients interrupt
server turns"): an app that still runs them does what the model withdrew.

Each ``toolCall`` is a choice of its own, numbered in order, and each of its calls a slot at its
position; a model turn that completes (``turnComplete``) without a ``toolCall`` is a choice with
no call. A call a cancellation withdraws is ``call_withdrawn``, which fails the ``toolCall`` that
held it: what remains of a withdrawn request is not a turn the model finished. A call id
seen in an earlier ``toolCall`` is ``duplicate_call_id`` (the same call sent twice). The
session's end, as callgate records it, is a ``{"close": {"code", "reason"}}`` entry for the
WebSocket's close frame: a close with any code but 1000 (normal) is a provider error. A message
member this profile does not know could carry a call, and a ``functionCall`` part in the model's
turn is a call where the Live API sends none; both fail.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from callgate.reassemble.codes import Code
from callgate.reassemble.events import (
    Event,
    Problem,
    SlotEnded,
    SlotKey,
    SlotStarted,
    TurnEnded,
)
from callgate.reassemble.framing import WEBSOCKET
from callgate.reassemble.profiles.base import ArgumentSite, Profile, provider_error
from callgate.reassemble.profiles.gemini import whole_arguments
from callgate.reassemble.profiles.gemini_schema import declaration_schemas, proto_field

#: The reason a ``toolCall`` ends its choice with (the message is whole), and the one a model
#: turn that completes without a call ends its own with.
TOOL_CALL, TURN_COMPLETE = "tool_call", "turn_complete"
#: Message members that carry no call (camelCase as the server sends them, snake_case as the
#: SDK's models dump them).
_NO_CALL = frozenset(
    {
        "setupComplete",
        "setup_complete",
        "usageMetadata",
        "usage_metadata",
        "goAway",
        "go_away",
        "sessionResumptionUpdate",
        "session_resumption_update",
        "voiceActivityDetectionSignal",
        "voice_activity_detection_signal",
        "voiceActivity",
        "voice_activity",
    }
)
#: A WebSocket close frame's code for a normal end (RFC 6455, 7.4.1).
NORMAL_CLOSE = 1000


class LiveTranslator:
    """Reads a session's server messages; remembers which choice and slot each call id is."""

    def __init__(self) -> None:
        self._choices = 0
        self._calls: dict[str, SlotKey] = {}
        self._called = False  # a toolCall came in the model's turn going on

    def translate(self, raw: object) -> list[Event]:
        if not isinstance(raw, dict):
            return [Problem(Code.UNSUPPORTED_EVENT, "message is not an object", "")]
        events: list[Event] = []
        for member, value in raw.items():
            if member in ("toolCall", "tool_call"):
                events += self._tool_call(value, f"/{member}")
            elif member in ("toolCallCancellation", "tool_call_cancellation"):
                events += self._cancellation(value, f"/{member}")
            elif member in ("serverContent", "server_content"):
                events += self._content(value, f"/{member}")
            elif member == "close":
                events += self._close(value)
            elif member not in _NO_CALL:
                events.append(
                    Problem(
                        Code.UNSUPPORTED_EVENT,
                        f"message member {member[:60]!r} is not known",
                        f"/{member}",
                    )
                )
        return events

    def _tool_call(self, value: object, pointer: str) -> list[Event]:
        choice = self._choices
        self._choices += 1
        calls = proto_field(value, "functionCalls") if isinstance(value, dict) else None
        if not isinstance(calls, list):
            return [
                Problem(
                    Code.UNSUPPORTED_EVENT,
                    "toolCall holds no functionCalls list",
                    pointer,
                    choice=choice,
                )
            ]
        events: list[Event] = []
        for slot, call in enumerate(calls):
            events += self._call(call, (choice, slot), f"{pointer}/functionCalls/{slot}")
        return [*events, TurnEnded(choice, TOOL_CALL, pointer)]

    def _call(self, call: object, key: SlotKey, pointer: str) -> list[Event]:
        if not isinstance(call, dict):
            return [
                Problem(
                    Code.UNSUPPORTED_EVENT,
                    "function call is not an object",
                    pointer,
                    choice=key[0],
                    slot=key[1],
                )
            ]
        call_id, name = call.get("id"), call.get("name")
        events: list[Event] = [
            SlotStarted(
                key,
                pointer,
                call_id=call_id if isinstance(call_id, str) else None,
                name=name if isinstance(name, str) else None,
            )
        ]
        if isinstance(call_id, str):
            self._calls.setdefault(call_id, key)
        return [
            *events,
            *whole_arguments(key, call.get("args", {}), pointer + "/args"),
            SlotEnded(key, pointer),
        ]

    def _cancellation(self, value: object, pointer: str) -> list[Event]:
        ids = value.get("ids") if isinstance(value, dict) else None
        if not isinstance(ids, list):
            # Which calls it withdraws cannot be read: any of them could be.
            return [Problem(Code.UNSUPPORTED_EVENT, "toolCallCancellation holds no ids", pointer)]
        events: list[Event] = []
        for number, call_id in enumerate(ids):
            key = self._calls.get(call_id) if isinstance(call_id, str) else None
            if key is None:
                continue  # a call this session never sent: nothing of it can run
            events.append(
                Problem(
                    Code.CALL_WITHDRAWN,
                    f"the server withdrew call {call_id[:64]!r} (toolCallCancellation)",
                    f"{pointer}/ids/{number}",
                    choice=key[0],
                    slot=key[1],
                )
            )
        return events

    def _content(self, value: object, pointer: str) -> list[Event]:
        """The model's turn: text and audio, never a call (a ``functionCall`` part there is one
        the Live API does not send, and is not read). A turn that completes without a toolCall
        is a choice of its own, with no call."""
        if not isinstance(value, dict):
            return [Problem(Code.UNSUPPORTED_EVENT, "serverContent is not an object", pointer)]
        turn = proto_field(value, "modelTurn")
        parts = turn.get("parts") if isinstance(turn, dict) else None
        events: list[Event] = [
            Problem(
                Code.UNSUPPORTED_EVENT,
                "a functionCall part in the model's turn, where the Live API sends calls in "
                "toolCall",
                f"{pointer}/modelTurn/parts/{number}",
            )
            for number, part in enumerate(parts if isinstance(parts, list) else [])
            if isinstance(part, dict) and ({"functionCall", "function_call"} & part.keys())
        ]
        if proto_field(value, "turnComplete") is True:
            if not self._called:
                events.append(TurnEnded(self._choices, TURN_COMPLETE, f"{pointer}/turnComplete"))
                self._choices += 1
            self._called = False
        return events

    @staticmethod
    def _close(value: object) -> list[Event]:
        code = value.get("code") if isinstance(value, dict) else None
        if code == NORMAL_CLOSE:
            return []
        reason = value.get("reason") if isinstance(value, dict) else None
        return [provider_error(f"the session closed with {code!r}: {str(reason)[:160]}", "/close")]


def accepted_reasons(request: Mapping[str, object]) -> frozenset[str]:
    return frozenset({TOOL_CALL})


def error_body(message: str, codes: Sequence[str]) -> dict[str, object]:
    """The WebSocket's close frame, as a session fixture records it: code 1011 (the server
    met an unexpected condition, RFC 6455), the reason naming the codes (a close reason holds
    at most 123 bytes); google-genai's live session raises on a close that is not normal."""
    reason = f"callgate blocked: {', '.join(codes) or 'blocked'}".encode()[:123]
    return {"close": {"code": 1011, "reason": reason.decode("utf-8", "ignore")}}


def withdrawal(call_ids: list[str]) -> dict[str, object]:
    """The ``toolCallCancellation`` that withdraws the calls of ``call_ids``."""
    return {"toolCallCancellation": {"ids": list(call_ids)}}


def _carries_terminal(raw: object) -> bool:
    return isinstance(raw, dict) and ("toolCall" in raw or "tool_call" in raw)


def argument_sites(events: list[Any]) -> Iterator[ArgumentSite]:
    """Each call's ``args`` (a whole copy per call), keyed by its message and position."""
    for number, message in enumerate(events):
        value = (
            message.get("toolCall", message.get("tool_call")) if isinstance(message, dict) else None
        )
        calls = proto_field(value, "functionCalls") if isinstance(value, dict) else None
        for position, call in enumerate(calls if isinstance(calls, list) else []):
            if isinstance(call, dict) and "args" in call:
                yield "copy", (number, position), call, "args"


def media_sites(events: list[Any]) -> Iterator[tuple[dict[str, Any], str]]:
    """Every ``inlineData``'s base64 ``data`` (the model's audio, and any image or video)."""
    stack: list[Any] = list(events)
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            inline = value.get("inlineData", value.get("inline_data"))
            if isinstance(inline, dict) and isinstance(inline.get("data"), str):
                yield inline, "data"
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)


PROFILE = Profile(
    name="gemini-live",
    stream_key="events",
    call_reasons=frozenset({TOOL_CALL}),
    accepted_reasons=accepted_reasons,
    turn_ends_slots=False,
    carries_terminal=_carries_terminal,
    terminal_pattern=b"toolCall|tool_call",
    translator=lambda quirks, request: LiveTranslator(),
    whole_calls=True,
    calls_are_terminal=True,
    slot_field=False,
    endpoints=("BidiGenerateContent", "BidiGenerateContentConstrained"),
    # The session's tools: the setup message's ``tools`` (``functionDeclarations``).
    tool_schemas=lambda request: declaration_schemas(request.get("tools")),
    framings=(WEBSOCKET,),
    error_body=error_body,
    withdrawal=withdrawal,
    argument_sites=argument_sites,
    media_sites=media_sites,
    structural_keys=frozenset({"mimeType", "mime_type"}),
)
