"""The WebSocket session profiles. ``openai-realtime``: each response of a session is a choice
of its own, so calls of two responses in flight on one socket are never merged, and each
response's end decides its own calls. ``gemini-live``: each toolCall is a choice, and a call the
server withdraws fails the request that held it. The conformance fixtures pin every verdict;
these tests pin where the findings land."""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
from typing import Any

import pytest

from callgate.reassemble import Code, Status, check
from callgate.reassemble.errors import UsageError
from callgate.reassemble.framing import WEBSOCKET
from callgate.reassemble.gate import Blocked, Unjudged
from callgate.reassemble.mutations import mutate
from callgate.reassemble.profiles import PROFILES, framed
from callgate.reassemble.sessions import SessionGate, response_of, session_parts
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


def test_the_session_profiles_stream_a_websocket_session_not_an_http_body() -> None:
    sessions = sorted(name for name, profile in PROFILES.items() if profile.over_websocket)
    assert sessions == ["gemini-live", "openai-realtime"]


LIVE = CONFORMANCE / "gemini-live"


def test_a_withdrawn_call_fails_the_tool_call_that_held_it() -> None:
    report = check(load(LIVE / "withdrawn_call.json"))
    assert [(f.code, f.choice, f.slot, f.path) for f in report.findings if f.blocking] == [
        (Code.CALL_WITHDRAWN, 0, 1, "/events/3/toolCallCancellation/ids/0")
    ]
    assert [(c.slot, c.state.value) for c in report.calls] == [(0, "validated"), (1, "blocked")]


def test_the_same_call_in_a_second_tool_call_is_a_duplicate_of_the_first() -> None:
    report = check(load(LIVE / "same_call_twice.json"))
    assert [(f.code, f.choice, f.slot) for f in report.findings if f.blocking] == [
        (Code.DUPLICATE_CALL_ID, 1, 0)
    ]


def test_a_cancellation_is_redacted_with_the_pseudonyms_of_the_calls_it_names() -> None:
    redacted = redact_envelope(load(LIVE / "withdrawn_call.json")).envelope
    call_ids = [c["id"] for c in redacted["events"][1]["toolCall"]["functionCalls"]]
    assert redacted["events"][3]["toolCallCancellation"]["ids"] == [call_ids[1]]
    assert check(redacted).blocking_codes == ["call_withdrawn"]


def test_a_session_closed_by_the_server_with_an_error_is_a_provider_error() -> None:
    report = check(load(LIVE / "closed_with_error.json"))
    assert [(f.code, f.path) for f in report.findings if f.blocking] == [
        (Code.STREAM_ERROR, "/events/2/close")
    ]
    normal = load(LIVE / "valid_single_call.json")
    assert normal["events"][-1] == {"close": {"code": 1000, "reason": ""}}
    assert check(normal).status is Status.PASS


def test_cancel_ends_a_realtime_response_as_the_user_speaking_over_it_does() -> None:
    envelope = load(REALTIME / "valid_single_call.json")
    variant = mutate(envelope, "cancel")
    done = variant["events"][-2]
    assert (done["type"], done["response"]["status"], done["response"]["status_details"]) == (
        "response.done",
        "cancelled",
        {"type": "cancelled", "reason": "turn_detected"},
    )
    assert variant["expect"]["codes"] == ["wrong_terminal_reason"]
    assert [e for n, e in enumerate(variant["events"]) if n != len(envelope["events"]) - 2] == [
        e for n, e in enumerate(envelope["events"]) if n != len(envelope["events"]) - 2
    ]


def test_withdraw_follows_the_tool_call_with_a_cancellation_of_its_first_call() -> None:
    envelope = load(LIVE / "valid_parallel_calls.json")
    variant = mutate(envelope, "withdraw")
    first_id = envelope["events"][1]["toolCall"]["functionCalls"][0]["id"]
    assert variant["events"] == [
        *envelope["events"][:2],
        {"toolCallCancellation": {"ids": [first_id]}},
        *envelope["events"][2:],
    ]
    assert variant["expect"]["codes"] == ["call_withdrawn"]


def test_an_unknown_event_about_a_message_item_could_not_be_a_call() -> None:
    """An event type the API does not document, about an item known to be a message: the turn
    holds no call to block (``invalid``); about no known item, it could be one (``fail``)."""
    envelope = load(REALTIME / "text_only.json")
    unknown = {"type": "response.output_audio.marker", "response_id": "resp_CAm8Jp0qx2Lwz1"}
    about_message = copy.deepcopy(envelope)
    about_message["events"].insert(4, {**unknown, "output_index": 0})
    about_nothing = copy.deepcopy(envelope)
    about_nothing["events"].insert(4, {**unknown, "output_index": 5})
    for case, status in ((about_message, Status.INVALID), (about_nothing, Status.FAIL)):
        report = check(case)
        assert (report.status, report.blocking_codes) == (status, ["unsupported_event"])


def test_only_function_call_arguments_are_argument_sites() -> None:
    """Audio, transcripts and text stream in ``delta`` members too: none is a call's arguments."""
    envelope = load(REALTIME / "valid_audio_then_call.json")
    sites = PROFILES["openai-realtime"].argument_sites(envelope["events"])
    assert sorted({(kind, key, member) for kind, key, _, member in sites}) == [
        ("copy", ("resp_CAm8Jp0qx2Lwz1", 1), "arguments"),
        ("stream", ("resp_CAm8Jp0qx2Lwz1", 1), "delta"),
    ]


def test_a_gemini_live_call_is_an_argument_site_only_where_it_is_an_object_with_args() -> None:
    """A call without ``args``, or that is no object (even the text ``"args"``), has none."""
    calls = [{"id": "a", "name": "n"}, "args", {"id": "b", "name": "n", "args": {}}]
    sites = PROFILES["gemini-live"].argument_sites([{"toolCall": {"functionCalls": calls}}])
    assert [(kind, key, member) for kind, key, _, member in sites] == [("copy", (0, 2), "args")]


def test_an_argument_event_without_its_output_index_is_placed_by_its_item_id() -> None:
    envelope = load(REALTIME / "valid_interleaved_responses.json")
    for event in envelope["events"]:
        if event["type"].startswith("response.function_call_arguments."):
            del event["output_index"]
    report = check(envelope)
    assert (report.status, [(c.choice, c.slot) for c in report.calls]) == (
        Status.PASS,
        [(0, 0), (1, 0)],
    )


def test_the_error_event_enforce_mode_sends_names_the_first_code() -> None:
    assert PROFILES["openai-realtime"].error_body("blocked", ["missing_terminal", "x"]) == {
        "type": "error",
        "event_id": "event_callgate_blocked",
        "error": {"type": "callgate_blocked", "code": "missing_terminal", "message": "blocked"},
    }


def test_each_completed_model_turn_without_a_tool_call_is_a_choice_of_its_own() -> None:
    """Spoken, then a toolCall, then spoken, then a toolCall: the calls are choices 1 and 3."""
    envelope = load(LIVE / "valid_call_after_a_spoken_turn.json")
    events = envelope["events"]
    second = {"id": "function-call-2", "name": "get_weather", "args": {"city": "Oslo"}}
    envelope["events"] = [*events[:-1], {"toolCall": {"functionCalls": [second]}}, events[2]]
    report = check(envelope)
    assert (report.status, [(c.choice, c.id) for c in report.calls]) == (
        Status.PASS,
        [(1, "function-call-13457310911862935045"), (3, "function-call-2")],
    )


def test_args_nested_too_deeply_to_write_are_over_the_limit_at_their_place() -> None:
    args: dict[str, object] = {}
    for _ in range(5000):
        args = {"a": args}
    envelope = load(LIVE / "valid_single_call.json")
    envelope["events"][2]["toolCall"]["functionCalls"][0]["args"] = args
    report = check(envelope)
    assert [(f.code, f.path) for f in report.findings if f.blocking] == [
        (Code.LIMIT_EXCEEDED, "/events/2/toolCall/functionCalls/0/args")
    ]


def test_the_close_frame_enforce_mode_sends_is_an_internal_error_naming_the_codes() -> None:
    assert PROFILES["gemini-live"].error_body("blocked", ["missing_terminal", "x"]) == {
        "close": {"code": 1011, "reason": "callgate blocked: missing_terminal, x"}
    }
    # A close frame's reason holds at most 123 bytes (RFC 6455: 125 of payload, 2 of code).
    codes = ["missing_terminal"] * 10
    reason = PROFILES["gemini-live"].error_body("blocked", codes)["close"]["reason"]  # type: ignore[index]
    assert reason == f"callgate blocked: {', '.join(codes)}"[:123] and len(reason) == 123


def test_audio_is_never_written_only_its_length_and_digest() -> None:
    envelope = load(REALTIME / "valid_audio_then_call.json")
    audio = next(e for e in envelope["events"] if e["type"] == "response.output_audio.delta")
    spoken = copy.deepcopy(envelope["events"][2])  # a retrieved item holds the user's audio
    spoken.update(
        type="conversation.item.retrieved",
        item={"type": "message", "content": [{"type": "input_audio", "audio": "UklGRg=="}]},
    )
    envelope["events"].insert(3, spoken)
    redacted = redact_envelope(envelope).envelope
    digest = hashlib.sha256(audio["delta"].encode()).hexdigest()
    [stand_in] = [e["delta"] for e in redacted["events"] if e["type"] == audio["type"]]
    assert stand_in == f"[media omitted: {len(audio['delta'])} characters, sha256 {digest}]"
    assert redacted["events"][3]["item"]["content"][0]["audio"] == (
        f"[media omitted: 8 characters, sha256 {hashlib.sha256(b'UklGRg==').hexdigest()}]"
    )
    assert redact_envelope(redacted).envelope == redacted  # a stand-in stays as it is
    live = redact_envelope(load(LIVE / "valid_single_call.json")).envelope
    inline = live["events"][1]["serverContent"]["modelTurn"]["parts"][0]["inlineData"]
    sound = hashlib.sha256(b"AAABAAIAAwAEAA==").hexdigest()
    assert inline == {
        "mimeType": "audio/pcm;rate=24000",
        "data": f"[media omitted: 16 characters, sha256 {sound}]",
    }


def test_a_sessions_messages_are_not_framed_as_an_http_body() -> None:
    with pytest.raises(ValueError, match=r"^a WebSocket session's messages are not an HTTP body"):
        framed(load(REALTIME / "valid_single_call.json"), WEBSOCKET)


# -- a session judged response by response (callgate.reassemble.sessions) -----------------------


def session_verdicts(document: dict[str, Any], *, close: bool = True) -> list[tuple[str, list]]:
    """Each ``Blocked`` a ``SessionGate`` raises over the session's events, in order: the
    response it names and its blocking codes."""
    gate = SessionGate("openai-realtime", document["request"]["tools"])
    return blocked_over(gate, document["events"], close=close)


def blocked_over(gate: SessionGate, events: list[Any], *, close: bool = True) -> list[Any]:
    """Each ``Blocked`` (response id, codes) ``gate`` raises reading ``events`` (and closing)."""
    blocked = []
    for event in events:
        try:
            gate.read_text(json.dumps(event))
        except Blocked as error:
            blocked.append((error.response_id, error.report.blocking_codes))
    if close:
        try:
            gate.close()
        except Blocked as error:
            blocked.append((error.response_id, error.report.blocking_codes))
    return blocked


def test_a_session_gate_blocks_the_cancelled_response_and_passes_the_one_beside_it() -> None:
    document = load(REALTIME / "interleaved_one_cancelled.json")
    gate = SessionGate("openai-realtime", document["request"]["tools"])
    raised = []
    for number, event in enumerate(document["events"]):
        try:
            gate.read_text(json.dumps(event))
        except Blocked as error:
            raised.append((number, event["type"], error.response_id, str(error)))
    assert raised == [
        (
            next(
                n
                for n, e in enumerate(document["events"])
                if e["type"] == "response.done" and e["response"]["status"] == "cancelled"
            ),
            "response.done",
            "resp_CAm8Jp0qx2Lwz1",
            "callgate blocked response resp_CAm8Jp0qx2Lwz1: invalid_arguments_json, "
            "wrong_terminal_reason",
        )
    ]
    assert {r: v.status for r, v in gate.reports.items()} == {
        "resp_CAm8Jp0qx2Lwz1": Status.FAIL,
        "resp_CAm8Kq7ry3Mxa2": Status.PASS,
    }
    assert [c.name for c in gate.reports["resp_CAm8Kq7ry3Mxa2"].calls] == ["book_flight"]


def test_a_realtime_response_create_with_its_own_tools_judges_the_responses_after_it() -> None:
    """The session's tools (``session.update``) judge a response the server starts itself (voice
    activity, no ``response.create``); a ``response.create`` may carry settings of its own
    (``response.tools``) for the responses after it; one without them goes back to the
    session's. Another message holding a ``session`` sets nothing."""
    document = load(REALTIME / "valid_single_call.json")
    weather, flight = document["request"]["tools"]
    gate = SessionGate("openai-realtime", [weather])  # what the app said first
    update = {"type": "session.update", "session": {"tools": [flight]}}
    assert gate.read_client_text(json.dumps(update)) is False  # it asks for no response
    other = {"type": "transcription_session.update", "session": {"tools": [weather]}}
    gate.read_client_text(json.dumps(other))
    verdicts = []
    for create in (
        None,
        {"type": "response.create", "response": {"tools": [weather]}},
        {"type": "response.create"},
    ):
        if create is not None:
            assert gate.read_client_text(json.dumps(create)) is True
        try:
            for event in renamed_realtime(document, len(verdicts))["events"]:
                gate.read_text(json.dumps(event))
            verdicts.append([])
        except Blocked as error:
            verdicts.append(error.report.blocking_codes)
    assert verdicts == [["unknown_tool"], [], ["unknown_tool"]]
    assert gate.settings == {"tools": [flight]}


def test_a_client_message_callgate_could_not_read_fails_every_response_after_it() -> None:
    """What the app asked from then on is unknown: a response that starts before it is judged;
    each after it is ``Unjudged`` under ``block``, handed on unjudged and counted under
    ``pass``; without ``on_error`` the fault is raised where it was met."""
    document = load(REALTIME / "valid_single_call.json")
    fault = TypeError("a generator in a client event: callgate cannot read it")
    outcomes: dict[str, list[str]] = {}
    for on_error in ("block", "pass"):
        counted: list[BaseException] = []
        gate = SessionGate(
            "openai-realtime",
            document["request"]["tools"],
            on_error=on_error,
            on_unjudged=counted.append,
        )
        seen = outcomes.setdefault(on_error, [])
        for number in range(3):
            if number == 1:
                gate.client_unread(fault)
            try:
                for event in renamed_realtime(document, number)["events"]:
                    gate.read_text(json.dumps(event))
                seen.append("ran")
            except Unjudged as error:
                assert error.error is fault
                seen.append("unjudged")
        assert list(gate.reports) == ["resp_CAm8Jp0qx2Lwz1_0"]
        assert counted == ([] if on_error == "block" else [fault, fault])
    assert outcomes == {"block": ["ran", "unjudged", "unjudged"], "pass": ["ran", "ran", "ran"]}
    with pytest.raises(TypeError) as raised:
        SessionGate("openai-realtime", [], on_error=None).client_unread(fault)
    assert raised.value is fault


def test_a_session_cut_without_judging_hands_each_response_on_unjudged() -> None:
    """``judging=False`` (what ``callgate import`` cuts a recording with): each response reaches
    ``on_end`` with its messages, its request and no report, the cancelled one too, and
    nothing is raised, at its end or when the session closes mid-response."""
    document = load(REALTIME / "two_tool_turns_second_cancelled.json")
    ended: list[Any] = []
    gate = SessionGate("openai-realtime", [], on_end=ended.append, judging=False)
    gate.read_client_text(json.dumps({"type": "session.update", "session": {"tools": ["t"]}}))
    texts = [json.dumps(event) for event in document["events"]]
    for text in texts[:-1]:
        gate.read_text(text)
    gate.close()  # the second response never ended
    assert [(e.response_id, e.report, e.request) for e in ended] == [
        (name, None, {"tools": ["t"]}) for name in ("resp_CAm8Jp0qx2Lwz1", "resp_CAm8Kq7ry3Mxa2")
    ]
    assert json.loads(texts[0])["type"] == "session.created"  # about no response
    assert [*ended[0].texts, *ended[1].texts] == texts[1:-1]
    assert gate.reports == {}


def test_a_call_made_again_after_a_cancel_runs_once_from_the_new_response() -> None:
    """``repeat_after_cancel``: the cancelled response is blocked by its id, and the response
    that makes the same call again, with ids of its own, passes: the call runs once."""
    document = mutate(load(REALTIME / "valid_single_call.json"), "repeat_after_cancel")
    gate = SessionGate("openai-realtime", document["request"]["tools"])
    blocked = []
    for event in document["events"]:
        try:
            gate.read_text(json.dumps(event))
        except Blocked as error:
            blocked.append((error.response_id, error.report.blocking_codes))
    gate.close()
    assert blocked == [("resp_CAm8Jp0qx2Lwz1", ["wrong_terminal_reason"])]
    again = gate.reports["resp_CAm8Jp0qx2Lwz1_again"]
    assert again.status is Status.PASS
    assert [(c.id, c.name, c.arguments) for c in again.calls] == [
        ("call_7hD2kLq9_again", "get_weather", '{"city":"Paris","unit":"c"}')
    ]


def test_a_gemini_live_tool_call_sent_again_blocks_the_second_request() -> None:
    """``repeat_call`` (the same toolCall twice, as mastra-ai/mastra#22969 reports): the second
    request's call repeats the first's id and is blocked; the first is whole."""
    document = mutate(load(CONFORMANCE / "gemini-live" / "valid_single_call.json"), "repeat_call")
    report = check(document)
    assert [(f.code, f.choice) for f in report.findings if f.blocking] == [
        (Code.DUPLICATE_CALL_ID, 1)
    ]
    assert [(c.choice, c.state.value) for c in report.calls] == [(0, "validated"), (1, "blocked")]


@pytest.mark.parametrize(
    "name", ["valid_single_call", "withdrawn_call", "same_call_twice", "closed_with_error"]
)
def test_a_gemini_live_session_is_one_turn_judged_when_it_closes(name: str) -> None:
    """The tools of the client's ``setup``; every server message read, the close frame last
    (``read_close``): the verdict is the fixture's, given only when the session closes."""
    document = load(CONFORMANCE / "gemini-live" / f"{name}.json")
    messages = document["events"]
    close = messages.pop() if list(messages[-1]) == ["close"] else None  # as recorded
    ended: list[Any] = []
    gate = SessionGate("gemini-live", [], on_end=ended.append)
    gate.read_client_text(json.dumps({"setup": document["request"]}))
    for message in messages:
        gate.read_text(json.dumps(message))
    assert ended == []
    if close is not None:
        gate.read_close(close["close"]["code"], close["close"]["reason"])
    blocked = None
    try:
        gate.close()
    except Blocked as error:
        blocked = error
    expect = document["expect"]
    [turn] = ended
    assert (turn.response_id, turn.report.status.value, turn.report.blocking_codes) == (
        "session",
        expect["status"],
        expect["codes"],
    )
    assert (blocked is not None) is (expect["status"] == "fail")
    assert gate.asked == document["request"] and turn.request == document["request"]


def test_only_gemini_live_reads_a_close_frame() -> None:
    """A Realtime session has no close entry: a close frame read while a response is in flight
    is no event of it (an event callgate does not know would fail the response)."""
    document = load(REALTIME / "valid_single_call.json")
    gate = SessionGate("openai-realtime", document["request"]["tools"])
    *before, done, after = document["events"]
    assert done["type"] == "response.done"
    for event in before:
        gate.read_text(json.dumps(event))
    gate.read_close(1011, "gone")
    for event in (done, after):
        gate.read_text(json.dumps(event))
    assert [report.status for report in gate.reports.values()] == [Status.PASS]


def renamed_realtime(document: dict[str, Any], number: int) -> dict[str, Any]:
    """A Realtime fixture with its response's id made its own."""
    own = next(e["response"]["id"] for e in document["events"] if e["type"] == "response.created")
    return json.loads(json.dumps(document).replace(own, f"{own}_{number}"))


def test_a_response_left_in_flight_blocks_when_the_session_closes() -> None:
    document = load(REALTIME / "missing_response_done.json")
    assert session_verdicts(document, close=False) == []
    assert session_verdicts(document) == [("resp_CAm8Jp0qx2Lwz1", ["missing_terminal"])]


def test_an_event_about_a_response_that_ended_blocks_at_once() -> None:
    """The late delta comes after the response passed: it is judged alone, then and there."""
    document = load(REALTIME / "delta_after_response_done.json")
    assert session_verdicts(document, close=False) == [
        ("resp_CAm8Jp0qx2Lwz1", ["delta_before_start", "missing_terminal"])
    ]


def test_an_error_or_an_unknown_event_fails_the_responses_in_flight_and_no_other() -> None:
    document = load(REALTIME / "valid_single_call.json")
    error = {"type": "error", "event_id": "event_9", "error": {"type": "server_error"}}
    unknown = {"type": "response.surprise", "event_id": "event_10"}
    events = document["events"]
    first = next(n for n, e in enumerate(events) if e["type"] == "response.created")
    before = {**document, "events": [error, unknown, *events]}
    during = {**document, "events": [*events[: first + 1], error, *events[first + 1 :]]}
    late = {**document, "events": [*events, unknown]}
    assert session_verdicts(before) == []
    assert session_verdicts(during) == [("resp_CAm8Jp0qx2Lwz1", ["stream_error"])]
    assert session_verdicts(late) == []


def test_text_that_is_no_json_fails_the_responses_in_flight() -> None:
    document = load(REALTIME / "valid_single_call.json")
    gate = SessionGate("openai-realtime", document["request"]["tools"])
    events = document["events"]
    first = next(n for n, e in enumerate(events) if e["type"] == "response.created")
    for event in events[: first + 1]:
        gate.read_text(json.dumps(event))
    assert gate.read_text("{not json") == "{not json"
    with pytest.raises(Blocked) as blocked:
        for event in events[first + 1 :]:
            gate.read_text(json.dumps(event))
    assert blocked.value.report.blocking_codes == ["unsupported_event"]


def test_a_session_gate_takes_only_a_session_profile_and_checks_its_tools_at_once() -> None:
    with pytest.raises(
        UsageError, match=r"judges openai-realtime, openai-responses, gemini-live, not openai$"
    ):
        SessionGate("openai", [])
    with pytest.raises(UsageError):
        SessionGate("openai-realtime", [{"type": "function", "name": 7}])


def test_response_of_reads_the_id_where_each_event_keeps_it() -> None:
    created = {"type": "response.created", "response": {"id": "resp_1"}}
    assert response_of(created) == "resp_1"
    assert response_of({**created, "type": "response.done"}) == "resp_1"
    assert response_of({"type": "response.output_item.added", "response_id": "resp_2"}) == "resp_2"
    # A response member of another event is not the event's response.
    assert response_of({"type": "conversation.item.added", "response": {"id": "resp_3"}}) is None
    assert response_of({"type": "response.done", "response": {"id": 4}}) is None
    assert response_of("text") is None


def test_session_parts_are_what_comes_before_any_response_then_each_run_of_responses() -> None:
    def event(kind: str, response: str | None = None) -> dict[str, Any]:
        if kind in ("response.created", "response.done"):
            return {"type": kind, "response": {"id": response}}
        return {"type": kind, **({"response_id": response} if response else {})}

    a, b, c = "resp_a", "resp_b", "resp_c"
    events = [
        event("session.created"),
        event("response.created", a),
        event("response.created", b),  # in flight with a: the same part
        event("response.output_item.added", a),
        event("response.done", a),
        event("response.done", b),
        event("rate_limits.updated"),  # after the run: still its part
        event("response.output_item.added", a),  # late, about a: where it was recorded
        event("response.created", c),
        event("response.done", c),
    ]
    assert [[e["type"] for e in part] for part in session_parts(events)] == [
        ["session.created"],
        [
            "response.created",
            "response.created",
            "response.output_item.added",
            "response.done",
            "response.done",
            "rate_limits.updated",
            "response.output_item.added",
        ],
        ["response.created", "response.done"],
    ]
    assert session_parts([]) == [[]]


# -- the Responses API's WebSocket mode, lane by lane -------------------------------------------

RESPONSES = CONFORMANCE / "openai-responses"


def tools_of(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The Responses tools of a fixture's schemas, as an app sends them."""
    schemas = document["tool_schemas"].items()
    return [{"type": "function", "name": n, "parameters": s} for n, s in schemas]


def renamed(document: dict[str, Any], number: int) -> dict[str, Any]:
    """The fixture with its response's id made its own (the conformance fixtures share one)."""
    own = document["events"][0]["response"]["id"]
    return json.loads(json.dumps(document).replace(own, f"{own}_{number}"))


def responses_verdicts(*lanes: tuple[str | None, str], interleave: bool = False) -> list[Any]:
    """Each ``Blocked`` (response id, codes) of a session of the given (lane, fixture) turns,
    each asked for by a ``response.create`` with its fixture's tools; the turns' events in
    order, or dealt one by one across the lanes (``interleave``)."""
    gate = SessionGate("openai-responses", [])
    streams = []
    for number, (lane, name) in enumerate(lanes):
        document = renamed(load(RESPONSES / f"{name}.json"), number)
        own_lane = {"stream_id": lane} if lane else {}
        create = {"type": "response.create", "tools": tools_of(document), **own_lane}
        gate.read_client_text(json.dumps(create))
        streams.append([{**event, **own_lane} for event in document["events"]])
    if interleave:
        order = [e for row in itertools.zip_longest(*streams) for e in row if e is not None]
    else:
        order = [e for events in streams for e in events]
    return blocked_over(gate, order)


def test_a_lanes_responses_are_judged_one_after_the_other() -> None:
    cut = renamed(load(RESPONSES / "incomplete_with_call.json"), 1)
    cut_id = cut["events"][0]["response"]["id"]
    assert responses_verdicts((None, "valid_single_call"), (None, "valid_parallel_calls")) == []
    assert responses_verdicts((None, "valid_single_call"), (None, "incomplete_with_call")) == [
        (cut_id, check(cut).blocking_codes)
    ]


def test_two_lanes_in_flight_together_are_judged_apart() -> None:
    """Their events interleaved one by one: the cut response blocks, the whole one passes."""
    cut = renamed(load(RESPONSES / "incomplete_with_call.json"), 1)
    verdicts = responses_verdicts(
        ("a", "valid_single_call"), ("b", "incomplete_with_call"), interleave=True
    )
    assert verdicts == [(cut["events"][0]["response"]["id"], check(cut).blocking_codes)]


def test_a_responses_error_with_no_response_going_on_is_no_response() -> None:
    """The answer to a request that made no response (a bad ``previous_response_id``)."""
    gate = SessionGate("openai-responses", [])
    gate.read_text(json.dumps({"type": "error", "error": {"code": "previous_response_not_found"}}))
    gate.close()
    assert gate.reports == {}


def test_an_event_of_a_lane_after_its_response_ended_is_a_response_that_blocks() -> None:
    document = load(RESPONSES / "valid_single_call.json")
    gate = SessionGate("openai-responses", tools_of(document))
    for event in document["events"]:
        gate.read_text(json.dumps(event))
    delta = next(
        e for e in document["events"] if e["type"] == "response.function_call_arguments.delta"
    )
    gate.read_text(json.dumps(delta))  # a call's argument text, after the response completed
    with pytest.raises(Blocked) as blocked:
        gate.close()
    assert blocked.value.response_id == "(no response.created #1)"
    assert "delta_before_start" in blocked.value.report.blocking_codes


def test_a_response_created_in_a_lane_whose_response_never_ended_ends_that_one() -> None:
    document = renamed(load(RESPONSES / "valid_single_call.json"), 1)
    cut = [e for e in document["events"] if e["type"] != "response.completed"]
    started = next(e for e in load(RESPONSES / "valid_single_call.json")["events"])
    gate = SessionGate("openai-responses", tools_of(document))
    for event in cut:
        gate.read_text(json.dumps({**event, "stream_id": "lane"}))
    with pytest.raises(Blocked) as blocked:  # the next response starts in the same lane
        gate.read_text(json.dumps({**started, "stream_id": "lane"}))
    assert blocked.value.response_id == cut[0]["response"]["id"]
    assert blocked.value.report.blocking_codes == ["missing_terminal"]


def test_a_stream_id_that_is_no_string_names_no_lane() -> None:
    """Events with ``stream_id: 7`` are of the session's one unnamed lane, as events without."""
    unnamed = responses_verdicts((None, "valid_single_call"), (None, "incomplete_with_call"))
    numbered = responses_verdicts((7, "valid_single_call"), (7, "incomplete_with_call"))  # type: ignore[arg-type]
    assert numbered == unnamed != []


def test_a_response_create_with_tools_callgate_cannot_read_is_refused_when_sent() -> None:
    gate = SessionGate("openai-responses", [])
    with pytest.raises(UsageError):
        gate.read_client_text(
            json.dumps({"type": "response.create", "tools": [{"type": "function", "name": 7}]})
        )


def test_each_response_judged_is_handed_on_with_its_messages_and_request() -> None:
    """``on_end``: what the proxy writes a fixture from. A message that is no JSON is kept as a
    JSON string."""
    document = load(REALTIME / "valid_single_call.json")
    ended: list[Any] = []
    gate = SessionGate("openai-realtime", [], on_end=ended.append)
    settings = {"tools": document["request"]["tools"]}
    gate.read_client_text(json.dumps({"type": "session.update", "session": settings}))
    texts = [json.dumps(event) for event in document["events"][1:]]
    blocked = []
    for text in [texts[0], "not json", *texts[1:]]:  # no JSON: the response in flight fails
        try:
            gate.read_text(text)
        except Blocked as error:
            blocked.append(error.response_id)
    gate.close()
    (only,) = ended
    assert blocked == [only.response_id]
    assert only.response_id == document["events"][1]["response"]["id"]
    assert only.texts == [texts[0], '"not json"', *texts[1:-1]]
    assert only.request == settings and only.report is not None


def test_a_call_left_out_of_its_own_response_done_is_a_mismatch_of_that_response_only() -> None:
    document = load(REALTIME / "valid_interleaved_responses.json")
    dones = [n for n, e in enumerate(document["events"]) if e["type"] == "response.done"]
    document["events"][dones[1]]["response"]["output"] = []
    found = [(f.code, f.path, f.message, f.choice, f.slot) for f in check(document).findings]
    assert found == [
        (
            Code.ARGUMENT_MISMATCH,
            f"/events/{dones[1]}/response/output",
            "response.done's output has no function_call at output_index 0, which the stream "
            "gave ('call_2mW8pVz4')",
            1,
            0,
        )
    ]


def test_a_status_that_is_not_text_is_named_clipped_at_40() -> None:
    """Where the reason is quoted whole: a second ``response.done`` of the response."""
    document = load(REALTIME / "valid_single_call.json")
    document["events"][10]["response"]["status"] = ["s" * 60]
    document["events"].insert(11, copy.deepcopy(document["events"][10]))
    status = f"status {str(['s' * 60])[:40]}"
    duplicate = next(f for f in check(document).findings if f.code is Code.DUPLICATE_TERMINAL)
    assert duplicate.message.startswith(f"the turn already ended with {status!r}; ")


@pytest.mark.parametrize(
    ("profile", "message", "asks"),
    [
        ("openai-responses", {"type": "response.create", "model": "m"}, True),
        ("openai-responses", {"type": "response.cancel"}, False),
        ("openai-responses", {"type": "conversation.item.create"}, False),
        ("openai-realtime", {"type": "response.create"}, True),
        ("openai-realtime", {"type": "input_audio_buffer.append", "audio": ""}, False),
        ("gemini-live", {"setup": {"model": "m"}}, False),
        ("gemini-live", {"clientContent": {"turnComplete": True}}, False),
    ],
)
def test_only_a_response_create_asks_a_session_for_a_response(
    profile: str, message: dict[str, Any], asks: bool
) -> None:
    """What a tape answers: each client message that asks for a response gets the tape's next
    one; any other goes by."""
    gate = SessionGate(profile, [])
    assert gate.read_client_text(json.dumps(message)) is asks


@pytest.mark.parametrize("profile", ["openai-realtime", "openai-responses", "gemini-live"])
def test_a_client_message_that_is_no_json_object_asks_for_nothing(profile: str) -> None:
    gate = SessionGate(profile, [])
    texts = ("response.create", '"response.create"', '["response.create"]')
    assert [gate.read_client_text(text) for text in texts] == [False, False, False]
