"""A turn inside a gateway, without the gateway: the fixtures' events as LiteLLM's proxy hands
them to a guardrail (parsed chunks and Responses events; Anthropic's raw SSE bytes cut anywhere).
Everything goes on at once but the terminal evidence; a passing turn arrives whole and unchanged,
a failing one raises ``Blocked`` with nothing of its end sent (the real proxy:
``test_litellm_gateway``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from callgate import Blocked, check
from callgate.integrations.gateway import GatewayTurn, profile_of_route
from callgate.reassemble.profiles import PROFILES, framed
from callgate.reassemble.report import Report
from tests.conftest import CONFORMANCE, Dumps, fixture_id, load

ROUTES = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}
ROUTES["openai-responses"] = "/v1/responses"


def fixtures(blocking: bool) -> list[Path]:
    return [
        path
        for profile in ROUTES
        for path in sorted((CONFORMANCE / profile).glob("*.json"))
        if (check(load(path)).exit_code == 1) == blocking
    ]


def items_of(envelope: dict[str, Any], piece: int) -> list[Any]:
    """What the proxy hands the guardrail: events, or SSE bytes cut every ``piece`` bytes."""
    if envelope["profile"] != "anthropic":
        return list(envelope[PROFILES[envelope["profile"]].stream_key])
    body = b"".join(framed(envelope, "sse"))
    return [body[i : i + piece] for i in range(0, len(body), piece)]


def request_of(envelope: dict[str, Any]) -> dict[str, Any]:
    return {**(envelope.get("request") or {}), "tools": envelope["tool_schemas"]}


def run(envelope: dict[str, Any], piece: int = 7) -> tuple[list[Any], list[Any], GatewayTurn]:
    """The items sent before the end, and those ``finish`` released."""
    verdicts: list[tuple[Report, str | None]] = []
    turn = GatewayTurn(
        envelope["profile"],
        request_of(envelope),
        provider=envelope.get("provider"),
        on_verdict=lambda report, response_id: verdicts.append((report, response_id)),
    )
    sent = [out for item in items_of(envelope, piece) for out in turn.take(item)]
    turn.verdicts = verdicts  # type: ignore[attr-defined]
    return sent, turn.finish(), turn


def test_each_route_is_read_with_its_profile() -> None:
    assert {route: profile_of_route(route) for route in ROUTES.values()} == {
        "/v1/chat/completions": "openai",
        "/v1/messages": "anthropic",
        "/v1/responses": "openai-responses",
    }
    assert profile_of_route("/v1/embeddings") is None


@pytest.mark.parametrize("path", fixtures(blocking=False), ids=fixture_id)
@pytest.mark.parametrize("piece", [7, 1 << 20])
def test_a_turn_that_may_run_arrives_unchanged(path: Path, piece: int) -> None:
    envelope = load(path)
    sent, held, turn = run(envelope, piece)
    if envelope["profile"] == "anthropic":
        assert b"".join(sent + held) == b"".join(framed(envelope, "sse"))
    else:
        assert sent + held == items_of(envelope, piece)
    assert turn.report is not None and turn.report.status == check(envelope).status
    assert turn.verdicts == [(turn.report, turn.response_id)]  # type: ignore[attr-defined]


def ended(envelope: dict[str, Any], sent: list[Any]) -> list[str]:
    """What of the turn's end (or a complete call) reached the client."""
    if envelope["profile"] == "anthropic":
        body = b"".join(sent)
        return [name for name in ("message_delta", "message_stop") if name.encode() in body]
    return [
        str(event.get("type") or "finish_reason")
        for event in sent
        if isinstance(event, dict)
        and (
            any(c.get("finish_reason") for c in event.get("choices") or [] if isinstance(c, dict))
            or event.get("type") in COMPLETING
            or (
                event.get("type") == "response.output_item.done"
                and (event.get("item") or {}).get("type") not in ("message", "reasoning")
            )
        )
    ]


#: The Responses events that end the turn or hand a client a complete call or a complete part
#: of one (written out here, not read from the gateway's own rule, which this test checks).
COMPLETING = {
    "response.completed",
    "response.incomplete",
    "response.function_call_arguments.done",
    "response.custom_tool_call_input.done",
    "response.shell_call_command.done",
    "response.apply_patch_call_operation_diff.done",
}


@pytest.mark.parametrize("path", fixtures(blocking=True), ids=fixture_id)
def test_a_turn_that_may_not_run_raises_before_its_end_is_sent(path: Path) -> None:
    envelope = load(path)
    verdicts: list[Report] = []
    turn = GatewayTurn(
        envelope["profile"],
        request_of(envelope),
        provider=envelope.get("provider"),
        on_verdict=lambda report, _: verdicts.append(report),
    )
    sent = [out for item in items_of(envelope, 7) for out in turn.take(item)]
    with pytest.raises(Blocked) as blocked:
        turn.finish()
    assert blocked.value.report.blocking_codes == check(envelope).blocking_codes
    assert ended(envelope, sent) == []
    assert verdicts == [blocked.value.report]


def test_the_response_id_is_the_first_event_s() -> None:
    envelope = load(CONFORMANCE / "anthropic" / "valid_text_then_two_tools.json")
    _, _, turn = run(envelope)
    assert turn.response_id == envelope["events"][0]["message"]["id"]


def test_models_of_events_are_read_as_their_json_and_go_on_as_they_came() -> None:
    envelope = load(CONFORMANCE / "openai" / "valid_parallel_interleaved.json")
    models = [Dumps(chunk) for chunk in envelope["chunks"]]  # LiteLLM's chunks
    turn = GatewayTurn("openai", request_of(envelope))
    sent = [out for model in models for out in turn.take(model)]
    assert sent + turn.finish() == models
    assert turn.report is not None and turn.report.status == check(envelope).status
    assert turn.response_id == envelope["chunks"][0]["id"]


def test_an_item_it_cannot_read_is_a_type_error_and_what_was_held_goes_on() -> None:
    envelope = load(CONFORMANCE / "openai" / "valid_parallel_interleaved.json")
    turn = GatewayTurn("openai", {"tools": envelope["tool_schemas"]})
    chunks = envelope["chunks"]
    for chunk in chunks:
        turn.take(chunk)
    odd = object()
    with pytest.raises(TypeError):
        turn.take(odd)
    end = next(i for i, c in enumerate(chunks) if any(x.get("finish_reason") for x in c["choices"]))
    assert end < len(chunks) - 1  # a usage chunk follows the end: it is held too
    assert turn.give_up(odd) == [*chunks[end:], odd]


@pytest.mark.parametrize("piece", [5, 64, 1 << 20])
def test_bytes_given_up_mid_stream_are_every_byte_not_sent(piece: int) -> None:
    envelope = load(CONFORMANCE / "anthropic" / "valid_text_then_two_tools.json")
    body = b"".join(framed(envelope, "sse"))
    turn = GatewayTurn("anthropic", {"tools": envelope["tool_schemas"]})
    pieces = [body[i : i + piece] for i in range(0, len(body), piece)]
    sent = [out for item in pieces[:-1] for out in turn.take(item)]
    odd = object()
    with pytest.raises(TypeError):
        turn.take(odd)
    assert b"".join([*sent, *turn.give_up(odd)[:-1], pieces[-1]]) == body
    assert turn.give_up() == []


@pytest.mark.parametrize("cut", [1, 2], ids=["one-line-end", "both"])
def test_a_last_event_without_its_blank_line_is_read_and_sent_at_the_end(cut: int) -> None:
    envelope = load(CONFORMANCE / "anthropic" / "valid_text_then_two_tools.json")
    body = b"".join(framed(envelope, "sse"))[:-cut]
    turn = GatewayTurn("anthropic", request_of(envelope))
    sent = [out for start in range(0, len(body), 7) for out in turn.take(body[start : start + 7])]
    assert b"".join(sent + turn.finish()) == body
    assert turn.report is not None and turn.report.status.value == "pass"


def test_a_body_ending_inside_a_utf8_character_fails_the_turn_it_would_pass() -> None:
    """The bytes after the last event are read at the end: cut inside a character, they are
    text no profile reads, and what they carried was never judged."""
    envelope = load(CONFORMANCE / "anthropic" / "valid_text_then_two_tools.json")
    body = b"".join(framed(envelope, "sse")) + b"data: \xe2\x82"
    turn = GatewayTurn("anthropic", request_of(envelope))
    for start in range(0, len(body), 7):
        turn.take(body[start : start + 7])
    with pytest.raises(Blocked) as blocked:
        turn.finish()
    assert blocked.value.report.blocking_codes == ["unsupported_event"]
