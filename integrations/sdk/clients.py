"""``callgate.guarded``: an SDK client whose streamed calls come back guarded.

How this works: the guarded client is a shallow copy of the client (the same class, so a
framework's ``isinstance`` check holds, and the same HTTP connection pool), in which the
resources that stream (``chat``, ``responses``, ``messages``; ``CLIENT_STREAMS`` in the gate's
table) are replaced by stand-ins. A stand-in passes every attribute through, except the methods
that stream: those call the SDK's method and guard what it returns, with the tools and
``tool_choice`` of that call's own arguments. ``create`` is guarded when called with
``stream=True`` only; a call that does not stream returns the SDK's result untouched.
``with_options`` and ``copy`` give guarded clients too, and the client's own ``post``, ``get``
and ``request`` (``CLIENT_REQUESTS``) guard what they return for ``stream=True``. A resource's
``with_raw_response`` and ``with_streaming_response`` views (openai-agents streams the Responses
API through the latter) give the HTTP response, or a manager of it; the stream its ``parse()``
returns comes back guarded, as the stream ``create`` returns would.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from callgate.integrations.sdk.wrap import Settings, guard, guard_settings
from callgate.reassemble.errors import UsageError
from callgate.reassemble.gate import CLIENT_REQUESTS, CLIENT_STREAMS, require_on_error

Client = TypeVar("Client")
Guarding = Callable[[Any], Any]

#: A resource's views whose methods return the HTTP response (or a manager of it), not the stream.
RESPONSE_VIEWS = ("with_raw_response", "with_streaming_response")


def guarded(
    client: Client,
    *,
    provider: str | None = None,
    allow: tuple[str, ...] = (),
    on_error: str = "block",
) -> Client:
    """A client that behaves like ``client`` (an openai or anthropic client, sync or async),
    whose every streamed call comes back as ``callgate.guard`` gives it. ``provider``,
    ``allow`` and ``on_error`` are ``guard``'s. Raises ``UsageError`` for another object, or
    for an ``on_error`` callgate does not know."""
    cls = type(client)
    package = cls.__module__.partition(".")[0]
    paths = CLIENT_STREAMS.get(package)
    if paths is None:
        raise UsageError(
            f"guarded() takes an SDK client ({', '.join(sorted(CLIENT_STREAMS))}), not a "
            f"{cls.__module__}.{cls.__qualname__}"
        )
    require_on_error(on_error)
    settings: Settings = {"provider": provider, "allow": tuple(allow), "on_error": on_error}
    duplicate = copy.copy(client)
    for root in sorted({path[0] for path in paths}):
        duplicate.__dict__[root] = _Resource(getattr(client, root), paths, (root,), settings)
    for name in ("with_options", "copy"):
        duplicate.__dict__[name] = _regarding(getattr(client, name), settings)
    for name in CLIENT_REQUESTS.get(package, ()):
        duplicate.__dict__[name] = _requesting(getattr(client, name), settings)
    for view in RESPONSE_VIEWS:
        whole = getattr(client, view)
        duplicate.__dict__[view] = _Resource(whole, paths, (), settings, responds=True)
    return duplicate


def _regarding(method: Callable[..., Any], settings: Settings) -> Any:
    def guarded_too(*args: Any, **kwargs: Any) -> Any:
        return guarded(method(*args, **kwargs), **settings)

    return guarded_too


class _Resource:
    """An SDK resource (``client.chat``, ``client.chat.completions``...) whose streaming
    methods guard what they return."""

    def __init__(
        self,
        target: Any,
        paths: frozenset[tuple[str, ...]],
        at: tuple[str, ...],
        settings: Settings,
        *,
        responds: bool = False,
    ) -> None:
        self._target, self._paths, self._at, self._settings = target, paths, at, settings
        self._responds = responds  # a view whose methods return responses, not streams

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        path = (*self._at, name)
        responds = self._responds
        if path in self._paths and (name == "create" or not responds):
            return _streaming(value, name != "create", self._settings, responds=responds)
        if name in RESPONSE_VIEWS and not responds:
            return _Resource(value, self._paths, self._at, self._settings, responds=True)
        if any(known[: len(path)] == path for known in self._paths):
            return _Resource(value, self._paths, path, self._settings, responds=responds)
        return value

    def __repr__(self) -> str:
        return f"<callgate guarded {self._target!r}>"


def _streaming(
    method: Callable[..., Any], streams_always: bool, settings: Settings, *, responds: bool
) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        result = method(*args, **kwargs)
        if not streams_always and kwargs.get("stream") is not True:
            return result
        tools, choice = guard_settings(kwargs)

        def guard_stream(stream: Any) -> Any:
            return guard(stream, tools, tool_choice=choice, **settings)

        def guard_response(response: Any) -> Any:
            return _respond(response, guard_stream)

        guarding = guard_response if responds else guard_stream
        return _awaited(result, guarding) if inspect.isawaitable(result) else guarding(result)

    return call


def _requesting(method: Callable[..., Any], settings: Settings) -> Any:
    """The client's own ``post`` (``get``, ``request``): what it returns for ``stream=True`` is
    guarded, its tools and ``tool_choice`` read from the request the SDK sent (the body is the
    caller's, in any shape); the raw response a caller asked for gives a guarded ``parse()``."""

    def call(*args: Any, **kwargs: Any) -> Any:
        result = method(*args, **kwargs)
        if kwargs.get("stream") is not True:
            return result

        def guarding(made: Any) -> Any:
            guard_stream: Guarding = lambda stream: guard(stream, **settings)  # noqa: E731
            return _respond(made, guard_stream) if hasattr(made, "parse") else guard_stream(made)

        return _awaited(result, guarding) if inspect.isawaitable(result) else guarding(result)

    return call


async def _awaited(result: Any, guarding: Guarding) -> Any:
    return guarding(await result)


def _respond(response: Any, guard_stream: Guarding) -> Any:
    """The HTTP response a view returned, or the manager ``with_streaming_response`` returns,
    whose ``parse()`` gives the guarded stream."""
    if hasattr(response, "parse"):
        return _Response(response, guard_stream)
    return _ResponseManager(response, guard_stream)


class _Response:
    """The SDK's HTTP response; ``parse()`` (sync, or async for ``AsyncAPIResponse``) guards the
    stream it gives."""

    def __init__(self, target: Any, guard_stream: Guarding) -> None:
        self._target, self._guard_stream = target, guard_stream

    def parse(self, *args: Any, **kwargs: Any) -> Any:
        parsed = self._target.parse(*args, **kwargs)
        if inspect.isawaitable(parsed):
            return _awaited(parsed, self._guard_stream)
        return self._guard_stream(parsed)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)


class _ResponseManager:
    """``with_streaming_response``'s manager: the response it enters is a ``_Response``."""

    def __init__(self, target: Any, guard_stream: Guarding) -> None:
        self._target, self._guard_stream = target, guard_stream

    def __enter__(self) -> _Response:
        return _Response(self._target.__enter__(), self._guard_stream)

    def __exit__(self, *exc_info: Any) -> Any:
        return self._target.__exit__(*exc_info)

    async def __aenter__(self) -> _Response:
        return _Response(await self._target.__aenter__(), self._guard_stream)

    async def __aexit__(self, *exc_info: Any) -> Any:
        return await self._target.__aexit__(*exc_info)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)
