"""An agent that runs built-in tools on the user's machine, behind the gate: the openai-agents
SDK's shell, apply_patch and computer tools over the Responses API, against ``callgate serve``
on loopback, with ``callgate.guarded(AsyncOpenAI(...))`` and without. On a whole turn the tool
runs exactly once, with the call's input; on every fault of its input or its end, the guarded
agent runs nothing and its run ends with ``Blocked``. One interpreter runs every case
(``tests/apps/agent_tools_app.py``); each case is asserted on its own."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from typing import Any

import pytest

import callgate
from callgate.cli.serve import FakeProvider, collect_served
from callgate.reassemble.envelope import fixture_bytes
from tests.conftest import CONFORMANCE, ROOT, load
from tests.proxy_harness import APPS_PYTHON, app_results

pytestmark = [
    pytest.mark.sdk,
    pytest.mark.xdist_group("agent-tools"),
    pytest.mark.skipif(not APPS_PYTHON.exists(), reason="run `make test` to create .venv-apps"),
]

APP = ROOT / "tests" / "apps" / "agent_tools_app.py"
#: Each tool's turn, and what the agent's tool does with it when it runs.
TURNS = {
    "shell": (
        "openai-responses/shell_call_valid",
        [["shell", ["ls -la ./build", "rm -rf ./build/cache"]]],
    ),
    "apply_patch": (
        "openai-responses/apply_patch_create_valid",
        [["create_file", "notes/checklist.md", "+## Checklist\n+\n+- [ ] Milk\n+- [ ] Bread\n"]],
    ),
    "computer": ("openai-responses/computer_call_click_valid", [["click", 512, 300, "left"]]),
}
#: The faults each tool's turn is served with: its end, and its input.
FAULTS = {
    "shell": ("truncate", "drop_terminal", "wrong_terminal", "cut_input", "restate_other_input"),
    "apply_patch": ("truncate", "wrong_terminal", "cut_input", "restate_other_input"),
    "computer": ("truncate", "drop_terminal", "wrong_terminal", "drop_coordinates"),
}
FAULT_CASES = [(tool, kind) for tool in TURNS for kind in FAULTS[tool]]
ANSWER = load(CONFORMANCE / "openai-responses" / "text_only.json")
CASES = [
    (tool, kind, guarded)
    for tool in TURNS
    for kind in (None, *FAULTS[tool])
    for guarded in (True, False)
]


def case_id(tool: str, kind: str | None, guarded: bool) -> str:
    return f"{tool}-{kind or 'as_is'}-{'guarded' if guarded else 'unguarded'}"


def turn(tool: str, kind: str | None) -> dict[str, Any]:
    source = load(CONFORMANCE / f"{TURNS[tool][0]}.json")
    return callgate.mutate(source, kind, TURNS[tool][0]) if kind else source


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Every case's result, from one run of the app against one server."""
    served = tmp_path_factory.mktemp("served")
    for tool, kind, guarded in CASES:
        scenario = served / case_id(tool, kind, guarded)
        scenario.mkdir()
        (scenario / "001.json").write_bytes(fixture_bytes(turn(tool, kind)))
        (scenario / "002.json").write_bytes(fixture_bytes(ANSWER))
    fixtures, scenarios = collect_served([served])
    cases = [
        {"id": case_id(*case), "tool": case[0], "scenario": case_id(*case), "guarded": case[2]}
        for case in CASES
    ]
    with closing(FakeProvider(fixtures, scenarios=scenarios).start()) as serve:
        yield app_results(APP, serve.url, cases)


@pytest.mark.parametrize("tool", sorted(TURNS))
def test_a_whole_turn_runs_the_tool_once_with_its_input_guarded_or_not(
    results: dict[str, Any], tool: str
) -> None:
    expected = {"ran": TURNS[tool][1], "answer": "It is sunny in Oslo."}
    for guarded in (True, False):
        outcome = dict(results[case_id(tool, None, guarded)])
        del outcome["id"]
        assert outcome == expected, guarded


@pytest.mark.parametrize(("tool", "kind"), FAULT_CASES)
def test_a_guarded_agent_runs_no_tool_on_a_fault_and_its_run_ends_blocked(
    results: dict[str, Any], tool: str, kind: str
) -> None:
    outcome = results[case_id(tool, kind, True)]
    assert (outcome["ran"], outcome.get("raised"), outcome.get("blocked")) == (
        [],
        "Blocked",
        callgate.check(turn(tool, kind)).blocking_codes,
    )


#: What the agent does unguarded with each fault: the tool runs it made, and how its run
#: ended. Measured (openai-agents 0.24.0). It reads the calls from ``response.completed``, so a
#: turn that never completes raises; but it runs the item as that event restates it, whatever
#: the ``.done`` events said, and it clicks at no coordinates at all.
UNGUARDED: dict[tuple[str, str], tuple[list[Any], str]] = {
    **{
        (tool, kind): ([], "raised ModelBehaviorError")
        for tool in TURNS
        for kind in ("truncate", "drop_terminal", "wrong_terminal", "cut_input")
    },
    ("shell", "restate_other_input"): (TURNS["shell"][1], "It is sunny in Oslo."),
    ("apply_patch", "restate_other_input"): (TURNS["apply_patch"][1], "It is sunny in Oslo."),
    ("computer", "drop_coordinates"): ([["click", None, None, "left"]], "It is sunny in Oslo."),
}


@pytest.mark.parametrize(("tool", "kind"), FAULT_CASES)
def test_what_the_unguarded_agent_does_with_each_fault(
    results: dict[str, Any], tool: str, kind: str
) -> None:
    outcome = results[case_id(tool, kind, False)]
    ended = f"raised {outcome['raised']}" if "raised" in outcome else outcome["answer"]
    assert (outcome["ran"], ended) == UNGUARDED[tool, kind]
