"""Agent frameworks behind ``callgate.transport()``: the weather agent of each (one tool,
``get_weather(city)``; the model asks for Paris and Oslo in one turn, then answers), built as the
framework's docs build it, run against a ``callgate serve`` scenario, unguarded and guarded.

Run by ``tests/test_frameworks.py``, once per environment: the apps environment (LangGraph,
smolagents, agno, pydantic-ai, openai-agents) and the frameworks environment (CrewAI native and
through LiteLLM, strands-agents: both want openai 2, the others openai 3). ``APP_SERVE_URL`` is
the scenario's base URL (``.../s/weather/v1``), ``APP_CASES`` a JSON list of ``{"id",
"framework", "mode", "fault", "guarded"}``: ``mode`` is ``sync`` or ``async`` (the framework's
two ways to run an agent, where it has two), ``fault`` a ``callgate mutate`` kind the scenario
serves its tool turn as (``""``: as it is). Prints one ``RESULT {json}`` line per case (on a
line of its own: frameworks print to stdout too): the tools the agent ran, its answer or what the
user saw (the chain of exceptions, an error event the framework turned into one, and callgate's
line where the user can read it), the requests the scenario served, and the verdicts the
transport told.

The recipe of each framework is the function named after it: what a user writes to put callgate
in front of that framework (``docs/frameworks.md`` shows the same lines).
"""

from __future__ import annotations

import asyncio
import json
import os
import urllib.request
from collections.abc import Callable
from typing import Any

import httpx

import callgate

PROMPT = "What is the weather in Paris and in Oslo?"
MODEL = "gpt-4o-mini"
KEY = "sk-serve-takes-any-key"

Ran = list[list[Any]]


class Case:
    """One run: the scenario's URL, the fault its tool turn is served as, whether callgate is in
    front, and what the agent's tool and the transport record."""

    def __init__(self, case: dict[str, Any], url: str) -> None:
        self.url, self.fault, self.guarded = url, case["fault"], case["guarded"]
        self.asynchronous = case["mode"] == "async"
        self.ran: Ran = []
        self.verdicts: list[list[Any]] = []

    @property
    def headers(self) -> dict[str, str]:
        """The request headers that ask ``callgate serve`` for the fault."""
        return {"x-callgate-mutate": self.fault} if self.fault else {}

    def get_weather(self, city: str) -> str:
        """The weather of ``city``."""
        self.ran.append(["get_weather", {"city": city}])
        return f"{city}: 18 C and sunny"

    def told(self, report: Any) -> None:
        self.verdicts.append([report.status.value, report.blocking_codes])

    def http_client(self) -> httpx.Client | None:
        """The ``httpx.Client`` an SDK is given: callgate's transport inside when guarded."""
        if not self.guarded:
            return None
        return httpx.Client(transport=callgate.transport(on_verdict=self.told))

    def http_async_client(self) -> httpx.AsyncClient | None:
        if not self.guarded:
            return None
        return httpx.AsyncClient(transport=callgate.async_transport(on_verdict=self.told))

    def openai_client(self) -> Any:
        """The ``AsyncOpenAI`` (``OpenAI``) a framework that takes a client is handed."""
        import openai

        made = openai.AsyncOpenAI if self.asynchronous else openai.OpenAI
        http = self.http_async_client() if self.asynchronous else self.http_client()
        options = {"default_headers": self.headers, "max_retries": 0}
        return made(base_url=self.url, api_key=KEY, http_client=http, **options)


def langgraph(case: Case) -> str:
    """LangGraph's prebuilt ReAct agent over langchain-openai's ``ChatOpenAI``: callgate's
    transport in both of its clients, since ``invoke`` uses the one and ``ainvoke`` the other."""
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent

    model = ChatOpenAI(
        model=MODEL,
        base_url=case.url,
        api_key=KEY,
        streaming=True,
        max_retries=0,
        default_headers=case.headers,
        http_client=case.http_client(),
        # langchain-openai's default async client is one per base URL for the whole process
        # (``_cached_async_httpx_client``), while each case runs its own event loop: a
        # connection pooled under a closed loop fails the next case with "Event loop is
        # closed", which is this app's doing, not the framework's. A client per case.
        http_async_client=case.http_async_client() or httpx.AsyncClient(),
    )
    agent = create_react_agent(model, [tool(case.get_weather)])
    asked = {"messages": [("user", PROMPT)]}
    answer = asyncio.run(agent.ainvoke(asked)) if case.asynchronous else agent.invoke(asked)
    return str(answer["messages"][-1].content)


def smolagents(case: Case) -> str:
    """smolagents' ``ToolCallingAgent`` over ``OpenAIModel``, streaming: the transport in the
    ``http_client`` of the client it makes (``client_kwargs``)."""
    from smolagents import OpenAIModel, ToolCallingAgent, tool

    def get_weather(city: str) -> str:
        """The weather of a city.

        Args:
            city: The city.
        """
        return case.get_weather(city)

    model = OpenAIModel(
        model_id=MODEL,
        api_base=case.url,
        api_key=KEY,
        client_kwargs={
            "max_retries": 0,
            "default_headers": case.headers,
            "http_client": case.http_client(),
        },
    )
    agent = ToolCallingAgent(
        tools=[tool(get_weather)], model=model, stream_outputs=True, max_steps=3, verbosity_level=0
    )
    return str(agent.run(PROMPT))


def agno(case: Case) -> str:
    """agno's ``Agent`` over ``OpenAIChat``, streamed: the transport in the clients it is handed
    (``client`` for ``run``, ``async_client`` for ``arun``)."""
    import openai
    from agno.agent import Agent
    from agno.models.openai import OpenAIChat

    options = {"base_url": case.url, "api_key": KEY, "max_retries": 0}
    options["default_headers"] = case.headers
    model = OpenAIChat(
        id=MODEL,
        client=openai.OpenAI(http_client=case.http_client(), **options),
        async_client=openai.AsyncOpenAI(http_client=case.http_async_client(), **options),
    )
    agent = Agent(model=model, tools=[case.get_weather], telemetry=False)
    if case.asynchronous:

        async def run() -> Any:
            return [event async for event in agent.arun(PROMPT, stream=True)]

        events = asyncio.run(run())
    else:
        events = list(agent.run(PROMPT, stream=True))
    return agno_outcome(events)


def agno_outcome(events: list[Any]) -> str:
    """agno reports a model's error as an event of the run, not an exception: its answer, or the
    error event's kind and content as the user reads them."""
    for event in events:
        if type(event).__name__ == "RunErrorEvent":
            raise FrameworkEvent(event.content)
    return "".join(
        str(event.content) for event in events if type(event).__name__ == "RunContentEvent"
    )


class FrameworkEvent(Exception):
    """An error event of a run (agno's ``RunErrorEvent``), raised here as an exception so that
    the test reads it as what the user sees; its message is the event's content."""


def pydantic_ai(case: Case) -> str:
    """pydantic-ai's ``Agent`` over ``OpenAIChatModel``, streamed: the transport in the
    ``AsyncOpenAI`` its provider is handed."""
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    case.asynchronous = True  # pydantic-ai runs on the async client, ``run_sync`` included
    provider = OpenAIProvider(openai_client=case.openai_client())
    agent = Agent(OpenAIChatModel(MODEL, provider=provider))
    agent.tool_plain(case.get_weather)

    async def run() -> str:
        async with agent.run_stream(PROMPT) as streamed:
            return str(await streamed.get_output())

    return asyncio.run(run())


def openai_agents(case: Case) -> str:
    """openai-agents' ``Runner.run_streamed`` over ``OpenAIChatCompletionsModel``: the transport
    in the ``AsyncOpenAI`` it is handed."""
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        Runner,
        function_tool,
        set_tracing_disabled,
    )

    set_tracing_disabled(True)  # traces would go to OpenAI's host
    case.asynchronous = True
    model = OpenAIChatCompletionsModel(model=MODEL, openai_client=case.openai_client())
    agent = Agent(name="weather", model=model, tools=[function_tool(case.get_weather)])

    async def run() -> str:
        result = Runner.run_streamed(agent, PROMPT)
        async for _ in result.stream_events():
            pass
        return str(result.final_output)

    return asyncio.run(run())


def crewai_agent(case: Case, llm: Any) -> str:
    """CrewAI's one-agent crew with the weather tool on ``llm``; its answer."""
    from crewai import Agent, Crew, Task
    from crewai.tools import tool

    @tool("get_weather")
    def get_weather(city: str) -> str:
        """The weather of a city."""
        return case.get_weather(city)

    agent = Agent(role="forecaster", goal="Tell the weather", backstory="", llm=llm)
    agent.tools = [get_weather]
    task = Task(description=PROMPT, expected_output="The weather", agent=agent)
    crew = Crew(agents=[agent], tasks=[task])
    if case.asynchronous:
        return str(asyncio.run(crew.kickoff_async()))
    return str(crew.kickoff())


def crewai(case: Case) -> str:
    """CrewAI's native OpenAI path: it builds its own clients, and hands every response to the
    ``interceptor`` it is given; the interceptor hands it to callgate's ``gate``."""
    from crewai import LLM
    from crewai.llms.hooks.base import BaseInterceptor

    gate = callgate.transport(on_verdict=case.told)

    class Callgate(BaseInterceptor[httpx.Request, httpx.Response]):
        def on_outbound(self, request: httpx.Request) -> httpx.Request:
            return gate.sent(request)  # type: ignore[no-any-return]

        def on_inbound(self, response: httpx.Response) -> httpx.Response:
            return gate.gate(response)  # type: ignore[no-any-return]

        async def aon_outbound(self, request: httpx.Request) -> httpx.Request:
            return gate.sent(request)  # type: ignore[no-any-return]

        async def aon_inbound(self, response: httpx.Response) -> httpx.Response:
            return gate.gate(response)  # type: ignore[no-any-return]

    llm = LLM(
        model=MODEL,
        base_url=case.url,
        api_key=KEY,
        stream=True,
        max_retries=0,
        default_headers=case.headers,
        interceptor=Callgate() if case.guarded else None,
    )
    return crewai_agent(case, llm)


def crewai_litellm(case: Case) -> str:
    """CrewAI through LiteLLM (``is_litellm=True``): the transport in LiteLLM's module-level
    sessions, which every LiteLLM call reads."""
    import litellm
    from crewai import LLM

    litellm.in_memory_llm_clients_cache.flush_cache()  # this test's cases share one process
    litellm.client_session = case.http_client()
    litellm.aclient_session = case.http_async_client()
    llm = LLM(
        model=f"openai/{MODEL}",
        is_litellm=True,
        base_url=case.url,
        api_key=KEY,
        stream=True,
        max_retries=0,
        extra_headers=case.headers,
    )
    return crewai_agent(case, llm)


def strands(case: Case) -> str:
    """strands-agents' ``Agent`` over its ``OpenAIModel``: the transport in the ``AsyncOpenAI``
    it is handed (strands runs the async client, its sync call included)."""
    from strands import Agent, tool
    from strands.models.openai import OpenAIModel

    case.asynchronous = True
    model = OpenAIModel(client=case.openai_client(), model_id=MODEL)
    agent = Agent(model=model, tools=[tool(case.get_weather)], callback_handler=None)
    return str(agent(PROMPT))


FRAMEWORKS: dict[str, Callable[[Case], str]] = {
    "crewai": crewai,
    "crewai_litellm": crewai_litellm,
    "strands": strands,
    "langgraph": langgraph,
    "smolagents": smolagents,
    "agno": agno,
    "pydantic_ai": pydantic_ai,
    "openai_agents": openai_agents,
}


def scenario(url: str, what: str) -> dict[str, Any]:
    """``POST /s/<name>/reset`` (``what="reset"``) or ``GET /s/<name>/status``."""
    address = url.removesuffix("/v1") + "/" + what
    request = urllib.request.Request(address, data=b"" if what == "reset" else None)
    with urllib.request.urlopen(request) as answer:
        return dict(json.loads(answer.read() or b"{}"))


def outcome(case: dict[str, Any], url: str) -> dict[str, Any]:
    """What the case's agent did: the tools it ran, its answer or what the user saw, the
    requests the scenario served, the transport's verdicts."""
    scenario(url, "reset")
    run = Case(case, url)
    try:
        got: dict[str, Any] = {"answer": FRAMEWORKS[case["framework"]](run)}
    except Exception as error:  # what the framework raises is what the test pins
        got = chain(error)
    return {
        "id": case["id"],
        "ran": sorted(run.ran, key=json.dumps),
        "requests": scenario(url, "status")["requests"],
        **got,
        "verdicts": run.verdicts,
    }


def chain(error: BaseException) -> dict[str, Any]:
    """The exceptions ``error`` was raised from or while handling, outermost first, each as its
    class name, and callgate's line when one of them carries it."""
    found: dict[str, Any] = {"raised": [], "line": None}
    seen: BaseException | None = error
    while seen is not None and len(found["raised"]) < 8:
        found["raised"].append(type(seen).__name__)
        line = next((ln for ln in str(seen).splitlines() if "callgate blocked" in ln), None)
        found["line"] = found["line"] or line
        seen = seen.__cause__ or seen.__context__
    return found


def main() -> None:
    url = os.environ["APP_SERVE_URL"]
    for case in json.loads(os.environ["APP_CASES"]):
        print("\nRESULT " + json.dumps(outcome(case, url)), flush=True)


if __name__ == "__main__":
    main()
