"""The stream tap's states: what it does with the bytes that come next. Everything that moves
the tap between states lives in this file.

    READING -> HOLDING -> PASSED or BLOCKED
    READING -> BLOCKED (the body grew past max_body before anything was held)
    READING, HOLDING or PASSED -> BROKEN

Observing, the tap only reads: it is READING until it breaks. Enforcing, it holds what may
decide the turn until the verdict, then releases it or sends the error event instead.
``TRANSITIONS`` maps (state, input) to the next state; ``step`` refuses any other pair
(``ImpossibleMove``: a bug of the tap's, which breaks the tap as any exception in its pipeline
does). A body that grew past
``max_body`` is not a state of its own: it stops the keeping and reading (``over_limit``), while
the bytes after a verdict still go as the verdict says.
"""

from __future__ import annotations

from enum import Enum


class TapState(Enum):
    #: Reading the body as it comes. Enforcing, nothing is held yet: each event goes as it
    #: comes (read first, unless its bytes show it cannot decide the turn).
    READING = "reading"
    #: Enforcing: a block that may decide the turn came (terminal evidence, the end marker, the
    #: tail of the body, bytes that cannot be read); it and every block after it are read and
    #: held until the verdict.
    HOLDING = "holding"
    #: Enforcing: the turn passed. What was held went out; the rest goes as it comes, unread.
    PASSED = "passed"
    #: Enforcing: the turn failed, the body grew past ``max_body`` before the verdict, or the
    #: pipeline failed before it (failing closed): the error event went out instead of what was
    #: held, and nothing more goes.
    BLOCKED = "blocked"
    #: The pipeline failed: nothing more is read; every byte received and not sent goes out,
    #: then every byte as it comes (observing, enforcing with ``on_error="pass"``, or after a
    #: passing verdict; after a blocking one the tap stays BLOCKED, whatever fails).
    BROKEN = "broken"

    # Compared by identity, so hashed by identity (as SlotState is): Enum's own hash is a
    # Python method.
    __hash__ = object.__hash__


class TapInput(Enum):
    #: Enforcing: a block is held until the verdict.
    HOLD = "hold"
    #: Enforcing: the verdict is a pass.
    PASS = "pass"
    #: Enforcing: the verdict is a fail, the body grew past ``max_body`` before one, or (failing
    #: closed) the pipeline failed before one.
    FAIL = "fail"
    #: The pipeline raised.
    FAULT = "fault"

    __hash__ = object.__hash__  # as TapState's


S, In = TapState, TapInput

TRANSITIONS: dict[tuple[TapState, TapInput], TapState] = {
    (S.READING, In.HOLD): S.HOLDING,
    (S.READING, In.FAIL): S.BLOCKED,  # the body grew past max_body before anything was held
    (S.READING, In.FAULT): S.BROKEN,
    (S.HOLDING, In.HOLD): S.HOLDING,
    (S.HOLDING, In.PASS): S.PASSED,
    (S.HOLDING, In.FAIL): S.BLOCKED,
    (S.HOLDING, In.FAULT): S.BROKEN,
    (S.PASSED, In.FAULT): S.BROKEN,
}

del S, In


class ImpossibleMove(AssertionError):
    """A (state, input) pair ``TRANSITIONS`` does not hold: a bug of the tap's."""


def step(state: TapState, move: TapInput) -> TapState:
    """The state after ``move``. Raises ``ImpossibleMove`` for a pair the table does not hold."""
    after = TRANSITIONS.get((state, move))
    if after is None:
        raise ImpossibleMove(f"the tap cannot take {move.name} when {state.name}")
    return after
