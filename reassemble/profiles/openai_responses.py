"""OpenAI Responses streams (``POST /v1/responses``): ``events[]``, the JSON of each SSE event.

Wire facts (OpenAI's Responses streaming docs; recorded streams in the shared corpus): the response
is a list of output items, each at an ``output_index``. ``response.output_item.added`` opens an
item; for a ``function_call`` it carries the item ``id`` (``fc_...``, which the argument events
name as ``item_id``), the ``call_id`` (``call_...``, which tool results reference, so it is the
call's id here) and the ``name``. ``response.function_call_arguments.delta`` appends argument text;
``function_call_arguments.done``, ``output_item.done`` and ``response.completed`` each restate the
full arguments, and all copies must agree (a server that streams no deltas, as LM Studio does, is
read from the first copy); ``response.completed``'s output must list every streamed call. The item
ends at ``output_item.done`` (status ``completed``); the turn at ``response.completed``.
``response.incomplete`` and ``response.failed`` end it otherwise, and an ``error`` event is a
mid-stream failure. Every event carries ``sequence_number``, rising by one; a gap or step back
means events were lost or replayed. There is no "this turn made tool calls" status: a turn without
a call item is not applicable. Items the client does not execute (reasoning, messages, hosted
tools) are consumed.

The client runs more than functions: a ``custom_tool_call``'s ``input`` is free-form text
(streamed by ``response.custom_tool_call_input.delta``, restated by ``.done`` and the item), read
as the call's input and checked against its tool's format; the built-in tools' items
(``shell_call``, ``apply_patch_call``, ``local_shell_call``, ``computer_call``) are calls too,
read by ``responses_builtins``. An output item of a type this profile does not know could be a
call the client runs: it fails the turn, as does an event of an unknown type unless it is about
an item known to be no call (``Problem.could_be_call``).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

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
from callgate.reassemble.findings import Severity
from callgate.reassemble.profiles.base import (
    Profile,
    error_event,
    event_type_in,
    flat_tools,
    is_index,
)
from callgate.reassemble.profiles.builtin import declared_tools
from callgate.reassemble.profiles.responses_builtins import (
    BUILTIN_ITEMS,
    DIFF_EVENTS,
    SHELL_EVENTS,
    Pieces,
    stated_input,
)
from callgate.reassemble.profiles.responses_sites import (
    CALL,
    CALL_ITEMS,
    CUSTOM,
    NON_CALL_ITEMS,
    argument_sites,
)

#: Events that carry nothing a tool call is made of (text, reasoning, hosted tools' progress).
_CONSUMED_EVENTS = frozenset(
    {
        "response.created",
        "response.in_progress",
        "response.queued",
        "response.content_part.added",
        "response.content_part.done",
        "response.output_text.delta",
        "response.output_text.done",
        "response.output_text.annotation.added",
        "response.refusal.delta",
        "response.refusal.done",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_part.done",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.reasoning_text.delta",
        "response.reasoning_text.done",
        "response.web_search_call.in_progress",
        "response.web_search_call.searching",
        "response.web_search_call.completed",
        "response.file_search_call.in_progress",
        "response.file_search_call.searching",
        "response.file_search_call.completed",
        "response.code_interpreter_call.in_progress",
        "response.code_interpreter_call.interpreting",
        "response.code_interpreter_call.completed",
        "response.code_interpreter_call_code.delta",
        "response.code_interpreter_call_code.done",
        "response.mcp_call.in_progress",
        "response.mcp_call.completed",
        "response.mcp_call.failed",
        "response.mcp_call_arguments.delta",
        "response.mcp_call_arguments.done",
        "response.mcp_list_tools.in_progress",
        "response.mcp_list_tools.completed",
        "response.mcp_list_tools.failed",
        "response.image_generation_call.in_progress",
        "response.image_generation_call.generating",
        "response.image_generation_call.partial_image",
        "response.image_generation_call.completed",
    }
)
_TURN_ENDS = {
    "response.completed": "completed",
    "response.incomplete": "incomplete",
    "response.failed": "failed",
}


@dataclass
class _Item:
    type: str
    item_id: str | None
    call_id: str | None = None
    name: str | None = None
    #: What streamed of a built-in call's input (commands, a diff).
    pieces: Pieces | None = None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


class ResponsesTranslator:
    """Reads Responses events. Remembers each output item's type and identity so that every
    later event about it can be checked against what ``output_item.added`` said."""

    def __init__(self, quirks: frozenset[str]) -> None:
        self._rotating = "rotating_item_id" in quirks
        self._rotation_reported = False
        self._items: dict[int, _Item] = {}
        self._collided: set[int] = set()
        self._last_sequence: int | None = None

    def translate(self, raw: object) -> list[Event]:
        if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
            return [Problem(Code.UNSUPPORTED_EVENT, "event has no type", "")]
        events = self._sequence(raw)
        kind = raw["type"]
        if kind in _CONSUMED_EVENTS:
            return events
        if kind in _TURN_ENDS:
            return events + self._turn_end(raw, _TURN_ENDS[kind])
        if kind in SHELL_EVENTS or kind in DIFF_EVENTS:
            return events + self._pieces(kind, raw)
        handler = {
            "response.output_item.added": self._added,
            "response.function_call_arguments.delta": self._delta,
            "response.function_call_arguments.done": self._arguments_done,
            "response.custom_tool_call_input.delta": self._input_delta,
            "response.custom_tool_call_input.done": self._input_done,
            "response.output_item.done": self._item_done,
            "error": error_event,
        }.get(kind)
        if handler is None:
            return [*events, self._unknown_event(raw, kind)]
        return events + handler(raw)

    def _unknown_event(self, raw: Mapping[str, object], kind: str) -> Problem:
        """An event of a type this profile does not know: it could carry a call, unless it is
        about an output item known to be none."""
        index = raw.get("output_index")
        item = self._items.get(index) if is_index(index) else None
        about_no_call = item is not None and item.type in NON_CALL_ITEMS
        return Problem(
            Code.UNSUPPORTED_EVENT,
            f"event type {kind[:60]!r} is not known",
            "/type",
            could_be_call=False if about_no_call else None,
        )

    def _sequence(self, raw: Mapping[str, object]) -> list[Event]:
        """``sequence_number`` must rise by one from event to event, when the server sends it."""
        number, last = raw.get("sequence_number"), self._last_sequence
        if number is None:
            self._last_sequence = None
            if last is None:
                return []
            return [
                Problem(
                    Code.EVENT_GAP, f"an event without sequence_number follows number {last}", ""
                )
            ]
        if not isinstance(number, int) or isinstance(number, bool):
            self._last_sequence = None
            return [
                Problem(
                    Code.EVENT_GAP,
                    f"sequence_number {str(number)[:40]!r} is not an integer",
                    "/sequence_number",
                )
            ]
        self._last_sequence = number
        if last is None or number == last + 1:
            return []
        what = "went back" if number <= last else f"skipped {number - last - 1}"
        return [
            Problem(
                Code.EVENT_GAP, f"sequence_number {what}: {last} then {number}", "/sequence_number"
            )
        ]

    # -- items -----------------------------------------------------------------------------------

    def _added(self, raw: Mapping[str, object]) -> list[Event]:
        index, item = self._index_and_item(raw)
        if isinstance(index, Problem):
            return [index]
        assert isinstance(item, dict)
        kind, key = item["type"], (0, index)
        call_id, name = _str(item.get("call_id")), _str(item.get("name"))
        pieces = Pieces() if kind in BUILTIN_ITEMS else None
        self._items.setdefault(index, _Item(kind, _str(item.get("id")), call_id, name, pieces))
        if kind in CALL_ITEMS:
            if kind in BUILTIN_ITEMS:
                name = BUILTIN_ITEMS[kind][0]  # the item names no tool: its type does
            return [SlotStarted(key, "/item", call_id=call_id, name=name, freeform=kind == CUSTOM)]
        started = SlotStarted(key, "/item", is_call=False)
        if kind not in NON_CALL_ITEMS:
            return [
                Problem(
                    Code.UNSUPPORTED_EVENT,
                    f"output item type {kind[:40]!r} is not known; it could be a call",
                    "/item/type",
                    choice=0,
                    slot=index,
                ),
                started,
            ]
        return [started]

    def _item_done(self, raw: Mapping[str, object]) -> list[Event]:
        index, item = self._index_and_item(raw)
        if isinstance(index, Problem):
            return [index]
        assert isinstance(item, dict)
        key, kind = (0, index), item["type"]
        known = self._items.get(index)
        if known is not None and known.type != kind:
            return [self._type_changed(known, kind, index, "/item/type"), SlotEnded(key, "")]
        if kind not in CALL_ITEMS or known is None:
            return [SlotEnded(key, "")]  # an unseen index is the engine's delta_before_start
        events = [*self._same_item(item, index, "/item"), *self._input_copy(item, index, "/item")]
        if known.pieces is not None:
            events[:0] = known.pieces.against_item(item, "/item", index)
        events.append(SlotEnded(key, ""))
        status = item.get("status")
        if status != "completed" and not (kind == CUSTOM and "status" not in item):
            # After the end, so that the cut input is judged too.
            events.append(
                Problem(
                    Code.WRONG_TERMINAL_REASON,
                    f"the {kind} item ended with status {str(status)[:40]!r}, not 'completed'",
                    "/item/status",
                    choice=0,
                    slot=index,
                )
            )
        return events

    @staticmethod
    def _input_copy(item: Mapping[str, object], index: int, pointer: str) -> list[Event]:
        """A finished call item's copy of its input: a function's ``arguments``, a custom
        tool's ``input``, a built-in tool's input members."""
        kind = item["type"]
        if kind in BUILTIN_ITEMS:
            return stated_input(item, pointer, index)
        member = "input" if kind == CUSTOM else "arguments"
        text = item.get(member)
        if isinstance(text, str):
            return [ArgumentsStated((0, index), f"{pointer}/{member}", text)]
        return []

    @staticmethod
    def _index_and_item(raw: Mapping[str, object]) -> tuple[int | Problem, object]:
        index, item = raw.get("output_index"), raw.get("item")
        if not is_index(index):
            return Problem(
                Code.INVALID_SLOT,
                f"output_index {index!r} is not a non-negative integer",
                "/output_index",
            ), item
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            return Problem(
                Code.UNSUPPORTED_EVENT, "output item has no type", "/item", choice=0, slot=index
            ), item
        return index, item

    # -- arguments -------------------------------------------------------------------------------

    def _delta(self, raw: Mapping[str, object]) -> list[Event]:
        return self._argument_text(
            raw, "delta", lambda key, text: SlotDelta(key, "/delta", arguments=text)
        )

    def _arguments_done(self, raw: Mapping[str, object]) -> list[Event]:
        return self._argument_text(
            raw, "arguments", lambda key, text: ArgumentsStated(key, "/arguments", text)
        )

    def _input_delta(self, raw: Mapping[str, object]) -> list[Event]:
        return self._argument_text(
            raw, "delta", lambda key, text: SlotDelta(key, "/delta", arguments=text), CUSTOM
        )

    def _input_done(self, raw: Mapping[str, object]) -> list[Event]:
        return self._argument_text(
            raw, "input", lambda key, text: ArgumentsStated(key, "/input", text), CUSTOM
        )

    def _pieces(self, kind: str, raw: Mapping[str, object]) -> list[Event]:
        """A streamed piece of a built-in call's input: a shell command's text, or the diff."""
        item_type = "shell_call" if kind in SHELL_EVENTS else "apply_patch_call"
        found = self._call_slot(raw, item_type)
        if isinstance(found, Problem):
            return [found]
        index, events = found
        item = self._items.get(index)
        if item is None or item.pieces is None:  # the engine reports delta_before_start
            return [*events, SlotDelta((0, index), "/type")]
        read = item.pieces.command_event if item_type == "shell_call" else item.pieces.diff_event
        return [*events, *read(kind, raw, index)]

    def _argument_text(
        self,
        raw: Mapping[str, object],
        field: str,
        event: Callable[[SlotKey, str], Event],
        item_type: str = CALL,
    ) -> list[Event]:
        """An argument event of a call's slot: its ``field`` must be text."""
        found = self._call_slot(raw, item_type)
        if isinstance(found, Problem):
            return [found]
        index, events = found
        text = raw.get(field)
        if not isinstance(text, str):
            return [
                *events,
                Problem(
                    Code.UNSUPPORTED_EVENT,
                    f"{field} is not a string",
                    f"/{field}",
                    choice=0,
                    slot=index,
                ),
            ]
        return [*events, event((0, index), text)]

    def _call_slot(
        self, raw: Mapping[str, object], item_type: str
    ) -> tuple[int, list[Event]] | Problem:
        """The output index an event about an ``item_type`` item's input is about, plus any
        identity finding. The index comes from ``output_index``, else from the ``item_id`` of an
        item already added."""
        index, item_id = raw.get("output_index"), _str(raw.get("item_id"))
        if index is None and item_id is not None:
            index = next((i for i, item in self._items.items() if item.item_id == item_id), None)
        if not is_index(index):
            return Problem(
                Code.INVALID_SLOT,
                f"no output item for output_index {index!r} / item_id {str(item_id)[:64]!r}",
                "/output_index",
            )
        item = self._items.get(index)
        if item is None:  # the engine reports delta_before_start
            return index, []
        if item.type != item_type:
            return Problem(
                Code.UNSUPPORTED_EVENT,
                f"{item_type} input for a {item.type[:40]!r} item",
                "/type",
                choice=0,
                slot=index,
            )
        return index, self._check_item_id(item_id, index, "/item_id")

    def _same_item(self, item: Mapping[str, object], index: int, pointer: str) -> list[Event]:
        """A restated item must be the one that was added: same item id, call_id and name."""
        known = self._items[index]
        events = self._check_item_id(_str(item.get("id")), index, pointer + "/id")
        for field, was in (("call_id", known.call_id), ("name", known.name)):
            now = item.get(field)
            if now != was and index not in self._collided:
                self._collided.add(index)
                events.append(
                    Problem(
                        Code.IDENTITY_COLLISION,
                        f"output item {index} was added "
                        f"with {field} {str(was)[:64]!r}; a later copy says "
                        f"{str(now)[:64]!r}",
                        f"{pointer}/{field}",
                        choice=0,
                        slot=index,
                    )
                )
        return events

    @staticmethod
    def _type_changed(known: _Item, now: str, index: int, pointer: str) -> Problem:
        return Problem(
            Code.IDENTITY_COLLISION,
            f"output item {index} was added as "
            f"{known.type[:40]!r}; a later copy says it is {now[:40]!r}",
            pointer,
            choice=0,
            slot=index,
        )

    def _check_item_id(self, item_id: str | None, index: int, pointer: str) -> list[Event]:
        known = self._items[index].item_id
        if item_id is None or item_id == known:
            return []
        if self._rotating:
            if self._rotation_reported:
                return []
            self._rotation_reported = True
            return [
                Problem(
                    Code.IDENTITY_COLLISION,
                    "item ids change from event to event; "
                    "events are matched to items by output_index",
                    pointer,
                    choice=0,
                    slot=index,
                    severity=Severity.TOLERATED,
                    quirk="rotating_item_id",
                )
            ]
        if index in self._collided:
            return []
        self._collided.add(index)
        return [
            Problem(
                Code.IDENTITY_COLLISION,
                f"output item {index} has id "
                f"{str(known)[:64]!r}; a later event says {item_id[:64]!r}",
                pointer,
                choice=0,
                slot=index,
            )
        ]

    # -- the turn --------------------------------------------------------------------------------

    def _turn_end(self, raw: Mapping[str, object], reason: str) -> list[Event]:
        events: list[Event] = []
        response = raw.get("response")
        output = response.get("output") if isinstance(response, dict) else None
        if reason == "completed" and isinstance(output, list):
            calls = {
                position: item
                for position, item in enumerate(output)
                if isinstance(item, dict) and item.get("type") in CALL_ITEMS
            }
            for position, item in calls.items():
                events.extend(self._final_copy(item, position))
            events.extend(self._missing_from_final(calls.keys()))
        return [*events, TurnEnded(0, reason, "/type")]

    def _missing_from_final(self, listed: Collection[int]) -> list[Event]:
        """The final response is what ``get_final_response()`` hands an app: a streamed call
        it leaves out is a call one reader runs and the other does not."""
        return [
            Problem(
                Code.ARGUMENT_MISMATCH,
                f"response.completed's output has no "
                f"{item.type} at output_index {index}, which the stream gave "
                f"({str(item.call_id or item.item_id)[:64]!r})",
                "/response/output",
                choice=0,
                slot=index,
            )
            for index, item in sorted(self._items.items())
            if item.type in CALL_ITEMS and index not in listed
        ]

    def _final_copy(self, item: Mapping[str, object], index: int) -> list[Event]:
        pointer, kind = f"/response/output/{index}", str(item["type"])
        known = self._items.get(index)
        if known is not None and known.type != kind:
            return [self._type_changed(known, kind, index, pointer + "/type")]
        events = [] if known is None else self._same_item(item, index, pointer)
        if known is not None and known.pieces is not None:
            events.extend(known.pieces.against_item(item, pointer, index))
        return [*events, *self._input_copy(item, index, pointer)]


def accepted_reasons(request: Mapping[str, object]) -> frozenset[str]:
    return frozenset({"completed"})


def error_body(message: str, codes: Sequence[str]) -> dict[str, object]:
    """The Responses ``error`` event in its recorded wire shape (``{type, code, message}``
    nested under ``error``); the openai SDK raises ``APIError`` on a streamed ``error`` key."""
    return {
        "type": "error",
        "error": {
            "type": "callgate_blocked",
            "code": codes[0] if codes else "blocked",
            "message": message,
        },
    }


_ENDS_TURN = event_type_in(*_TURN_ENDS)


def cut_short(raw: object) -> object | None:
    """``response.completed`` as ``response.incomplete``: the output hit
    ``max_output_tokens``."""
    if not (isinstance(raw, dict) and raw.get("type") == "response.completed"):
        return None
    event = copy.deepcopy(raw)
    event["type"] = "response.incomplete"
    if isinstance(event.get("response"), dict):
        event["response"].update(
            status="incomplete", incomplete_details={"reason": "max_output_tokens"}
        )
    return event


PROFILE = Profile(
    name="openai-responses",
    stream_key="events",
    # No terminal status claims "this turn made tool calls" (Chat's "tool_calls"): a turn is
    # applicable only when it holds a function_call item.
    call_reasons=frozenset(),
    accepted_reasons=accepted_reasons,
    turn_ends_slots=False,
    carries_terminal=_ENDS_TURN,
    terminal_pattern=b"|".join(re.escape(end.encode()) for end in _TURN_ENDS),
    ends_stream=_ENDS_TURN,
    cut_short=cut_short,
    translator=lambda quirks, request: ResponsesTranslator(quirks),
    endpoints=("/responses",),
    tool_schemas=lambda request: {**flat_tools(request, "parameters"), **declared_tools(request)},
    version_headers=("openai-beta",),
    event_lines=True,
    error_body=error_body,
    argument_sites=argument_sites,
)
