"""``callgate.guarded``: an SDK client whose streamed calls come back guarded.

How this works: the guarded client is a shallow copy of the client (the same class, so a
framework's ``isinstance`` check holds, and the same HTTP connection pool), in which the
resources that stream (``chat``, ``responses``, ``messages``; ``CLIENT_STREAMS`` in the gate's
table) are replaced by stand-ins. A stand-in passes every attribute through, except the methods
that stream: those call the SDK's method and guard what it returns, with the tools and
``tool_choice`` of that call's own arguments. ``create`` is guarded when called with
``stream=True`` only; a call that does not stream returns the SDK's result untouched.
``with_options`` and ``copy`` give guarded clients too.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from callgate.cli.guard.wrap import Settings, guard, guard_settings
from callgate.reassemble.errors import UsageError
from callgate.reassemble.gate import CLIENT_STREAMS

Client = TypeVar("Client")


def guarded(client: Client, *, provider: str | None = None, allow: tuple[str, ...] = ()) -> Client:
    """A client that behaves like ``client`` (an openai or anthropic client, sync or async),
    whose every streamed call comes back as ``callgate.guard`` gives it. ``provider`` and
    ``allow`` are ``guard``'s. Raises ``UsageError`` for another object."""
    cls = type(client)
    package = cls.__module__.partition(".")[0]
    paths = CLIENT_STREAMS.get(package)
    if paths is None:
        raise UsageError(
            f"guarded() takes an SDK client ({', '.join(sorted(CLIENT_STREAMS))}), not a "
            f"{cls.__module__}.{cls.__qualname__}"
        )
    settings: Settings = {"provider": provider, "allow": tuple(allow)}
    duplicate = copy.copy(client)
    for root in sorted({path[0] for path in paths}):
        duplicate.__dict__[root] = _Resource(getattr(client, root), paths, (root,), settings)
    for name in ("with_options", "copy"):
        duplicate.__dict__[name] = _regarding(getattr(client, name), provider, allow)
    return duplicate


def _regarding(method: Callable[..., Any], provider: str | None, allow: tuple[str, ...]) -> Any:
    def guarded_too(*args: Any, **kwargs: Any) -> Any:
        return guarded(method(*args, **kwargs), provider=provider, allow=allow)

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
    ) -> None:
        self._target, self._paths, self._at, self._settings = target, paths, at, settings

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        path = (*self._at, name)
        if path in self._paths:
            return _streaming(value, streams_always=name != "create", settings=self._settings)
        if any(known[: len(path)] == path for known in self._paths):
            return _Resource(value, self._paths, path, self._settings)
        return value

    def __repr__(self) -> str:
        return f"<callgate guarded {self._target!r}>"


def _streaming(method: Callable[..., Any], *, streams_always: bool, settings: Settings) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        result = method(*args, **kwargs)
        if not streams_always and kwargs.get("stream") is not True:
            return result
        tools, choice = guard_settings(kwargs)
        if inspect.isawaitable(result):
            return _guard_awaited(result, tools, choice, settings)
        return guard(result, tools, tool_choice=choice, **settings)

    return call


async def _guard_awaited(result: Any, tools: list[Any], choice: object, settings: Settings) -> Any:
    return guard(await result, tools, tool_choice=choice, **settings)
