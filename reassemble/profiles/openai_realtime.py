"""OpenAI Realtime sessions (``wss://api.openai.com/v1/realtime``): ``events[]``, the server
events of one WebSocket session, each one text message's JSON.

Wire facts (openai-python 3.57's generated types under ``openai/types/realtime/``, from OpenAI's
OpenAPI spec; the Realtime API reference): a session carries many responses, each started by
``response.created`` and ended by ``response.done``, whose ``response.status`` is
``completed``, ``cancelled`` (``status_details.reason``: ``turn_detected`` when the user spoke
over the model, ``client_cancelled`` after a ``response.cancel``), ``incomplete``
(``max_output_tokens``, ``content_filter``) or ``failed`` (``status_details.error``).
``response.done`` is "always emitted, no matter the final state" and its ``output`` lists every
item of the response; ``response.function_call_arguments.done`` is "also emitted when a Response
is interrupted, incomplete, or cancelled" (``ResponseFunctionCallArgumentsDoneEvent``), so only
``response.done`` with status ``completed`` is the evidence that a call may run.

Each response is a choice of the turn, numbered in the order its ``response_id`` is first seen,
and each of its output items a slot at its ``output_index``: two responses in flight on one
socket (both at ``output_index`` 0) never share a slot, and each ends by its own
``response.done``. ``response.output_item.added`` opens an item; for a ``function_call`` it
carries the item ``id`` (which argument events name as ``item_id``), the ``call_id`` (which the
``function_call_output`` the app sends back names, so it is the call's id) and the ``name``.
``response.function_call_arguments.delta`` appends argument text; ``.done``,
``response.output_item.done`` and ``response.done``'s output restate the whole arguments, and
every copy must agree, as must every event's ``call_id``, ``item_id`` and ``name``.

Events about the session, the conversation, audio buffers, transcripts, text and audio output,
rate limits and the server's MCP tools carry no call the client runs and are consumed. An
``error`` event is a provider error: the session said something went wrong, and the turn does
not run. An event of a type this profile does not know could carry a call, unless it is about an
item known to be none; an output item of an unknown type could be a call.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from callgate.reassemble.codes import Code
from callgate.reassemble.events import (
    ArgumentsStated,
    Event,
    Problem,
    SlotDelta,
    SlotEnded,
    SlotKey,
    SlotStarted,
    TurnEnded,
)
from callgate.reassemble.framing import WEBSOCKET
from callgate.reassemble.profiles.base import (
    ArgumentSite,
    Profile,
    error_event,
    event_type_in,
    flat_tools,
    is_index,
)
from callgate.reassemble.profiles.openai_responses import accepted_reasons
from callgate.reassemble.profiles.openai_responses import error_body as responses_error_body

CALL = "function_call"
#: Output items the client never executes: messages, and the MCP tools the server runs itself
#: (an approval request asks the app a question; the server makes the call).
NON_CALL_ITEMS = frozenset(
    {
        "message",
        "function_call_output",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
    }
)
#: Server events that carry nothing a call is made of. Both the GA names and the beta's
#: (``response.audio.delta``, ``response.text.delta``) are listed: the beta server still sends
#: them to clients that ask for it.
_CONSUMED_EVENTS = frozenset(
    {
        "session.created",
        "session.updated",
        "transcription_session.created",
        "transcription_session.updated",
        "conversation.created",
        "conversation.item.created",
        "conversation.item.added",
        "conversation.item.done",
        "conversation.item.deleted",
        "conversation.item.retrieved",
        "conversation.item.truncated",
        "conversation.item.input_audio_transcription.completed",
        "conversation.item.input_audio_transcription.delta",
        "conversation.item.input_audio_transcription.failed",
        "conversation.item.input_audio_transcription.segment",
        "input_audio_buffer.cleared",
        "input_audio_buffer.committed",
        "input_audio_buffer.speech_started",
        "input_audio_buffer.speech_stopped",
        "input_audio_buffer.timeout_triggered",
        "input_audio_buffer.dtmf_event_received",
        "output_audio_buffer.started",
        "output_audio_buffer.stopped",
        "output_audio_buffer.cleared",
        "rate_limits.updated",
        "response.content_part.added",
        "response.content_part.done",
        "response.output_text.delta",
        "response.output_text.done",
        "response.output_audio.delta",
        "response.output_audio.done",
        "response.output_audio_transcript.delta",
        "response.output_audio_transcript.done",
        "response.text.delta",
        "response.text.done",
        "response.audio.delta",
        "response.audio.done",
        "response.audio_transcript.delta",
        "response.audio_transcript.done",
        "mcp_list_tools.in_progress",
        "mcp_list_tools.completed",
        "mcp_list_tools.failed",
        "response.mcp_call_arguments.delta",
        "response.mcp_call_arguments.done",
        "response.mcp_call.in_progress",
        "response.mcp_call.completed",
        "response.mcp_call.failed",
    }
)
DONE = "response.done"


@dataclass
class _Item:
    type: str
    item_id: str | None
    call_id: str | None = None
    name: str | None = None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


class RealtimeTranslator:
    """Reads a session's server events. Remembers which choice each response is and each output
    item's type and identity, so that every later event about it can be checked against what
    ``output_item.added`` said."""

    def __init__(self) -> None:
        self._choices: dict[str, int] = {}  # response id -> choice
        self._items: dict[SlotKey, _Item] = {}
        self._collided: set[SlotKey] = set()

    def translate(self, raw: object) -> list[Event]:
        if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
            return [Problem(Code.UNSUPPORTED_EVENT, "event has no type", "")]
        kind = raw["type"]
        if kind in _CONSUMED_EVENTS:
            return []
        handler = {
            "response.created": self._created,
            "response.output_item.added": self._added,
            "response.function_call_arguments.delta": self._delta,
            "response.function_call_arguments.done": self._arguments_done,
            "response.output_item.done": self._item_done,
            DONE: self._done,
            "error": error_event,
        }.get(kind)
        if handler is None:
            return [self._unknown_event(raw, kind)]
        return handler(raw)

    # -- responses -------------------------------------------------------------------------------

    def _choice(self, response_id: object, pointer: str) -> int | Problem:
        """The choice of the response ``response_id`` names, numbered as first seen."""
        if not isinstance(response_id, str):
            return Problem(
                Code.INVALID_SLOT,
                f"response id {str(response_id)[:64]!r} is not a string",
                pointer,
            )
        return self._choices.setdefault(response_id, len(self._choices))

    def _created(self, raw: Mapping[str, object]) -> list[Event]:
        response = raw.get("response")
        found = self._choice(
            response.get("id") if isinstance(response, dict) else None, "/response/id"
        )
        return [found] if isinstance(found, Problem) else []

    def _done(self, raw: Mapping[str, object]) -> list[Event]:
        response = raw.get("response")
        if not isinstance(response, dict):
            return [Problem(Code.UNSUPPORTED_EVENT, "response.done holds no response", "/response")]
        choice = self._choice(response.get("id"), "/response/id")
        if isinstance(choice, Problem):
            return [choice]
        status = response.get("status")
        events: list[Event] = []
        output = response.get("output")
        if status == "completed" and isinstance(output, list):
            listed = set()
            for position, item in enumerate(output):
                if isinstance(item, dict) and item.get("type") == CALL:
                    listed.add(position)
                    events += self._final_copy(item, (choice, position))
            events += self._missing_from_final(choice, listed)
        reason = status if isinstance(status, str) else f"status {str(status)[:40]}"
        return [*events, TurnEnded(choice, reason, "/response/status")]

    def _final_copy(self, item: Mapping[str, object], key: SlotKey) -> list[Event]:
        pointer = f"/response/output/{key[1]}"
        known = self._items.get(key)
        if known is not None and known.type != CALL:
            return [self._type_changed(known, CALL, key, pointer + "/type")]
        events = [] if known is None else self._same_item(item, key, pointer)
        text = item.get("arguments")
        if isinstance(text, str):
            events.append(ArgumentsStated(key, pointer + "/arguments", text))
        return events

    def _missing_from_final(self, choice: int, listed: set[int]) -> list[Event]:
        """``response.done``'s output is the response as the server keeps it: a streamed call it
        leaves out is a call one reader runs and another does not."""
        return [
            Problem(
                Code.ARGUMENT_MISMATCH,
                f"response.done's output has no function_call at output_index {index}, which "
                f"the stream gave ({str(item.call_id or item.item_id)[:64]!r})",
                "/response/output",
                choice=choice,
                slot=index,
            )
            for (owner, index), item in sorted(self._items.items())
            if owner == choice and item.type == CALL and index not in listed
        ]

    # -- items -----------------------------------------------------------------------------------

    def _place(self, raw: Mapping[str, object]) -> SlotKey | Problem:
        """The slot an event about an output item is about: its response's choice and its
        ``output_index``, else the index of the item its ``item_id`` names in that response."""
        choice = self._choice(raw.get("response_id"), "/response_id")
        if isinstance(choice, Problem):
            return choice
        index, item_id = raw.get("output_index"), _str(raw.get("item_id"))
        if index is None and item_id is not None:
            index = next(
                (
                    i
                    for (c, i), item in self._items.items()
                    if c == choice and item.item_id == item_id
                ),
                None,
            )
        if not is_index(index):
            return Problem(
                Code.INVALID_SLOT,
                f"no output item for output_index {index!r} / item_id {str(item_id)[:64]!r}",
                "/output_index",
            )
        return choice, index

    def _place_and_item(
        self, raw: Mapping[str, object]
    ) -> tuple[SlotKey, dict[str, Any]] | Problem:
        """The slot an ``output_item`` event is about, and its item, which must have a type."""
        key = self._place(raw)
        if isinstance(key, Problem):
            return key
        item = raw.get("item")
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            return self._problem(Code.UNSUPPORTED_EVENT, "output item has no type", "/item", key)
        return key, item

    def _added(self, raw: Mapping[str, object]) -> list[Event]:
        found = self._place_and_item(raw)
        if isinstance(found, Problem):
            return [found]
        key, item = found
        kind = item["type"]
        call_id, name = _str(item.get("call_id")), _str(item.get("name"))
        self._items.setdefault(key, _Item(kind, _str(item.get("id")), call_id, name))
        if kind == CALL:
            return [SlotStarted(key, "/item", call_id=call_id, name=name)]
        started = SlotStarted(key, "/item", is_call=False)
        if kind in NON_CALL_ITEMS:
            return [started]
        unknown = f"output item type {kind[:40]!r} is not known; it could be a call"
        return [self._problem(Code.UNSUPPORTED_EVENT, unknown, "/item/type", key), started]

    def _item_done(self, raw: Mapping[str, object]) -> list[Event]:
        found = self._place_and_item(raw)
        if isinstance(found, Problem):
            return [found]
        key, item = found
        known, kind = self._items.get(key), item["type"]
        if known is not None and known.type != kind:
            return [self._type_changed(known, kind, key, "/item/type"), SlotEnded(key, "")]
        if kind != CALL or known is None:
            return [SlotEnded(key, "")]  # an unseen item is the engine's delta_before_start
        events = self._same_item(item, key, "/item")
        text = item.get("arguments")
        if isinstance(text, str):
            events.append(ArgumentsStated(key, "/item/arguments", text))
        return [*events, SlotEnded(key, "")]

    def _delta(self, raw: Mapping[str, object]) -> list[Event]:
        return self._argument_text(raw, "delta")

    def _arguments_done(self, raw: Mapping[str, object]) -> list[Event]:
        return self._argument_text(raw, "arguments")

    def _argument_text(self, raw: Mapping[str, object], field: str) -> list[Event]:
        """A function call's argument text, streamed (``delta``) or restated (``arguments``);
        its ``item_id``, ``call_id`` (and ``name``) must be the item's."""
        key = self._place(raw)
        if isinstance(key, Problem):
            return [key]
        known = self._items.get(key)
        if known is not None and known.type != CALL:
            message = f"function call arguments for a {known.type[:40]!r} item"
            return [self._problem(Code.UNSUPPORTED_EVENT, message, "/type", key)]
        events: list[Event] = []
        if known is not None:
            events = self._same_item(raw, key, "", about=True)
        text = raw.get(field)
        if not isinstance(text, str):
            message = f"{field} is not a string"
            return [*events, self._problem(Code.UNSUPPORTED_EVENT, message, f"/{field}", key)]
        if field == "delta":
            return [*events, SlotDelta(key, "/delta", arguments=text)]
        return [*events, ArgumentsStated(key, "/arguments", text)]

    def _same_item(
        self, named: Mapping[str, object], key: SlotKey, pointer: str, *, about: bool = False
    ) -> list[Event]:
        """A restated item must be the one that was added: the same item id, call_id and name.
        An argument event (``about``) names the item by ``item_id``, and what it leaves out it
        does not restate."""
        known = self._items[key]
        events: list[Event] = []
        for field, member, was in (
            ("id", "item_id" if about else "id", known.item_id),
            ("call_id", "call_id", known.call_id),
            ("name", "name", known.name),
        ):
            now = named.get(member)
            if (about and now is None) or now == was or key in self._collided:
                continue
            self._collided.add(key)
            message = (
                f"output item {key[1]} of response {key[0]} was added with {field} "
                f"{str(was)[:64]!r}; a later copy says {str(now)[:64]!r}"
            )
            events.append(
                self._problem(Code.IDENTITY_COLLISION, message, f"{pointer}/{member}", key)
            )
        return events

    def _type_changed(self, known: _Item, now: str, key: SlotKey, pointer: str) -> Problem:
        message = (
            f"output item {key[1]} was added as {known.type[:40]!r}; a later copy says it is "
            f"{now[:40]!r}"
        )
        return self._problem(Code.IDENTITY_COLLISION, message, pointer, key)

    @staticmethod
    def _problem(code: Code, message: str, pointer: str, key: SlotKey) -> Problem:
        return Problem(code, message, pointer, choice=key[0], slot=key[1])

    def _unknown_event(self, raw: Mapping[str, object], kind: str) -> Problem:
        """An event of a type this profile does not know: it could carry a call, unless it is
        about an output item known to be none."""
        choice = self._choices.get(str(raw.get("response_id")))
        index = raw.get("output_index")
        item = self._items.get((choice, index)) if choice is not None and is_index(index) else None
        return Problem(
            Code.UNSUPPORTED_EVENT,
            f"event type {kind[:60]!r} is not known",
            "/type",
            could_be_call=False if item is not None and item.type in NON_CALL_ITEMS else None,
        )


def error_body(message: str, codes: Sequence[str]) -> dict[str, object]:
    """The Realtime ``error`` server event (``RealtimeErrorEvent``): the Responses ``error``
    event's ``error`` object, with an ``event_id``; the openai SDK hands it to the app as an
    event, as any other."""
    return {**responses_error_body(message, codes), "event_id": "event_callgate_blocked"}


def _ended(status: str, reason: str) -> Callable[[object], object | None]:
    """A copy of a completed ``response.done`` as the server sends it when the response ended
    ``status``, for ``reason`` (None for any other event)."""

    def ended(raw: object) -> object | None:
        if not (isinstance(raw, dict) and raw.get("type") == DONE):
            return None
        response = raw.get("response")
        if not isinstance(response, dict) or response.get("status") != "completed":
            return None
        event = copy.deepcopy(raw)
        event["response"].update(status=status, status_details={"type": status, "reason": reason})
        return event

    return ended


#: The output hit ``max_output_tokens``.
cut_short = _ended("incomplete", "max_output_tokens")
#: The user spoke over the model.
cancelled = _ended("cancelled", "turn_detected")


def argument_sites(events: list[Any]) -> Iterator[ArgumentSite]:
    """Each call's arguments as they stream, and every copy that restates them: the ``done``
    event's, the item's (added and done, and the conversation's copies of it) and
    ``response.done``'s output. A call is keyed by its response and output index; a conversation
    event names only the item, whose place its response's events give."""
    places = {
        event["item"].get("id"): (event.get("response_id"), event.get("output_index"))
        for event in events
        if isinstance(event, dict)
        and event.get("type") == "response.output_item.added"
        and isinstance(event.get("item"), dict)
    }
    for event in events:
        if not isinstance(event, dict):
            continue
        kind = event.get("type")
        key = (event.get("response_id"), event.get("output_index"))
        if kind == "response.function_call_arguments.delta" and "delta" in event:
            yield "stream", key, event, "delta"
        elif kind == "response.function_call_arguments.done" and "arguments" in event:
            yield "copy", key, event, "arguments"
        item = event.get("item")
        if isinstance(item, dict) and "arguments" in item:
            if not str(kind).startswith("response."):
                key = places.get(item.get("id"), (None, item.get("id")))
            yield "copy", key, item, "arguments"
        response = event.get("response")
        output = response.get("output") if isinstance(response, dict) else None
        for position, entry in enumerate(output if isinstance(output, list) else []):
            if isinstance(entry, dict) and "arguments" in entry:
                yield "copy", (response.get("id"), position), entry, "arguments"  # type: ignore[union-attr]


#: Events that stream the model's audio, base64 in ``delta`` (the GA name and the beta's).
_AUDIO_DELTAS = frozenset({"response.output_audio.delta", "response.audio.delta"})
#: Content parts of a conversation item that hold audio, base64 in ``audio``.
_AUDIO_PARTS = frozenset({"input_audio", "output_audio", "audio"})


def media_sites(events: list[Any]) -> Iterator[tuple[dict[str, Any], str]]:
    """The model's streamed audio, and the audio of items the server restates (a retrieved
    item holds the user's)."""
    for event in events:
        if not isinstance(event, dict):
            continue
        if event.get("type") in _AUDIO_DELTAS and isinstance(event.get("delta"), str):
            yield event, "delta"
        item = event.get("item")
        content = item.get("content") if isinstance(item, dict) else None
        for part in content if isinstance(content, list) else []:
            audio = part.get("audio") if isinstance(part, dict) else None
            if isinstance(audio, str) and part.get("type") in _AUDIO_PARTS:
                yield part, "audio"


_ENDS_RESPONSE = event_type_in(DONE)

PROFILE = Profile(
    name="openai-realtime",
    stream_key="events",
    # No status claims "this response made tool calls": a turn is applicable only when it
    # holds a function_call item.
    call_reasons=frozenset(),
    accepted_reasons=accepted_reasons,
    turn_ends_slots=False,
    carries_terminal=_ENDS_RESPONSE,
    terminal_pattern=re.escape(DONE.encode()),
    cut_short=cut_short,
    cancelled=cancelled,
    translator=lambda quirks, request: RealtimeTranslator(),
    endpoints=("/realtime",),
    # The session's tools: ``session.update``'s ``session.tools`` (or a ``response.create``'s),
    # ``{"type": "function", "name", "parameters"}``.
    tool_schemas=lambda request: flat_tools(request, "parameters"),
    version_headers=("openai-beta",),
    framings=(WEBSOCKET,),
    error_body=error_body,
    argument_sites=argument_sites,
    media_sites=media_sites,
)
