"""The ``openai-realtime`` profile: each response of a session is a choice of its own, so calls
of two responses in flight on one socket are never merged, and each response's end decides its
own calls. The conformance fixtures pin every verdict; these tests pin where the findings land."""

from __future__ import annotations

import copy

from callgate.reassemble import Code, Status, check
from callgate.reassemble.profiles import PROFILES
from callgate.redact import redact_envelope
from tests.conftest import CONFORMANCE, load

REALTIME = CONFORMANCE / "openai-realtime"


def test_two_responses_at_one_output_index_are_two_calls_each_of_its_own_response() -> None:
    report = check(load(REALTIME / "valid_interleaved_responses.json"))
    assert report.status is Status.PASS
    assert [(c.choice, c.slot, c.id, c.name) for c in report.calls] == [
        (0, 0, "call_7hD2kLq9", "get_weather"),
        (1, 0, "call_2mW8pVz4", "book_flight"),
    ]


def test_a_cancelled_response_blocks_its_own_call_and_leaves_the_other_responses_call_whole() -> (
    None
):
    report = check(load(REALTIME / "interleaved_one_cancelled.json"))
    assert report.status is Status.FAIL
    assert {(f.code, f.choice) for f in report.findings if f.blocking} == {
        (Code.INVALID_ARGUMENTS_JSON, 0),
        (Code.WRONG_TERMINAL_REASON, 0),
    }
    assert [(c.choice, c.state.value, c.arguments) for c in report.calls] == [
        (0, "blocked", '{"city":"Pa'),
        (1, "validated", '{"to":"Oslo","date":"2026-12-24"}'),
    ]


def test_the_cancelled_status_is_named_in_the_finding() -> None:
    report = check(load(REALTIME / "cancelled_after_arguments.json"))
    [finding] = [f for f in report.findings if f.blocking]
    assert (finding.code, finding.choice, finding.path) == (
        Code.WRONG_TERMINAL_REASON,
        0,
        "/events/10/response/status",
    )
    assert "'cancelled'" in finding.message


def test_the_same_call_id_in_a_second_response_is_a_duplicate() -> None:
    """A call repeated under a new response after a cancel, with its old id: two calls that
    say they are one."""
    envelope = load(REALTIME / "valid_interleaved_responses.json")
    for event in envelope["events"]:
        for holder in (event, event.get("item") or {}):
            if holder.get("call_id") == "call_2mW8pVz4":
                holder["call_id"] = "call_7hD2kLq9"
        for item in (event.get("response") or {}).get("output") or []:
            if item.get("call_id") == "call_2mW8pVz4":
                item["call_id"] = "call_7hD2kLq9"
    report = check(envelope)
    assert [(f.code, f.choice) for f in report.findings if f.blocking] == [
        (Code.DUPLICATE_CALL_ID, 1)
    ]


def test_redaction_masks_every_copy_of_a_call_alike_the_conversations_included() -> None:
    """The conversation's copy of a call item names only the item: it is masked as the copies
    of the response's events that place the item are."""
    envelope = load(REALTIME / "valid_parallel_calls.json")
    redacted = redact_envelope(copy.deepcopy(envelope)).envelope
    calls = check(redacted).calls
    assert check(redacted).status is Status.PASS
    assert [c.arguments for c in calls] != [c.arguments for c in check(envelope).calls]
    copies: dict[str, set[str]] = {}
    for event in redacted["events"]:
        item = event.get("item") or {}
        if item.get("type") == "function_call" and item.get("arguments"):
            copies.setdefault(item["call_id"], set()).add(item["arguments"])
    assert copies == {call.id: {call.arguments} for call in calls}


def test_the_profile_streams_a_websocket_session_not_an_http_body() -> None:
    profile = PROFILES["openai-realtime"]
    assert profile.over_websocket
    assert not any(p.over_websocket for name, p in PROFILES.items() if name != "openai-realtime")
