"""A user's own agent tests with ``callgate_tape``: one weather agent in pydantic-ai and in
openai-agents (``OpenAIChatCompletionsModel``, ``Runner.run_streamed``), as their docs build one.

``tests/test_agents.py`` copies this file into a temporary folder as ``test_agents.py`` and runs
it with ``.venv-apps``' pytest. The agent has one tool, ``get_weather(city)``; the model asks for
it twice in one turn (Paris, Oslo), then answers. Each test prints one ``RESULT {json}`` line:
the tools the agent ran (with their arguments, sorted: a framework may run them concurrently),
the model's stream as the agent saw it, its answer or the exception it raised, and what the tape
served. The ``guarded`` tests hand the agent ``callgate.guarded(AsyncOpenAI(...))``. ``APP_KINDS``
lists the faults the fault tests take; ``APP_SERVE_URL`` and ``APP_SERVE_RESPONSES_URL`` are the
base URLs of ``callgate serve``'s Chat Completions and Responses scenarios.
"""

from __future__ import annotations

import asyncio
import json
import os
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest

PROMPT = "What is the weather in Paris and in Oslo?"
KINDS = [kind for kind in os.environ.get("APP_KINDS", "truncate").split(",") if kind]
#: The faults the guarded agent meets, on its tape and from ``callgate serve``.
GUARDED_KINDS = ["reuse_slot", "truncate", "drop_terminal"]
#: What the recorded model asked for: a call the agent runs that is not one of these, the model
#: never made.
ASKED = [["get_weather", {"city": "Oslo"}], ["get_weather", {"city": "Paris"}]]

Ran = list[list[Any]]
#: The model's stream as the agent running now saw it: one line an event.
STREAMED: list[str] = []


def forecast(ran: Ran, city: str) -> str:
    ran.append(["get_weather", {"city": city}])
    return f"{city}: 18 C and sunny"


def client(guarded: bool = False, serve: str | None = None, fault: str | None = None) -> Any:
    """The agent's ``AsyncOpenAI``: from the tape's ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``
    (read now, while the tape has set them), or talking to ``callgate serve``'s ``serve`` (which
    takes any key) asking for ``fault``; handed to ``callgate.guarded`` when ``guarded``."""
    from openai import AsyncOpenAI

    key = "sk-serve-takes-any-key" if serve else None
    headers = {"x-callgate-mutate": fault} if fault else None
    made = AsyncOpenAI(max_retries=0, base_url=serve, api_key=key, default_headers=headers)
    if not guarded:
        return made
    import callgate

    return callgate.guarded(made)


def pydantic_ai_weather(ran: Ran, openai_client: Any) -> str:
    """The weather agent in pydantic-ai, streamed (an ``event_stream_handler`` streams each model
    request); its answer."""
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    provider = OpenAIProvider(openai_client=openai_client)
    agent = Agent(OpenAIChatModel("gpt-4o-mini", provider=provider))

    @agent.tool_plain
    def get_weather(city: str) -> str:
        return forecast(ran, city)

    async def drain(_: Any, events: Any) -> None:
        async for event in events:
            if type(event).__name__.startswith("Part"):  # the model's stream, as the agent saw it
                STREAMED.append(pydantic_ai_part(event))

    return str(agent.run_sync(PROMPT, event_stream_handler=drain).output)


def pydantic_ai_part(event: Any) -> str:
    """A ``Part*Event`` of pydantic-ai as one line: its kind, part index, and what it carries."""
    part = getattr(event, "delta", None) or getattr(event, "part", None)
    names = ("tool_name", "args", "args_delta", "content", "content_delta")
    said = {name: value for name in names if (value := getattr(part, name, None)) is not None}
    return f"{type(event).__name__} {event.index} {type(part).__name__} {said}"


def openai_agents_weather(ran: Ran, openai_client: Any) -> str:
    """The weather agent in openai-agents over Chat Completions, streamed; its answer."""
    from agents import OpenAIChatCompletionsModel

    model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=openai_client)
    return openai_agents_run(ran, model, search=False)


def openai_agents_responses_weather(ran: Ran, openai_client: Any) -> str:
    """The weather agent in openai-agents over the Responses API (``OpenAIResponsesModel``,
    which streams through ``responses.with_streaming_response``), with a second tool,
    ``search(query, limit)``; its answer."""
    from agents import OpenAIResponsesModel

    model = OpenAIResponsesModel(model="gpt-5.1", openai_client=openai_client)
    return openai_agents_run(ran, model, search=True)


def openai_agents_run(ran: Ran, model: Any, *, search: bool) -> str:
    """openai-agents' ``Runner.run_streamed`` of the weather agent on ``model``."""
    from agents import Agent, Runner, function_tool, set_tracing_disabled

    set_tracing_disabled(True)  # traces would go to OpenAI's host

    @function_tool
    def get_weather(city: str) -> str:
        return forecast(ran, city)

    @function_tool(name_override="search")
    def search_tool(query: str, limit: int) -> str:
        ran.append(["search", {"query": query, "limit": limit}])
        return "no ferries today"

    agent = Agent(
        name="weather",
        instructions="Answer with the weather of each city asked about.",
        model=model,
        tools=[get_weather, search_tool] if search else [get_weather],
    )

    async def run() -> str:
        result = Runner.run_streamed(agent, PROMPT)
        async for event in result.stream_events():
            if event.type == "raw_response_event":  # the model's stream, as the agent saw it
                STREAMED.append(f"{event.data.type} {getattr(event.data, 'delta', '')}")
        return str(result.final_output)

    return asyncio.run(run())


Weather = Callable[[Ran, Any], str]
AGENTS: dict[str, Weather] = {
    "pydantic_ai": pydantic_ai_weather,
    "openai_agents": openai_agents_weather,
}
#: The agents that meet ``callgate serve``: those with tapes, and openai-agents over the
#: Responses API, and the environment variable naming each one's scenario.
SERVED: dict[str, tuple[Weather, str]] = {
    "pydantic_ai": (pydantic_ai_weather, "APP_SERVE_URL"),
    "openai_agents": (openai_agents_weather, "APP_SERVE_URL"),
    "openai_agents_responses": (openai_agents_responses_weather, "APP_SERVE_RESPONSES_URL"),
}


def outcome(agent: Weather, openai_client: Any) -> dict[str, Any]:
    """What the agent did with ``openai_client``: the tools it ran, what it streamed, and its
    answer or what it raised (with the chain of exceptions it raised from or while handling,
    and the blocking codes of a ``callgate.Blocked`` in it)."""
    ran: Ran = []
    STREAMED.clear()
    try:
        got: dict[str, Any] = {"answer": agent(ran, openai_client)}
    except Exception as error:  # what the framework raises is what the test pins
        got = {"raised": type(error).__name__, **chain(error)}
    return {"ran": sorted(ran, key=json.dumps), "streamed": list(STREAMED), **got}


def chain(error: BaseException) -> dict[str, Any]:
    """The exceptions ``error`` was raised from or while handling, outermost first, and the
    blocking codes of the first ``Blocked`` among them."""
    import callgate

    found: dict[str, Any] = {"chain": []}
    seen: BaseException | None = error
    while seen is not None and len(found["chain"]) < 8:
        found["chain"].append(type(seen).__name__)
        if isinstance(seen, callgate.Blocked) and "blocked" not in found:
            found["blocked"] = seen.report.blocking_codes
        seen = seen.__cause__ or seen.__context__
    return found


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
    result = outcome(AGENTS[framework], client())
    assert (result["ran"], result["answer"]) == (ASKED, "Hello there")
    report(callgate_tape, **result)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("framework", [recorded_by(framework) for framework in AGENTS])
def test_weather_fault(callgate_tape: Any, framework: str, kind: str) -> None:
    """Every fault served from the recorded tape; the result is pinned by the test that runs
    this suite."""
    callgate_tape.mutate(kind)
    report(callgate_tape, kind=kind, **outcome(AGENTS[framework], client()))


@pytest.mark.parametrize("kind", ["reuse_slot", "truncate", "provider_error"])
@pytest.mark.parametrize("framework", [recorded_by(framework) for framework in AGENTS])
def test_weather_agent_never_runs_a_call_the_model_did_not_make(
    callgate_tape: Any, framework: str, kind: str
) -> None:
    """The fault example of docs/own-tests.md, as written there, for each framework."""
    callgate_tape.mutate(kind)  # every recorded turn served as that fault
    ran = outcome(AGENTS[framework], client())["ran"]  # it may stop, raise or answer
    assert callgate_tape.faulted.served
    assert all(call in ASKED for call in ran)


@pytest.mark.parametrize("framework", [recorded_by(framework) for framework in AGENTS])
def test_weather_guarded(callgate_tape: Any, framework: str) -> None:
    """The agent handed ``callgate.guarded(AsyncOpenAI(...))``, on its recorded tape as it is."""
    report(callgate_tape, **outcome(AGENTS[framework], client(guarded=True)))


@pytest.mark.parametrize("kind", GUARDED_KINDS)
@pytest.mark.parametrize("framework", [recorded_by(framework) for framework in AGENTS])
def test_weather_guarded_fault(callgate_tape: Any, framework: str, kind: str) -> None:
    """The guarded agent on a fault of its recorded tape; the result is pinned by the test that
    runs this suite."""
    callgate_tape.mutate(kind)
    report(callgate_tape, kind=kind, **outcome(AGENTS[framework], client(guarded=True)))


@pytest.mark.parametrize("fault", ["", *GUARDED_KINDS])
@pytest.mark.parametrize("guarded", ["unguarded", "guarded"])
@pytest.mark.parametrize("framework", list(SERVED))
def test_weather_against_a_serve_scenario(framework: str, guarded: str, fault: str) -> None:
    """The agent against its ``callgate serve`` scenario, its tool turn served as ``fault``
    (none: as it is), its client handed to ``callgate.guarded`` or not; pinned by the test that
    runs this suite."""
    agent, variable = SERVED[framework]
    url = os.environ[variable]
    restart_scenario(url)
    openai_client = client(guarded == "guarded", url, fault or None)
    print("RESULT " + json.dumps(outcome(agent, openai_client)))


def restart_scenario(url: str) -> None:
    """``POST /s/<name>/reset``: the next request to ``url`` gets the scenario's first turn."""
    reset = url.removesuffix("/v1") + "/reset"
    with urllib.request.urlopen(urllib.request.Request(reset, data=b"", method="POST")):
        pass
