"""The guarded stream: the SDK's stream object, iterated through a ``Gate``.

How this works: iterating a ``GuardedStream`` iterates the SDK's object and hands each item on
as it comes, until the gate holds; at the end of the SDK's stream the gate judges, and the held
items follow on a pass or ``Blocked`` is raised instead. The evidence is read below the SDK's
objects: the SDK's ``Stream`` (the object itself, or the one in a helper's ``_raw_stream``) has
its ``_iter_events`` tapped, so the gate reads the data of each SSE event just before the SDK
makes an object of it. Neither a helper's snapshots nor an SDK model's repairs count as
evidence, and an error event the SDK raises on is read as sent. An iterable given with a
profile is read item by item.

An exception from the SDK while it reads is judged too, after the rest of the wire is read (a
helper may fail on a broken call the provider would still have ended). A turn that may not run
raises ``Blocked`` from the SDK's exception; one that could have re-raises the exception as it
was.

Leaving the loop early (``break``, an exception in the app's loop), ``close()`` and the end of a
``with`` block all close the SDK's stream, and with it the HTTP response. A sync ``for`` loop
closes it when it is left; an ``async for`` loop when the event loop finalises the iteration,
and at once inside ``async with``.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Iterator
from typing import Any

from callgate.reassemble.errors import UsageError
from callgate.reassemble.gate import Blocked, Gate, Unjudged, helper_text
from callgate.reassemble.report import Call, Report

#: Methods of the SDKs' helpers that read the stream to its end themselves: through the guard,
#: the guard reads it first, so the helper finds it read.
_READS_TO_END = frozenset(
    {"get_final_completion", "get_final_message", "get_final_text", "get_final_response"}
)


def _tap(wire: Any, gate: Gate[Any]) -> None:
    """Have ``gate`` read the data of each SSE event the SDK's stream ``wire`` decodes, as it
    takes it: its ``_iter_events`` is called once, when the stream is first read.

    An event whose data parsed strictly as a JSON object is handed to the SDK with that value
    as what its ``json()`` gives: it is what the SDK's own ``json.loads`` of the same text
    gives (strict JSON is a part of what it reads), and the text is parsed once, not twice."""
    events = wire._iter_events
    read = gate.read_text
    if inspect.isasyncgenfunction(events):

        async def read_async() -> AsyncIterator[Any]:
            async for sse in events():
                if sse.data:
                    _parsed(sse, read(sse.data))
                yield sse

        wire._iter_events = read_async
        return

    def read_sync() -> Iterator[Any]:
        for sse in events():
            if sse.data:
                _parsed(sse, read(sse.data))
            yield sse

    wire._iter_events = read_sync


def _parsed(sse: Any, value: object) -> None:
    if type(value) is dict:
        sse.json = lambda: value


class _Guarded:
    """What the sync and the async guarded streams share: the gate, the verdict, the rest."""

    def __init__(self, stream: Any, gate: Gate[Any], *, wire: Any, source: Any = None) -> None:
        self._stream, self._gate = stream, gate
        #: The SDK's stream of wire events (the stream, or a helper's), or None when the items
        #: are the wire events (an iterable given with a profile).
        self._wire = wire
        self._reads_items = wire is None
        #: What the loop iterates: the stream, or what an SDK's own tap made of it.
        self._source = stream if source is None else source
        if wire is not None and source is None:
            _tap(wire, gate)

    @property
    def report(self) -> Report | None:
        """The verdict once the stream was read to its end, else None."""
        return self._gate.report

    @property
    def calls(self) -> tuple[Call, ...]:
        """The turn's tool calls (exact argument text and parsed arguments, in slot order), once
        it passed. Raises ``UsageError`` before the stream was read to its end, ``Blocked`` for
        a turn that may not run, ``Unjudged`` for a turn callgate could not judge (whatever
        ``on_error`` did with the stream)."""
        report = self._gate.report
        if self._gate.fault is not None:
            raise Unjudged(self._gate.fault)
        if report is None:
            raise UsageError("the turn is not judged yet: read the stream to its end first")
        if report.exit_code == 1:
            raise Blocked(report)
        return report.calls

    def __repr__(self) -> str:
        return f"<callgate guarded {self._stream!r}>"

    def _verdict(self) -> Blocked | Unjudged | None:
        """After the SDK raised and the rest of the wire was read: ``Blocked`` (or ``Unjudged``)
        to raise, or None when the turn could have run."""
        try:
            self._gate.judge()
        except (Blocked, Unjudged) as stopped:
            return stopped
        return None


class GuardedStream(_Guarded):
    """A sync SDK stream, guarded (``callgate.guard``)."""

    def __init__(self, stream: Any, gate: Gate[Any], *, wire: Any, source: Any = None) -> None:
        super().__init__(stream, gate, wire=wire, source=source)
        self._iterator = self._run()

    def __iter__(self) -> Iterator[Any]:
        left = True
        try:
            yield from self._iterator
            left = False
        finally:
            if left:  # a break, the app's exception, or Blocked
                self.close()

    def __next__(self) -> Any:
        return next(self._iterator)

    def __enter__(self) -> GuardedStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the SDK's stream (and its HTTP response)."""
        self._iterator.close()
        if self._source is not self._stream:  # a tap's loop, which closes what it read
            self._source.close()
        closing: Callable[[], object] | None = getattr(self._stream, "close", None)
        if closing is not None:
            closing()

    def until_done(self) -> GuardedStream:
        """Read the stream to its end (raises ``Blocked`` for a turn that may not run)."""
        for _ in self:
            pass
        return self

    @property
    def text_stream(self) -> Iterator[str]:
        """The text deltas of the guarded events (anthropic's ``MessageStream.text_stream``)."""
        for item in self:
            text = helper_text(item)
            if text is not None:
                yield text

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._stream, name)
        if name in _READS_TO_END:

            def read_first(*args: Any, **kwargs: Any) -> Any:
                self.until_done()
                return value(*args, **kwargs)

            return read_first
        return value

    def _run(self) -> Generator[Any, None, None]:
        gate, source = self._gate, iter(self._source)
        if not self._reads_items:
            yield from self._run_wire(gate, source)
            return
        while True:
            try:
                item = next(source)
            except StopIteration:
                break
            except Exception as error:  # the SDK's, while it read: judged
                self._judge_failure(error)
                raise
            gate.read(item)
            if gate.pass_on(item):
                yield item
        yield from gate.judge()

    def _run_wire(self, gate: Gate[Any], source: Iterator[Any]) -> Generator[Any, None, None]:
        """``_run`` where the tap reads the wire: the gate is told nothing of the items, and
        whatever the loop raises comes from the SDK (a generator is thrown nothing but
        ``GeneratorExit`` here, which is no ``Exception``)."""
        pass_on = gate.pass_on
        try:
            for item in source:
                if pass_on(item):
                    yield item
        except Exception as error:
            self._judge_failure(error)
            raise
        yield from gate.judge()

    def _judge_failure(self, error: Exception) -> None:
        if self._wire is not None:
            try:
                for _ in self._wire:  # what a helper that failed left unread
                    pass
            except Exception:  # the wire failed too: judged on what came
                pass
        blocked = self._verdict()
        if blocked is not None:
            raise blocked from error


class AsyncGuardedStream(_Guarded):
    """An async SDK stream, guarded (``callgate.guard``)."""

    def __init__(self, stream: Any, gate: Gate[Any], *, wire: Any, source: Any = None) -> None:
        super().__init__(stream, gate, wire=wire, source=source)
        self._iterator = self._run()

    async def __aiter__(self) -> AsyncIterator[Any]:
        left = True
        try:
            async for item in self._iterator:
                yield item
            left = False
        finally:
            if left:
                await self.close()

    async def __anext__(self) -> Any:
        return await self._iterator.__anext__()

    async def __aenter__(self) -> AsyncGuardedStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the SDK's stream (and its HTTP response)."""
        await self._iterator.aclose()
        if self._source is not self._stream:
            await self._source.aclose()
        # ``aclose`` first: litellm's sync ``close`` drops the coroutine of the async close it
        # calls, leaving the response open.
        closing: Callable[[], object] | None = getattr(self._stream, "aclose", None) or getattr(
            self._stream, "close", None
        )
        if closing is not None:
            closed = closing()
            if inspect.isawaitable(closed):
                await closed

    async def until_done(self) -> AsyncGuardedStream:
        """Read the stream to its end (raises ``Blocked`` for a turn that may not run)."""
        async for _ in self:
            pass
        return self

    @property
    async def text_stream(self) -> AsyncIterator[str]:
        """The text deltas of the guarded events (anthropic's ``AsyncMessageStream``)."""
        async for item in self:
            text = helper_text(item)
            if text is not None:
                yield text

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._stream, name)
        if name in _READS_TO_END:

            async def read_first(*args: Any, **kwargs: Any) -> Any:
                await self.until_done()
                return await value(*args, **kwargs)

            return read_first
        return value

    async def _run(self) -> AsyncGenerator[Any, None]:
        gate, source = self._gate, aiter(self._source)
        while True:
            try:
                item = await anext(source)
            except StopAsyncIteration:
                break
            except Exception as error:
                await self._judge_failure(error)
                raise
            if self._reads_items:
                gate.read(item)
            if gate.pass_on(item):
                yield item
        for item in gate.judge():
            yield item

    async def _judge_failure(self, error: Exception) -> None:
        if self._wire is not None:
            try:
                async for _ in self._wire:  # what a helper that failed left unread
                    pass
            except Exception:  # the wire failed too: judged on what came
                pass
        blocked = self._verdict()
        if blocked is not None:
            raise blocked from error
