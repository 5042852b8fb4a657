"""The per-slot state machine. Everything that moves a slot between states lives in this file.

A slot is one tool call (or one non-call content block) within one turn. Its life:

    UNSEEN -> ACCUMULATING -> TERMINAL -> VALIDATED
                    \\-----------\\--------> BLOCKED (permanent)

A slot's *lifecycle* is what the provider did to it (``LIFECYCLE``: started, growing, ended); its
*verdict* is what callgate decided (blocked, or validated once ended). The two are kept apart so
that a slot blocked for one reason still reports every later lifecycle violation (a delta after
its end, a second start), which a single absorbing BLOCKED state would hide. ``TRANSITIONS`` maps
(lifecycle state, input) to the next lifecycle state, or to the code of the finding that pair is;
such a pair blocks the slot. ``slot_state`` combines lifecycle and verdict into the reported state:
BLOCKED wins over everything and never clears.
"""

from __future__ import annotations

from enum import Enum

from callgate.reassemble.codes import Code


class SlotState(Enum):
    #: Nothing of this slot has been seen.
    UNSEEN = "unseen"
    #: Started; fragments are being appended.
    ACCUMULATING = "accumulating"
    #: The provider ended the slot; nothing may be appended any more.
    TERMINAL = "terminal"
    #: Terminal, and its arguments parsed strictly and fit the tool's schema.
    VALIDATED = "validated"
    #: A blocking finding on this slot; no later event can clear it.
    BLOCKED = "blocked"

    # Members are singletons compared by identity, so identity hashes them; Enum's own hash is a
    # Python method, and the engine looks a (state, input) pair up for almost every event.
    __hash__ = object.__hash__


class SlotInput(Enum):
    START = "start"
    DELTA = "delta"
    END = "end"

    __hash__ = object.__hash__  # as SlotState's


#: The states a provider's events move a slot through.
LIFECYCLE = (SlotState.UNSEEN, SlotState.ACCUMULATING, SlotState.TERMINAL)

S, In = SlotState, SlotInput

TRANSITIONS: dict[tuple[SlotState, SlotInput], SlotState | Code] = {
    (S.UNSEEN, In.START): S.ACCUMULATING,
    (S.UNSEEN, In.DELTA): Code.DELTA_BEFORE_START,
    (S.UNSEEN, In.END): Code.DELTA_BEFORE_START,
    (S.ACCUMULATING, In.START): Code.DUPLICATE_START,
    (S.ACCUMULATING, In.DELTA): S.ACCUMULATING,
    (S.ACCUMULATING, In.END): S.TERMINAL,
    (S.TERMINAL, In.START): Code.DUPLICATE_START,
    (S.TERMINAL, In.DELTA): Code.DELTA_AFTER_TERMINAL,
    (S.TERMINAL, In.END): Code.DUPLICATE_TERMINAL,
}

del S, In

#: The one state a delta leaves as it is (``TRANSITIONS[(ACCUMULATING, DELTA)]``): the engine's
#: path for plain argument fragments checks for it instead of looking the pair up each time.
GROWING = SlotState.ACCUMULATING


def step(lifecycle: SlotState, move: SlotInput) -> SlotState | Code:
    """The next lifecycle state, or the code of the finding that this pair is."""
    return TRANSITIONS[(lifecycle, move)]


def slot_state(lifecycle: SlotState, blocked: bool, validated: bool) -> SlotState:
    """The state a report shows: BLOCKED, else VALIDATED once checked, else the lifecycle."""
    if blocked:
        return SlotState.BLOCKED
    if validated:
        return SlotState.VALIDATED
    return lifecycle
