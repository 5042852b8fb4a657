"""The tap for an SDK stream whose decoder loses the evidence: mistralai's ``EventStream`` and
``EventStreamAsync`` (``chat.stream``, ``chat.stream_async``), read from the bytes of the HTTP
response they keep.

How this works: mistralai parses each SSE event's data and dumps it again for its model, so a
repeated member name is gone before any model sees it; and its model refuses a call fragment
without a ``name`` (as OpenAI-style fragmented calls come), raising mid-turn. So the response's
``iter_bytes`` (``aiter_bytes``) is wrapped on the response object itself: each chunk the SDK
takes is read by callgate's SSE reader first, as the proxy reads a body (strictly; ``[DONE]``
left out). The events so read go to the gate one per item the SDK hands out (it makes one of
each event with data, ``[DONE]`` aside), so that the gate holds from the item of the terminal
evidence on, not from the chunk that brought it. When the SDK's stream ends, or it raises, the
rest of the body is read and every event left goes to the gate: the verdict covers the whole
turn, whatever the SDK's model made of it.

The SDK closes the response when its decoder stops, the rest unread; that close is put off
while the guarded loop asks the SDK for an item, and done once the rest is read. Any other close
(the app's, the guard's when the loop is left early) closes at once.
"""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import AsyncIterator, Iterator
from typing import Any

from callgate.reassemble.gate import Gate
from callgate.reassemble.profiles import PROFILES
from callgate.reassemble.readers import SSEReader


class _Body:
    """One HTTP response's body, read for a gate as the SDK takes its bytes."""

    def __init__(self, response: Any, gate: Gate[Any], profile: str) -> None:
        self._response, self._gate = response, gate
        self._received = bytearray()
        self._reader = SSEReader(PROFILES[profile], lambda: bytes(self._received))
        #: Events read from the body that the gate has not been given yet.
        self._events: deque[object] = deque()
        #: The response's own byte iterator, once anything asked for the body.
        self._chunks: Any = None
        #: The guarded loop is asking the SDK for an item: a close of the SDK's waits.
        self.asking = False

    def take(self, chunk: bytes) -> None:
        if chunk:
            self._received += chunk
            self._events.extend(self._reader.read(chunk))

    def give_one(self) -> None:
        """The SDK handed out an item: the gate reads the event it was made of. An item of no
        event callgate read (the SDK's decoder keeps a last event no blank line ended, which
        an SSE reader drops) is held with what follows, as terminal evidence would be."""
        if self._events:
            self._gate.read(self._events.popleft())
        else:
            self._gate.hold()

    def end(self) -> None:
        """The body ended: the gate reads every event left."""
        self._events.extend(self._reader.read(b""))
        read = self._gate.read
        while self._events:
            read(self._events.popleft())


class _SyncBody(_Body):
    def __init__(self, response: Any, gate: Gate[Any], profile: str) -> None:
        super().__init__(response, gate, profile)
        self._iter_bytes, self._close = response.iter_bytes, response.close
        response.iter_bytes, response.close = self._tapped, self._closed_by_sdk

    def _tapped(self, *args: Any, **kwargs: Any) -> Iterator[bytes]:
        if self._chunks is None:
            self._chunks = self._iter_bytes(*args, **kwargs)
        for chunk in self._chunks:  # a ``for`` never closes it: the rest stays readable
            self.take(chunk)
            yield chunk

    def _closed_by_sdk(self) -> None:
        if not self.asking:
            self.close()

    def finish(self) -> None:
        """Read the rest of the body (a body that fails is judged on what came); the guarded
        loop closes it (``_items``), which calls this once."""
        try:
            for chunk in self._chunks if self._chunks is not None else self._iter_bytes():
                self.take(chunk)
        except Exception:  # the wire failed: judged on what came
            pass
        self.end()

    def close(self) -> None:
        self._close()


class _AsyncBody(_Body):
    def __init__(self, response: Any, gate: Gate[Any], profile: str) -> None:
        super().__init__(response, gate, profile)
        self._aiter_bytes, self._aclose = response.aiter_bytes, response.aclose
        response.aiter_bytes, response.aclose = self._tapped, self._closed_by_sdk

    async def _tapped(self, *args: Any, **kwargs: Any) -> AsyncIterator[bytes]:
        if self._chunks is None:
            self._chunks = self._aiter_bytes(*args, **kwargs)
        async for chunk in self._chunks:  # ``async for`` never closes it either
            self.take(chunk)
            yield chunk

    async def _closed_by_sdk(self) -> None:
        if not self.asking:
            await self.close()

    async def finish(self) -> None:
        try:
            chunks = self._chunks if self._chunks is not None else self._aiter_bytes()
            async for chunk in chunks:
                self.take(chunk)
        except Exception:  # the wire failed: judged on what came
            pass
        self.end()

    async def close(self) -> None:
        await self._aclose()


def read(stream: Any, gate: Gate[Any], profile: str) -> Any:
    """What the guarded loop iterates for mistralai's (async) ``stream``, nothing read from it
    yet: its items, with ``gate`` reading the body of its HTTP response."""
    if inspect.isasyncgen(stream.generator):
        return _items_async(stream, _AsyncBody(stream.response, gate, profile))
    return _items(stream, _SyncBody(stream.response, gate, profile))


def _items(stream: Iterator[Any], body: _SyncBody) -> Iterator[Any]:
    try:
        while True:
            body.asking = True
            try:
                item = next(stream)
            except StopIteration:
                break
            except Exception:  # the SDK gave up mid-turn: the rest is read, then it is judged
                body.finish()
                raise
            finally:
                body.asking = False
            body.give_one()
            yield item
        body.finish()
    finally:
        body.close()


async def _items_async(stream: AsyncIterator[Any], body: _AsyncBody) -> AsyncIterator[Any]:
    try:
        while True:
            body.asking = True
            try:
                item = await anext(stream)
            except StopAsyncIteration:
                break
            except Exception:  # as in ``_items``
                await body.finish()
                raise
            finally:
                body.asking = False
            body.give_one()
            yield item
        await body.finish()
    finally:
        await body.close()
