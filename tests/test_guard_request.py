"""``callgate.guard(stream)`` reads what the app asked from the request the SDK sent: with the
real openai and anthropic SDKs against ``callgate serve``, a call forced by ``tool_choice`` that
ends with ``"stop"`` (as OpenAI documents) passes with no ``tools=``, where a guard told the
tools but not the choice blocked it; a Responses turn forced to one function and an anthropic
stream pass with no ``tools=``; a tools list that differs from the one sent is a one-line
``UsageError``. Sync and async, ``create(stream=True)`` and the ``.stream()`` helpers; one
interpreter for every case (``tests/apps/guard_request_app.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from typing import Any

import pytest

from callgate.cli.serve import FakeProvider, collect
from tests.conftest import CONFORMANCE, ROOT, load
from tests.proxy_harness import APPS_PYTHON, app_results

pytestmark = [
    pytest.mark.sdk,
    pytest.mark.xdist_group("guard-request"),
    pytest.mark.skipif(not APPS_PYTHON.exists(), reason="run `make test` to create .venv-apps"),
]

APP = ROOT / "tests" / "apps" / "guard_request_app.py"
FORCED_CHAT = "openai/valid_forced_tool_choice_stop"
RESPONSES = "openai-responses/valid_single_call"
ANTHROPIC = "anthropic/valid_text_then_two_tools"


def sdk_tools(fixture: str) -> list[dict[str, Any]]:
    """The fixture's tools as the app hands them to its SDK."""
    schemas = load(CONFORMANCE / f"{fixture}.json")["tool_schemas"]
    if fixture.startswith("anthropic/"):
        return [{"name": name, "input_schema": schema} for name, schema in schemas.items()]
    if fixture.startswith("openai-responses/"):
        return [{"type": "function", "name": n, "parameters": s} for n, s in schemas.items()]
    return [
        {"type": "function", "function": {"name": n, "parameters": s}} for n, s in schemas.items()
    ]


def forced(fixture: str) -> dict[str, Any]:
    if fixture.startswith("openai-responses/"):
        return {"type": "function", "name": "get_weather"}
    return {"type": "function", "function": {"name": "get_weather"}}


#: id -> (sdk, fixture, tool_choice sent, tools given to guard too, tools sent differ)
CASES = {
    f"{name}-{form}": (sdk, fixture, choice, given, form)
    for name, sdk, fixture, choice, given in (
        ("chat-forced", "openai", FORCED_CHAT, forced(FORCED_CHAT), False),
        ("chat-forced-tools-given", "openai", FORCED_CHAT, forced(FORCED_CHAT), True),
        ("responses-forced", "openai-responses", RESPONSES, forced(RESPONSES), False),
        ("anthropic", "anthropic", ANTHROPIC, None, False),
    )
    for form in ("create", "stream")
} | {
    f"{name}-guarded": (sdk, fixture, forced(fixture), False, "guarded")
    for name, sdk, fixture in (
        ("chat-forced", "openai", FORCED_CHAT),
        ("responses-forced", "openai-responses", RESPONSES),
    )
}
#: The guarded client's own ``post(..., stream=True)``: a passing turn, and a failing one.
POSTS = {
    "chat-forced-post": ("openai", FORCED_CHAT, forced(FORCED_CHAT), False, "post"),
    "anthropic-post": ("anthropic", ANTHROPIC, None, False, "post"),
    "chat-fault-post": ("openai", "openai/reused_index_new_id", None, False, "post"),
    "anthropic-fault-post": ("anthropic", "anthropic/malformed_arguments", None, False, "post"),
}


@pytest.fixture(scope="module")
def results() -> Iterator[dict[str, Any]]:
    cases = [
        {
            "id": case_id,
            "sdk": sdk,
            "fixture": fixture,
            "form": form,
            "tools": sdk_tools(fixture),
            "tool_choice": choice,
            "tools_given": given,
        }
        for case_id, (sdk, fixture, choice, given, form) in (CASES | POSTS).items()
    ]
    with closing(FakeProvider(collect([CONFORMANCE])).start()) as serve:
        yield app_results(APP, serve.url, cases)


CALLS = {
    FORCED_CHAT: [["get_weather", '{"city":"Oslo"}']],
    RESPONSES: [["get_weather", '{"city":"Oslo"}']],
    ANTHROPIC: [["get_weather", '{"city":"Oslo"}'], ["search", '{"query":"rain"}']],
}


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_guard_reads_the_tools_and_the_forced_choice_from_the_request_the_sdk_sent(
    results: dict[str, Any], case_id: str
) -> None:
    fixture = CASES[case_id][1]
    for mode in ("sync", "async"):
        assert results[case_id][mode] == {"status": "pass", "calls": CALLS[fixture]}, mode


def test_the_guarded_clients_own_post_guards_a_stream_it_returns(results: dict[str, Any]) -> None:
    """litellm streams Chat Completions through ``client.post(..., stream=True)``, past the
    resources: on a guarded client that path is guarded too, with the tools of the body sent."""
    blocked = {
        "chat-fault-post": "callgate blocked this turn: identity_collision",
        "anthropic-fault-post": "callgate blocked this turn: invalid_arguments_json",
    }
    for mode in ("sync", "async"):
        assert results["chat-forced-post"][mode] == {
            "status": "pass",
            "calls": CALLS[FORCED_CHAT],
        }, mode
        assert results["anthropic-post"][mode] == {"status": "pass", "calls": CALLS[ANTHROPIC]}
        for case_id, line in blocked.items():
            assert results[case_id][mode] == {"raised": "Blocked", "line": line}, (case_id, mode)
