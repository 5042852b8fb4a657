"""A text-only voice-agent loop over the openai SDK's Realtime client, or an agent loop over its
Responses API WebSocket (``api: "responses"``), run in the apps environment against ``callgate
serve``; ``tests/test_realtime_sdk.py`` drives it.

    realtime_app.py < cases.json > results.json

Each case opens one session (``client.realtime.connect()``), sync or async, guarded with
``callgate.guard`` or not (``guard``: the connection, or the manager ``connect()`` returns),
with the case's fixture (``/f/<name>/``), mutation (``x-callgate-mutate``) and cut
(``x-callgate-abort-after``: then it reads until the socket closes). It sends its tools
(``session.update``), a user message and ``response.create``, then reads every event; at each
``response.done`` it runs the calls that response lists and, while ``turns`` remain, answers
them and asks for the next response. A ``Blocked`` is noted (its response and codes) and
reading goes on on the same connection, as an app that skips the blocked response does (an
``Unjudged`` the same). One interpreter runs every case; each result is printed under the
case's id, with the traceback of a case that crashed. Options of a case:

- ``queued``: the setup events sent on the manager before the connection opens;
- ``entered``: the connection opened with the manager's ``enter()``, without its ``with`` block;
- ``tools_as``: ``"models"``, function tools as the SDK's models; ``"generator"``, a generator
  the SDK's transform lists (the Responses API's);
- ``via: "resources"``: the setup sent through ``connection.session.update`` and its kin;
- ``model_update``: a second ``session.update`` after the first, the SDK's model, that sets only
  the instructions;
- ``update_on_manager``: the ``session.update`` sent on the manager once the connection is open
  (the SDK sends it before the connection's next message);
- ``iterate``: events read by iterating the connection, a new loop after each ``Blocked`` (where
  the SDK's own loop ends), not by ``recv()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import traceback
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

from openai import AsyncOpenAI, OpenAI
from openai.types.realtime.realtime_function_tool import RealtimeFunctionTool
from openai.types.realtime.realtime_session_create_request import RealtimeSessionCreateRequest
from openai.types.realtime.session_update_event import SessionUpdateEvent
from openai.types.responses import FunctionTool

import callgate

#: What the app says, and the API key it sends: no fixture may hold them.
CANARY_PROMPT = "canary-prompt-5d1e: weather in Paris, then book me a flight"
CANARY_INSTRUCTIONS = "canary-instructions-8b2f: you are a travel agent"
API_KEY = "sk-canary-key-3c9a7e"
USER = {
    "type": "message",
    "role": "user",
    "content": [{"type": "input_text", "text": CANARY_PROMPT}],
}


class Session:
    """What the app saw and did in one session."""

    def __init__(self, case: dict[str, Any]) -> None:
        self.case = case
        self.events: list[dict[str, Any]] = []
        self.ran: list[list[Any]] = []
        self.blocked: list[dict[str, Any]] = []
        self.unjudged: list[str] = []
        self.closed: str | None = None
        self.asked = 1

    def clients(self) -> dict[str, Any]:
        case = self.case
        headers = {"x-callgate-mutate": case["mutate"]} if case.get("mutate") else {}
        if case.get("abort_after") is not None:
            headers["x-callgate-abort-after"] = str(case["abort_after"])
        # A fixture, s/ a scenario, or (``root``) a server's route such as a tape's /openai.
        where = case.get("root") or f"{case.get('prefix', 'f')}/{case['fixture']}"
        return {
            "api_key": API_KEY,
            "base_url": f"http://{case['host']}/v1",
            "websocket_base_url": f"ws://{case['host']}/{where}/v1",
            "default_headers": headers,
            "max_retries": 0,
        }

    @property
    def responses(self) -> bool:
        """The Responses API's WebSocket mode, not the Realtime API."""
        return self.case.get("api") == "responses"

    def tools(self) -> Iterable[Any]:
        """The app's tools; ``tools_as: "models"``: its function tools as the SDK's models, in
        the dict event the app sends (the SDK dumps them as it writes the event); ``"generator"``:
        a generator the SDK's transform lists (the Responses API's)."""
        if self.case.get("tools_as") == "generator":
            return (tool for tool in self.case["tools"])
        if self.case.get("tools_as") != "models":
            return list(self.case["tools"])
        model = FunctionTool if self.responses else RealtimeFunctionTool
        return [model(**t) if t.get("type") == "function" else t for t in self.case["tools"]]

    def create(self, **fields: Any) -> dict[str, Any]:
        """A Responses ``response.create``: the HTTP body's fields, with the app's tools."""
        return {"type": "response.create", "model": "gpt-5", "tools": self.tools(), **fields}

    def setup(self) -> list[Any]:
        if self.responses:
            return [self.create(instructions=CANARY_INSTRUCTIONS, input=CANARY_PROMPT)]
        session = {
            "type": "realtime",
            "output_modalities": ["text"],
            "instructions": CANARY_INSTRUCTIONS,
            "tools": self.tools(),
        }
        updates: list[Any] = [{"type": "session.update", "session": session}]
        if self.case.get("model_update"):
            # The SDK writes a model without its unset members: the tools stay as they were.
            instructions = RealtimeSessionCreateRequest(
                type="realtime", instructions=CANARY_INSTRUCTIONS
            )
            updates.append(SessionUpdateEvent(type="session.update", session=instructions))
        return [
            *updates,
            {"type": "conversation.item.create", "item": USER},
            {"type": "response.create"},
        ]

    def seen(self, event: Any) -> list[dict[str, Any]]:
        """Note ``event``; the client events the app sends in answer. An ``error`` event in
        place of a response's end (a proxy's enforce mode) ends that response's turn."""
        self.events.append(event.model_dump(mode="json", exclude_unset=True))
        if event.type == "error":
            return self.next_turn([])
        if event.type not in ENDS:
            return []
        outputs = []
        for item in event.response.output or []:
            if item.type in CALLS:
                self.ran.append([item.type, getattr(item, "name", None), _input(item)])
                output = {"type": CALLS[item.type], "call_id": item.call_id, "output": "{}"}
                outputs.append(output)
        if self.responses:
            return self.next_turn(
                [self.create(previous_response_id=event.response.id, input=outputs)]
            )
        return self.next_turn(
            [{"type": "conversation.item.create", "item": output} for output in outputs]
        )

    def next_turn(self, answers: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if self.asked >= self.case["turns"]:
            return []
        self.asked += 1
        if self.responses:
            return answers or [self.create(input="go on")]
        return [*answers, {"type": "response.create"}]

    def done(self) -> bool:
        """The app has had its turns; one whose server drops the socket reads until then."""
        if self.case.get("abort_after") is not None:
            return self.closed is not None
        ended = sum(1 for e in self.events if e["type"] in (*ENDS, "error"))
        ended += len(self.blocked) + len(self.unjudged)
        return ended >= self.case["turns"]

    def block(self, blocked: callgate.Blocked) -> list[dict[str, Any]]:
        self.blocked.append(
            {"response": blocked.response_id, "codes": list(blocked.report.blocking_codes)}
        )
        return self.next_turn([])

    def unjudge(self, error: callgate.Unjudged) -> list[dict[str, Any]]:
        self.unjudged.append(type(error.error).__name__)
        return self.next_turn([])

    def result(self) -> dict[str, Any]:
        return {
            "events": self.events,
            "ran": self.ran,
            "blocked": self.blocked,
            "unjudged": self.unjudged,
            "closed": self.closed,
        }


#: The events that end a response (the Realtime API's, then the Responses API's), at which
#: the app runs the calls the response lists, whatever its status, as many apps do.
ENDS = ("response.done", "response.completed", "response.incomplete", "response.failed")
#: The call items the app runs, and the item that carries each one's output back.
CALLS = {
    "function_call": "function_call_output",
    "shell_call": "shell_call_output",
    "apply_patch_call": "apply_patch_call_output",
    "custom_tool_call": "custom_tool_call_output",
}


def _input(item: Any) -> Any:
    """What the app would run an item with."""
    for name in ("arguments", "input", "action", "operation"):
        value = getattr(item, name, None)
        if value is not None:
            return value if isinstance(value, str) else value.model_dump(mode="json")
    return None


def by_resource(connection: Any, event: dict[str, Any]) -> Any:
    """Send a Realtime setup event through the connection's resources, as the SDK's docs do
    (``connection.session.update(...)``); what the async ones return is awaited."""
    if event["type"] == "session.update":
        return connection.session.update(session=event["session"])
    if event["type"] == "conversation.item.create":
        return connection.conversation.item.create(item=event["item"])
    return connection.response.create()


def connect(client: Any, case: dict[str, Any]) -> Any:
    """The connection manager of the case's API."""
    if case.get("api") == "responses":
        return client.responses.connect()
    return client.realtime.connect(model="gpt-realtime")


def guard(case: dict[str, Any], target: Any) -> Any:
    """``callgate.guard`` of the connection or manager: told the tools, or (``read_tools``)
    reading them from the ``session.update`` the app sends."""
    if case.get("read_tools"):
        return callgate.guard(target)
    return callgate.guard(target, tools=case["tools"])


def guarded(case: dict[str, Any], manager: Any) -> Any:
    return guard(case, manager) if case["guard"] == "manager" else manager


@contextlib.contextmanager
def entered(manager: Any) -> Iterator[Any]:
    """The connection opened with the manager's ``enter()``, without its ``with`` block."""
    connection = manager.enter()
    try:
        yield connection
    finally:
        connection.close()


@contextlib.asynccontextmanager
async def entered_async(manager: Any) -> AsyncIterator[Any]:
    connection = await manager.enter()
    try:
        yield connection
    finally:
        await connection.close()


def run_sync(case: dict[str, Any]) -> dict[str, Any]:
    session = Session(case)
    client = OpenAI(**session.clients())
    manager = guarded(case, connect(client, case))
    for event in session.setup() if case.get("queued") else ():
        manager.send(event)  # queued on the manager, sent once the connection opens
    with entered(manager) if case.get("entered") else manager as connection:
        if case["guard"] == "connection":
            connection = guard(case, connection)
        for event in () if case.get("queued") else session.setup():
            if case.get("via") == "resources":
                by_resource(connection, event)
            elif case.get("update_on_manager") and event["type"] == "session.update":
                manager.send(event)
            else:
                connection.send(event)
        received = iter(connection) if case.get("iterate") else None
        while not session.done():
            try:
                event = connection.recv() if received is None else next(received)
                for answer in session.seen(event):
                    connection.send(answer)
            except callgate.Blocked as blocked:
                received = received and iter(connection)
                for answer in session.block(blocked):
                    connection.send(answer)
            except callgate.Unjudged as unjudged:
                received = received and iter(connection)
                for answer in session.unjudge(unjudged):
                    connection.send(answer)
            except Exception as error:  # the socket closed under the app
                session.closed = type(error).__name__
    return session.result()


async def run_async(case: dict[str, Any]) -> dict[str, Any]:
    session = Session(case)
    client = AsyncOpenAI(**session.clients())
    manager = guarded(case, connect(client, case))
    for event in session.setup() if case.get("queued") else ():
        manager.send(event)
    async with entered_async(manager) if case.get("entered") else manager as connection:
        if case["guard"] == "connection":
            connection = guard(case, connection)
        for event in () if case.get("queued") else session.setup():
            if case.get("via") == "resources":
                await by_resource(connection, event)
            elif case.get("update_on_manager") and event["type"] == "session.update":
                manager.send(event)
            else:
                await connection.send(event)
        received = aiter(connection) if case.get("iterate") else None
        while not session.done():
            try:
                event = await (connection.recv() if received is None else anext(received))
                for answer in session.seen(event):
                    await connection.send(answer)
            except callgate.Blocked as blocked:
                received = received and aiter(connection)
                for answer in session.block(blocked):
                    await connection.send(answer)
            except callgate.Unjudged as unjudged:
                received = received and aiter(connection)
                for answer in session.unjudge(unjudged):
                    await connection.send(answer)
            except Exception as error:
                session.closed = type(error).__name__
    return session.result()


def main() -> None:
    results = {}
    for case in json.load(sys.stdin):
        try:
            results[case["id"]] = (
                asyncio.run(run_async(case)) if case["mode"] == "async" else run_sync(case)
            )
        except Exception:
            results[case["id"]] = {"crashed": traceback.format_exc()}
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
