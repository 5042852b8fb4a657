"""The taps for SDKs whose stream has no SSE reader to tap: google-genai's
``generate_content_stream`` and cohere's ``ClientV2.chat_stream`` (plain generators), and
botocore's ``EventStream`` (Bedrock's binary event stream, ``tap_messages``).

How this works: these SDKs hand the app a generator (an async generator, async) that sends its
request on first use, and keep no stream object to tap. What each reads is the data of each SSE
event, which one method of the SDK's yields before the SDK parses it leniently (a repeated
member name keeps the last value; cohere skips, with a warning, an event it cannot parse or make
a model of). That method is wrapped once, for every client (``READERS``, in the gate's
table); the wrapper reads for
the gate the guarded loop names in a context variable while it asks the SDK for its next item,
and is inert for any other loop (an unguarded stream, another thread, another task). The HTTP
responses so read are closed when the guarded loop ends, however it ends: google-genai's sync
generator leaves its response open when it is closed early.

An SDK that sends more than one request in one generator (google-genai's automatic continuation,
a hop ending ``CONTINUATION``; cohere's reconnection) has every request's events read as one
turn.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any

from callgate.reassemble.errors import UsageError
from callgate.reassemble.gate import LINE_CLIENTS, READERS, Gate, Reader


@dataclass
class _Reading:
    """One guarded loop: the gate its events go to, the HTTP responses they came on."""

    gate: Gate[Any]
    responses: list[Any] = field(default_factory=list)


_READING: ContextVar[_Reading | None] = ContextVar("callgate_reading", default=None)


def bound(stream: Any, gate: Gate[Any], package: str) -> Any:
    """What the guarded loop iterates for the SDK ``package``'s (async) generator ``stream``:
    its items, each asked for with ``gate`` reading the wire below it."""
    if package in READERS:
        _wrap_once(READERS[package])
    else:
        _hook_lines(stream, LINE_CLIENTS[package])
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


def _wrap_once(reader: Reader) -> None:
    """Wrap the SDK's reader, once per process (the SDK is loaded: the app has its stream)."""
    owner = getattr(import_module(reader.module), reader.owner)
    if getattr(owner, "_callgate_tapped", False):
        return
    setattr(owner, reader.sync, _tapped_sync(getattr(owner, reader.sync), reader))
    setattr(owner, reader.asynchronous, _tapped_async(getattr(owner, reader.asynchronous), reader))
    owner._callgate_tapped = True


def _tapped_sync(read: Callable[[Any], Iterator[Any]], reader: Reader) -> Any:
    def tapped(self: Any) -> Iterator[Any]:
        reading = _READING.get()
        if reading is None:
            yield from read(self)
            return
        reading.responses.append(reader.response(self))
        for event in read(self):
            data = reader.data(event)
            if data is not None:
                reading.gate.read_text(data)
            yield event

    return tapped


def _tapped_async(read: Callable[[Any], AsyncIterator[Any]], reader: Reader) -> Any:
    async def tapped(self: Any) -> AsyncIterator[Any]:
        reading = _READING.get()
        if reading is not None:
            reading.responses.append(reader.response(self))
        async for event in read(self):
            data = reader.data(event) if reading is not None else None
            if data is not None and reading is not None:
                reading.gate.read_text(data)
            yield event

    return tapped


def _hook_lines(stream: Any, attribute: str) -> None:
    """Hook the httpx client the generator's SDK client streams through, once per client: a
    response it receives for a guarded loop has its lines read as the SDK takes them."""
    frame = getattr(stream, "gi_frame", None) or stream.ag_frame
    web = getattr(frame.f_locals["self"], attribute)
    if getattr(web, "_callgate_hooked", False):
        return
    hooks = web.event_hooks
    hooks["response"] = [*hooks.get("response", []), _line_hook(inspect.isasyncgen(stream))]
    web.event_hooks = hooks
    web._callgate_hooked = True


def _line_hook(asynchronous: bool) -> Callable[[Any], Any]:
    def tap(response: Any) -> None:
        reading = _READING.get()
        if reading is None:
            return
        reading.responses.append(response)
        read = reading.gate.read_text
        if asynchronous:
            lines_async = response.aiter_lines

            async def tapped_async() -> AsyncIterator[str]:
                async for line in lines_async():
                    if line:
                        read(line)
                    yield line

            response.aiter_lines = tapped_async
            return
        lines = response.iter_lines

        def tapped() -> Iterator[str]:
            for line in lines():
                if line:
                    read(line)
                yield line

        response.iter_lines = tapped

    if not asynchronous:
        return tap

    async def tap_async(response: Any) -> None:
        tap(response)

    return tap_async


def tap_messages(stream: Any, gate: Gate[Any]) -> None:
    """Have ``gate`` read each message botocore's ``EventStream`` decodes (its headers and
    payload, the message's CRC checked), just before botocore parses it into the item the app
    gets (or raises on an exception message). Raises ``UsageError`` for a stream already read
    from."""
    messages = stream._event_generator
    if inspect.getgeneratorstate(messages) != inspect.GEN_CREATED:
        raise UsageError("guard() takes a stream nothing has read from yet")

    def read() -> Iterator[Any]:
        for message in messages:
            gate.read_message(message.headers, message.payload)
            yield message

    stream._event_generator = read()
