"""The reassembly engine: raw provider events in, findings out, a report at the end.

How this works: a profile translates each raw event into provider-neutral events
(``callgate.reassemble.events``). Each slot (one tool call, or one non-call content block) moves
through the state table in ``callgate.reassemble.state``; an impossible move is a finding that
blocks the slot.
Argument fragments are kept in a list and joined once, when the provider ends the slot, then
parsed strictly and validated against the tool's schema: never earlier, however parseable a prefix
looks. Turn-level rules (terminal reasons, duplicate terminals, truncation) live here too. Any
blocking finding anywhere makes the whole turn non-executable.

The engine is sans-I/O: it never reads, writes, logs or looks at a clock.
"""

from __future__ import annotations

import bisect
import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from callgate.reassemble import strict_json
from callgate.reassemble.codes import Code
from callgate.reassemble.errors import UsageError
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
from callgate.reassemble.findings import Finding, Severity
from callgate.reassemble.limits import DEFAULT_LIMITS, Limits
from callgate.reassemble.profiles import PROFILES
from callgate.reassemble.quirks import quirks_in_force
from callgate.reassemble.report import Call, Report
from callgate.reassemble.schema import SchemaProblem
from callgate.reassemble.sdk import event_json, tool_schemas_of
from callgate.reassemble.state import GROWING, SlotInput, SlotState, slot_state, step
from callgate.reassemble.tool_input import InputCheck, input_check

#: Codes of tool data a profile could not read or place: such data may be a call (``Problem``).
_UNREAD = frozenset({Code.UNSUPPORTED_EVENT, Code.INVALID_SLOT})
_TABLE_MESSAGES = {
    Code.DELTA_BEFORE_START: "a fragment arrived for a slot that was never started",
    Code.DUPLICATE_START: "the slot was started again",
    Code.DELTA_AFTER_TERMINAL: "a fragment arrived after the slot ended",
    Code.DUPLICATE_TERMINAL: "the slot was ended again",
}


@dataclass
class _Slot:
    key: SlotKey
    is_call: bool
    #: What the provider did: UNSEEN, ACCUMULATING or TERMINAL (``callgate.reassemble.state``).
    lifecycle: SlotState = SlotState.UNSEEN
    blocked: bool = False
    validated: bool = False
    #: Event indices where the slot opened, grew and ended: the timeline a report can draw.
    opened: int | None = None
    grew: list[int] = field(default_factory=list)
    ended: int | None = None
    #: (attribute, value) pairs already reported as collisions: a provider that restates the
    #: other call's id on every chunk gets one finding, not one per chunk.
    collisions: set[tuple[str, str]] = field(default_factory=set)
    call_id: str | None = None
    name: str | None = None
    stated_input: object = None
    #: The input is free-form text checked against the tool's format, not JSON arguments.
    freeform: bool = False
    fragments: list[str] = field(default_factory=list)
    #: The event index of each fragment, in step with ``fragments``, and the pointer of each
    #: fragment (by its position there) that is not at ``Reassembler._continuation_pointer``,
    #: where most fragments are: a tuple per fragment would cost more than the fragment.
    fragment_events: list[int] = field(default_factory=list)
    fragment_pointers: dict[int, str] = field(default_factory=dict)
    size: int = 0
    arguments: str | None = None
    parsed: Any = None


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _json_type(value: object) -> str:
    if isinstance(value, bool) or value is None:
        return "boolean" if value is not None else "null"
    return {str: "string", list: "array", int: "number", float: "number"}.get(type(value), "value")


def _canonical(value: object) -> str:
    # NaN and infinities become their literals, which the strict parse then reports as
    # non_finite_number (only a Python caller can state such input).
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class Reassembler:
    """Checks one streamed assistant turn.

    ``profile`` names a provider profile: a key of ``callgate.reassemble.profiles.PROFILES``;
    ``tool_schemas`` (or, by keyword, ``tools``) maps tool names to JSON Schemas, or is the tools
    as the provider's SDK takes them (``callgate.reassemble.sdk.tool_schemas_of``); ``request``
    holds the non-prompt request parameters (``tool_choice`` decides whether ``"stop"`` may end a
    forced call); ``provider`` selects the provider's named quirks and ``allow_quirks`` adds
    quirks by name; ``limits`` bounds what one call's arguments may cost (``DEFAULT_LIMITS`` when
    None). Feed raw events in order with ``feed``; call ``close`` once at the end of the stream.
    Raises ``UsageError`` for an unknown profile or quirk or a tools list it cannot read,
    ``RuntimeError`` when fed after ``close``.
    """

    def __init__(
        self,
        profile: str,
        tool_schemas: Mapping[str, object] | Sequence[object] | None = None,
        *,
        tools: Mapping[str, object] | Sequence[object] | None = None,
        request: Mapping[str, object] | None = None,
        provider: str | None = None,
        limits: Limits | None = None,
        allow_quirks: Iterable[str] = (),
    ) -> None:
        if profile not in PROFILES:
            raise UsageError(f"unknown profile {profile!r}; known: {', '.join(sorted(PROFILES))}")
        if tools is not None and tool_schemas is not None:
            raise UsageError("give the tools once: tool_schemas or tools, not both")
        self._profile = PROFILES[profile]
        self._provider = provider
        self._quirks = quirks_in_force(provider, allow_quirks)
        request = dict(request or {})
        self._accepted = self._profile.accepted_reasons(request)
        # The bound methods, looked up once: ``feed`` calls them for every event.
        translator = self._profile.translator(self._quirks, request)
        self._translate = translator.translate
        #: The translator's short reading of a chunk that only adds argument text, if it has one.
        self._continuation = getattr(translator, "continuation", None)
        self._continuation_pointer: str = getattr(translator, "continuation_pointer", "")
        self._limits = limits or DEFAULT_LIMITS
        self._max_bytes = self._limits.max_argument_bytes
        self._tool_schemas = tool_schemas_of(tool_schemas if tools is None else tools, profile)
        self._compiled: dict[str, InputCheck | SchemaProblem] = {}
        self._slots: dict[SlotKey, _Slot] = {}
        #: The calls a plain argument fragment may grow now: started, not ended, in a turn that
        #: has not ended. ``_move`` and ``_end_turn`` keep it; ``feed`` reads it for most chunks.
        self._growing: dict[SlotKey, _Slot] = {}
        self._ids: dict[str, SlotKey] = {}
        self._turns: dict[int, str] = {}
        #: The provider claimed calls (a call terminal reason), or tool data callgate could not
        #: read may be one: the turn is applicable even with no call read.
        self._claimed_calls = False
        self._findings: list[Finding] = []
        self._event = -1
        self._closed = False

    # -- the public face -------------------------------------------------------------------------

    def feed(self, raw: object) -> list[Finding]:
        """Take the next raw provider event, as parsed from the wire (a dict) or as the provider's
        SDK hands it out (a pydantic model, read as its wire JSON); return the findings it
        raised, in order. Raises ``TypeError`` for anything else that is not a JSON value."""
        if self._closed:
            raise RuntimeError("Reassembler.feed() called after close()")
        if type(raw) is not dict:  # one comparison for the dicts that are nearly every event
            raw = event_json(raw)
        self._event += 1
        if self._continuation is not None:
            continued = self._continuation(raw)  # None for any value but an object
            if continued is not None:
                key, text = continued
                slot = self._growing.get(key)
                if slot is not None and self._grew(slot, text):
                    return []
                # The translator would read the chunk as this one event: not read it again.
                first = len(self._findings)
                self._delta(SlotDelta(key, self._continuation_pointer, text))
                return self._findings[first:]
        first = len(self._findings)
        for event in self._translate(raw):
            if type(event) is SlotDelta:  # most events: skip the dispatch
                self._delta(event)
            else:
                self._apply(event)
        return self._findings[first:]

    def _grew(self, slot: _Slot, text: str) -> bool:
        """A chunk that only adds ``text`` to ``slot``, a growing call, read without an event:
        what ``_delta`` does for its ``SlotDelta`` when the text fits, and True; False, having
        changed nothing, for ``feed`` to take the general path."""
        size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
        if slot.size + size > self._max_bytes:
            return False
        # The chunk is this event's only one, so the slot has not grown in it yet.
        slot.grew.append(self._event)
        if text:
            slot.fragment_events.append(self._event)
            slot.fragments.append(text)
            slot.size += size
        return True

    def close(self) -> Report:
        """End of stream: report what is unfinished and return the verdict."""
        if not self._closed:
            self._closed = True
            self._report_unfinished()
        calls = tuple(self._call(slot) for key, slot in sorted(self._slots.items()) if slot.is_call)
        applicable = bool(calls) or self._claimed_calls
        return Report(
            profile=self._profile.name,
            provider=self._provider,
            applicable=applicable,
            calls=calls,
            findings=tuple(self._findings),
        )

    # -- dispatch ----------------------------------------------------------------------------------

    def _apply(self, event: Event) -> None:
        """Every event but a ``SlotDelta``, which ``feed`` takes straight to ``_delta``."""
        if isinstance(event, Problem):
            self._problem(event)
        elif isinstance(event, SlotStarted):
            self._start(event)
        elif isinstance(event, SlotEnded):
            self._end_slot(event.key, event.pointer)
        elif isinstance(event, ArgumentsStated):
            self._stated(event)
        else:
            self._end_turn(cast(TurnEnded, event))  # the last kind left

    def _problem(self, event: Problem) -> None:
        """A profile's own finding; a blocking one about a started slot blocks that slot."""
        self._add(
            event.code,
            event.message,
            event.pointer,
            event.choice,
            event.slot,
            event.severity,
            event.quirk,
        )
        # No slot is keyed by None: a finding placed on no slot finds none.
        slot = self._slots.get((event.choice, event.slot))  # type: ignore[arg-type]
        if slot is not None and event.severity is Severity.BLOCKING:
            slot.blocked = True
        if event.severity is Severity.BLOCKING and (
            event.code in _UNREAD if event.could_be_call is None else event.could_be_call
        ):
            self._claimed_calls = True  # what callgate could not read may be a call

    def _add(
        self,
        code: Code,
        message: str,
        pointer: str,
        choice: int | None = None,
        slot: int | None = None,
        severity: Severity = Severity.BLOCKING,
        quirk: str | None = None,
        *,
        path: str | None = None,
        event: int | None = None,
        detail: dict[str, str] | None = None,
    ) -> Finding:
        if path is None:
            path = f"/{self._profile.stream_key}/{self._event}{pointer}"
        finding = Finding(
            code=code,
            message=message,
            severity=severity,
            choice=choice,
            slot=slot,
            event=self._event if event is None else event,
            path=path,
            quirk=quirk,
            detail=detail or {},
        )
        self._findings.append(finding)
        return finding

    def _block(self, slot: _Slot, code: Code, message: str, pointer: str, **where: Any) -> None:
        self._add(code, message, pointer, slot.key[0], slot.key[1], **where)
        slot.blocked = True

    def _move(self, slot: _Slot, move: SlotInput, pointer: str) -> bool:
        """Apply one lifecycle move from the table; False when the pair is a finding."""
        outcome = step(slot.lifecycle, move)
        if isinstance(outcome, Code):
            self._block(
                slot,
                outcome,
                f"{_TABLE_MESSAGES[outcome]} (slot {slot.key[1]} was "
                f"{slot.lifecycle.value}, event was {move.value})",
                pointer,
            )
            return False
        slot.lifecycle = outcome
        # Only a start or a delta grows a slot, and both come after `_turn_over`: a slot of a
        # turn that ended never gets here.
        if outcome is GROWING and slot.is_call:
            self._growing[slot.key] = slot
        else:
            self._growing.pop(slot.key, None)
        if move is SlotInput.START:
            slot.opened = self._event
        elif move is SlotInput.END:
            slot.ended = self._event
        elif not slot.grew or slot.grew[-1] != self._event:
            slot.grew.append(self._event)
        return True

    def _slot(self, key: SlotKey, is_call: bool) -> _Slot:
        if key not in self._slots:
            self._slots[key] = _Slot(key, is_call)
        return self._slots[key]

    # -- slot events -------------------------------------------------------------------------------

    def _start(self, event: SlotStarted) -> None:
        slot = self._slot(event.key, event.is_call)
        if self._turn_over(slot, event.pointer):
            return
        if slot.lifecycle is SlotState.UNSEEN:
            slot.is_call, slot.stated_input = event.is_call, event.stated_input
            slot.freeform = event.freeform
        self._move(slot, SlotInput.START, event.pointer)
        if event.is_call and slot.is_call:
            self._identify(slot, event.call_id, event.name, event.pointer)

    def _delta(self, event: SlotDelta) -> None:
        slot = self._growing.get(event.key)
        if slot is not None and event.call_id is None and event.name is None:
            # A plain argument fragment for a call that is growing: what the general path below
            # does for it, without the steps that cannot change anything.
            if not slot.grew or slot.grew[-1] != self._event:
                slot.grew.append(self._event)
            if event.arguments:
                self._append(slot, event.arguments, event.pointer)
            return
        slot = self._slot(event.key, is_call=event.arguments is not None)
        if self._turn_over(slot, event.pointer) or not self._move(
            slot, SlotInput.DELTA, event.pointer
        ):
            return
        if slot.is_call:
            self._identify(slot, event.call_id, event.name, event.pointer)
            if event.arguments:
                self._append(slot, event.arguments, event.pointer)

    def _end_slot(self, key: SlotKey, pointer: str) -> None:
        slot = self._slot(key, is_call=False)
        if self._turn_over(slot, pointer) or not self._move(slot, SlotInput.END, pointer):
            return
        if slot.is_call and not slot.blocked:
            self._validate(slot, pointer)

    def _stated(self, event: ArgumentsStated) -> None:
        """A full copy of the arguments: adopted when nothing streamed, else compared."""
        slot = self._slot(event.key, is_call=True)
        if slot.lifecycle is SlotState.UNSEEN:
            self._move(slot, SlotInput.DELTA, event.pointer)  # delta_before_start
            return
        if not slot.is_call or slot.blocked:
            return
        if slot.lifecycle is SlotState.ACCUMULATING and not slot.fragments:
            self._append(slot, event.text, event.pointer)
            return
        current = slot.arguments if slot.arguments is not None else "".join(slot.fragments)
        if event.text != current:
            self._block(
                slot,
                Code.ARGUMENT_MISMATCH,
                "a stated copy of the arguments differs from the streamed arguments",
                event.pointer,
            )

    def _turn_over(self, slot: _Slot, pointer: str) -> bool:
        choice = slot.key[0]
        if choice not in self._turns:
            return False
        self._block(
            slot,
            Code.DELTA_AFTER_TERMINAL,
            f"slot {slot.key[1]} received an event after "
            f"the turn ended with {self._turns[choice]!r}",
            pointer,
        )
        return True

    def _identify(self, slot: _Slot, call_id: str | None, name: str | None, pointer: str) -> None:
        """First non-empty id and name stick; a different one later is a collision."""
        for attribute, value in (("call_id", call_id), ("name", name)):
            if not value:
                continue  # "" and null mean "not given" in continuation deltas
            current = getattr(slot, attribute)
            if current is None:
                setattr(slot, attribute, value)
                if attribute == "call_id":
                    self._register_id(slot, value, pointer)
            elif current != value and (attribute, value) not in slot.collisions:
                slot.collisions.add((attribute, value))
                label = "id" if attribute == "call_id" else "name"
                self._block(
                    slot,
                    Code.IDENTITY_COLLISION,
                    f"slot {slot.key[1]} has {label} "
                    f"{current[:64]!r}; a later fragment says {value[:64]!r}",
                    pointer,
                )

    def _register_id(self, slot: _Slot, call_id: str, pointer: str) -> None:
        owner = self._ids.setdefault(call_id, slot.key)
        if owner != slot.key:
            self._block(
                slot,
                Code.DUPLICATE_CALL_ID,
                f"call id {call_id[:64]!r} is also the id of choice {owner[0]} slot {owner[1]}",
                pointer,
            )

    def _append(self, slot: _Slot, text: str, pointer: str) -> None:
        # surrogatepass: a lone surrogate (a Python caller can hand one over) counts as the 3
        # bytes it would take; the strict parse then reports it as invalid_unicode.
        size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
        if slot.size + size > self._max_bytes:
            slot.fragments.clear()
            slot.fragment_events.clear()
            slot.fragment_pointers.clear()
            self._block(
                slot, Code.LIMIT_EXCEEDED, f"arguments exceed {self._max_bytes} bytes", pointer
            )
            return
        if pointer != self._continuation_pointer:
            slot.fragment_pointers[len(slot.fragments)] = pointer
        slot.fragment_events.append(self._event)
        slot.fragments.append(text)
        slot.size += size

    # -- turn events -------------------------------------------------------------------------------

    def _end_turn(self, event: TurnEnded) -> None:
        choice, reason = event.choice, event.reason
        if choice in self._turns:
            self._repeated_terminal(choice, reason, event.pointer)
            return
        self._turns[choice] = reason
        slots = [s for s in self._slots.values() if s.key[0] == choice]
        for slot in slots:
            self._growing.pop(slot.key, None)
        calls = [s for s in slots if s.is_call]
        if reason in self._profile.call_reasons:
            self._claimed_calls = True
        if calls:
            self._check_reason(choice, reason, event.pointer)
        elif reason in self._profile.call_reasons:
            self._add(
                Code.TERMINAL_WITHOUT_CALL,
                f"the turn ended with {reason!r} but holds no tool call",
                event.pointer,
                choice,
            )
        if self._profile.turn_ends_slots:
            for slot in slots:
                if (
                    self._move(slot, SlotInput.END, event.pointer)
                    and slot.is_call
                    and not (slot.blocked)
                ):
                    self._validate(slot, event.pointer)

    def _check_reason(self, choice: int, reason: str, pointer: str) -> None:
        if reason in self._accepted:
            return
        if reason == "stop" and "stop_finish_with_tool_calls" in self._quirks:
            self._add(
                Code.WRONG_TERMINAL_REASON,
                "the turn made tool calls but ended with 'stop'",
                pointer,
                choice,
                severity=Severity.TOLERATED,
                quirk="stop_finish_with_tool_calls",
            )
            return
        expected = " or ".join(repr(r) for r in sorted(self._accepted))
        self._add(
            Code.WRONG_TERMINAL_REASON,
            f"the turn made tool calls but ended with {reason[:40]!r}, not {expected}",
            pointer,
            choice,
        )

    def _repeated_terminal(self, choice: int, reason: str, pointer: str) -> None:
        if reason == self._turns[choice] and "repeated_finish_chunk" in self._quirks:
            self._add(
                Code.DUPLICATE_TERMINAL,
                f"the provider repeated the terminal {reason!r}",
                pointer,
                choice,
                severity=Severity.TOLERATED,
                quirk="repeated_finish_chunk",
            )
            return
        self._add(
            Code.DUPLICATE_TERMINAL,
            f"the turn already ended with {self._turns[choice]!r}; "
            f"a second terminal says {reason[:40]!r}",
            pointer,
            choice,
        )

    def _report_unfinished(self) -> None:
        pointer = f"/{self._profile.stream_key}"
        for slot in self._slots.values():
            if slot.is_call and slot.lifecycle is SlotState.ACCUMULATING:
                self._block(
                    slot,
                    Code.MISSING_TERMINAL,
                    f"the stream ended before slot {slot.key[1]} was ended by the provider",
                    "",
                    path=pointer,
                )
        open_choices = {key[0] for key in self._slots}
        if not self._turns and self._event >= 0:
            open_choices.add(0)
        for choice in sorted(open_choices - self._turns.keys()):
            self._add(
                Code.MISSING_TERMINAL,
                f"the stream ended before the provider ended the turn (choice {choice})",
                "",
                choice,
                path=pointer,
            )

    # -- validation, once the provider ended the call --------------------------------------------

    def _validate(self, slot: _Slot, pointer: str) -> None:
        self._check_identity_complete(slot, pointer)
        slot.arguments = self._arguments_text(slot)
        if slot.freeform:
            self._check_input(slot, slot.arguments, pointer)
        else:
            parsed = self._parse(slot, pointer)
            if parsed is not None:
                self._check_stated_input(slot, parsed, pointer)
                self._check_input(slot, parsed, pointer)
        slot.validated = not slot.blocked

    def _check_identity_complete(self, slot: _Slot, pointer: str) -> None:
        if slot.call_id is None and self._profile.requires_call_id:
            if "missing_call_id" in self._quirks:
                self._add(
                    Code.MISSING_CALL_ID,
                    "the call has no id",
                    pointer,
                    *slot.key,
                    severity=Severity.TOLERATED,
                    quirk="missing_call_id",
                )
            else:
                self._block(slot, Code.MISSING_CALL_ID, "the call ended without an id", pointer)
        if slot.name is None:
            self._block(slot, Code.MISSING_TOOL_NAME, "the call ended without a name", pointer)

    @staticmethod
    def _arguments_text(slot: _Slot) -> str:
        text = "".join(slot.fragments)
        if text or slot.stated_input is None:
            return text
        # No argument deltas (or only ""): the arguments are what the start event stated.
        try:
            return _canonical(slot.stated_input)
        except (TypeError, ValueError):  # a set, bytes, a cycle: from a Python caller only
            return ""

    def _parse(self, slot: _Slot, pointer: str) -> dict[str, Any] | None:
        assert slot.arguments is not None
        try:
            parsed = strict_json.loads(slot.arguments, self._limits)
        except strict_json.StrictJSONError as error:
            event, where = self._origin(slot, error.position, pointer)
            self._block(
                slot,
                error.code,
                f"arguments: {error.message}",
                where,
                event=event,
                path=f"/{self._profile.stream_key}/{event}{where}",
            )
            return None
        slot.parsed = parsed
        if not isinstance(parsed, dict):
            self._block(
                slot,
                Code.ARGUMENTS_NOT_OBJECT,
                f"arguments are a JSON {_json_type(parsed)}, not an object",
                pointer,
            )
            return None
        return parsed

    def _origin(self, slot: _Slot, position: int, pointer: str) -> tuple[int, str]:
        """The event and pointer of the fragment holding character ``position``."""
        if not slot.fragments:
            return self._event, pointer
        # Where each fragment starts, counted only now: a parse error is rare, a fragment is not.
        # The first fragment starts at character 0 and positions are never negative.
        starts = list(itertools.accumulate(map(len, slot.fragments[:-1]), initial=0))
        number = bisect.bisect_right(starts, position) - 1
        return (
            slot.fragment_events[number],
            slot.fragment_pointers.get(number, self._continuation_pointer),
        )

    def _check_stated_input(self, slot: _Slot, parsed: dict[str, Any], pointer: str) -> None:
        stated = slot.stated_input
        if not slot.fragments or stated is None or stated == {}:
            return
        if json.dumps(parsed, sort_keys=True) != json.dumps(stated, sort_keys=True):
            self._block(
                slot,
                Code.ARGUMENT_MISMATCH,
                "the streamed arguments differ from the input the start event stated",
                pointer,
            )

    def _check_input(self, slot: _Slot, value: object, pointer: str) -> None:
        """The call's input against what its tool declares: a JSON Schema (a function, or the
        schema callgate ships for a built-in tool) for parsed arguments, a format for
        free-form text (``callgate.reassemble.tool_input``)."""
        name = slot.name
        if name is None:
            return
        if name not in self._tool_schemas:
            self._block(slot, Code.UNKNOWN_TOOL, f"no schema for tool {name[:64]!r}", pointer)
            return
        if name not in self._compiled:
            self._compiled[name] = input_check(self._tool_schemas[name])
        check = self._compiled[name]
        if isinstance(check, SchemaProblem):
            self._block(
                slot,
                check.code,
                f"tool {name[:64]!r}: {check.message}",
                pointer,
                path=f"/tool_schemas/{_escape(name)}{check.schema_path}",
            )
            return
        if check.freeform != slot.freeform:
            takes, made = ("free-form input", "JSON") if check.freeform else ("JSON", "free-form")
            self._block(
                slot,
                Code.UNKNOWN_TOOL,
                f"tool {name[:64]!r} takes {takes}; this call gives {made} input",
                pointer,
            )
            return
        for problem in check.problems(value):
            self._block(slot, problem.code, problem.message, pointer, detail=problem.detail)

    def _call(self, slot: _Slot) -> Call:
        codes = tuple(f.code for f in self._findings if (f.choice, f.slot) == slot.key)
        arguments = slot.arguments if slot.arguments is not None else "".join(slot.fragments)
        return Call(
            choice=slot.key[0],
            slot=slot.key[1],
            id=slot.call_id,
            name=slot.name,
            arguments=arguments,
            parsed_arguments=slot.parsed,
            state=slot_state(slot.lifecycle, slot.blocked, slot.validated),
            findings=codes,
            opened=slot.opened,
            grew=tuple(slot.grew),
            ended=slot.ended,
        )
