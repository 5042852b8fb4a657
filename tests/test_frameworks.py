"""Seven agent frameworks behind ``callgate.transport()``, each as its docs build an agent, run
against a ``callgate serve`` scenario on a good turn and on every blocking fault, unguarded and
guarded (``tests/apps/frameworks_app.py``: one interpreter per environment, every case in it).

Guarded, no tool runs on any fault and a good turn runs as it does unguarded; what the user
sees on a block (the exception, the error event, a retry) is pinned per framework. The measured
table (framework x fault -> tools run unguarded and guarded) is ``docs/frameworks.md``'s, made
here: ``CALLGATE_WRITE_DOCS=1`` writes it after a framework changes.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from callgate.cli.serve import FakeProvider, collect_served
from callgate.reassemble.envelope import fixture_bytes
from tests.conftest import CONFORMANCE, ROOT, function_call_faults, load
from tests.proxy_harness import APPS_PYTHON
from tests.test_agents import chunk, weather_calls

FRAMEWORKS_PYTHON = ROOT / ".venv-frameworks" / "bin" / "python"
#: Where each framework runs: the apps environment (openai 3), or the frameworks environment
#: (CrewAI and strands-agents want openai 2).
ENVIRONMENTS = {"apps": APPS_PYTHON, "frameworks": FRAMEWORKS_PYTHON}

pytestmark = [
    pytest.mark.sdk,
    pytest.mark.xdist_group("frameworks"),
    pytest.mark.skipif(
        not all(python.exists() for python in ENVIRONMENTS.values()),
        reason="run `make test` to create .venv-apps and .venv-frameworks",
    ),
]

APP = ROOT / "tests" / "apps" / "frameworks_app.py"
DOC = ROOT / "docs" / "frameworks.md"


#: framework -> (its environment, the ways it runs an agent, its scenario, what it is called)
FRAMEWORKS: dict[str, tuple[str, tuple[str, ...], str, str]] = {
    "langgraph": ("apps", ("sync", "async"), "weather", "LangGraph 1.2 (langchain-openai)"),
    "crewai": ("frameworks", ("sync",), "weather", "CrewAI 1.15, native"),
    "crewai_litellm": ("frameworks", ("sync",), "weather", "CrewAI 1.15, LiteLLM"),
    "smolagents": ("apps", ("sync",), "final_answer", "smolagents 1.26"),
    "strands": ("frameworks", ("sync",), "weather", "strands-agents 1.62"),
    "agno": ("apps", ("sync", "async"), "weather", "agno 3.1"),
    "pydantic_ai": ("apps", ("async",), "weather", "pydantic-ai 2.66"),
    "openai_agents": ("apps", ("async",), "weather", "openai-agents 0.24"),
}
FAULTS = function_call_faults()
CASES = {
    f"{framework}-{mode}-{guard}-{fault or 'good'}": {
        "framework": framework,
        "mode": mode,
        "guarded": guard == "guarded",
        "fault": fault,
    }
    for framework, (_, modes, _, _) in FRAMEWORKS.items()
    for mode in modes
    for guard in ("unguarded", "guarded")
    for fault in ("", *FAULTS)
}
RUNS = [f"{framework}-{mode}" for framework, (_, m, _, _) in FRAMEWORKS.items() for mode in m]
PARIS, OSLO = ["get_weather", {"city": "Paris"}], ["get_weather", {"city": "Oslo"}]
BOTH = [OSLO, PARIS]  # sorted, as the app reports them


def final_answer() -> dict[str, Any]:
    """smolagents' last turn: its ``final_answer`` tool, called with the answer."""
    call = {"index": 0, "id": "call_final", "type": "function"}
    call["function"] = {"name": "final_answer", "arguments": '{"answer": "Hello there"}'}
    return {
        "description": "final_answer, as smolagents' ToolCallingAgent ends a run.",
        "profile": "openai",
        "tool_schemas": {
            "final_answer": {
                "type": "object",
                "properties": {"answer": {}},
                "required": ["answer"],
            }
        },
        "chunks": [
            chunk({"role": "assistant", "content": None, "tool_calls": [call]}),
            chunk({}, "tool_calls"),
        ],
    }


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Every case, each environment's in one interpreter, against one ``callgate serve``."""
    served = tmp_path_factory.mktemp("served")
    answer = load(CONFORMANCE / "openai" / "text_only.json")
    for name, turns in (("weather", answer), ("final_answer", final_answer())):
        (served / name).mkdir()
        (served / name / "001.json").write_bytes(fixture_bytes(weather_calls()))
        (served / name / "002.json").write_bytes(fixture_bytes(turns))
    fixtures, scenarios = collect_served([served])
    found: dict[str, Any] = {}
    with closing(FakeProvider(fixtures, scenarios=scenarios).start()) as serve:
        for environment, python in ENVIRONMENTS.items():
            for scenario in ("weather", "final_answer"):
                cases = [
                    {"id": case_id, **case}
                    for case_id, case in CASES.items()
                    if FRAMEWORKS[case["framework"]][0] == environment
                    and FRAMEWORKS[case["framework"]][2] == scenario
                ]
                if cases:
                    found |= run_app(python, f"{serve.url}/s/{scenario}/v1", cases)
    yield found


def run_app(python: Path, url: str, cases: list[dict[str, Any]]) -> dict[str, Any]:
    keep = ("PATH", "HOME", "LANG", "TMPDIR", "SYSTEMROOT")
    environment = {key: value for key, value in os.environ.items() if key in keep}
    environment |= {
        "APP_SERVE_URL": url,
        "APP_CASES": json.dumps(cases),
        # no framework's telemetry or price list leaves the machine
        "CREWAI_DISABLE_TELEMETRY": "true",
        "CREWAI_TRACING_ENABLED": "false",
        "OTEL_SDK_DISABLED": "true",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LANGSMITH_TRACING": "false",
        "AGNO_TELEMETRY": "false",
        "HF_HUB_OFFLINE": "1",
    }
    done = subprocess.run(
        [str(python), str(APP)],
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [
        json.loads(line.removeprefix("RESULT "))
        for line in done.stdout.splitlines()
        if line.startswith("RESULT ")
    ]
    return {line["id"]: line for line in lines}


def case(results: dict[str, Any], run: str, guard: str, fault: str) -> dict[str, Any]:
    got: dict[str, Any] = results[f"{run}-{guard}-{fault or 'good'}"]
    return got


@pytest.mark.parametrize("run", RUNS)
def test_a_good_turn_runs_behind_callgate_as_it_runs_without_it(
    results: dict[str, Any], run: str
) -> None:
    unguarded, guarded = (case(results, run, guard, "") for guard in ("unguarded", "guarded"))
    assert unguarded["ran"] == BOTH
    assert {**guarded, "id": "", "verdicts": []} == {**unguarded, "id": ""}
    last = "pass" if run.startswith("smolagents") else "not_applicable"  # final_answer
    assert guarded["verdicts"] == [["pass", []], [last, []]]


#: What the user sees when callgate blocks a turn: the exceptions raised (outermost first) and
#: the requests the run made. CrewAI catches the model's error and asks again (the scenario's
#: next turn is the answer); agno turns it into a ``RunErrorEvent`` of the run, raising nothing
#: (the app raises ``FrameworkEvent`` on it).
SEEN_ON_BLOCK: dict[str, tuple[list[str] | str, int]] = {
    "langgraph-sync": (["APIError"], 1),
    "langgraph-async": (["APIError"], 1),
    "crewai-sync": ("Hello there", 2),
    "crewai_litellm-sync": ("Hello there", 2),
    "smolagents-sync": (["AgentGenerationError", "APIError"], 1),
    "strands-sync": (["APIError"], 1),
    "agno-sync": (["FrameworkEvent"], 1),
    "agno-async": (["FrameworkEvent"], 1),
    "pydantic_ai-async": (["ModelAPIError", "APIError"], 1),
    "openai_agents-async": (["APIError"], 1),
}
CREW_GOES_ON = "catches the error and asks the model again; the crew goes on with the next turn"
#: ``SEEN_ON_BLOCK`` as the docs say it.
SAID = {
    "langgraph": "raises `openai.APIError` with callgate's line",
    "crewai": CREW_GOES_ON,
    "crewai_litellm": CREW_GOES_ON,
    "smolagents": "raises `AgentGenerationError` (from `openai.APIError`) with callgate's line",
    "strands": "raises `openai.APIError` with callgate's line",
    "agno": "raises nothing: the run ends with a `RunErrorEvent` whose content is callgate's line",
    "pydantic_ai": "raises `ModelAPIError` (from `openai.APIError`) with callgate's line",
    "openai_agents": "raises `openai.APIError` with callgate's line",
}
#: The faults callgate blocks with its own error event; ``provider_error`` ends the turn with the
#: provider's error, which reaches the app as it does without callgate.
BLOCKED_FAULTS = [fault for fault in FAULTS if fault != "provider_error"]
CODES = {
    "truncate": ["missing_terminal"],
    "drop_terminal": ["missing_terminal"],
    "duplicate_terminal": ["duplicate_terminal"],
    "delta_after_terminal": ["delta_after_terminal"],
    "wrong_terminal": ["wrong_terminal_reason"],
    "reuse_slot": ["identity_collision"],
    "drop_id": ["missing_call_id"],
    "corrupt_arguments": ["invalid_arguments_json"],
    "schema_violation": ["schema_violation"],
    "provider_error": ["missing_terminal", "stream_error"],
}


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("run", RUNS)
def test_no_tool_runs_on_a_blocking_fault_behind_callgate(
    results: dict[str, Any], run: str, fault: str
) -> None:
    guarded = case(results, run, "guarded", fault)
    assert (guarded["ran"], guarded["verdicts"][0]) == ([], ["fail", CODES[fault]])
    if fault == "provider_error":  # the provider's own error, as without callgate
        unguarded = case(results, run, "unguarded", fault)
        assert {**guarded, "id": "", "verdicts": []} == {**unguarded, "id": ""}
        return
    seen, requests = SEEN_ON_BLOCK[run]
    assert guarded["requests"] == requests
    if isinstance(seen, str):  # the framework caught the error and went on
        assert (guarded["answer"], guarded["verdicts"][1:]) == (seen, [["not_applicable", []]])
    else:
        line = f"callgate blocked this turn: {', '.join(CODES[fault])}"
        assert (guarded["raised"], guarded["line"]) == (seen, line)


def test_the_docs_table_is_what_the_frameworks_did(results: dict[str, Any]) -> None:
    table = measured_table(results)
    text = DOC.read_text(encoding="utf-8")
    start, end = text.index(TABLE_START) + len(TABLE_START), text.index(TABLE_END)
    if os.environ.get("CALLGATE_WRITE_DOCS") == "1":
        DOC.write_text(text[:start] + table + text[end:], encoding="utf-8")
    assert text[start:end] == table, "CALLGATE_WRITE_DOCS=1 writes the measured table"


TABLE_START = "<!-- measured by tests/test_frameworks.py -->\n"
TABLE_END = "<!-- end of the measured table -->"


def measured_table(results: dict[str, Any]) -> str:
    """Framework x fault -> the tools its agent ran without callgate (``*``: one ran with
    arguments the model never sent), then what it did behind callgate."""
    faults = ["good", *FAULTS]
    lines = [
        "Tools the agent ran of the two the model asked for, without callgate "
        "(`*`: a tool ran with arguments the model never sent):",
        "",
        "| Framework | Run | " + " | ".join(f"`{fault}`" for fault in faults) + " |",
        "|---|---|" + "---|" * len(faults),
    ]
    for run in RUNS:
        framework, mode = run.rsplit("-", 1)
        cells = [ran_cell(case(results, run, "unguarded", fault)) for fault in ("", *FAULTS)]
        lines.append(f"| {FRAMEWORKS[framework][3]} | {mode} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Behind callgate: the good turn runs as it does without it; on every fault no tool runs, "
        "and the user sees:",
        "",
        "| Framework | Run | On a blocked turn | Requests |",
        "|---|---|---|---|",
    ]
    for run in RUNS:
        framework, mode = run.rsplit("-", 1)
        requests = SEEN_ON_BLOCK[run][1]
        lines.append(f"| {FRAMEWORKS[framework][3]} | {mode} | {SAID[framework]} | {requests} |")
    return "\n".join(lines) + "\n"


def ran_cell(result: dict[str, Any]) -> str:
    asked = [call for call in result["ran"] if call in BOTH]
    return f"{len(result['ran'])}{'*' if len(asked) < len(result['ran']) else ''}"
