"""An agent that runs the built-in tools of the openai-agents SDK (shell, apply_patch, computer)
over the Responses API against ``callgate serve``, with or without ``callgate.guarded``.

Run by ``tests/test_agent_tools.py`` in the apps environment, one interpreter for every case:
``APP_SERVE_URL`` is the server, ``APP_CASES`` a JSON list of ``{"id", "tool", "scenario",
"guarded"}``. Each case plays its own scenario (the tool turn, then a text turn) and prints one
JSON line: the tool runs the agent made (``ran``), and its answer or what it raised.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
from typing import Any

from agents import (
    Agent,
    ApplyPatchTool,
    AsyncComputer,
    ComputerTool,
    OpenAIResponsesModel,
    Runner,
    ShellTool,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

import callgate

RAN: list[list[Any]] = []
#: A 1x1 PNG: what the computer's screenshot returns.
PIXEL = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()


async def shell(request: Any) -> str:
    RAN.append(["shell", list(request.data.action.commands)])
    return "done"


class Editor:
    """Records each operation instead of touching a file."""

    def create_file(self, operation: Any) -> str:
        RAN.append(["create_file", operation.path, operation.diff])
        return "created"

    def update_file(self, operation: Any) -> str:
        RAN.append(["update_file", operation.path, operation.diff])
        return "updated"

    def delete_file(self, operation: Any) -> str:
        RAN.append(["delete_file", operation.path])
        return "deleted"


class Screen(AsyncComputer):
    """A display of 1024x768 that records each action."""

    @property
    def environment(self) -> Any:
        return "linux"

    @property
    def dimensions(self) -> tuple[int, int]:
        return (1024, 768)

    async def screenshot(self) -> str:
        return PIXEL

    async def click(self, x: int, y: int, button: Any, **keys: Any) -> None:
        RAN.append(["click", x, y, button])

    async def double_click(self, x: int, y: int, **keys: Any) -> None:
        RAN.append(["double_click", x, y])

    async def scroll(self, x: int, y: int, scroll_x: int, scroll_y: int, **keys: Any) -> None:
        RAN.append(["scroll", x, y, scroll_x, scroll_y])

    async def type(self, text: str) -> None:
        RAN.append(["type", text])

    async def wait(self) -> None:
        RAN.append(["wait"])

    async def move(self, x: int, y: int, **keys: Any) -> None:
        RAN.append(["move", x, y])

    async def keypress(self, keys: list[str]) -> None:
        RAN.append(["keypress", keys])

    async def drag(self, path: list[tuple[int, int]], **keys: Any) -> None:
        RAN.append(["drag", [list(point) for point in path]])


TOOLS = {
    "shell": lambda: ShellTool(executor=shell),
    "apply_patch": lambda: ApplyPatchTool(editor=Editor()),
    "computer": lambda: ComputerTool(computer=Screen()),
}


async def run(case: dict[str, Any], url: str) -> dict[str, Any]:
    RAN.clear()
    client: Any = AsyncOpenAI(
        base_url=f"{url}/s/{case['scenario']}/v1", api_key="callgate-test", max_retries=0
    )
    if case["guarded"]:
        client = callgate.guarded(client)
    agent = Agent(
        name="coder",
        instructions="Do the task with your tool.",
        model=OpenAIResponsesModel(model="gpt-5.1", openai_client=client),
        tools=[TOOLS[case["tool"]]()],
    )
    out: dict[str, Any] = {"id": case["id"]}
    try:
        result = Runner.run_streamed(agent, "Do the task.")
        async for _ in result.stream_events():
            pass
        out["answer"] = result.final_output
    except Exception as error:  # what the agent raised is the result
        out["raised"] = type(error).__name__
        if isinstance(error, callgate.Blocked):
            out["blocked"] = error.report.blocking_codes
    out["ran"] = list(RAN)
    return out


async def main() -> None:
    set_tracing_disabled(True)
    url = os.environ["APP_SERVE_URL"]
    for case in json.loads(os.environ["APP_CASES"]):
        print(json.dumps(await run(case, url)), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
