"""Agent frameworks meet tapes and scenarios: pydantic-ai and openai-agents, as a user tests them.

The user's suite is ``tests/apps/agents_suite.py``: a weather agent (one tool, two parallel calls,
then an answer) in each framework. Its tapes are recorded from a fake provider on loopback in one
session, then the whole suite is replayed offline with no key in a second one: the recorded
tapes, every blocking fault through ``callgate_tape.mutate``, the fault example of
docs/own-tests.md, and both frameworks against a ``callgate serve`` scenario (and openai-agents
over the Responses API against another); on the tapes and from the scenarios, each agent is also
handed ``callgate.guarded(AsyncOpenAI(...))``: a passing turn runs as it does without the guard, and
``reuse_slot``, ``truncate`` and ``drop_terminal`` run no tool and end the run with ``Blocked``.
Each test here asserts on its own inner tests (outcome and ``RESULT`` line, from
``--junitxml``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import callgate
from callgate.cli.serve import FakeProvider, collect_served
from callgate.reassemble.envelope import fixture_bytes
from tests.conftest import CONFORMANCE, ROOT, function_call_faults, load
from tests.proxy_harness import APPS_PYTHON
from tests.sdk_cases import InnerTest, inner_tests

pytestmark = [
    pytest.mark.sdk,
    pytest.mark.xdist_group("agents"),  # the module's two sessions, run once
    pytest.mark.skipif(not APPS_PYTHON.exists(), reason="run `make test` to create .venv-apps"),
]

SUITE = ROOT / "tests" / "apps" / "agents_suite.py"
FRAMEWORKS = ("pydantic_ai", "openai_agents")
#: The agents that meet ``callgate serve``: openai-agents over the Responses API besides.
SERVED_FRAMEWORKS = (*FRAMEWORKS, "openai_agents_responses")
KINDS = function_call_faults()  # the agents' tapes call functions only
README_KINDS = ("reuse_slot", "truncate", "provider_error")
#: What the SDKs read, cleared so the machine's own settings cannot reach a run.
CLEARED = ("OPENAI_BASE_URL", "OPENAI_API_BASE", "OPENAI_API_KEY", "CALLGATE_RECORD_MODE")
PARIS, OSLO = ["get_weather", {"city": "Paris"}], ["get_weather", {"city": "Oslo"}]
BOTH = [OSLO, PARIS]  # sorted, as the suite reports them
ANSWER = "Hello there"  # the text turn's answer (openai/text_only)
#: The model's two turns as each agent streams them (one line an event, ``agents_suite.py``):
#: pydantic-ai's ``Part*Event``s, openai-agents' raw response events.
CALL = "ToolCallPart {'tool_name': 'get_weather', 'args': %r}"
DELTA = "ToolCallPartDelta {'args_delta': %r}"
STREAMED = {
    "pydantic_ai": [
        "PartStartEvent 0 " + CALL % "",
        "PartEndEvent 0 " + CALL % "",  # as the second call starts, before the first's arguments
        "PartStartEvent 1 " + CALL % "",
        "PartDeltaEvent 0 " + DELTA % '{"city":',
        "PartDeltaEvent 1 " + DELTA % '{"city":',
        "PartDeltaEvent 0 " + DELTA % '"Paris"}',
        "PartDeltaEvent 1 " + DELTA % '"Oslo"}',
        "PartEndEvent 1 " + CALL % '{"city":"Oslo"}',
        "PartStartEvent 0 TextPart {'content': 'Hello'}",
        "PartDeltaEvent 0 TextPartDelta {'content_delta': ' there'}",
        "PartEndEvent 0 TextPart {'content': 'Hello there'}",
    ],
    "openai_agents": [
        "response.created ",
        *["response.output_item.added "] * 2,
        *[f"response.function_call_arguments.delta {d}" for d in ['{"city":'] * 2],
        'response.function_call_arguments.delta "Paris"}',
        'response.function_call_arguments.delta "Oslo"}',
        *["response.output_item.done "] * 2,
        "response.completed ",
        "response.created ",
        "response.output_item.added ",
        "response.content_part.added ",
        "response.output_text.delta Hello",
        "response.output_text.delta  there",
        "response.content_part.done ",
        "response.output_item.done ",
        "response.completed ",
    ],
}


#: The Responses scenario: ``get_weather`` and ``search`` in one turn, then the answer.
RESPONSES_TURNS = {
    "001": load(CONFORMANCE / "openai-responses" / "valid_parallel_calls.json"),
    "002": load(CONFORMANCE / "openai-responses" / "text_only.json"),
}


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-weather",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


def weather_calls() -> dict[str, Any]:
    """The model's tool turn: ``get_weather`` for Paris and for Oslo, their fragments taking
    turns, then ``tool_calls``."""
    starts, halves, ends = [], [], []
    for index, city in enumerate(["Paris", "Oslo"]):
        function = {"name": "get_weather", "arguments": ""}
        starts.append({"index": index, "id": f"call_{city.lower()}", "function": function})
        starts[-1]["type"] = "function"
        halves.append({"index": index, "function": {"arguments": '{"city":'}})
        ends.append({"index": index, "function": {"arguments": json.dumps(city) + "}"}})
    first = chunk({"role": "assistant", "content": None, "tool_calls": [starts[0]]})
    fragments = [[starts[1]], [halves[0]], [halves[1]], [ends[0]], [ends[1]]]
    return {
        "description": "get_weather for Paris and for Oslo, in one turn.",
        "profile": "openai",
        "tool_schemas": {
            "get_weather": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            }
        },
        "chunks": [first, *(chunk({"tool_calls": f}) for f in fragments), chunk({}, "tool_calls")],
    }


@dataclass(frozen=True)
class Session:
    """A run of the user's suite: its output and each of its tests."""

    output: str
    tests: dict[str, InnerTest]

    def test(self, name: str) -> InnerTest:
        assert name in self.tests, self.output
        return self.tests[name]

    def result(self, name: str) -> dict[str, Any]:
        """The inner test ``name``'s RESULT line, once it passed."""
        test = self.test(name)
        assert test.outcome == "passed", test.report
        [line] = [line for line in test.stdout.splitlines() if line.startswith("RESULT ")]
        return dict(json.loads(line.removeprefix("RESULT ")))


def run_suite(app: Path, name: str, *arguments: str, **env: str) -> Session:
    environment = {k: v for k, v in os.environ.items() if k not in CLEARED} | env
    junit = app / f"{name}.junit.xml"
    command = [str(APPS_PYTHON), "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    command += ["-p", "no:langsmith_plugin", "test_agents.py", *arguments]
    command += [f"--junitxml={junit}", "-o", "junit_logging=system-out"]
    done = subprocess.run(
        command, cwd=app, env=environment, capture_output=True, text=True, timeout=300, check=False
    )
    tests = inner_tests(junit) if junit.is_file() else {}
    return Session(done.stdout + done.stderr, tests)


@dataclass(frozen=True)
class Runs:
    app: Path
    recording: Session
    replay: Session


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    """The suite recorded (``test_weather`` of each framework, from a fake provider that serves
    the tool turn, then the answer), then all of it replayed with no upstream and no key, beside
    ``callgate serve`` playing the same two turns as a scenario."""
    app = tmp_path_factory.mktemp("agents")
    shutil.copy(SUITE, app / "test_agents.py")
    turns = {"001": weather_calls(), "002": load(CONFORMANCE / "openai" / "text_only.json")}
    with closing(FakeProvider(turns).start()) as upstream:
        recording = run_suite(
            app,
            "recording",
            "-k",
            "test_weather and not fault and not never",
            "--callgate-record-mode=once",
            f"--callgate-upstream=openai={upstream.url}",
            OPENAI_API_KEY="sk-proj-agentsKEY5f2e8c1d9a7b4e3f6a0b",
        )
    served = tmp_path_factory.mktemp("served")
    for scenario, its_turns in (("weather", turns), ("responses", RESPONSES_TURNS)):
        (served / scenario).mkdir()
        for name, envelope in its_turns.items():
            (served / scenario / f"{name}.json").write_bytes(fixture_bytes(envelope))
    fixtures, scenarios = collect_served([served])
    with closing(FakeProvider(fixtures, scenarios=scenarios).start()) as serve:
        replay = run_suite(
            app,
            "replay",
            APP_KINDS=",".join(KINDS),
            APP_SERVE_URL=f"{serve.url}/s/weather/v1",
            APP_SERVE_RESPONSES_URL=f"{serve.url}/s/responses/v1",
        )
    yield Runs(app, recording, replay)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_each_framework_records_its_two_turn_tape_and_replays_it_offline_without_a_key(
    runs: Runs, framework: str
) -> None:
    name = f"test_weather[{framework}]"
    recorded = runs.recording.result(name)
    assert recorded == {
        "ran": BOTH,
        "answer": ANSWER,
        "streamed": STREAMED[framework],
        "turns": [["001.json", "pass", []], ["002.json", "not_applicable", []]],
    }
    tape = runs.app / "tapes" / "test_agents" / name
    assert sorted(p.name for p in tape.iterdir()) == ["001.json", "002.json"]
    assert runs.replay.result(name) == recorded


#: What each framework does with each fault of its recorded tape: the tools it ran, its answer
#: or what it raised, and what it asked after the fault (requests, of which the tape did not
#: hold). Measured; docs/tapes.md shows the same table.
FAULTS: dict[tuple[str, str], tuple[list[Any], str, list[int]]] = {
    **{
        (framework, kind): (BOTH, ANSWER, [1, 0])
        for framework in FRAMEWORKS
        for kind in ("truncate", "drop_terminal", "duplicate_terminal", "wrong_terminal")
    },
    **{(framework, "delta_after_terminal"): ([PARIS], ANSWER, [1, 0]) for framework in FRAMEWORKS},
    ("pydantic_ai", "reuse_slot"): ([], "raised ModelRequestRejectedError", [1, 1]),
    ("openai_agents", "reuse_slot"): ([], "raised BadRequestError", [1, 1]),
    ("pydantic_ai", "drop_id"): (BOTH, ANSWER, [1, 0]),
    ("openai_agents", "drop_id"): ([], "raised ModelBehaviorError", [0, 0]),
    **{
        (framework, kind): ([OSLO], ANSWER, [1, 0])
        for framework in FRAMEWORKS
        for kind in ("corrupt_arguments", "schema_violation")
    },
    ("pydantic_ai", "provider_error"): ([], "raised ModelOverloadedError", [0, 0]),
    ("openai_agents", "provider_error"): ([], "raised APIError", [0, 0]),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_each_framework_on_each_fault_of_its_recorded_tape(
    runs: Runs, framework: str, kind: str
) -> None:
    """The fault is served, then whatever the agent asks next is answered from the tape or with
    the provider's error; the unrequested answer fails nothing (no ``allow_unused``)."""
    result = runs.replay.result(f"test_weather_fault[{framework}-{kind}]")
    ran, ended, (after, refused) = FAULTS[framework, kind]
    assert result["kind"] == kind
    assert result["ran"] == ran
    assert (f"raised {result['raised']}" if "raised" in result else result["answer"]) == ended
    assert result["faulted"] == [True, after, refused]
    first = result["turns"][0]
    assert first[:2] == ["001.json", "fail"] and first[2], first  # the fault, never a failure
    answered = [["002.json", "not_applicable", []]] if after > refused else []
    assert result["turns"][1:] == answered


@pytest.mark.parametrize("kind", README_KINDS)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_readmes_fault_example_passes_for_both_frameworks(
    runs: Runs, framework: str, kind: str
) -> None:
    name = f"test_weather_agent_never_runs_a_call_the_model_did_not_make[{framework}-{kind}]"
    test = runs.replay.test(name)
    assert test.outcome == "passed", test.report


#: What each agent runs and answers from its ``callgate serve`` scenario as it is.
SERVED_RUNS = {
    **{framework: (BOTH, ANSWER) for framework in FRAMEWORKS},
    "openai_agents_responses": (
        [["get_weather", {"city": "Oslo"}], ["search", {"query": "ferry times Oslo", "limit": 3}]],
        "It is sunny in Oslo.",
    ),
}


def served_stream(framework: str) -> list[str]:
    """What the agent streams of its scenario: openai-agents hands on each Responses event as
    the provider sent it."""
    if framework != "openai_agents_responses":
        return STREAMED[framework]
    turns = RESPONSES_TURNS.values()
    return [f"{event['type']} {event.get('delta', '')}" for t in turns for event in t["events"]]


@pytest.mark.parametrize("framework", SERVED_FRAMEWORKS)
def test_each_framework_against_a_serve_scenario_finishes_its_run(
    runs: Runs, framework: str
) -> None:
    result = runs.replay.result(f"test_weather_against_a_serve_scenario[{framework}-unguarded-]")
    ran, answer = SERVED_RUNS[framework]
    assert result == {"ran": ran, "answer": answer, "streamed": served_stream(framework)}


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_guarded_client_runs_the_recorded_tape_as_the_client_it_wraps(
    runs: Runs, framework: str
) -> None:
    """The same tools, answer, stream (event for event, as the agent saw it) and turns."""
    guarded = runs.replay.result(f"test_weather_guarded[{framework}]")
    assert guarded == runs.replay.result(f"test_weather[{framework}]")
    assert guarded["streamed"] == STREAMED[framework]


@pytest.mark.parametrize("framework", SERVED_FRAMEWORKS)
def test_a_guarded_client_runs_a_serve_scenario_as_the_client_it_wraps(
    runs: Runs, framework: str
) -> None:
    name = "test_weather_against_a_serve_scenario[{}-{}-]"
    guarded = runs.replay.result(name.format(framework, "guarded"))
    assert guarded == runs.replay.result(name.format(framework, "unguarded"))


GUARDED_KINDS = ("reuse_slot", "truncate", "drop_terminal")


def blocked_codes(framework: str, kind: str) -> list[str]:
    """The codes the engine blocks the agent's tool turn made ``kind`` with."""
    turn = RESPONSES_TURNS["001"] if framework == "openai_agents_responses" else weather_calls()
    return callgate.check(callgate.mutate(turn, kind)).blocking_codes


#: How many of the model's stream events the agent sees before ``Blocked`` ends its run: every
#: one the unguarded agent saw of the faulty turn, up to the turn's end (then ``PartEndEvent``
#: of the last call in pydantic-ai, ``response.output_item.done`` and ``response.completed`` in
#: openai-agents over Chat Completions, which each makes at the turn's end; the Responses
#: API's own ``response.completed``). Measured.
SEEN_BEFORE_BLOCKED = {
    **{(framework, "reuse_slot"): 6 for framework in FRAMEWORKS},
    **{(framework, "truncate"): 7 for framework in FRAMEWORKS},
    **{(framework, "drop_terminal"): 7 for framework in FRAMEWORKS},
    **{("openai_agents_responses", kind): 16 for kind in GUARDED_KINDS},
}


def assert_blocked(
    guarded: dict[str, Any], unguarded: dict[str, Any], framework: str, kind: str
) -> None:
    """``guarded`` ran no tool and raised ``Blocked`` as it is (no framework wraps it, and none
    raised it while handling another error), after seeing the stream the unguarded agent saw."""
    seen = SEEN_BEFORE_BLOCKED[framework, kind]
    streamed = guarded.pop("streamed")
    assert guarded == {
        "ran": [],
        "raised": "Blocked",
        "chain": ["Blocked"],
        "blocked": blocked_codes(framework, kind),
    }
    assert streamed == unguarded["streamed"][:seen]


@pytest.mark.parametrize("kind", GUARDED_KINDS)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_guarded_client_ends_the_run_with_blocked_on_a_fault_of_the_recorded_tape(
    runs: Runs, framework: str, kind: str
) -> None:
    """No tool runs, ``Blocked`` ends the run, and the agent asks nothing after it."""
    guarded = runs.replay.result(f"test_weather_guarded_fault[{framework}-{kind}]")
    assert guarded.pop("turns") == [["001.json", "fail", blocked_codes(framework, kind)]]
    assert (guarded.pop("faulted"), guarded.pop("kind")) == ([True, 0, 0], kind)
    unguarded = runs.replay.result(f"test_weather_fault[{framework}-{kind}]")
    assert_blocked(guarded, unguarded, framework, kind)


#: What each agent does unguarded with the fault from its ``callgate serve`` scenario, whose
#: next turn answers whatever is asked: the tools it ran, and its answer or what it raised.
#: Measured; docs/guard.md shows the same table.
UNGUARDED_SERVED: dict[tuple[str, str], tuple[list[Any], str]] = {
    # one call of unparsable arguments: refused, and the model told so
    **{(framework, "reuse_slot"): ([], ANSWER) for framework in FRAMEWORKS},
    **{(framework, "truncate"): (BOTH, ANSWER) for framework in FRAMEWORKS},
    **{(framework, "drop_terminal"): (BOTH, ANSWER) for framework in FRAMEWORKS},
    # the calls of response.completed's output, which the fault leaves whole
    ("openai_agents_responses", "reuse_slot"): SERVED_RUNS["openai_agents_responses"],
    ("openai_agents_responses", "truncate"): ([], "raised ModelBehaviorError"),
    ("openai_agents_responses", "drop_terminal"): ([], "raised ModelBehaviorError"),
}


@pytest.mark.parametrize("kind", GUARDED_KINDS)
@pytest.mark.parametrize("framework", SERVED_FRAMEWORKS)
def test_a_guarded_client_ends_the_run_with_blocked_on_a_fault_from_callgate_serve(
    runs: Runs, framework: str, kind: str
) -> None:
    name = "test_weather_against_a_serve_scenario[{}-{}-{}]"
    unguarded = runs.replay.result(name.format(framework, "unguarded", kind))
    ended = f"raised {unguarded['raised']}" if "raised" in unguarded else unguarded["answer"]
    assert (unguarded["ran"], ended) == UNGUARDED_SERVED[framework, kind]
    guarded = runs.replay.result(name.format(framework, "guarded", kind))
    assert_blocked(guarded, unguarded, framework, kind)
