"""callgate's LiteLLM guardrail hook on a turn it cannot judge, in the gateway environment: the
fixture's events handed to ``async_post_call_streaming_iterator_hook`` as LiteLLM hands them,
with a fault injected where no real part makes one (an item no API sends, callgate's own engine
failing at the verdict, tools no API declares). Prints one JSON line per case: the items the
client got, what the hook raised, and the unjudged turns it counted.

Run by ``tests/test_guardrail_faults.py``: ``APP_EVENTS`` is the turn's events (Chat
Completions chunks), ``APP_TOOLS`` its tools.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from types import SimpleNamespace
from typing import Any

# litellm 1.105's log handler imports litellm.rust_bridge.catalog on its first record; a record
# logged on another thread while that import runs finds the module half made ("cannot import
# name 'LoggerContext' from partially initialized module"). Imported here first, once.
with contextlib.suppress(ImportError):  # a release without it logs without it
    import litellm.rust_bridge.catalog  # noqa: F401

from callgate.integrations import gateway
from callgate.integrations import litellm as guardrail_module
from callgate.integrations.litellm import CallgateGuardrail
from callgate.reassemble.engine import Reassembler

EVENTS: list[Any] = json.loads(os.environ["APP_EVENTS"])
TOOLS: list[Any] = json.loads(os.environ["APP_TOOLS"])
COUNTED: list[str] = []


def count(profile: str, error: str, response_id: str | None = None) -> None:
    COUNTED.append(error)


async def items(fault: str) -> Any:
    for number, event in enumerate(EVENTS):
        if fault == "unreadable_item" and number == 2:
            yield object()  # no API sends this: LiteLLM would hand it on as it is
        yield event


async def run(fault: str, on_error: str) -> dict[str, Any]:
    COUNTED.clear()
    hook = CallgateGuardrail(guardrail_name="callgate", on_error=on_error)
    tools = [{"type": "function", "function": {"name": "x", "parameters": 7}}]
    request = {"tools": tools if fault == "unreadable_tools" else TOOLS}
    caller = SimpleNamespace(request_route="/v1/chat/completions")
    got: list[Any] = []
    out: dict[str, Any] = {"fault": fault, "on_error": on_error}
    try:
        async for item in hook.async_post_call_streaming_iterator_hook(
            caller, items(fault), request
        ):
            got.append(item if isinstance(item, dict) else "<unreadable item>")
    except Exception as error:
        out["raised"] = [type(error).__name__, str(error), getattr(error, "status_code", None)]
    out["got"] = len(got)
    out["whole"] = got == EVENTS or got == [*EVENTS[:2], "<unreadable item>", *EVENTS[2:]]
    out["counted"] = list(COUNTED)
    return out


def broken_close(self: Reassembler) -> Any:
    raise RuntimeError("the engine failed")


async def main() -> None:
    guardrail_module.record_unjudged = count  # type: ignore[assignment]
    gateway.record_unjudged = count  # type: ignore[assignment]
    for fault in ("unreadable_item", "engine_failure", "unreadable_tools"):
        for on_error in ("block", "pass"):
            original = Reassembler.close
            if fault == "engine_failure":
                Reassembler.close = broken_close  # type: ignore[method-assign]
            try:
                print(json.dumps(await run(fault, on_error)), flush=True)
            finally:
                Reassembler.close = original  # type: ignore[method-assign]


if __name__ == "__main__":
    asyncio.run(main())
