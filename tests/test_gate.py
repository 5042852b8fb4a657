"""The gate without an SDK: wire events from the fixtures, through ``callgate.guard`` with an
explicit profile, sync and async. Items go at once; the terminal evidence and what follows wait
for the verdict; a failing turn raises ``Blocked`` instead (the real SDKs: ``test_guard_sdk``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

import callgate
from callgate import Blocked, CallgateError, UsageError, check, guard, mutate, mutations
from callgate.reassemble.gate import Gate
from callgate.reassemble.profiles import PROFILES
from tests.conftest import CONFORMANCE, Dumps, fixture_id, load

PROFILES_GUARDED = ("openai", "anthropic", "openai-responses", "mistral", "bedrock-converse")
PASSING = [
    path
    for profile in PROFILES_GUARDED
    for path in sorted((CONFORMANCE / profile).glob("*.json"))
    if check(load(path)).exit_code != 1
]
FAILING = [
    path
    for profile in PROFILES_GUARDED
    for path in sorted((CONFORMANCE / profile).glob("*.json"))
    if check(load(path)).exit_code == 1
]


class Source:
    """Wire events as an SDK's stream would give them, telling how many it gave and whether it
    was closed."""

    def __init__(self, events: list[Any]) -> None:
        self.events, self.given, self.closed = events, 0, False

    def __iter__(self) -> Iterator[Any]:
        for event in self.events:
            self.given += 1
            yield event

    def close(self) -> None:
        self.closed = True


def events_of(document: dict[str, Any]) -> list[Any]:
    events: list[Any] = document[PROFILES[document["profile"]].stream_key]
    return events


def first_terminal(document: dict[str, Any]) -> int:
    carries = PROFILES[document["profile"]].carries_terminal
    events = events_of(document)
    return next((n for n, e in enumerate(events) if carries(e)), len(events))


def guarded_run(document: dict[str, Any]) -> tuple[list[tuple[int, int]], Any, Source]:
    """(item index, events the source had given when the app got it) for each item the app got,
    and the guard (or the ``Blocked`` raised), and the source."""
    source = Source(events_of(document))
    guarded = guard(
        source,
        document.get("tool_schemas", {}),
        profile=document["profile"],
        provider=document.get("provider"),
        tool_choice=(document.get("request") or {}).get("tool_choice"),
    )
    seen: list[tuple[int, int]] = []
    position = {id(event): number for number, event in enumerate(source.events)}
    try:
        for item in guarded:
            seen.append((position[id(item)], source.given))
    except Blocked as blocked:
        return seen, blocked, source
    return seen, guarded, source


@pytest.mark.parametrize("path", PASSING, ids=fixture_id)
def test_a_turn_that_may_run_hands_on_every_event_and_holds_the_terminal_till_the_end(
    path: Path,
) -> None:
    document = load(path)
    seen, guarded, source = guarded_run(document)
    held_from = first_terminal(document)
    assert [index for index, _ in seen] == list(range(len(source.events)))
    assert [given for index, given in seen if index < held_from] == [
        index + 1 for index in range(held_from)
    ]  # each at once
    assert {given for index, given in seen if index >= held_from} <= {len(source.events)}
    assert guarded.report == check(document)
    assert guarded.calls == check(document).calls


@pytest.mark.parametrize("path", FAILING, ids=fixture_id)
def test_a_turn_that_may_not_run_raises_blocked_before_its_terminal(path: Path) -> None:
    document = load(path)
    seen, blocked, source = guarded_run(document)
    assert isinstance(blocked, Blocked)
    assert [index for index, _ in seen] == list(range(min(first_terminal(document), len(seen))))
    assert len(seen) <= first_terminal(document)
    assert blocked.report.to_dict() == check(document).to_dict()
    assert source.closed


def variant(path: Path, kind: str) -> dict[str, Any] | None:
    try:
        return mutate(load(path), kind, path.stem)
    except callgate.NotApplicable:
        return None


#: Every fault of every passing turn it applies to (where it cannot apply, mutate says why and
#: test_mutations pins it).
FAULTS = [
    (path, kind)
    for path in PASSING
    if check(load(path)).status.value == "pass"
    for kind in mutations(blocking=True, profile=load(path)["profile"])
    if variant(path, kind) is not None
]


@pytest.mark.parametrize(("path", "kind"), FAULTS, ids=[f"{fixture_id(p)}-{k}" for p, k in FAULTS])
def test_every_fault_of_every_passing_turn_is_blocked_with_its_code(path: Path, kind: str) -> None:
    document = variant(path, kind)
    assert document is not None
    seen, outcome, _ = guarded_run(document)
    if document["expect"]["status"] == "invalid":
        # The fault left no tool call (a whole call cut away, a provider-run tool): nothing to
        # gate, as in enforce mode; the broken stream is in the report.
        assert outcome.report.status.value == "invalid" and outcome.calls == ()
        assert outcome.report.blocking_codes == document["expect"]["codes"]
        return
    assert isinstance(outcome, Blocked)
    assert outcome.report.blocking_codes == document["expect"]["codes"]
    assert len(seen) <= first_terminal(document)


def test_blocked_is_one_line_naming_the_codes_and_outside_the_error_family() -> None:
    document = mutate(load(CONFORMANCE / "openai" / "valid_fragmented.json"), "truncate")
    _, blocked, _ = guarded_run(document)
    assert str(blocked) == "callgate blocked this turn: missing_terminal"
    assert not isinstance(blocked, CallgateError)
    assert blocked.report.blocking_codes == ["missing_terminal"]


def test_a_turn_without_a_tool_call_passes_as_not_applicable() -> None:
    seen, guarded, _ = guarded_run(load(CONFORMANCE / "openai" / "text_only.json"))
    assert guarded.report.status.value == "not_applicable"
    assert guarded.calls == () and len(seen) > 1


def test_leaving_the_loop_early_closes_the_stream() -> None:
    document = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    source = Source(events_of(document))
    for _ in guard(source, document["tool_schemas"], profile="openai"):
        break
    assert source.closed and source.given == 1
    source = Source(events_of(document))
    with pytest.raises(KeyError):
        for _ in guard(source, document["tool_schemas"], profile="openai"):
            raise KeyError("the app's own")
    assert source.closed


class Failing(Source):
    """Gives its events, then raises as an SDK's stream does when its connection breaks."""

    def __iter__(self) -> Iterator[Any]:
        yield from super().__iter__()
        raise ConnectionError("the connection broke")


def test_a_stream_that_fails_is_judged_on_what_came() -> None:
    """Cut before its terminal evidence, the turn may not run: ``Blocked``, raised from the
    stream's error. With every event come, it could have: the stream's error, as it was."""
    document = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    events = events_of(document)
    with pytest.raises(Blocked) as blocked:
        for _ in guard(
            Failing(events[: first_terminal(document)]), document["tool_schemas"], profile="openai"
        ):
            pass
    assert blocked.value.report.blocking_codes == ["missing_terminal"]
    assert isinstance(blocked.value.__cause__, ConnectionError)
    with pytest.raises(ConnectionError):
        for _ in guard(Failing(events), document["tool_schemas"], profile="openai"):
            pass


def test_an_async_stream_that_fails_is_judged_on_what_came() -> None:
    document = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    events = events_of(document)

    async def failing(given: list[Any]) -> AsyncIterator[Any]:
        for event in given:
            yield event
        raise ConnectionError("the connection broke")

    async def run(given: list[Any]) -> BaseException:
        try:
            async for _ in guard(failing(given), document["tool_schemas"], profile="openai"):
                pass
        except (Blocked, ConnectionError) as stopped:
            return stopped
        raise AssertionError("the stream's failure was lost")

    blocked = asyncio.run(run(events[: first_terminal(document)]))
    assert isinstance(blocked, Blocked) and isinstance(blocked.__cause__, ConnectionError)
    assert blocked.report.blocking_codes == ["missing_terminal"]
    assert isinstance(asyncio.run(run(events)), ConnectionError)


def test_a_stream_closed_early_gives_nothing_more() -> None:
    """Left by the loop, closed by the app between two ``next`` calls, or by the end of its
    ``with`` block: a closed guarded stream has closed the SDK's and gives nothing more, rather
    than going on from where it was left."""
    document = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    for leave in ("break", "close", "with"):
        source = Source(events_of(document))
        guarded = guard(source, document["tool_schemas"], profile="openai")
        if leave == "break":
            for _ in guarded:
                break
        elif leave == "close":
            next(guarded)
            guarded.close()
        else:
            with guarded:
                next(guarded)
        assert (list(guarded), guarded.report, source.given, source.closed) == (
            [],
            None,
            1,
            True,
        ), leave


def test_calls_before_the_end_are_a_usage_error_and_a_blocked_turns_calls_raise() -> None:
    document = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    guarded = guard(Source(events_of(document)), document["tool_schemas"], profile="openai")
    next(guarded)
    with pytest.raises(UsageError, match=r"^the turn is not judged yet"):
        _ = guarded.calls
    truncated = mutate(document, "truncate")
    guarded = guard(Source(events_of(truncated)), document["tool_schemas"], profile="openai")
    with pytest.raises(Blocked):
        guarded.until_done()
    with pytest.raises(Blocked, match=r"^callgate blocked this turn: missing_terminal$"):
        _ = guarded.calls


@pytest.mark.parametrize(
    ("call", "line"),
    [
        (lambda: guard(Source([]), profile="openai"), "guard() needs the tools the app gave"),
        (lambda: guard(Source([]), None, profile="openai"), "guard() needs the tools the app"),
        (lambda: guard(object(), []), "guard() cannot read a builtins.object: give it the"),
        (lambda: guard(iter([]), []), "guard() cannot read a builtins.list_iterator: give"),
        (lambda: guard(Source([]), [], profile="nope"), "unknown profile 'nope'; known: "),
        (lambda: guard(Source([]), ["x"], profile="openai"), "tools[0]: a tool is a dict or"),
        (
            lambda: guard(Source([]), [], profile="openai", on_error="maybe"),
            "on_error 'maybe' is not one of block, pass",
        ),
        # named before the stream is looked at: a helper manager's gate is made only when the
        # manager opens, so the setting is checked first
        (
            lambda: guard(object(), [], on_error="maybe"),
            "on_error 'maybe' is not one of block, pass",
        ),
    ],
)
def test_misuse_is_a_one_line_usage_error(call: Any, line: str) -> None:
    with pytest.raises(UsageError) as raised:
        call()
    assert str(raised.value).startswith(line) and "\n" not in str(raised.value)


def test_leaving_an_async_loop_early_closes_the_async_generator() -> None:
    document = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    closed: list[bool] = []

    async def events() -> AsyncIterator[Any]:
        try:
            for event in events_of(document):
                yield event
        finally:
            closed.append(True)

    async def run() -> None:
        async with guard(events(), document["tool_schemas"], profile="openai") as guarded:
            async for _ in guarded:
                break
        assert closed == [True]  # at the block's end, not when the event loop shuts down

    asyncio.run(run())


def test_an_async_iterable_is_guarded_the_same_way() -> None:
    async def events(document: dict[str, Any]) -> AsyncIterator[Any]:
        for event in events_of(document):
            yield event

    async def run(document: dict[str, Any]) -> tuple[int, object]:
        guarded = guard(events(document), document["tool_schemas"], profile=document["profile"])
        count = 0
        try:
            async for _ in guarded:
                count += 1
        except Blocked as blocked:
            return count, blocked.report.blocking_codes
        return count, guarded.calls

    document = load(CONFORMANCE / "anthropic" / "valid_text_then_two_tools.json")
    assert asyncio.run(run(document)) == (len(events_of(document)), check(document).calls)
    reused = mutate(document, "reuse_slot")
    assert "identity_collision" in reused["expect"]["codes"]
    assert asyncio.run(run(reused)) == (first_terminal(reused), reused["expect"]["codes"])


def test_the_gate_keeps_what_it_holds_and_gives_it_back_on_a_pass() -> None:
    document = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    gate: Gate[int] = Gate("openai", document["tool_schemas"])
    went = []
    for number, event in enumerate(events_of(document)):
        gate.read(event)
        if gate.pass_on(number):
            went.append(number)
    assert went == list(range(first_terminal(document)))
    assert gate.judge() == list(range(first_terminal(document), len(events_of(document))))
    assert gate.judge() == []  # nothing twice


def test_a_blocked_turn_keeps_nothing_any_later_call_could_hand_on() -> None:
    document = load(CONFORMANCE / "openai" / "reused_index_new_id.json")
    gate: Gate[int] = Gate("openai", document["tool_schemas"])
    for number, event in enumerate(events_of(document)):
        gate.read(event)
        gate.pass_on(number)
    with pytest.raises(Blocked):
        gate.judge()
    assert gate.unjudged() == []  # what the blocked turn held is gone, not handed on


def test_an_item_the_guard_cannot_read_fails_closed_unless_on_error_passes_it() -> None:
    """An iterable given with a profile whose third item is no event: under ``"block"`` the app
    sees the two before it and ``Unjudged``; under ``"pass"`` every item, the turn unjudged."""
    document = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    odd = object()
    items = [*events_of(document)[:2], odd, *events_of(document)[2:]]
    seen: list[object] = []
    guarded = guard(Source(items), document["tool_schemas"], profile="openai")
    with pytest.raises(callgate.Unjudged, match=r"^callgate could not judge this turn \(TypeError"):
        for item in guarded:
            seen.append(item)
    assert seen == items[:2]
    guarded = guard(Source(items), document["tool_schemas"], profile="openai", on_error="pass")
    assert list(guarded) == items
    with pytest.raises(callgate.Unjudged):
        _ = guarded.calls


def test_an_unread_item_blocks_the_turn_unless_on_error_passes_it() -> None:
    document = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    faults: list[BaseException] = []
    for on_error in ("block", "pass"):
        gate: Gate[int] = Gate(
            "openai", document["tool_schemas"], on_error=on_error, on_unjudged=faults.append
        )
        events = events_of(document)
        for number, event in enumerate(events[:-1]):
            gate.read(event)
            assert gate.pass_on(number) == (number < first_terminal(document))
        gate.hold()
        assert not gate.pass_on(len(events) - 1)
        if on_error == "block":
            with pytest.raises(Blocked):
                gate.judge()
            assert faults == []
        else:  # the held rest goes on, once, counted once
            assert gate.judge() == list(range(first_terminal(document), len(events)))
            assert gate.judge() == []
            assert [type(fault).__name__ for fault in faults] == ["UnreadItem"]


def test_without_on_error_a_failure_of_callgates_own_reaches_the_caller() -> None:
    """The gateway's rule: the gate lets the failure through, and the gateway decides."""
    gate: Gate[int] = Gate("openai", {})
    with pytest.raises(TypeError, match=r"^Reassembler.feed\(\) takes one event"):
        gate.read(object())
    with pytest.raises(UsageError, match=r"^on_error 'maybe' is not one of block, pass$"):
        Gate("openai", {}, on_error="maybe")


def test_the_gate_holds_an_sdks_models_where_it_holds_their_events() -> None:
    document = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    gate: Gate[int] = Gate("openai", document["tool_schemas"])
    went = []
    for number, event in enumerate(events_of(document)):
        gate.read(Dumps(event))
        if gate.pass_on(number):
            went.append(number)
    assert went == list(range(first_terminal(document)))
    assert gate.judge() == list(range(first_terminal(document), len(events_of(document))))
