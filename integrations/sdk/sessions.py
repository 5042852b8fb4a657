"""``callgate.guard`` for a WebSocket session: the openai SDK's Realtime connection
(``client.realtime.connect()``) and Responses API WebSocket (``client.responses.connect()``), sync
and async.

How this works: the connection's ``recv_bytes`` (which its ``recv`` and its iteration read
through) is tapped on the connection itself, so every server message is read as the server sent
it, before the SDK makes a model of it, and whatever way the app reads, it reads through the
gate. Each message goes on to the app at once, but the ``response.done`` of a response whose
calls may not run: ``recv`` (or the iteration) raises ``Blocked``, naming the response, in its
place (``callgate.reassemble.sessions``). The connection stays open: the app may read on, and
the next response is judged on its own. A socket that closes with a response in flight blocks
that response too: its calls were never finished. Its ``send`` is tapped too, after it sends:
the tools and settings the app gives the session (``session.update``, and a Responses
``response.create``'s own) are those its responses are judged by; an event callgate cannot
write as the SDK wrote it fails the responses after it.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

from callgate.reassemble.report import Report
from callgate.reassemble.sessions import SessionGate


def _text(message: bytes | str) -> str:
    """A WebSocket message as text: a binary one callgate cannot decode is text that is no
    JSON, which blocks the responses in flight."""
    return message if isinstance(message, str) else message.decode("utf-8", "replace")


def _client_text(event: Any) -> str:
    """A client event the app sent, as JSON text written as the SDK writes it: an SDK model by
    its ``to_json``, a dict by ``json.dumps`` with the models inside it as the SDK turns them
    into JSON (what the gate reads of it, the tools and settings, keeps the API's names).
    Raises ``TypeError`` (or ``ValueError``) for anything else the SDK turned into JSON its own
    way, such as an iterator it used up: callgate cannot know what it sent."""
    to_json = getattr(event, "to_json", None)
    if callable(to_json):
        return str(to_json(use_api_names=True, exclude_unset=True))
    return json.dumps(_given(event), default=_model_json)


def _given(value: Any) -> Any:
    """A dict event without the members the SDK's resources leave unset (``event_id=omit``):
    the SDK's sentinels (``Omit``, ``NotGiven``), which its ``maybe_transform`` drops."""
    if isinstance(value, dict):
        return {key: _given(item) for key, item in value.items() if not _unset(item)}
    if isinstance(value, list | tuple):
        return [_given(item) for item in value if not _unset(item)]
    return value


def _unset(value: Any) -> bool:
    """The Stainless SDKs' sentinels for a member not given: falsy instances of these classes."""
    return type(value).__name__ in ("Omit", "NotGiven") and not value


def _model_json(value: Any) -> Any:
    """A pydantic model inside a dict event, as the SDK's ``maybe_transform`` dumps it."""
    model_dump = getattr(value, "model_dump", None)
    if not callable(model_dump):
        raise TypeError(f"a {type(value).__name__} in a client event: callgate cannot read it")
    return model_dump(mode="json", exclude_unset=True)


def _closed(error: BaseException) -> bool:
    """Whether ``error`` is the websockets package's "the connection closed"."""
    return any(cls.__name__ == "ConnectionClosed" for cls in type(error).__mro__)


class GuardedSession:
    """A Realtime connection whose responses are judged as they end. Behaves as the connection
    does (``recv``, iteration, ``send``, its resources, ``close``); ``reports`` holds each
    judged response's verdict by response id."""

    def __init__(self, connection: Any, gate: SessionGate) -> None:
        self._connection, self._gate = connection, gate
        connection.recv_bytes = self._tap(connection.recv_bytes)
        connection.send = self._tap_send(connection.send)

    @property
    def reports(self) -> dict[str, Report]:
        return self._gate.reports

    def _tap(self, receive: Callable[[], bytes]) -> Callable[[], bytes]:
        def recv_bytes() -> bytes:
            try:
                message = receive()
            except Exception as error:
                if _closed(error):
                    self._gate.close()
                raise
            self._gate.read_text(_text(message))
            return message

        return recv_bytes

    def _tap_send(self, send: Callable[[Any], None]) -> Callable[[Any], None]:
        def sent(event: Any) -> None:
            send(event)
            self.read_sent(event)

        return sent

    def read_sent(self, event: Any) -> None:
        """The gate reads a client event the SDK sent; one it cannot read fails the responses
        after it (``SessionGate.client_unread``): their tools are unknown."""
        try:
            text = _client_text(event)
        except (TypeError, ValueError) as error:
            self._gate.client_unread(error)
        else:
            self._gate.read_client_text(text)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._connection)

    def recv(self) -> Any:
        return self._connection.recv()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)

    def __repr__(self) -> str:
        return f"<callgate guarded {self._connection!r}>"


class AsyncGuardedSession(GuardedSession):
    """The async form of ``GuardedSession``."""

    def _tap(self, receive: Callable[[], Any]) -> Callable[[], Any]:
        async def recv_bytes() -> bytes:
            try:
                message = await receive()
            except Exception as error:
                if _closed(error):
                    self._gate.close()
                raise
            self._gate.read_text(_text(message))
            return message  # type: ignore[no-any-return]

        return recv_bytes

    def _tap_send(self, send: Callable[[Any], Any]) -> Callable[[Any], Any]:
        async def sent(event: Any) -> None:
            await send(event)
            self.read_sent(event)

        return sent

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._connection.__aiter__()  # type: ignore[no-any-return]

    def recv(self) -> Awaitable[Any]:
        return self._connection.recv()  # type: ignore[no-any-return]


class GuardedSessionManager:
    """``client.realtime.connect(...)``, guarded: entering it gives the guarded connection. An
    event the app queues on the manager (its ``send`` before the connection opens, which the SDK
    sends once it opens) is read by the gate then, before any server message."""

    def __init__(self, manager: Any, make: Callable[[Any], GuardedSession]) -> None:
        self._manager, self._make = manager, make
        self._queued: list[Any] = []
        self._session: GuardedSession | None = None

    def send(self, event: Any) -> None:
        self._manager.send(event)
        if self._session is None:
            self._queued.append(event)
        else:
            self._session.read_sent(event)

    def _guarded(self, connection: Any) -> GuardedSession:
        self._session = self._make(connection)
        queued, self._queued = self._queued, []
        for event in queued:
            self._session.read_sent(event)
        return self._session

    def __enter__(self) -> GuardedSession:
        return self._guarded(self._manager.__enter__())

    def __exit__(self, *exc: Any) -> Any:
        return self._manager.__exit__(*exc)

    def enter(self) -> Any:
        """The connection without a with block (the SDK's ``enter()``; awaited for the async
        client's)."""
        entered = self._manager.enter()
        if not inspect.isawaitable(entered):
            return self._guarded(entered)

        async def guarded() -> GuardedSession:
            return self._guarded(await entered)

        return guarded()

    async def __aenter__(self) -> GuardedSession:
        return self._guarded(await self._manager.__aenter__())

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._manager.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._manager, name)
