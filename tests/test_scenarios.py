"""``callgate serve`` scenarios: fixtures one per request, for agent loops."""

from __future__ import annotations

import json
import shutil
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from callgate.cli.files import find_fixtures
from callgate.cli.serve import FakeProvider, collect, collect_served
from callgate.reassemble.errors import InputError
from callgate.reassemble.mutations import mutate
from callgate.reassemble.profiles import frames
from tests.conftest import CONFORMANCE, load
from tests.proxy_harness import APPS_PYTHON, post, tools_file
from tests.sdk_cases import Turn, run_turns

#: The two turns of a weather agent: two tool calls, then the answer.
TOOL_TURN, TEXT_TURN = "openai/valid_parallel_interleaved", "openai/text_only"
CHAT = "/v1/chat/completions"


@pytest.fixture
def served(tmp_path: Path) -> Path:
    """A served folder: the agent's folder (``agent/001.json`` the tool turn, ``002.json`` the
    text) and ``answer_first.scenario.json`` listing them the other way round."""
    (tmp_path / "agent").mkdir()
    shutil.copy(CONFORMANCE / f"{TOOL_TURN}.json", tmp_path / "agent" / "001.json")
    shutil.copy(CONFORMANCE / f"{TEXT_TURN}.json", tmp_path / "agent" / "002.json")
    (tmp_path / "answer_first.scenario.json").write_text(
        json.dumps(
            {"description": "the answer, then the calls", "turns": ["agent/002", "agent/001.json"]}
        )
    )
    return tmp_path


@pytest.fixture
def provider(served: Path) -> Iterator[FakeProvider]:
    fixtures, scenarios = collect_served([served])
    provider = FakeProvider(fixtures, scenarios=scenarios).start()
    yield provider
    provider.close()


def wire(name: str, kind: str | None = None, source: str = "") -> bytes:
    """What ``serve`` sends for conformance fixture ``name`` (as its ``kind`` variant)."""
    envelope = load(CONFORMANCE / f"{name}.json")
    return b"".join(frames(mutate(envelope, kind, source) if kind else envelope))


def error(status: int, message: str) -> tuple[int, dict[str, Any]]:
    return status, {"error": {"message": message, "type": "callgate_serve"}}


def answered(provider: FakeProvider, path: str) -> tuple[int, Any]:
    status, _, body = post(provider.url, path)
    return status, json.loads(body)


def test_a_folder_scenario_serves_its_fixtures_in_name_order_one_per_request(
    provider: FakeProvider,
) -> None:
    first = post(provider.url, f"/s/agent{CHAT}")
    second = post(provider.url, f"/s/agent{CHAT}")  # another connection, the same scenario
    assert (first[0], first[1]["content-type"], first[2]) == (
        200,
        "text/event-stream",
        wire(TOOL_TURN),
    )
    assert (second[0], second[2]) == (200, wire(TEXT_TURN))


def test_a_listed_scenario_serves_its_turns_in_the_order_listed(provider: FakeProvider) -> None:
    bodies = [post(provider.url, f"/s/answer_first{CHAT}")[2] for _ in range(2)]
    assert bodies == [wire(TEXT_TURN), wire(TOOL_TURN)]


def test_after_the_last_turn_a_request_is_a_400_saying_the_scenario_has_ended(
    provider: FakeProvider,
) -> None:
    post(provider.url, f"/s/agent{CHAT}")
    post(provider.url, f"/s/agent{CHAT}")
    ended = error(
        400,
        "scenario agent has ended: its 2 turns were served; POST /s/agent/reset starts it over",
    )
    assert answered(provider, f"/s/agent{CHAT}") == ended
    assert answered(provider, f"/s/agent{CHAT}") == ended
    # Each scenario keeps its own position.
    assert post(provider.url, f"/s/answer_first{CHAT}")[2] == wire(TEXT_TURN)


def test_a_reset_starts_the_scenario_over(provider: FakeProvider) -> None:
    for _ in range(3):
        post(provider.url, f"/s/agent{CHAT}")
    assert answered(provider, "/s/agent/reset") == (
        200,
        {"scenario": "agent", "turns": 2, "served": 0, "requests": 0, "ended": False},
    )
    assert post(provider.url, f"/s/agent{CHAT}")[2] == wire(TOOL_TURN)


def status(provider: FakeProvider, path: str) -> tuple[int, Any]:
    with urllib.request.urlopen(provider.url + path) as response:
        return response.status, json.loads(response.read())


def test_a_scenarios_status_says_how_many_turns_were_served_and_requests_came(
    provider: FakeProvider,
) -> None:
    """What a test reads after an agent's run: whether the agent asked once per turn."""
    assert status(provider, "/s/agent/status") == (
        200,
        {"scenario": "agent", "turns": 2, "served": 0, "requests": 0, "ended": False},
    )
    for _ in range(3):  # the third comes after the end: counted, and answered with a 400
        post(provider.url, f"/s/agent{CHAT}")
    post(provider.url, f"/s/answer_first{CHAT}")
    assert status(provider, "/s/agent/status") == (
        200,
        {"scenario": "agent", "turns": 2, "served": 2, "requests": 3, "ended": True},
    )
    assert status(provider, "/s/answer_first/status")[1]["requests"] == 1
    post(provider.url, "/s/agent/reset")
    assert status(provider, "/s/agent/status")[1] == {
        "scenario": "agent",
        "turns": 2,
        "served": 0,
        "requests": 0,
        "ended": False,
    }
    for path, message in (
        ("/s/nope/status", "no scenario at /s/nope/status (scenarios: agent, answer_first)"),
        ("/s/agent/v1/chat/completions", "no scenario at /s/agent/v1/chat/completions"),
        ("/f/agent/001/v1/chat/completions", "serve answers GET only at /s/<scenario>/status"),
    ):
        with pytest.raises(urllib.error.HTTPError) as refused:
            status(provider, path)
        assert refused.value.code == 404
        assert json.loads(refused.value.read())["error"]["message"].startswith(message)


def test_serve_verbose_writes_one_line_per_request(served: Path) -> None:
    fixtures, scenarios = collect_served([served])
    lines: list[str] = []
    provider = FakeProvider(fixtures, scenarios=scenarios, log=lines.append).start()
    try:
        post(provider.url, f"/s/agent{CHAT}")
        post(provider.url, f"/s/agent{CHAT}", headers={"x-callgate-mutate": "truncate"})
        post(provider.url, f"/s/agent{CHAT}")
        post(provider.url, "/f/agent/001/v1/chat/completions")
    finally:
        provider.close()
    assert lines == [
        f"callgate serve: POST /s/agent{CHAT} -> 200 agent/001",
        f"callgate serve: POST /s/agent{CHAT} -> 200 agent/002",  # a text turn: not mutated
        f"callgate serve: POST /s/agent{CHAT} -> 400 scenario agent has ended: its 2 turns were "
        "served; POST /s/agent/reset starts it over",
        "callgate serve: POST /f/agent/001/v1/chat/completions -> 200 agent/001",
    ]


def test_an_unknown_scenario_is_a_404_naming_the_scenarios(provider: FakeProvider) -> None:
    assert answered(provider, f"/s/nope{CHAT}") == error(
        404, f"no scenario at /s/nope{CHAT} (scenarios: agent, answer_first)"
    )


@pytest.mark.parametrize("by", ["--mutate", "x-callgate-mutate"])
def test_a_mutation_applies_to_the_tool_turns_and_text_turns_are_served_as_they_are(
    served: Path, by: str
) -> None:
    fixtures, scenarios = collect_served([served])
    provider = FakeProvider(
        fixtures, mutate="truncate" if by == "--mutate" else None, scenarios=scenarios
    ).start()
    headers = {"x-callgate-mutate": "truncate"} if by == "x-callgate-mutate" else {}
    try:
        bodies = [post(provider.url, f"/s/agent{CHAT}", headers=headers)[2] for _ in range(2)]
    finally:
        provider.close()
    assert bodies == [wire(TOOL_TURN, "truncate", "agent/001"), wire(TEXT_TURN)]
    assert bodies[0] != wire(TOOL_TURN)


def test_scenarios_are_found_under_every_served_folder_and_are_no_fixtures(served: Path) -> None:
    (served / "more").mkdir()
    (served / "more" / "again.scenario.json").write_text(json.dumps({"turns": ["agent/001"]}))
    (served / ".hidden").mkdir()
    (served / ".hidden" / "x.scenario.json").write_text("not JSON")
    fixtures, scenarios = collect_served([served])
    assert scenarios == {
        "agent": ["agent/001", "agent/002"],
        "answer_first": ["agent/002", "agent/001"],
        "more/again": ["agent/001"],
    }
    assert list(fixtures) == ["agent/001", "agent/002"] == list(collect([served]))
    assert [p.name for p in find_fixtures([served])] == ["001.json", "002.json"]


def test_a_served_folder_is_the_scenario_of_its_own_name(served: Path) -> None:
    _, scenarios = collect_served([served / "agent"])
    assert scenarios == {"agent": ["001", "002"]}


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ({"turns": ["agent/003"]}, "turn 'agent/003' is no served fixture"),
        (
            {"turns": []},
            'not a scenario: {"description": "...", "turns": ["<fixture>", ...]}',
        ),
        (
            {"turn": ["agent/001"]},
            'not a scenario: {"description": "...", "turns": ["<fixture>", ...]}',
        ),
    ],
)
def test_a_scenario_that_cannot_be_played_stops_serve_with_one_line(
    served: Path, document: dict[str, Any], problem: str
) -> None:
    (served / "bad.scenario.json").write_text(json.dumps(document))
    with pytest.raises(InputError) as refused:
        collect_served([served])
    assert str(refused.value) == f"{served / 'bad.scenario.json'}: {problem}"


def test_two_scenarios_of_one_name_stop_serve(served: Path) -> None:
    (served / "agent.scenario.json").write_text(json.dumps({"turns": ["agent/001"]}))
    with pytest.raises(InputError) as refused:
        collect_served([served])
    first = served / "agent"
    assert str(refused.value) == (
        f"{served / 'agent.scenario.json'}: a second scenario 'agent' (the first: {first})"
    )


@pytest.mark.sdk
@pytest.mark.skipif(not APPS_PYTHON.exists(), reason="run `make test` to create .venv-apps")
def test_the_openai_sdk_in_an_agent_loop_gets_its_tool_turn_then_its_answer(
    provider: FakeProvider, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tools = tools_file(TOOL_TURN, tmp_path_factory.mktemp("tools"))
    loop = Turn("openai-loop", f"{provider.url}/s/agent/v1", ("--tools", tools, "--turns", "4"))
    report = run_turns({"loop": loop})["loop"].result()
    assert report["error"] is None
    assert report["turns"] == [
        {
            "finish": "tool_calls",
            "tool_calls": [
                {"id": "call_w1", "name": "get_weather", "arguments": '{"city":"Oslo"}'},
                {"id": "call_s1", "name": "search", "arguments": '{"query":"rain","limit":3}'},
            ],
            "text": "",
        },
        {"finish": "stop", "tool_calls": [], "text": "Hello there"},
    ]
