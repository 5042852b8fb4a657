"""Every bundled conformance fixture, fed three ways, gives its pinned verdict."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from callgate.reassemble import Reassembler, Report, check
from callgate.reassemble.profiles import PROFILES
from tests.conftest import conformance_fixtures, fixture_id, load

FIXTURES = conformance_fixtures()


def summary(report: Report) -> tuple[str, list[str], list[tuple[Any, ...]]]:
    calls = [(c.id, c.name, c.arguments) for c in report.calls]
    return report.status.value, report.blocking_codes, calls


def feed_one_at_a_time(envelope: dict[str, Any]) -> tuple[Report, list[str]]:
    reassembler = Reassembler(
        envelope["profile"],
        envelope.get("tool_schemas"),
        request=envelope.get("request"),
        provider=envelope.get("provider"),
    )
    live: list[str] = []
    for raw in envelope[PROFILES[envelope["profile"]].stream_key]:
        live.extend(f.code.value for f in reassembler.feed(raw))
    return reassembler.close(), live


def resplit_arguments(envelope: dict[str, Any]) -> dict[str, Any]:
    """The same stream with every argument fragment cut in two across two events (Gemini: each
    ``partialArgs`` string piece cut in two, and calls that share a chunk spread over chunks)."""
    out = copy.deepcopy(envelope)
    key = PROFILES[out["profile"]].stream_key
    if out["profile"] == "openai-responses":
        out[key] = resplit_responses(out[key])
        return out
    split = RESPLITTERS[out["profile"]]
    out[key] = [piece for raw in out[key] for piece in split(raw)]
    return out


def resplit_gemini(chunk: Any) -> list[Any]:
    """Halve each ``partialArgs`` string piece into two pieces of the same path; a candidate
    holding several function calls gives each its own chunk, the finish on the last."""
    candidates = chunk.get("candidates") if isinstance(chunk, dict) else None
    if not isinstance(candidates, list) or len(candidates) != 1:
        return [chunk]
    parts = (candidates[0].get("content") or {}).get("parts")
    if not isinstance(parts, list):
        return [chunk]
    for part in parts:
        call = part.get("functionCall") if isinstance(part, dict) else None
        if isinstance(call, dict) and isinstance(call.get("partialArgs"), list):
            call["partialArgs"] = [
                half for piece in call["partialArgs"] for half in _halve_piece(piece)
            ]
    calls = [part for part in parts if isinstance(part, dict) and "functionCall" in part]
    if len(calls) < 2 or len(calls) != len(parts):
        return [chunk]
    spread = []
    for number, part in enumerate(parts):
        single = copy.deepcopy(chunk)
        single["candidates"][0]["content"]["parts"] = [part]
        if number < len(parts) - 1:
            single["candidates"][0].pop("finishReason", None)
        spread.append(single)
    return spread


def _halve_piece(piece: Any) -> list[Any]:
    text = piece.get("stringValue") if isinstance(piece, dict) else None
    if not isinstance(text, str) or len(text) < 2:
        return [piece]
    half = len(text) // 2
    return [
        {**piece, "stringValue": text[:half], "willContinue": True},
        {**piece, "stringValue": text[half:]},
    ]


def resplit_anthropic(event: Any) -> list[Any]:
    delta = event.get("delta") if isinstance(event, dict) else None
    text = delta.get("partial_json") if isinstance(delta, dict) else None
    if event.get("type") != "content_block_delta" or not isinstance(text, str) or len(text) < 2:
        return [event]
    head, tail = copy.deepcopy(event), copy.deepcopy(event)
    head["delta"]["partial_json"], tail["delta"]["partial_json"] = (
        text[: len(text) // 2],
        text[len(text) // 2 :],
    )
    return [head, tail]


def resplit_cohere(event: Any) -> list[Any]:
    function = (
        (((event.get("delta") or {}).get("message") or {}).get("tool_calls") or {}).get("function")
        if isinstance(event, dict)
        else None
    )
    text = function.get("arguments") if isinstance(function, dict) else None
    if event.get("type") != "tool-call-delta" or not isinstance(text, str) or len(text) < 2:
        return [event]
    head, tail = copy.deepcopy(event), copy.deepcopy(event)
    for half, part in ((head, text[: len(text) // 2]), (tail, text[len(text) // 2 :])):
        half["delta"]["message"]["tool_calls"]["function"]["arguments"] = part
    return [head, tail]


def resplit_bedrock(event: Any) -> list[Any]:
    delta = (event.get("contentBlockDelta") or {}).get("delta") if isinstance(event, dict) else None
    text = (delta.get("toolUse") or {}).get("input") if isinstance(delta, dict) else None
    if not isinstance(text, str) or len(text) < 2:
        return [event]
    head, tail = copy.deepcopy(event), copy.deepcopy(event)
    for half, part in ((head, text[: len(text) // 2]), (tail, text[len(text) // 2 :])):
        half["contentBlockDelta"]["delta"]["toolUse"]["input"] = part
    return [head, tail]


def resplit_ollama(chunk: Any) -> list[Any]:
    """A line holding several whole calls gives each its own line; ``done`` and what the last
    line says besides stay on the last."""
    message = chunk.get("message") if isinstance(chunk, dict) else None
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    if not isinstance(calls, list) or len(calls) < 2:
        return [chunk]
    spread = []
    for number, call in enumerate(calls):
        single = copy.deepcopy(chunk)
        single["message"]["tool_calls"] = [call]
        if number < len(calls) - 1:
            single = {
                key: value
                for key, value in single.items()
                if key in ("model", "created_at", "message")
            } | {"done": False}
        spread.append(single)
    return spread


#: The Responses events that stream part of a call's input.
RESPONSES_DELTAS = frozenset(
    {
        "response.function_call_arguments.delta",
        "response.custom_tool_call_input.delta",
        "response.shell_call_command.delta",
        "response.apply_patch_call_operation_diff.delta",
    }
)


def resplit_responses(events: list[Any]) -> list[Any]:
    """Halve each delta of a call's input; later sequence_numbers move up by one per split, so
    gaps and steps back in the original stay exactly as they were."""
    out, shift = [], 0
    for event in events:
        text = event.get("delta") if isinstance(event, dict) else None
        pieces = [event]
        if event.get("type") in RESPONSES_DELTAS and isinstance(text, str) and len(text) > 1:
            pieces = [
                dict(event, delta=text[: len(text) // 2]),
                dict(event, delta=text[len(text) // 2 :]),
            ]
        for offset, piece in enumerate(pieces):
            if isinstance(piece.get("sequence_number"), int):
                piece["sequence_number"] += shift + offset
        shift += len(pieces) - 1
        out.extend(pieces)
    return out


def resplit_realtime(event: Any) -> list[Any]:
    """Halve each argument delta (its ``event_id`` kept on both halves)."""
    text = event.get("delta") if isinstance(event, dict) else None
    if event.get("type") != "response.function_call_arguments.delta" or not isinstance(text, str):
        return [event]
    if len(text) < 2:
        return [event]
    return [dict(event, delta=text[: len(text) // 2]), dict(event, delta=text[len(text) // 2 :])]


def resplit_chat(chunk: Any) -> list[Any]:
    """Halve the arguments of indexed entries; the halves follow in a second chunk that also takes
    over the finish_reason, so the order of terminal evidence is unchanged."""
    if not isinstance(chunk, dict) or not isinstance(chunk.get("choices"), list):
        return [chunk]
    if len(chunk["choices"]) != 1 or not isinstance(chunk["choices"][0], dict):
        return [chunk]
    choice = chunk["choices"][0]
    entries = (choice.get("delta") or {}).get("tool_calls")
    if not isinstance(entries, list):
        return [chunk]
    tails = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("index"), int):
            continue
        member, field = ("custom", "input") if "custom" in entry else ("function", "arguments")
        arguments = (entry.get(member) or {}).get(field)
        if isinstance(arguments, str) and len(arguments) > 1:
            half = len(arguments) // 2
            entry[member][field] = arguments[:half]
            tails.append({"index": entry["index"], member: {field: arguments[half:]}})
    if not tails:
        return [chunk]
    second = copy.deepcopy(chunk)
    second["choices"][0]["delta"] = {"tool_calls": tails}
    choice["finish_reason"] = None
    return [chunk, second]


@pytest.mark.parametrize("path", FIXTURES, ids=fixture_id)
def test_fixture_gives_its_pinned_verdict(path: Path) -> None:
    envelope = load(path)
    expect = envelope["expect"]
    report = check(envelope)
    assert report.status.value == expect["status"]
    assert report.blocking_codes == sorted(expect["codes"])
    if "calls" in expect:
        assert [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in report.calls] == (
            expect["calls"]
        )
    assert report.exit_code == {"pass": 0, "fail": 1}.get(expect["status"], 2)


@pytest.mark.parametrize("path", FIXTURES, ids=fixture_id)
def test_fixture_fed_one_event_at_a_time_gives_the_same_report(path: Path) -> None:
    envelope = load(path)
    whole = check(envelope)
    report, live = feed_one_at_a_time(envelope)
    assert report.to_dict() == whole.to_dict()
    close_only = [f.code.value for f in whole.findings][len(live) :]
    assert [f.code.value for f in whole.findings] == live + close_only


def has_argument_text(envelope: dict[str, Any]) -> bool:
    """Whether some call's arguments grew in an event after its start: there is text a
    re-splitter can cut. (A call that arrives whole, as Mistral's index-less calls and Gemini's
    ``args`` objects do, has none.)"""
    return any(
        len(call.arguments or "") > 2 and any(e != call.opened for e in call.grew)
        for call in check(envelope).calls
    )


RESPLITTERS = {
    "openai": resplit_chat,
    "mistral": resplit_chat,
    "anthropic": resplit_anthropic,
    "gemini": resplit_gemini,
    "cohere": resplit_cohere,
    "ollama": resplit_ollama,
    "bedrock-converse": resplit_bedrock,
    "openai-realtime": resplit_realtime,
    # Whole calls, each in one message: nothing to cut.
    "gemini-live": lambda message: [message],
}


@pytest.mark.parametrize("path", FIXTURES, ids=fixture_id)
def test_fixture_with_resplit_arguments_gives_the_same_calls_and_codes(path: Path) -> None:
    envelope = load(path)
    resplit = resplit_arguments(envelope)
    if has_argument_text(envelope):
        assert resplit != envelope
    assert summary(check(resplit)) == summary(check(envelope))


def test_the_matrix_covers_every_finding_code() -> None:
    from callgate.reassemble import Code

    seen = {code for path in FIXTURES for code in load(path)["expect"]["codes"]}
    assert {code.value for code in Code} - seen == set()


def test_every_fixture_says_what_it_shows_first() -> None:
    for path in FIXTURES:
        assert next(iter(load(path))) == "description", path


@pytest.mark.parametrize(
    "path", [p for p in FIXTURES if load(p)["expect"]["status"] == "pass"], ids=fixture_id
)
def test_enforce_mode_holds_back_exactly_what_the_verdict_needs(path: Path) -> None:
    """A proxy in enforce mode holds every event from the first that carries terminal evidence:
    the turn must not pass without it, and that event is not earlier than the last call's start
    (holding from there on holds no more than the verdict needs)."""
    envelope = load(path)
    profile = PROFILES[envelope["profile"]]
    stream = envelope[profile.stream_key]
    first = next(i for i, raw in enumerate(stream) if profile.carries_terminal(raw))
    calls = check(envelope).calls
    opened = [call.opened for call in calls if call.opened is not None]
    assert first >= max(opened)
    cut = check({**envelope, profile.stream_key: stream[:first]})
    # The end is missing; when the calls came with the finish, the cut holds no call at all,
    # and what it holds ended when an earlier choice did (Gemini Live's spoken turn).
    expected = (
        ("fail", ["missing_terminal"])
        if min(opened) < first
        else ("not_applicable", [])
        if first == 0 or min(call.choice for call in calls) > 0
        else ("invalid", ["missing_terminal"])
    )
    assert (cut.status.value, cut.blocking_codes) == expected
