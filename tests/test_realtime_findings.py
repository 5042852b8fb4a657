"""Where the ``openai-realtime`` profile's findings land and what they quote: each event built by
hand, fed to the engine one by one. A finding about an output item names its response (the
choice, numbered as first seen) and the item's ``output_index`` (the slot); the items here sit at
index 1 so that the two can be told apart. Quoted values are clipped: ids at 64 characters, types
at 40, an unknown event's type at 60."""

from __future__ import annotations

from typing import Any

import pytest

from callgate.reassemble import Code, Reassembler
from callgate.reassemble.profiles import PROFILES
from callgate.reassemble.profiles.openai_realtime import cancelled, cut_short

RESPONSE = "resp_1"
CALL = {"type": "function_call", "id": "item_1", "call_id": "call_1", "name": "f"}


def added(item: dict[str, Any], index: int = 1) -> dict[str, Any]:
    return {
        "type": "response.output_item.added",
        "response_id": RESPONSE,
        "output_index": index,
        "item": item,
    }


def item_done(item: dict[str, Any], index: int = 1) -> dict[str, Any]:
    return {**added(item, index), "type": "response.output_item.done"}


def delta(text: object, index: int | None = 1, **names: object) -> dict[str, Any]:
    event = {"type": "response.function_call_arguments.delta", "response_id": RESPONSE}
    if index is not None:
        event["output_index"] = index
    return {**event, **names, "delta": text}


def response_done(status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "type": "response.done",
        "response": {"id": RESPONSE, "status": status, "output": output},
    }


def findings(events: list[Any]) -> list[tuple[str, str, int | None, int | None, str]]:
    """Each finding but ``unknown_tool`` (no tools are given): code, message, choice, slot,
    pointer."""
    engine = Reassembler("openai-realtime", {})
    found = [f for event in events for f in engine.feed(event)]
    return [
        (f.code.value, f.message, f.choice, f.slot, f.path)
        for f in found
        if f.code is not Code.UNKNOWN_TOOL
    ]


LONG_TYPE, OTHER_TYPE = "x" * 60, "y" * 60

CASES: dict[str, tuple[list[Any], list[tuple[str, str, int | None, int | None, str]]]] = {
    "arguments for an item of an unknown type": (
        [added({"type": LONG_TYPE, "id": "item_1"}), delta("{")],
        [
            (
                "unsupported_event",
                f"output item type {'x' * 40!r} is not known; it could be a call",
                0,
                1,
                "/events/0/item/type",
            ),
            (
                "unsupported_event",
                f"function call arguments for a {'x' * 40!r} item",
                0,
                1,
                "/events/1/type",
            ),
        ],
    ),
    "a delta that is not text": (
        [added(CALL), delta(5)],
        [("unsupported_event", "delta is not a string", 0, 1, "/events/1/delta")],
    ),
    "an item done with another id and call_id: one collision": (
        [added(CALL), item_done({**CALL, "id": "i" * 70, "call_id": "other"})],
        [
            (
                "identity_collision",
                f"output item 1 of response 0 was added with id 'item_1'; a later copy says "
                f"{'i' * 64!r}",
                0,
                1,
                "/events/1/item/id",
            )
        ],
    ),
    "an item added with a long id, restated with another": (
        [added({**CALL, "id": "a" * 70}), item_done({**CALL, "id": "b" * 70})],
        [
            (
                "identity_collision",
                f"output item 1 of response 0 was added with id {'a' * 64!r}; a later copy says "
                f"{'b' * 64!r}",
                0,
                1,
                "/events/1/item/id",
            )
        ],
    ),
    "a call done as another type": (
        [added(CALL), item_done({"type": OTHER_TYPE, "id": "item_1"})],
        [
            (
                "identity_collision",
                f"output item 1 was added as 'function_call'; a later copy says it is {'y' * 40!r}",
                0,
                1,
                "/events/1/item/type",
            )
        ],
    ),
    "an item of an unknown type done as a call": (
        [added({"type": LONG_TYPE, "id": "item_1"}), item_done(CALL)],
        [
            (
                "unsupported_event",
                f"output item type {'x' * 40!r} is not known; it could be a call",
                0,
                1,
                "/events/0/item/type",
            ),
            (
                "identity_collision",
                f"output item 1 was added as {'x' * 40!r}; a later copy says it is 'function_call'",
                0,
                1,
                "/events/1/item/type",
            ),
        ],
    ),
    "a message listed as a call in response.done": (
        [
            added({"type": "message", "id": "item_1"}),
            response_done("completed", [{}, {**CALL, "arguments": "{}"}]),
        ],
        [
            (
                "identity_collision",
                "output item 1 was added as 'message'; a later copy says it is 'function_call'",
                0,
                1,
                "/events/1/response/output/1/type",
            )
        ],
    ),
    "an item done restating other arguments": (
        [added(CALL), delta('{"a": 1}'), item_done({**CALL, "arguments": '{"a": 2}'})],
        [
            (
                "argument_mismatch",
                "a stated copy of the arguments differs from the streamed arguments",
                0,
                1,
                "/events/2/item/arguments",
            )
        ],
    ),
    "a response id that is not text": (
        [{"type": "response.created", "response": {"id": 10**80}}],
        [
            (
                "invalid_slot",
                f"response id {str(10**80)[:64]!r} is not a string",
                None,
                None,
                "/events/0/response/id",
            )
        ],
    ),
    "a streamed call left out of response.done's output": (
        [
            added({**CALL, "call_id": "c" * 70}),
            delta("{}"),
            response_done("completed", []),
        ],
        [
            (
                "argument_mismatch",
                "response.done's output has no function_call at output_index 1, which the "
                f"stream gave ({'c' * 64!r})",
                0,
                1,
                "/events/2/response/output",
            )
        ],
    ),
    "an argument event naming an item id no item has": (
        [added(CALL), delta("{", index=None, item_id="i" * 70)],
        [
            (
                "invalid_slot",
                f"no output item for output_index None / item_id {'i' * 64!r}",
                None,
                None,
                "/events/1/output_index",
            )
        ],
    ),
    "an unknown event type": (
        [{"type": "t" * 80}],
        [
            (
                "unsupported_event",
                f"event type {'t' * 60!r} is not known",
                None,
                None,
                "/events/0/type",
            )
        ],
    ),
    "an unknown event at an output index that cannot be one": (
        [added(CALL), {"type": "response.sparkle", "response_id": RESPONSE, "output_index": []}],
        [
            (
                "unsupported_event",
                "event type 'response.sparkle' is not known",
                None,
                None,
                "/events/1/type",
            )
        ],
    ),
    "an item that is not an object": (
        [added("x")],  # type: ignore[arg-type]
        [("unsupported_event", "output item has no type", 0, 1, "/events/0/item")],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_realtime_finding_lands_on_its_response_and_item_and_clips_what_it_quotes(
    case: str,
) -> None:
    events, expected = CASES[case]
    assert findings(events) == expected


def test_a_cancelled_response_does_not_compare_its_output_with_the_stream() -> None:
    """Only a completed ``response.done``'s output is the response as the server keeps it."""
    events = [
        added(CALL),
        delta('{"a": 1}'),
        response_done("cancelled", [{**CALL, "arguments": '{"a": 2}'}]),
    ]
    assert findings(events) == [
        (
            "wrong_terminal_reason",
            "the turn made tool calls but ended with 'cancelled', not 'completed'",
            0,
            None,
            "/events/2/response/status",
        )
    ]


def test_an_argument_event_named_by_item_id_alone_finds_its_item_among_others() -> None:
    """Two calls in one response; the second's arguments name it by ``item_id`` only."""
    second = {**CALL, "id": "item_2", "call_id": "call_2"}
    events = [
        added(CALL, index=0),
        added(second, index=1),
        delta("{}", index=0),
        delta('{"b": 2}', index=None, item_id="item_2"),
        item_done({**CALL, "arguments": "{}"}, index=0),
        item_done({**second, "arguments": '{"b": 2}'}, index=1),
    ]
    assert findings(events) == []


@pytest.mark.parametrize("ending", [cut_short, cancelled])
def test_ending_a_response_otherwise_reads_only_a_completed_response_done(ending: Any) -> None:
    assert ending("x") is None
    assert ending({"type": "response.done", "response": "x"}) is None
    assert ending({"type": "response.created", "response": {"status": "completed"}}) is None


def test_the_sites_of_arguments_and_audio_pass_over_events_that_are_not_objects() -> None:
    profile = PROFILES["openai-realtime"]
    events: list[Any] = [
        "not an event",
        added({**CALL, "arguments": "{}"}),
        {"type": "conversation.item.created", "item": {"id": "item_1", "arguments": "{}"}},
        {"type": "response.output_audio.delta", "delta": "AAAA"},
    ]
    sites = [(kind, key) for kind, key, _, _ in profile.argument_sites(events)]
    # the conversation's copy is keyed by its item's place in the response that added it
    assert sites == [("copy", (RESPONSE, 1)), ("copy", (RESPONSE, 1))]
    assert profile.media_sites is not None
    assert [field for _, field in profile.media_sites(events)] == ["delta"]
