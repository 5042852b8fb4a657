"""The stream tap's states: the moves its table holds, the pairs it refuses, and the states a
tap goes through, observing and enforcing, as the body passes, fails, grows too long or breaks
its pipeline."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from callgate.integrations.enforce import tap_state
from callgate.integrations.enforce.tap import StreamTap
from callgate.integrations.enforce.tap_state import (
    TRANSITIONS,
    ImpossibleMove,
    TapInput,
    TapState,
    step,
)
from callgate.reassemble import Reassembler
from callgate.reassemble.framing import SSE
from callgate.reassemble.profiles import framed
from callgate.redact.encoding import Decompressor
from tests.conftest import CONFORMANCE, load

S, In = TapState, TapInput


def tap_for(
    name: str,
    *,
    enforce: bool,
    failures: list[str],
    max_body: int = 64 << 20,
    on_error: str = "block",
) -> tuple[StreamTap, list[bytes]]:
    envelope = load(CONFORMANCE / f"{name}.json")
    tap = StreamTap(
        Reassembler(envelope["profile"], envelope["tool_schemas"]),
        envelope["profile"],
        "",
        enforce=enforce,
        on_finding=lambda _: None,
        on_failure=failures.append,
        max_body=max_body,
        on_error=on_error,
    )
    return tap, list(framed(envelope, SSE))


def states_through(
    tap: StreamTap, chunks: list[bytes], *, end: bool = True
) -> tuple[list[TapState], bytes]:
    """The tap's state after each chunk and (with ``end``) the end-of-body call, and the
    client's bytes."""
    states, out = [], b""
    for chunk in [*chunks, b""] if end else chunks:
        sent = tap(chunk)
        out += b"".join(sent) if isinstance(sent, list) else sent
        states.append(tap.state)
    return states, out


#: The error event enforce mode sends for a Chat Completions turn it could not judge.
UNJUDGED_EVENT = (
    b'data: {"error": {"message": "callgate could not judge this turn (RuntimeError), so it may '
    b'not run", "type": "callgate_blocked", "code": "callgate_unjudged", "param": null}}\n\n'
)


def test_every_pair_the_table_does_not_hold_is_an_impossible_move() -> None:
    for state, move in itertools.product(TapState, TapInput):
        if (state, move) in TRANSITIONS:
            assert step(state, move) is TRANSITIONS[(state, move)]
        else:
            with pytest.raises(ImpossibleMove, match=f"cannot take {move.name} when {state.name}"):
                step(state, move)


def test_a_verdict_is_final_and_only_a_fault_leaves_it_and_nothing_leaves_broken() -> None:
    leaving = {(state, move) for (state, move), after in TRANSITIONS.items() if after is not state}
    assert {move for state, move in leaving if state in (S.PASSED, S.BLOCKED)} == {In.FAULT}
    assert not any(state is S.BROKEN for state, _ in TRANSITIONS)
    # A verdict comes only once something was held, but for a body too long to keep.
    assert (S.READING, In.PASS) not in TRANSITIONS
    assert TRANSITIONS[(S.READING, In.FAIL)] is S.BLOCKED


def test_an_impossible_move_is_an_assertion_error() -> None:
    with pytest.raises(AssertionError):
        step(S.BLOCKED, In.PASS)


@pytest.mark.parametrize(
    ("name", "verdict"),
    [("openai/valid_fragmented", S.PASSED), ("openai/malformed_arguments", S.BLOCKED)],
)
def test_enforcing_reads_then_holds_from_the_terminal_evidence_then_keeps_its_verdict(
    name: str, verdict: TapState
) -> None:
    failures: list[str] = []
    tap, events = tap_for(name, enforce=True, failures=failures)
    states, _ = states_through(tap, events)
    finish = next(n for n, event in enumerate(events) if b'"finish_reason": "' in event)
    assert states[:finish] == [S.READING] * finish
    assert states[finish:-2] == [S.HOLDING] * (len(events) - 1 - finish)  # until [DONE]
    assert states[-2:] == [verdict, verdict] and failures == []


def test_observing_reads_until_the_body_ends() -> None:
    tap, events = tap_for("openai/malformed_arguments", enforce=False, failures=[])
    states, out = states_through(tap, events)
    assert states == [S.READING] * (len(events) + 1) and out == b"".join(events)


def test_a_body_past_the_limit_after_a_pass_still_goes_and_before_the_verdict_is_blocked() -> None:
    name = "openai/valid_fragmented"
    body = b"".join(framed(load(CONFORMANCE / f"{name}.json"), SSE))
    after = b'data: {"choices":[],"usage":{"total_tokens":1}}\n\n'
    tap, events = tap_for(name, enforce=True, failures=[], max_body=len(body))
    states, out = states_through(tap, [*events, after])
    assert (states[-1], tap.over_limit, out) == (S.PASSED, True, body + after)
    tap, events = tap_for(name, enforce=True, failures=[], max_body=100)
    states, out = states_through(tap, events)
    assert (states[-1], tap.over_limit) == (S.BLOCKED, True)
    assert out.endswith(b'"code": "limit_exceeded", "param": null}}\n\n')
    # The limit is exact: a byte less than the body lets it go.
    tap, events = tap_for(name, enforce=True, failures=[], max_body=len(body) - 1)
    states, out = states_through(tap, events)
    assert (states[-1], tap.over_limit) == (S.BLOCKED, True)


def test_a_failure_in_the_pipeline_breaks_the_tap_whatever_its_state(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken_feed(self: Reassembler, raw: object) -> Any:
        raise RuntimeError("engine fault")

    monkeypatch.setattr(Reassembler, "feed", broken_feed)
    # Observing, or enforcing with on_error="pass": every byte goes through.
    for enforce, on_error in ((False, "block"), (True, "pass")):
        failures: list[str] = []
        tap, events = tap_for(
            "openai/valid_fragmented", enforce=enforce, failures=failures, on_error=on_error
        )
        states, out = states_through(tap, events)
        assert (states[-1], tap.broken, failures) == (S.BROKEN, True, ["RuntimeError"])
        assert out == b"".join(events)
    # Enforcing, failing closed: the first event is read before it goes, and fails; the client
    # gets the error event alone.
    failures = []
    tap, events = tap_for("openai/valid_fragmented", enforce=True, failures=failures)
    states, out = states_through(tap, events)
    assert (states[-1], tap.broken, failures) == (S.BLOCKED, True, ["RuntimeError"])
    assert out == UNJUDGED_EVENT
    assert b"".join(tap.body) == b"".join(events)  # all of it kept, unread, for its fixture
    # Kept up to the limit, exactly: a body one byte longer than it keeps all but its last chunk.
    size = len(b"".join(events))
    for max_body, kept in ((size, events), (size - 1, events[:-1])):
        tap, events = tap_for(
            "openai/valid_fragmented", enforce=True, failures=[], max_body=max_body
        )
        states_through(tap, events)
        assert b"".join(tap.body) == b"".join(kept)


def test_an_impossible_move_inside_the_pipeline_breaks_the_tap_and_every_byte_goes_through(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A tap whose table lacks the move its verdict needs: the move is refused, the tap breaks
    as at any failure inside it, and the client gets every byte, once."""
    monkeypatch.delitem(tap_state.TRANSITIONS, (S.HOLDING, In.PASS))
    failures: list[str] = []
    tap, events = tap_for(
        "openai/valid_fragmented", enforce=True, failures=failures, on_error="pass"
    )
    states, out = states_through(tap, events)
    assert (states[-1], failures, out) == (S.BROKEN, ["ImpossibleMove"], b"".join(events))
    # Failing closed, the held end is replaced by the error event.
    failures = []
    tap, events = tap_for("openai/valid_fragmented", enforce=True, failures=failures)
    states, out = states_through(tap, events)
    finish = next(n for n, event in enumerate(events) if b'"finish_reason": "' in event)
    assert (states[-1], failures) == (S.BLOCKED, ["ImpossibleMove"])
    assert out == b"".join(events[:finish]) + UNJUDGED_EVENT.replace(
        b"RuntimeError", b"ImpossibleMove"
    )


@pytest.mark.parametrize("on_error", ["block", "pass"])
def test_a_failure_after_a_blocking_verdict_leaves_it_blocked_and_releases_nothing(
    monkeypatch: pytest.MonkeyPatch, on_error: str
) -> None:
    """After the error event went out, a fault (here the body's decoder) must not release what
    was held back: the turn's terminal evidence stays withheld, whatever ``on_error`` says."""

    def decoding(self: Decompressor, chunk: bytes) -> bytes:
        if chunk == b"boom":
            raise RuntimeError("decoder fault")
        return chunk

    monkeypatch.setattr(Decompressor, "__call__", decoding)
    envelope = load(CONFORMANCE / "openai" / "malformed_arguments.json")
    failures: list[str] = []
    tap = StreamTap(
        Reassembler(envelope["profile"], envelope["tool_schemas"]),
        envelope["profile"],
        "gzip",
        enforce=True,
        on_finding=lambda _: None,
        on_failure=failures.append,
        on_error=on_error,
    )
    _, out = states_through(tap, list(framed(envelope, SSE)), end=False)  # the body goes on
    assert tap.state is S.BLOCKED and b'"finish_reason": "' not in out
    later = [tap(chunk) for chunk in (b"boom", b'data: {"choices": []}\n\n', b"")]
    assert (later, tap.state, failures) == ([[], [], []], S.BLOCKED, ["RuntimeError"])
