"""A user's own agent tests with ``callgate_tape``: one weather agent in pydantic-ai and in
openai-agents (``OpenAIChatCompletionsModel``, ``Runner.run_streamed``), as their docs build one.

``tests/test_agents.py`` copies this file into a temporary folder as ``test_agents.py`` and runs
it with ``.venv-apps``' pytest. The agent has one tool, ``get_weather(city)``; the model asks for
it twice in one turn (Paris, Oslo), then answers. Each test prints one ``RESULT {json}`` line:
the tools the agent ran (with their arguments, sorted: a framework may run them concurrently),
its answer or the exception it raised, and what the tape served. ``APP_KINDS`` lists the faults
the fault tests take, ``APP_SERVE_URL`` is a ``callgate serve`` scenario's base URL.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from typing import Any

import pytest

PROMPT = "What is the weather in Paris and in Oslo?"
KINDS = [kind for kind in os.environ.get("APP_KINDS", "truncate").split(",") if kind]
#: What the recorded model asked for: a call the agent runs that is not one of these, the model
#: never made.
ASKED = [["get_weather", {"city": "Oslo"}], ["get_weather", {"city": "Paris"}]]

Ran = list[list[Any]]


def forecast(ran: Ran, city: str) -> str:
    ran.append(["get_weather", {"city": city}])
    return f"{city}: 18 C and sunny"


def pydantic_ai_weather(ran: Ran) -> str:
    """The weather agent in pydantic-ai, streamed (an ``event_stream_handler`` streams each model
    request); its answer."""
    from openai import AsyncOpenAI
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    # OPENAI_BASE_URL and OPENAI_API_KEY are read here, while the tape has set them.
    client = AsyncOpenAI(max_retries=0)
    agent = Agent(OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client)))

    @agent.tool_plain
    def get_weather(city: str) -> str:
        return forecast(ran, city)

    async def drain(_: Any, events: Any) -> None:
        async for _event in events:
            pass

    return str(agent.run_sync(PROMPT, event_stream_handler=drain).output)


def openai_agents_weather(ran: Ran, base_url: str | None = None) -> str:
    """The weather agent in openai-agents over Chat Completions, streamed; its answer. Given
    a ``base_url`` (``callgate serve``, which takes any key), it talks there."""
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        Runner,
        function_tool,
        set_tracing_disabled,
    )
    from openai import AsyncOpenAI

    set_tracing_disabled(True)  # traces would go to OpenAI's host

    @function_tool
    def get_weather(city: str) -> str:
        return forecast(ran, city)

    key = "sk-serve-takes-any-key" if base_url else None  # None: OPENAI_API_KEY
    client = AsyncOpenAI(max_retries=0, base_url=base_url, api_key=key)
    agent = Agent(
        name="weather",
        instructions="Answer with the weather of each city asked about.",
        model=OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client),
        tools=[get_weather],
    )

    async def run() -> str:
        result = Runner.run_streamed(agent, PROMPT)
        async for _event in result.stream_events():
            pass
        return str(result.final_output)

    return asyncio.run(run())


AGENTS: dict[str, Callable[[Ran], str]] = {
    "pydantic_ai": pydantic_ai_weather,
    "openai_agents": openai_agents_weather,
}


def outcome(agent: Callable[[Ran], str]) -> dict[str, Any]:
    """What the agent did: the tools it ran, and its answer or what it raised."""
    ran: Ran = []
    try:
        got: dict[str, Any] = {"answer": agent(ran)}
    except Exception as error:  # what the framework raises is what the test pins
        got = {"raised": type(error).__name__}
    return {"ran": sorted(ran, key=json.dumps), **got}


def recorded_by(framework: str) -> Any:
    """The framework as a parameter whose tests replay ``test_weather``'s tape of it."""
    return pytest.param(
        framework, marks=pytest.mark.callgate_tape(name=f"test_weather[{framework}]")
    )


def report(tape: Any, **result: Any) -> None:
    result["turns"] = [
        [turn.path.name, turn.report.status.value, turn.report.blocking_codes]
        for turn in tape.turns
    ]
    if (faulted := tape.faulted) is not None:
        result["faulted"] = [faulted.served, faulted.requests_after, faulted.refused_after]
    print("RESULT " + json.dumps(result, sort_keys=True))


@pytest.mark.parametrize("framework", list(AGENTS))
def test_weather(callgate_tape: Any, framework: str) -> None:
    result = outcome(AGENTS[framework])
    assert result == {"ran": ASKED, "answer": "Hello there"}
    report(callgate_tape, **result)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("framework", [recorded_by(framework) for framework in AGENTS])
def test_weather_fault(callgate_tape: Any, framework: str, kind: str) -> None:
    """Every fault served from the recorded tape; the result is pinned by the test that runs
    this suite."""
    callgate_tape.mutate(kind)
    report(callgate_tape, kind=kind, **outcome(AGENTS[framework]))


@pytest.mark.parametrize("kind", ["reuse_slot", "truncate", "provider_error"])
@pytest.mark.parametrize("framework", [recorded_by(framework) for framework in AGENTS])
def test_weather_agent_never_runs_a_call_the_model_did_not_make(
    callgate_tape: Any, framework: str, kind: str
) -> None:
    """The README's fault example, as written there, for each framework."""
    callgate_tape.mutate(kind)  # every recorded turn served as that fault
    ran = outcome(AGENTS[framework])["ran"]  # it may stop, raise or answer
    assert callgate_tape.faulted.served
    assert all(call in ASKED for call in ran)


def test_openai_agents_against_a_serve_scenario() -> None:
    """openai-agents against ``callgate serve``: the scenario's tool turn, then its answer."""
    ran: Ran = []
    answer = openai_agents_weather(ran, os.environ["APP_SERVE_URL"])
    print("RESULT " + json.dumps({"ran": sorted(ran, key=json.dumps), "answer": answer}))
