"""A user's own test suite that uses ``callgate_tape``: real SDK clients, a small agent loop.

``tests/test_tape.py`` copies this file into a temporary folder as ``test_app.py`` and runs it
with ``.venv-apps``' pytest (the SDKs, pytest-xdist and callgate installed side by side, as in an
app's environment). Each test prints one ``RESULT {json}`` line: what the app got, and the
statuses of the tape's turns. Environment variables vary the app between runs: ``APP_MODEL``,
``APP_EXTRA`` (one more request at the end), ``APP_SEARCH_TOOL`` (a second tool), and
``APP_REDACTION`` and ``APP_ALLOW`` (the marker).
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest

MODEL = os.environ.get("APP_MODEL", "gpt-4o-mini")
#: Planted where a tape must never keep them: prompt, system message, tool result, query string.
PROMPT = "What is the weather in Paris? CANARY-PROMPT-8d1e"
SYSTEM = "You are a travel agent. CANARY-SYSTEM-51c2"
TOOL_RESULT = "CANARY-TOOL-RESULT-3b7a: 18 C and sunny"
QUERY = {"canary": "CANARY-QUERY-9e4f"}
WEATHER = {
    "type": "object",
    "required": ["city"],
    "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
}
MARK = pytest.mark.callgate_tape(
    redaction=os.environ.get("APP_REDACTION", "replay"),
    allow=json.loads(os.environ.get("APP_ALLOW", "[]")),
)


def report(tape: Any, **result: Any) -> None:
    result["turns"] = [turn.report.status.value for turn in tape.turns]
    print("RESULT " + json.dumps(result, sort_keys=True))


def openai_tools() -> list[dict[str, Any]]:
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}]
    if os.environ.get("APP_SEARCH_TOOL"):  # the app gained a tool since the recording
        tools.append({"type": "function", "function": {"name": "search", "parameters": {}}})
    return tools


def stream_turn(client: Any, messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, str]]]:
    """One streamed Chat Completions turn: its text and its calls, accumulated by index."""
    stream = client.chat.completions.create(
        model=MODEL, stream=True, messages=messages, tools=openai_tools()
    )
    text, calls = "", {}
    for chunk in stream:
        for choice in chunk.choices:
            text += choice.delta.content or ""
            for call in choice.delta.tool_calls or []:
                slot = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                slot["id"] = call.id or slot["id"]
                if call.function:
                    slot["name"] = call.function.name or slot["name"]
                    slot["arguments"] += call.function.arguments or ""
    return text, [calls[index] for index in sorted(calls)]


@MARK
def test_openai_tool_loop(callgate_tape: Any) -> None:
    import openai

    client = openai.OpenAI(max_retries=0, default_query=QUERY)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": PROMPT},
    ]
    _, calls = stream_turn(client, messages)
    messages.append(
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": call["arguments"]},
                }
                for call in calls
            ],
        }
    )
    messages += [
        {"role": "tool", "tool_call_id": call["id"], "content": TOOL_RESULT} for call in calls
    ]
    answer, _ = stream_turn(client, messages)
    if os.environ.get("APP_EXTRA"):
        messages.append({"role": "user", "content": "And tomorrow?"})
        stream_turn(client, messages)
    report(callgate_tape, calls=[[c["name"], c["arguments"]] for c in calls], answer=answer)


@MARK
def test_openai_async(callgate_tape: Any) -> None:
    import openai

    async def turn() -> str:
        client = openai.AsyncOpenAI(max_retries=0)
        stream = await client.chat.completions.create(
            model=MODEL,
            stream=True,
            messages=[{"role": "user", "content": PROMPT}],
            tools=openai_tools(),
        )
        arguments = ""
        async for chunk in stream:
            for choice in chunk.choices:
                for call in choice.delta.tool_calls or []:
                    arguments += (call.function.arguments or "") if call.function else ""
        return arguments

    report(callgate_tape, arguments=asyncio.run(turn()))


@MARK
def test_anthropic(callgate_tape: Any) -> None:
    import anthropic

    client = anthropic.Anthropic(max_retries=0)
    with client.messages.stream(
        model="claude-sonnet-4-5",
        max_tokens=512,
        system=SYSTEM,
        messages=[{"role": "user", "content": PROMPT}],
        tools=[{"name": "get_weather", "input_schema": WEATHER}],
    ) as stream:
        message = stream.get_final_message()
    report(
        callgate_tape,
        calls=[[block.name, block.input] for block in message.content if block.type == "tool_use"],
    )


@MARK
def test_gemini(callgate_tape: Any) -> None:
    from google import genai
    from google.genai import types

    client = genai.Client()
    declaration = types.FunctionDeclaration(name="get_weather", parameters_json_schema=WEATHER)
    calls = []
    for chunk in client.models.generate_content_stream(
        model="gemini-2.5-flash",
        contents=PROMPT,
        config=types.GenerateContentConfig(tools=[types.Tool(function_declarations=[declaration])]),
    ):
        calls += [[call.name, call.args] for call in chunk.function_calls or []]
    report(callgate_tape, calls=calls)


@MARK
def test_mistral(callgate_tape: Any) -> None:
    from mistralai.client import Mistral

    client = Mistral(
        api_key=os.environ.get("MISTRAL_API_KEY", "unused"),
        server_url=callgate_tape.base_url("mistral"),
    )
    calls = []
    for event in client.chat.stream(
        model="mistral-small-latest",
        tools=openai_tools(),
        messages=[{"role": "user", "content": PROMPT}],
    ):
        for choice in event.data.choices:
            calls += [
                [call.function.name, call.function.arguments]
                for call in choice.delta.tool_calls or []
            ]
    report(callgate_tape, calls=calls)


@MARK
def test_ollama(callgate_tape: Any) -> None:
    import ollama

    client = ollama.Client()  # OLLAMA_HOST points at the tape
    calls = []
    for part in client.chat(
        model="qwen3:8b",
        stream=True,
        tools=openai_tools(),
        messages=[{"role": "user", "content": PROMPT}],
    ):
        calls += [
            [call.function.name, dict(call.function.arguments)]
            for call in part.message.tool_calls or []
        ]
    report(callgate_tape, calls=calls)


@pytest.mark.parametrize("city", ["Paris", "Oslo"])
@MARK
def test_openai_parallel_workers(callgate_tape: Any, city: str) -> None:
    import openai

    client = openai.OpenAI(max_retries=0)
    _, calls = stream_turn(client, [{"role": "user", "content": f"Weather in {city}?"}])
    report(
        callgate_tape,
        calls=[[c["name"], c["arguments"]] for c in calls],
        worker=os.environ.get("PYTEST_XDIST_WORKER", ""),
    )


@MARK
def test_langchain(callgate_tape: Any) -> None:
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(model=MODEL, streaming=True, max_retries=0).bind_tools(openai_tools())
    message = None
    for chunk in model.stream(PROMPT):
        message = chunk if message is None else message + chunk
    assert message is not None
    report(callgate_tape, calls=[[call["name"], call["args"]] for call in message.tool_calls])


@MARK
def test_openai_not_streamed(callgate_tape: Any) -> None:
    import openai

    client = openai.OpenAI(max_retries=0)
    completion = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": PROMPT}], tools=openai_tools()
    )
    message = completion.choices[0].message
    report(
        callgate_tape,
        text=message.content,
        calls=[[call.function.name, call.function.arguments] for call in message.tool_calls or []],
    )


@pytest.mark.parametrize("kind", os.environ.get("APP_KINDS", "truncate").split(","))
@pytest.mark.callgate_tape(name="test_openai_tool_loop")
def test_openai_first_turn_on_every_fault(callgate_tape: Any, kind: str) -> None:
    """The tool loop's recorded first turn, served as each fault: what the app's accumulator
    gets, beside callgate's verdict on what was served."""
    import openai

    callgate_tape.mutate(kind)
    client = openai.OpenAI(max_retries=0, default_query=QUERY)
    try:
        _, calls = stream_turn(
            client, [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}]
        )
        got: Any = [[c["name"], c["arguments"]] for c in calls]
    except openai.APIError as error:
        got = type(error).__name__
    report(
        callgate_tape,
        kind=kind,
        calls=got,
        codes=[turn.report.blocking_codes for turn in callgate_tape.turns],
    )
