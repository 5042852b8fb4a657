"""The provider-neutral events that profiles translate raw stream events into.

A profile reads one provider event (an OpenAI chunk, an Anthropic SSE event's JSON) and says what
happened in these terms; the engine alone decides what that means for each slot. Every event
carries ``pointer``: where in the raw provider event it came from (a JSON pointer relative to
that event), so findings can name the exact place.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass

from callgate.reassemble.codes import Code
from callgate.reassemble.findings import Severity
from callgate.reassemble.records import quick_init

#: (choice index, slot index). Anthropic has one "choice", 0, and the content-block index as slot.
SlotKey = tuple[int, int]


@quick_init
@dataclass(frozen=True)
class SlotStarted:
    """A slot was opened: a tool call, or (``is_call=False``) some other content block."""

    key: SlotKey
    pointer: str
    _: KW_ONLY
    is_call: bool = True
    call_id: str | None = None
    name: str | None = None
    #: Arguments the start event itself states (Anthropic's ``input``), as a JSON value.
    stated_input: object = None
    #: The call's input is free-form text (OpenAI's custom tools), checked against the tool's
    #: declared format instead of parsed as JSON.
    freeform: bool = False


# Not frozen, unlike the other events: one is built per argument fragment, and a frozen
# dataclass sets each field through ``object.__setattr__``, which made building them a large
# share of the engine's cost per event. Nothing writes to an event once its translator returns
# it. For the same reason ``arguments`` may be given in place: a class called with keywords
# gets them as a new dictionary, where most fragments are a key, a pointer and a text.
@dataclass(slots=True)
class SlotDelta:
    """More of a slot: argument text and/or a restated id or name (``None``/"" = not given)."""

    key: SlotKey
    pointer: str
    arguments: str | None = None
    _: KW_ONLY
    call_id: str | None = None
    name: str | None = None


@quick_init
@dataclass(frozen=True)
class SlotEnded:
    """The provider ended one slot (Anthropic ``content_block_stop``)."""

    key: SlotKey
    pointer: str


@quick_init
@dataclass(frozen=True)
class TurnEnded:
    """The provider ended a choice (``finish_reason``) or the message (``stop_reason``)."""

    choice: int
    reason: str
    pointer: str


@quick_init
@dataclass(frozen=True)
class ArgumentsStated:
    """A full copy of a call's arguments that the provider states besides the deltas (OpenAI
    Responses' ``function_call_arguments.done``, ``output_item.done``, ``response.completed``).
    It must equal the reassembled text; a call that streamed no deltas takes it as its text."""

    key: SlotKey
    pointer: str
    text: str


@quick_init
@dataclass(frozen=True)
class Problem:
    """Something the profile itself found while translating."""

    code: Code
    message: str
    pointer: str
    _: KW_ONLY
    choice: int | None = None
    slot: int | None = None
    severity: Severity = Severity.BLOCKING
    quirk: str | None = None
    #: Whether what could not be read could be a tool call; None: as its code says (tool data
    #: the profile cannot read, ``unsupported_event``, or place, ``invalid_slot``, could be; any
    #: other code's subject is not). A turn holding such a blocking finding fails: ``invalid``
    #: would release it as holding no call. False where the profile shows it is none (an
    #: unknown event about an item known to be text).
    could_be_call: bool | None = None


Event = SlotStarted | SlotDelta | SlotEnded | TurnEnded | ArgumentsStated | Problem
