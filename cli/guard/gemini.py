"""The tap for google-genai: its ``generate_content_stream`` is a plain generator, read below it.

How this works: google-genai hands the app a generator (``client.models.generate_content_stream``)
or an async generator (``client.aio.models...``, once awaited) that sends its request on first
use, and keeps no stream object to tap. What it reads is the text of each SSE event, which its
``HttpResponse._iter_response_stream`` (``_aiter_response_stream``) yields before it parses it
(leniently: a repeated member name keeps the last value). Both are wrapped once, for every
client; the wrapper reads for the gate the guarded loop names in a context variable while it
asks the SDK for its next item, and is inert for any other loop (an unguarded stream, another
thread, another task). The HTTP responses so read are closed when the guarded loop ends, however
it ends: the SDK's sync generator leaves its response open when it is closed early.

With automatic continuation (a hop ending ``CONTINUATION``) the SDK sends one request per hop in
one generator: the gate reads every hop's events as one turn.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any

from callgate.reassemble.gate import Gate


@dataclass
class _Reading:
    """One guarded loop: the gate its events go to, the HTTP responses they came on."""

    gate: Gate[Any]
    responses: list[Any] = field(default_factory=list)


_READING: ContextVar[_Reading | None] = ContextVar("callgate_gemini_reading", default=None)


def bound(stream: Any, gate: Gate[Any]) -> Any:
    """What the guarded loop iterates for the SDK's (async) generator ``stream``: its items,
    each asked for with ``gate`` reading the wire below it."""
    _wrap_once(stream)
    reading = _Reading(gate)
    if inspect.isasyncgen(stream):
        return _bound_async(stream, reading)
    return _bound_sync(stream, reading)


def _bound_sync(stream: Iterator[Any], reading: _Reading) -> Iterator[Any]:
    try:
        while True:
            token = _READING.set(reading)
            try:
                item = next(stream)
            except StopIteration:
                return
            finally:
                _READING.reset(token)
            yield item
    finally:
        stream.close()  # type: ignore[attr-defined]
        for response in reading.responses:
            response.close()


async def _bound_async(stream: Any, reading: _Reading) -> AsyncIterator[Any]:
    try:
        while True:
            token = _READING.set(reading)
            try:
                item = await anext(stream)
            except StopAsyncIteration:
                return
            finally:
                _READING.reset(token)
            yield item
    finally:
        await stream.aclose()
        for response in reading.responses:
            closing = getattr(response, "aclose", None)
            if closing is not None:
                await closing()
            else:  # aiohttp's response closes at once
                response.close()


def _wrap_once(stream: Any) -> None:
    """Wrap google-genai's SSE readers, once per process (the SDK is loaded: ``stream`` is
    its)."""
    responses = import_module("google.genai._api_client").HttpResponse
    if getattr(responses, "_callgate_tapped", False):
        return
    responses._iter_response_stream = _tapped_sync(responses._iter_response_stream)
    responses._aiter_response_stream = _tapped_async(responses._aiter_response_stream)
    responses._callgate_tapped = True


def _tapped_sync(read: Callable[[Any], Iterator[str]]) -> Callable[[Any], Iterator[str]]:
    def tapped(self: Any) -> Iterator[str]:
        reading = _READING.get()
        if reading is None:
            yield from read(self)
            return
        reading.responses.append(self.response_stream)
        for text in read(self):
            reading.gate.read_text(text)
            yield text

    return tapped


def _tapped_async(
    read: Callable[[Any], AsyncIterator[str]],
) -> Callable[[Any], AsyncIterator[str]]:
    async def tapped(self: Any) -> AsyncIterator[str]:
        reading = _READING.get()
        if reading is not None:
            reading.responses.append(self.response_stream)
        async for text in read(self):
            if reading is not None:
                reading.gate.read_text(text)
            yield text

    return tapped
