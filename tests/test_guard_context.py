"""What a guarded loop reads is its own stream only, and a stream already closed is refused.

The guard reads google-genai's and cohere's streams by wrapping the SDK's SSE reader for the
whole process; the loop it is reading for is noted only while the loop asks its stream for an
item. An app that reads another stream of the same SDK, unguarded, between two items of a
guarded loop (or after it) must get that stream as the SDK gives it, and the guarded turn must
be judged on its own events; one read through aiohttp and left early has its response closed
as the loop ends. mistralai's ``EventStream`` closed before the guard saw it gives
no events at all: that is a caller's mistake, told at once, not a turn blocked later; closed by
the app between two items of a guarded loop, its response closes at once. A guarded anthropic
helper's ``text_stream`` is the text the SDK's own gives. A mistralai turn is judged on its
whole body, what comes after its ``[DONE]`` too. The real google-genai, mistralai and
anthropic SDKs, sync and async, in one interpreter of the apps environment, against
``callgate serve`` on loopback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from callgate.cli.serve import FakeProvider, collect
from tests.conftest import CONFORMANCE, load
from tests.proxy_harness import app_script_output

pytestmark = pytest.mark.sdk

GEMINI = "gemini/valid_parallel_two_chunks"
MISTRAL = "mistral/native_parallel_calls"
ANTHROPIC = "anthropic/valid_text_then_two_tools"
SCHEMAS = {
    name: load(CONFORMANCE / f"{name}.json")["tool_schemas"]
    for name in (GEMINI, MISTRAL, ANTHROPIC)
}
APP = """
import asyncio, json, sys
import aiohttp
import httpx
import callgate
from google import genai
from google.genai import types
from mistralai.client import Mistral

import anthropic

base, gemini_fixture, mistral_fixture, anthropic_fixture = sys.argv[1:5]
schemas = json.loads(sys.argv[5])
paced = sys.argv[9]
declarations = [
    {"name": name, "parameters_json_schema": schema}
    for name, schema in schemas[gemini_fixture].items()
]
gemini_tools = [{"function_declarations": declarations}]
config = types.GenerateContentConfig(tools=gemini_tools)
mistral_tools = [
    {"type": "function", "function": {"name": name, "parameters": schema}}
    for name, schema in schemas[mistral_fixture].items()
]
options = types.HttpOptions(
    base_url=f"{base}/f/{gemini_fixture}/",
    httpx_async_client=httpx.AsyncClient(),
    retry_options=types.HttpRetryOptions(attempts=1),
)
client = genai.Client(api_key="k", http_options=options)

def stream():
    return client.models.generate_content_stream(model="m", contents="Hi", config=config)

def calls(guarded):
    return [[c.name, c.arguments] for c in guarded.calls]

def run_sync():
    guarded = callgate.guard(stream(), gemini_tools)
    between = None
    for n, _ in enumerate(guarded):
        if n == 0:
            between = len(list(stream()))
    after = len(list(stream()))
    return {"calls": calls(guarded), "between": between, "after": after}

async def run_async():
    async def count():
        return len([c async for c in await client.aio.models.generate_content_stream(
            model="m", contents="Hi", config=config)])
    guarded = callgate.guard(
        await client.aio.models.generate_content_stream(model="m", contents="Hi", config=config),
        gemini_tools,
    )
    between = None
    n = 0
    async for _ in guarded:
        if n == 0:
            between = await count()
        n += 1
    return {"calls": calls(guarded), "between": between, "after": await count()}

# google-genai streams through an aiohttp session where the app gives one (or, without an httpx
# client, where aiohttp is installed); the session tells its responses to a trace.
async def gemini_aiohttp_left():
    responses = []

    async def ended(session, context, params):
        responses.append(params.response)

    trace = aiohttp.TraceConfig()
    trace.on_request_end.append(ended)
    async with aiohttp.ClientSession(trace_configs=[trace]) as session:
        options = types.HttpOptions(
            base_url=f"{paced}/f/{gemini_fixture}/",
            aiohttp_client=session,
            retry_options=types.HttpRetryOptions(attempts=1),
        )
        models = genai.Client(api_key="k", http_options=options).aio.models
        made = await models.generate_content_stream(model="m", contents="Hi", config=config)
        items = aiter(callgate.guard(made, gemini_tools))
        await anext(items)
        await items.aclose()
        return [response.closed for response in responses]

def refused(make):
    try:
        make()
    except callgate.UsageError as error:
        return str(error)
    return None

async def closed_async(chat):
    made = await stream_async_of(chat)
    await made.close()
    return refused(lambda: callgate.guard(made, mistral_tools))

def closed_sync(chat):
    made = stream_of(chat)
    made.close()
    return refused(lambda: callgate.guard(made, mistral_tools))

def closed_by_the_app_sync(chat):
    made = stream_of(chat)
    for _ in callgate.guard(made, mistral_tools):
        made.close()
        return made.response.is_closed

async def closed_by_the_app_async(chat):
    made = await stream_async_of(chat)
    async for _ in callgate.guard(made, mistral_tools):
        await made.close()
        return made.response.is_closed

def anthropic_text(guarded):
    client = anthropic.Anthropic(
        base_url=f"{base}/f/{anthropic_fixture}", api_key="k", max_retries=0
    )
    tools = [{"name": n, "input_schema": s} for n, s in schemas[anthropic_fixture].items()]
    made = client.messages.stream(
        model="m", max_tokens=64, messages=[{"role": "user", "content": "Hi"}], tools=tools
    )
    with (callgate.guard(made, tools) if guarded else made) as stream:
        return "".join(stream.text_stream)

async def anthropic_text_async(guarded):
    client = anthropic.AsyncAnthropic(
        base_url=f"{base}/f/{anthropic_fixture}", api_key="k", max_retries=0
    )
    tools = [{"name": n, "input_schema": s} for n, s in schemas[anthropic_fixture].items()]
    made = client.messages.stream(
        model="m", max_tokens=64, messages=[{"role": "user", "content": "Hi"}], tools=tools
    )
    async with (callgate.guard(made, tools) if guarded else made) as stream:
        return "".join([text async for text in stream.text_stream])

def outcome(run):
    try:
        return run()
    except Exception as error:  # each case's own outcome, the others still run
        return f"{type(error).__name__}: {error}"

# A real server that answers every POST with ``body``: what serve cannot send, a chunk after
# ``[DONE]``, as a gateway may.
# With ``missing``, the length it states is that many bytes more than it sends: the connection
# closes mid-body.
def after_done_server(body, missing=0):
    import http.server, threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(body) + missing))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server

HI = [{"role": "user", "content": "Hi"}]

def stream_of(chat):
    return chat.stream(model="m", messages=HI, tools=mistral_tools)

async def stream_async_of(chat):
    return await chat.stream_async(model="m", messages=HI, tools=mistral_tools)

# A guarded turn read to its end: the items the loop got, the codes that blocked it, and
# whether its response is closed after.
def turn(chat):
    made, seen = stream_of(chat), 0
    try:
        for _ in callgate.guard(made, mistral_tools):
            seen += 1
    except callgate.Blocked as blocked:
        return [seen, blocked.report.blocking_codes, made.response.is_closed]
    return [seen, [], made.response.is_closed]

async def turn_async(chat):
    made, seen = await stream_async_of(chat), 0
    try:
        async for _ in callgate.guard(made, mistral_tools):
            seen += 1
    except callgate.Blocked as blocked:
        return [seen, blocked.report.blocking_codes, made.response.is_closed]
    return [seen, [], made.response.is_closed]

def server_chat(body, missing=0):
    server = after_done_server(body, missing)
    return Mistral(api_key="k", server_url=f"http://127.0.0.1:{server.server_address[1]}").chat

turn_body, through_done, unfinished = (argument.encode() for argument in sys.argv[6:9])
BODIES = {
    # the turn, then its last chunk again after its [DONE]
    "after done": (turn_body, 0),
    # through its [DONE], then the start of an event cut inside a UTF-8 character
    "cut after done": (through_done + b"data: \\xe2\\x82", 0),
    # its calls without their finish reason, then the connection closes with bytes owed
    "wire cut": (unfinished, 100),
    # the whole turn through its [DONE], then the connection closes with bytes owed
    "done then cut": (through_done, 100),
}

def left_by_the_app_sync(chat):
    made = stream_of(chat)
    items = iter(callgate.guard(made, mistral_tools))
    next(items)
    items.close()
    return made.response.is_closed

async def left_by_the_app_async(chat):
    made = await stream_async_of(chat)
    items = aiter(callgate.guard(made, mistral_tools))
    await anext(items)
    await items.aclose()
    return made.response.is_closed

def closed_before_the_loop_sync(chat):
    made = stream_of(chat)
    callgate.guard(made, mistral_tools)
    made.close()
    return made.response.is_closed

async def closed_before_the_loop_async(chat):
    made = await stream_async_of(chat)
    callgate.guard(made, mistral_tools)
    await made.close()
    return made.response.is_closed

chat = Mistral(api_key="k", server_url=f"{base}/f/{mistral_fixture}").chat

# A client of its own for each async case that reads a body to its end: a connection pooled
# under one asyncio.run cannot serve the next.
def fresh_chat():
    return Mistral(api_key="k", server_url=f"{base}/f/{mistral_fixture}").chat
print(json.dumps({
    "gemini": {
        "sync": outcome(run_sync),
        "async": outcome(lambda: asyncio.run(run_async())),
    },
    "gemini through aiohttp, left": outcome(lambda: asyncio.run(gemini_aiohttp_left())),
    "mistral closed": {
        "sync": outcome(lambda: closed_sync(chat)),
        "async": outcome(lambda: asyncio.run(closed_async(chat))),
    },
    "anthropic text": {
        "unguarded": outcome(lambda: anthropic_text(False)),
        "guarded": outcome(lambda: anthropic_text(True)),
        "unguarded async": outcome(lambda: asyncio.run(anthropic_text_async(False))),
        "guarded async": outcome(lambda: asyncio.run(anthropic_text_async(True))),
    },
    "mistral closed by the app": {
        "sync": outcome(lambda: closed_by_the_app_sync(chat)),
        "async": outcome(lambda: asyncio.run(closed_by_the_app_async(chat))),
    },
    **{
        f"mistral {name}": {
            "sync": outcome(lambda: turn(server_chat(*body))),
            "async": outcome(lambda: asyncio.run(turn_async(server_chat(*body)))),
        }
        for name, body in BODIES.items()
    },
    "mistral left by the app": {
        "sync": outcome(lambda: left_by_the_app_sync(chat)),
        "async": outcome(lambda: asyncio.run(left_by_the_app_async(fresh_chat()))),
    },
    "mistral read to the end": {
        "sync": outcome(lambda: turn(chat)),
        "async": outcome(lambda: asyncio.run(turn_async(fresh_chat()))),
    },
    "mistral closed before the loop": {
        "sync": outcome(lambda: closed_before_the_loop_sync(chat)),
        "async": outcome(lambda: asyncio.run(closed_before_the_loop_async(fresh_chat()))),
    },
}))
"""


@pytest.fixture(scope="module")
def outcomes() -> Iterator[dict[str, Any]]:
    fixtures = collect([CONFORMANCE])
    server = FakeProvider(fixtures).start()
    # Events 50 ms apart: a turn the app leaves after its first item is still being sent.
    paced = FakeProvider(fixtures, timing=0.05).start()
    try:
        yield app_script_output(
            APP,
            server.url,
            GEMINI,
            MISTRAL,
            ANTHROPIC,
            json.dumps(SCHEMAS),
            after_done_body(),
            through_done_body(),
            unfinished_body(),
            paced.url,
        )
    finally:
        server.close()
        paced.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_unguarded_stream_read_between_a_guarded_loops_items_is_its_own(
    outcomes: dict[str, Any], mode: str
) -> None:
    turn = load(CONFORMANCE / f"{GEMINI}.json")
    assert outcomes["gemini"][mode] == {
        "calls": [[c["name"], c["arguments"]] for c in turn["expect"]["calls"]],
        "between": len(turn["chunks"]),
        "after": len(turn["chunks"]),
    }


def test_a_guarded_gemini_turn_read_through_aiohttp_closes_its_response_as_the_loop_ends(
    outcomes: dict[str, Any],
) -> None:
    """Left after one item while the server is still sending: the one response is closed by the
    time ``aclose`` returns, not when the event loop finalises google-genai's own reader."""
    assert outcomes["gemini through aiohttp, left"] == [True]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_mistralai_stream_closed_before_the_guard_saw_it_is_refused(
    outcomes: dict[str, Any], mode: str
) -> None:
    assert outcomes["mistral closed"][mode] == "guard() takes a stream nothing has read from yet"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_mistralai_stream_the_app_closes_between_items_closes_its_response_at_once(
    outcomes: dict[str, Any], mode: str
) -> None:
    """The SDK's own close waits while the guarded loop asks it for an item, and only then."""
    assert outcomes["mistral closed by the app"][mode] is True


def test_a_guarded_anthropic_helpers_text_stream_is_the_sdks_own(outcomes: dict[str, Any]) -> None:
    events = load(CONFORMANCE / f"{ANTHROPIC}.json")["events"]
    text = "".join(
        e["delta"]["text"]
        for e in events
        if e["type"] == "content_block_delta" and e["delta"]["type"] == "text_delta"
    )
    assert text
    assert outcomes["anthropic text"] == {
        "unguarded": text,
        "guarded": text,
        "unguarded async": text,
        "guarded async": text,
    }


def mistral_events() -> list[str]:
    return [f"data: {json.dumps(c)}\n\n" for c in load(CONFORMANCE / f"{MISTRAL}.json")["chunks"]]


def through_done_body() -> str:
    """The mistral turn's body, through its ``[DONE]``."""
    return "".join([*mistral_events(), "data: [DONE]\n\n"])


def unfinished_body() -> str:
    """The mistral turn's events, its calls without the finish reason that ends them."""
    chunks = load(CONFORMANCE / f"{MISTRAL}.json")["chunks"]
    chunks[-1]["choices"][0]["finish_reason"] = None
    return "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks)


def after_done_body() -> str:
    """The mistral turn's body, then one more chunk after its ``[DONE]``: its last chunk again."""
    return through_done_body() + mistral_events()[-1]


#: What a guarded mistralai turn gives the loop, what blocks it and whether its response is
#: closed after, for each body (the app's ``BODIES``); mistralai stops at ``[DONE]``, and what
#: the body holds after it is read when the SDK's stream ends.
WHOLE_BODY = {
    # the last chunk again after [DONE]: the turn goes on there, so the item of its terminal
    # evidence, held until then, never reaches the loop
    "mistral after done": [1, ["delta_after_terminal", "duplicate_terminal"], True],
    # bytes after [DONE] that end inside a UTF-8 character: text no profile reads
    "mistral cut after done": [1, ["unsupported_event"], True],
    # the connection breaks before the finish reason: both chunks reach the loop (neither is
    # terminal evidence), and the calls, never ended, are blocked at the end
    "mistral wire cut": [2, ["missing_terminal"], True],
    # the connection breaks after [DONE]: the turn passed on what came, and its response closes
    "mistral done then cut": [2, [], True],
    "mistral read to the end": [2, [], True],
}


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("case", sorted(WHOLE_BODY))
def test_a_guarded_mistralai_turn_is_judged_on_its_whole_body_and_its_response_closed(
    outcomes: dict[str, Any], case: str, mode: str
) -> None:
    assert len(load(CONFORMANCE / f"{MISTRAL}.json")["chunks"]) == 2
    assert outcomes[case][mode] == WHOLE_BODY[case]


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(
    "case",
    [
        "mistral left by the app",  # one item taken, then the guarded iterator closed
        "mistral closed before the loop",  # closed after guard(), before its loop
    ],
)
def test_a_guarded_mistralai_response_is_closed_however_the_app_leaves_it(
    outcomes: dict[str, Any], case: str, mode: str
) -> None:
    assert outcomes[case][mode] is True
