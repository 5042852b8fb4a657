"""The OpenAI Responses profile's translator: sequence numbers, item identity, stated copies."""

from __future__ import annotations

from typing import Any

import pytest

from callgate.reassemble import Reassembler, Report, Severity, check
from callgate.reassemble.codes import Code
from callgate.reassemble.events import ArgumentsStated, Problem, SlotDelta, SlotEnded, SlotStarted
from callgate.reassemble.profiles import PROFILES
from callgate.reassemble.profiles.openai_responses import ResponsesTranslator
from tests.conftest import CONFORMANCE, load

SCHEMAS = {
    "get_weather": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    }
}


def added(
    index: int = 0, item_id: str = "fc_1", call_id: str = "call_1", name: str = "get_weather"
) -> dict[str, Any]:
    return {
        "type": "response.output_item.added",
        "output_index": index,
        "item": {
            "id": item_id,
            "type": "function_call",
            "status": "in_progress",
            "arguments": "",
            "call_id": call_id,
            "name": name,
        },
    }


def delta(text: str, index: int = 0, item_id: str = "fc_1") -> dict[str, Any]:
    return {
        "type": "response.function_call_arguments.delta",
        "delta": text,
        "item_id": item_id,
        "output_index": index,
    }


def arguments_done(text: str, index: int = 0, item_id: str = "fc_1") -> dict[str, Any]:
    return {
        "type": "response.function_call_arguments.done",
        "arguments": text,
        "item_id": item_id,
        "output_index": index,
    }


def item_done(
    text: str,
    index: int = 0,
    item_id: str = "fc_1",
    call_id: str = "call_1",
    status: str = "completed",
) -> dict[str, Any]:
    return {
        "type": "response.output_item.done",
        "output_index": index,
        "item": {
            "id": item_id,
            "type": "function_call",
            "status": status,
            "arguments": text,
            "call_id": call_id,
            "name": "get_weather",
        },
    }


def completed(*items: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "response.completed",
        "response": {"status": "completed", "output": [i["item"] for i in items]},
    }


def numbered(events: list[dict[str, Any]], numbers: list[int]) -> list[dict[str, Any]]:
    return [dict(event, sequence_number=n) for event, n in zip(events, numbers, strict=True)]


def run(events: list[dict[str, Any]], provider: str | None = None) -> Report:
    reassembler = Reassembler("openai-responses", SCHEMAS, provider=provider)
    for event in events:
        reassembler.feed(event)
    return reassembler.close()


def one_call(text: str = '{"city":"Oslo"}') -> list[dict[str, Any]]:
    done = item_done(text)
    return [added(), delta(text), arguments_done(text), done, completed(done)]


# -- sequence_number --------------------------------------------------------------------------


def test_consecutive_sequence_numbers_pass() -> None:
    assert run(numbered(one_call(), [7, 8, 9, 10, 11])).status.value == "pass"


def test_a_skipped_sequence_number_is_an_event_gap() -> None:
    report = run(numbered(one_call(), [0, 1, 3, 4, 5]))
    assert report.blocking_codes == ["event_gap"]
    assert "skipped 1: 1 then 3" in report.findings[0].message
    assert report.findings[0].path == "/events/2/sequence_number"


def test_a_sequence_number_that_goes_back_is_an_event_gap() -> None:
    report = run(numbered(one_call(), [0, 1, 2, 1, 2]))
    assert [f.code for f in report.findings] == [Code.EVENT_GAP]
    assert "went back: 2 then 1" in report.findings[0].message


def test_a_repeated_sequence_number_is_an_event_gap() -> None:
    report = run(numbered(one_call(), [0, 1, 1, 2, 3]))
    assert report.blocking_codes == ["event_gap"]
    assert report.findings[0].message == "sequence_number went back: 1 then 1"


def test_an_unknown_event_about_an_item_known_to_be_no_call_cannot_be_a_call() -> None:
    """Only an unknown event about a text or reasoning item is known to carry no call; one
    about a call's item, or about no item, could."""
    translator = ResponsesTranslator(frozenset())
    for index, item in enumerate(
        [
            {"id": "msg_1", "type": "message", "role": "assistant", "content": []},
            added(index=1)["item"],
        ]
    ):
        translator.translate(
            {"type": "response.output_item.added", "output_index": index, "item": item}
        )
    found = [
        translator.translate({"type": "response.x_unknown", "output_index": index})[0]
        for index in (0, 1, 5)
    ]
    assert [(p.code, p.could_be_call) for p in found] == [  # type: ignore[union-attr]
        (Code.UNSUPPORTED_EVENT, False),
        (Code.UNSUPPORTED_EVENT, None),
        (Code.UNSUPPORTED_EVENT, None),
    ]


def test_a_stream_without_sequence_numbers_is_not_checked() -> None:
    assert run(one_call()).status.value == "pass"


def test_numbering_that_stops_midway_is_one_event_gap() -> None:
    events = numbered(one_call(), [0, 1, 2, 3, 4])
    del events[3]["sequence_number"], events[4]["sequence_number"]
    report = run(events)
    assert [(f.code, f.message) for f in report.findings] == [
        (Code.EVENT_GAP, "an event without sequence_number follows number 2")
    ]


def test_after_a_non_integer_sequence_number_counting_starts_afresh() -> None:
    events = numbered(one_call(), [0, 1, 2, 3, 4])
    events[1]["sequence_number"] = "1"
    events[2]["sequence_number"] = 7  # compared with nothing: the count restarts here
    report = run(events)
    assert [(f.code, f.message) for f in report.findings] == [
        (Code.EVENT_GAP, "sequence_number '1' is not an integer"),
        (Code.EVENT_GAP, "sequence_number went back: 7 then 3"),
    ]


def test_a_non_integer_sequence_number_is_an_event_gap() -> None:
    translator = ResponsesTranslator(frozenset())
    events = translator.translate(dict(added(), sequence_number="3"))
    assert isinstance(events[0], Problem) and events[0].code is Code.EVENT_GAP


# -- item identity ----------------------------------------------------------------------------


def rotated() -> list[dict[str, Any]]:
    text = '{"city":"Oslo"}'
    done = item_done(text, item_id="capture-id-4")
    return [
        added(item_id="capture-id-1"),
        delta(text[:5], item_id="capture-id-2"),
        delta(text[5:], item_id="capture-id-3"),
        done,
        completed(item_done(text, item_id="capture-id-5")),
    ]


def test_rotating_item_ids_are_tolerated_once_for_github_copilot() -> None:
    report = run(rotated(), provider="github-copilot")
    assert report.status.value == "pass"
    assert [(f.code, f.severity, f.quirk, f.choice, f.slot) for f in report.findings] == [
        (Code.IDENTITY_COLLISION, Severity.TOLERATED, "rotating_item_id", 0, 0)
    ]
    assert report.calls[0].id == "call_1"


def test_an_entry_of_the_final_output_that_is_no_object_is_no_call() -> None:
    done = item_done('{"city":"Oslo"}')
    final = completed(done)
    final["response"]["output"].append("junk")
    assert run([*one_call()[:4], final]).status.value == "pass"


def test_an_argument_delta_that_is_not_text_is_placed_at_its_call() -> None:
    events = one_call()
    events[1]["delta"] = 5
    assert [(f.code, f.message, f.path, f.choice, f.slot) for f in run(events).findings] == [
        (Code.UNSUPPORTED_EVENT, "delta is not a string", "/events/1/delta", 0, 0)
    ]


def test_rotating_item_ids_collide_once_per_item_without_the_quirk() -> None:
    report = run(rotated())
    assert [(f.code, f.severity) for f in report.findings] == [
        (Code.IDENTITY_COLLISION, Severity.BLOCKING)
    ]
    assert report.status.value == "fail"


def test_an_item_id_in_a_collision_message_is_clipped_at_64_characters() -> None:
    first, second = "fc_" + "a" * 70, "fc_" + "b" * 70
    text = '{"city":"Oslo"}'
    done = item_done(text, item_id=first)
    report = run([added(item_id=first), delta(text, item_id=second), done, completed(done)])
    assert [f.message for f in report.findings] == [
        f"output item 0 has id {first[:64]!r}; a later event says {second[:64]!r}"
    ]


def test_a_call_id_in_a_collision_message_is_clipped_at_64_characters() -> None:
    first, second = "call_" + "a" * 70, "call_" + "b" * 70
    text = '{"city":"Oslo"}'
    done = item_done(text, call_id=second)
    events = [added(call_id=first), delta(text), arguments_done(text), done, completed(done)]
    collisions = [f for f in run(events).findings if f.code is Code.IDENTITY_COLLISION]
    assert [f.message for f in collisions] == [
        f"output item 0 was added with call_id {first[:64]!r}; a later copy says {second[:64]!r}"
    ]


def test_a_changed_call_id_collides_even_with_the_rotation_quirk() -> None:
    events = rotated()
    events[3] = item_done('{"city":"Oslo"}', item_id="capture-id-4", call_id="call_2")
    assert run(events, provider="github-copilot").blocking_codes == ["identity_collision"]


def test_a_delta_without_output_index_is_placed_by_its_item_id() -> None:
    translator = ResponsesTranslator(frozenset())
    translator.translate(added(index=2, item_id="fc_9"))
    piece = delta('{"', index=2, item_id="fc_9")
    del piece["output_index"]
    assert translator.translate(piece) == [SlotDelta((0, 2), "/delta", arguments='{"')]


def test_arguments_for_a_non_call_item_are_unsupported() -> None:
    translator = ResponsesTranslator(frozenset())
    translator.translate(
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"id": "rs_1", "type": "reasoning", "summary": []},
        }
    )
    events = translator.translate(delta('{"', item_id="rs_1"))
    assert isinstance(events[0], Problem) and events[0].code is Code.UNSUPPORTED_EVENT


# -- stated copies of the arguments -----------------------------------------------------------


def test_a_call_without_deltas_adopts_the_done_text() -> None:
    text = '{"city":"Oslo"}'
    done = item_done(text)
    report = run([added(), arguments_done(text), done, completed(done)])
    assert report.status.value == "pass"
    assert report.calls[0].arguments == text


def test_a_call_with_only_output_item_done_adopts_its_arguments() -> None:
    text = '{"city":"Oslo"}'
    done = item_done(text)
    report = run([added(), done, completed(done)])
    assert (report.status.value, report.calls[0].arguments) == ("pass", text)


def test_a_later_copy_that_differs_from_the_adopted_text_is_a_mismatch() -> None:
    done = item_done('{"city":"Bergen"}')
    report = run([added(), arguments_done('{"city":"Oslo"}'), done, completed(done)])
    assert report.blocking_codes == ["argument_mismatch"]


def test_output_item_done_states_the_copy_before_it_ends_the_slot() -> None:
    translator = ResponsesTranslator(frozenset())
    translator.translate(added())
    events = translator.translate(item_done("{}"))
    assert events == [ArgumentsStated((0, 0), "/item/arguments", "{}"), SlotEnded((0, 0), "")]


def test_an_item_done_with_a_status_other_than_completed_blocks() -> None:
    text = '{"city":"Oslo"}'
    done = item_done(text, status="incomplete")
    report = run([added(), delta(text), done, completed(done)])
    assert report.blocking_codes == ["wrong_terminal_reason"]


# -- items and events this profile does not execute ------------------------------------------


def test_a_custom_tool_call_is_a_free_form_call_whose_item_restates_its_input() -> None:
    translator = ResponsesTranslator(frozenset())
    item = {"id": "ctc_1", "type": "custom_tool_call", "call_id": "call_c", "name": "shell"}
    added = translator.translate(
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "input": ""}}
    )
    assert added == [SlotStarted((0, 0), "/item", call_id="call_c", name="shell", freeform=True)]
    done = translator.translate(
        {"type": "response.output_item.done", "output_index": 0, "item": {**item, "input": "ls"}}
    )
    # No status on the item (openai-python's ResponseCustomToolCall has none): no finding.
    assert done == [ArgumentsStated((0, 0), "/item/input", "ls"), SlotEnded((0, 0), "")]


def test_reasoning_items_are_slots_but_not_calls() -> None:
    translator = ResponsesTranslator(frozenset())
    events = translator.translate(
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"id": "rs_1", "type": "reasoning"},
        }
    )
    assert events == [SlotStarted((0, 0), "/item", is_call=False)]


def test_a_flat_error_event_is_a_stream_error() -> None:
    translator = ResponsesTranslator(frozenset())
    events = translator.translate(
        {"type": "error", "code": "rate_limit_exceeded", "message": "Slow down", "param": None}
    )
    assert isinstance(events[0], Problem) and events[0].code is Code.STREAM_ERROR
    assert "Slow down" in events[0].message


def test_a_text_only_turn_is_not_applicable() -> None:
    report = run(
        [
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {"id": "msg_1", "type": "message", "content": []},
            },
            {
                "type": "response.output_text.delta",
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "delta": "Hi",
            },
            {"type": "response.completed", "response": {"output": []}},
        ]
    )
    assert (report.status.value, report.findings) == ("not_applicable", ())


# -- where findings land, and what their messages keep --------------------------------------------


def test_identity_findings_name_the_choice_and_slot_of_their_item() -> None:
    rotated_once = rotated()
    changed_call = one_call()
    changed_call[3] = item_done('{"city":"Oslo"}', call_id="call_2")
    for events in (rotated_once, changed_call):
        findings = [f for f in run(events).findings if f.blocking]
        assert [(f.code, f.choice, f.slot) for f in findings] == [(Code.IDENTITY_COLLISION, 0, 0)]


def test_a_streamed_call_missing_from_the_final_output_names_it_by_call_id() -> None:
    text = '{"city":"Oslo"}'
    events = [added(), delta(text), arguments_done(text), item_done(text), completed()]
    [finding] = [f for f in run(events).findings if f.code is Code.ARGUMENT_MISMATCH]
    assert (finding.choice, finding.slot, finding.message) == (
        0,
        0,
        "response.completed's output has no function_call at output_index 0, which the "
        "stream gave ('call_1')",
    )


def test_long_names_in_messages_are_clipped_where_they_are_quoted() -> None:
    translator = ResponsesTranslator(frozenset())
    [unknown] = translator.translate({"type": "response." + "x" * 100})
    assert isinstance(unknown, Problem)
    assert unknown.message == f"event type {('response.' + 'x' * 100)[:60]!r} is not known"
    translator.translate(
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"id": "rs_1", "type": "r" * 100},
        }
    )
    [wrong] = translator.translate(delta('{"', item_id="rs_1"))
    assert isinstance(wrong, Problem)
    assert (wrong.message, wrong.choice, wrong.slot) == (
        f"function_call input for a {'r' * 40!r} item",
        0,
        0,
    )
    [error] = translator.translate({"type": "error", "error": {"message": "e" * 300}})
    assert error.message == "provider sent an error: " + "e" * 200  # type: ignore[union-attr]


def test_an_item_type_in_a_collision_message_is_clipped_at_40_characters() -> None:
    kind = "message_" + "x" * 50
    text_item = {
        "type": "response.output_item.added",
        "output_index": 0,
        "item": {"id": "msg_1", "type": kind, "role": "assistant", "content": []},
    }
    report = run([text_item, completed(item_done('{"city":"Oslo"}'))])
    assert f"was added as {kind[:40]!r}; a later copy" in next(
        f.message for f in report.findings if f.code is Code.IDENTITY_COLLISION
    )
    done = item_done('{"city":"Oslo"}')
    later = dict(done, item=dict(done["item"], type=kind))
    report = run([*one_call()[:3], later, completed(done)])
    collision = next(f for f in report.findings if f.code is Code.IDENTITY_COLLISION)
    assert f"a later copy says it is {kind[:40]!r}" in collision.message
    assert (collision.choice, collision.slot) == (0, 0)


@pytest.mark.parametrize(
    ("kind", "status", "message"),
    [
        (
            "custom_tool_call",
            "incomplete",
            "the custom_tool_call item ended with status 'incomplete'",
        ),
        ("function_call", None, "the function_call item ended with status 'None'"),
    ],
)
def test_a_call_item_that_ends_other_than_completed_is_a_wrong_terminal_reason(
    kind: str, status: str | None, message: str
) -> None:
    """Only a custom tool's item may leave its status out; any item that states one must say
    ``completed``."""
    source = "custom_tool_call_text_valid" if kind == "custom_tool_call" else "valid_single_call"
    document = load(CONFORMANCE / "openai-responses" / f"{source}.json")
    done = next(e for e in document["events"] if e["type"] == "response.output_item.done")
    if status is None:
        del done["item"]["status"]
    else:
        done["item"]["status"] = status
    wrong = [f for f in check(document).findings if f.code is Code.WRONG_TERMINAL_REASON]
    at = document["events"].index(done)
    assert [(f.message, f.path, f.choice, f.slot) for f in wrong][:1] == [
        (f"{message}, not 'completed'", f"/events/{at}/item/status", 0, 0)
    ]


def test_a_final_output_that_makes_a_text_item_a_call_is_an_identity_collision() -> None:
    text_item = {
        "type": "response.output_item.added",
        "output_index": 0,
        "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": []},
    }
    report = run([text_item, completed(item_done('{"city":"Oslo"}'))])
    collisions = [f for f in report.findings if f.code is Code.IDENTITY_COLLISION]
    assert [(f.path, f.message) for f in collisions] == [
        (
            "/events/1/response/output/0/type",
            "output item 0 was added as 'message'; a later copy says it is 'function_call'",
        )
    ]


def test_cut_short_makes_incomplete_of_a_completed_response_only() -> None:
    cut_short = PROFILES["openai-responses"].cut_short
    assert cut_short is not None
    completed = {"type": "response.completed", "response": {"status": "completed"}}
    assert cut_short(completed) == {
        "type": "response.incomplete",
        "response": {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}},
    }
    assert completed["type"] == "response.completed"  # a copy: the event is left as it was
    for other in ({"type": "response.created", "response": {}}, {"type": "error"}, "text", None):
        assert cut_short(other) is None


def test_long_values_in_findings_are_clipped_where_they_are_quoted() -> None:
    translator = ResponsesTranslator(frozenset())
    [number] = translator.translate({"type": "response.created", "sequence_number": "9" * 60})
    assert isinstance(number, Problem)
    assert number.message == f"sequence_number {'9' * 40!r} is not an integer"
    kind = "k" * 60
    added_events = translator.translate(
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"id": "x_1", "type": kind},
        }
    )
    [unknown] = [e for e in added_events if isinstance(e, Problem)]
    assert unknown.message == f"output item type {kind[:40]!r} is not known; it could be a call"
    item_id = "fc_" + "z" * 80
    [lost] = ResponsesTranslator(frozenset()).translate(
        {"type": "response.function_call_arguments.delta", "item_id": item_id, "delta": "{"}
    )
    assert isinstance(lost, Problem)
    assert lost.message == f"no output item for output_index None / item_id {item_id[:64]!r}"
