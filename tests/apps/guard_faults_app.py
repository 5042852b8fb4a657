"""A failure of callgate's own inside ``callgate.guard``, under each ``on_error``: the engine
fails on the third event it reads, or when it gives the verdict.

Run by ``tests/test_guard_faults.py`` in the apps environment: ``APP_SERVE_URL`` is a ``callgate
serve`` of the conformance fixtures, ``APP_CASES`` a JSON list of ``{"id", "client", "fixture",
"fault", "on_error"}``. Prints one JSON line per case, sync and async: the items the app saw (the
type of each, for anthropic; the ``finish_reason`` of each, for openai), what was raised, what
``calls`` gave afterwards, the unjudged turns counted and the log lines written.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anthropic
import openai
from app_cases import run_cases

import callgate
from callgate.integrations.sdk import wrap
from callgate.reassemble.engine import Reassembler

COUNTED: list[list[str]] = []
LOGGED: list[str] = []


class Lines(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        LOGGED.append(record.getMessage())


@contextmanager
def injected(fault: str) -> Iterator[None]:
    """The engine fails on its third event (``read``), or at its verdict (``verdict``)."""
    feed, close = Reassembler.feed, Reassembler.close
    fed = [0]

    def failing_feed(self: Reassembler, event: Any) -> None:
        fed[0] += 1
        if fed[0] == 3:
            raise RuntimeError("the engine failed")
        feed(self, event)

    def failing_close(self: Reassembler) -> Any:
        raise RuntimeError("the engine failed")

    if fault == "read":
        Reassembler.feed = failing_feed  # type: ignore[method-assign]
    else:
        Reassembler.close = failing_close  # type: ignore[method-assign]
    try:
        yield
    finally:
        Reassembler.feed, Reassembler.close = feed, close  # type: ignore[method-assign]


def stream_of(case: dict[str, Any], url: str, asynchronous: bool) -> Any:
    """The case's stream: the SDK's, guarded by ``guard`` or by a ``guarded`` client."""
    base = f"{url}/f/{case['fixture']}"
    on_error = case["on_error"]
    if case["client"] == "anthropic":
        client: Any = (anthropic.AsyncAnthropic if asynchronous else anthropic.Anthropic)(
            base_url=base, api_key="callgate-test", max_retries=0
        )
        asked = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "tools": case["tools"]}
        asked["messages"] = [{"role": "user", "content": "Weather in Oslo?"}]
        return client.messages.create(**asked, stream=True), on_error
    client = (openai.AsyncOpenAI if asynchronous else openai.OpenAI)(
        base_url=f"{base}/v1", api_key="callgate-test", max_retries=0
    )
    if case["client"] == "openai-guarded":
        client = callgate.guarded(client, on_error=on_error)
    chat = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Weather?"}]}
    return client.chat.completions.create(**chat, tools=case["tools"], stream=True), on_error


def seen_as(item: Any) -> str:
    if hasattr(item, "choices"):
        return str(item.choices[0].finish_reason if item.choices else "usage")
    return str(item.type)


def outcome(case: dict[str, Any], seen: list[str], raised: Exception | None, guarded: Any) -> Any:
    try:
        calls: Any = [c.name for c in guarded.calls]
    except (callgate.Unjudged, callgate.Blocked) as error:
        calls = [type(error).__name__, str(error)]
    result = {
        "seen": seen,
        "raised": None if raised is None else [type(raised).__name__, str(raised)],
        "calls": calls,
        "counted": list(COUNTED),
        "logged": list(LOGGED),
    }
    COUNTED.clear()
    LOGGED.clear()
    return result


def run(case: dict[str, Any], url: str) -> Any:
    seen: list[str] = []
    made, on_error = stream_of(case, url, False)
    guarded = (
        made if case["client"] == "openai-guarded" else callgate.guard(made, on_error=on_error)
    )
    try:
        with injected(case["fault"]):
            for item in guarded:
                seen.append(seen_as(item))
    except callgate.Unjudged as error:
        return outcome(case, seen, error, guarded)
    return outcome(case, seen, None, guarded)


async def run_async(case: dict[str, Any], url: str) -> Any:
    seen: list[str] = []
    made, on_error = stream_of(case, url, True)
    made = await made
    guarded = (
        made if case["client"] == "openai-guarded" else callgate.guard(made, on_error=on_error)
    )
    try:
        with injected(case["fault"]):
            async for item in guarded:
                seen.append(seen_as(item))
    except callgate.Unjudged as error:
        return outcome(case, seen, error, guarded)
    return outcome(case, seen, None, guarded)


def main() -> None:
    wrap.record_unjudged = lambda profile, error, response_id=None: COUNTED.append(  # type: ignore[assignment]
        [profile, error]
    )
    logging.getLogger("callgate.guard").addHandler(Lines())
    run_cases(run, run_async)


if __name__ == "__main__":
    main()
