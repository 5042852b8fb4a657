"""``callgate.guard``: which SDK object this is, and the guarded stream (or manager) for it.

How this works: the object's class is looked up by its package and name in the gate's table
(``callgate.reassemble.gate.STREAM_TYPES``), so no SDK is imported here. The profile comes from
the table, refined by the URL of the request where the SDK keeps it (openai's one ``Stream``
class carries Chat Completions and Responses events), and the provider from that URL's host
unless given. Any other object is read as an iterable of wire events when ``profile=`` names
their profile. A stream something has read from already cannot be guarded: the events it gave
out were never judged.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Iterable, Mapping
from functools import cached_property
from typing import Any

from callgate.integrations.otel import record_unjudged, record_verdict
from callgate.integrations.sdk.streams import AsyncGuardedStream, GuardedStream
from callgate.reassemble.errors import UsageError
from callgate.reassemble.gate import (
    BODY,
    EVENTS,
    GENERATOR,
    HELPER,
    MANAGER,
    MESSAGES,
    SESSION,
    SESSION_MANAGER,
    WRAPPER,
    Gate,
    StreamType,
    generator_type,
    message_profile,
    require_on_error,
    stream_profile,
)
from callgate.reassemble.gate import stream_type as table_type
from callgate.reassemble.profiles import PROFILES
from callgate.reassemble.providers import provider_from_url
from callgate.reassemble.sdk import tool_schemas_of
from callgate.reassemble.sessions import SessionGate

log = logging.getLogger("callgate.guard")

#: What ``guard`` was given besides the stream: handed to the streams a manager gives.
Settings = dict[str, Any]


class _Missing:
    def __repr__(self) -> str:
        return "<no tools>"


MISSING: Any = _Missing()


def guard(
    stream: Any,
    tools: Any = MISSING,
    *,
    provider: str | None = None,
    allow: Iterable[str] = (),
    profile: str | None = None,
    tool_choice: object = None,
    on_error: str = "block",
) -> Any:
    """Wrap the stream object an SDK returned so that its tool calls are judged before the app
    sees the end of the turn. Where the stream object keeps the request the SDK sent (openai's
    and anthropic's streams, helpers and managers), its ``tools`` and ``tool_choice`` are read
    from it; elsewhere ``tools`` is needed: the list of tools the app gave the SDK, in that SDK's
    shape (an empty list when it gave none), and ``tool_choice`` the request's (a forced call
    may end with ``"stop"``). ``provider`` names the provider when the URL's host does not tell
    it; ``allow`` names quirks to tolerate; ``profile`` reads any iterable (or async iterable)
    of wire events, or overrides the one the object's type gives. ``on_error`` is what a turn
    callgate cannot judge (an item it cannot read, a failure of its own) does: ``"block"``
    raises ``Unjudged`` instead of the turn's end; ``"pass"`` hands the turn on unjudged, with
    one log line and a count and evaluation event labelled unjudged (OpenTelemetry); the
    guarded stream then has no calls to give.

    Returns an object that behaves like ``stream`` (iteration, a with block, attributes), with
    the turn's report and calls once read; iterating it raises ``Blocked`` instead of handing
    out the turn's terminal evidence when the calls may not run. Raises ``UsageError`` (one
    line) without tools where the request cannot be read, for tools that differ from those the
    SDK sent, for an object callgate cannot read, for a stream already read from, for tools
    it cannot read, or for an ``on_error`` it does not know.
    """
    require_on_error(on_error)
    settings: Settings = {
        "provider": provider,
        "allow": tuple(allow),
        "profile": profile,
        "tool_choice": tool_choice,
        "on_error": on_error,
    }
    kind, package = _kind_of(stream, profile)
    if kind.role in (SESSION, SESSION_MANAGER):
        return _guard_session(stream, kind, tools, settings)
    if kind.role == MANAGER:
        manager = AsyncGuardedManager if kind.asynchronous else GuardedManager
        return manager(stream, tools, settings)
    wire = None if not package else stream._raw_stream if kind.role == HELPER else stream
    for reader in (stream, wire):
        _require_unread(reader)
    if kind.role not in (EVENTS, HELPER) or not package:
        _require_tools(tools, f"a {package} stream" if package else "an iterable of events")
    if kind.role == GENERATOR:
        return _guard_generator(stream, kind, package, tools, settings)
    if kind.role == MESSAGES:
        return _guard_messages(stream, kind, tools, settings)
    if kind.role == WRAPPER:
        return _guard_wrapped(stream, tools, settings)
    if kind.role == BODY:
        return _guard_body(stream, kind, tools, settings)
    url = _request_url(wire)
    provider = provider or (provider_from_url(url) if url else None)
    profile = profile or stream_profile(kind, url, provider)
    tools, tool_choice = _asked(tools, tool_choice, _sent_request(wire), profile, package)
    gate = _gate(profile, tools, {**settings, "provider": provider, "tool_choice": tool_choice})
    wrapper = AsyncGuardedStream if kind.asynchronous else GuardedStream
    return wrapper(stream, gate, wire=wire)


def _guard_generator(
    stream: Any, kind: StreamType, package: str, tools: Any, settings: Settings
) -> Any:
    """An SDK's generator (google-genai's, cohere's), read by that SDK's tap: it keeps no
    request URL."""
    from callgate.integrations.sdk import taps  # only for the SDKs that stream through generators

    gate = _gate(settings["profile"] or kind.profile, tools, settings)
    wrapper = AsyncGuardedStream if kind.asynchronous else GuardedStream
    return wrapper(stream, gate, wire=stream, source=taps.bound(stream, gate, package))


def _guard_messages(stream: Any, kind: StreamType, tools: Any, settings: Settings) -> Any:
    """botocore's ``EventStream`` (boto3's Bedrock streams): its profile is its operation's."""
    from callgate.integrations.sdk import taps  # only for boto3's streams

    operation = str(getattr(stream, "_operation_name", ""))
    profile = settings["profile"] or message_profile(operation)
    if profile is None:
        raise UsageError(
            f"guard() reads Bedrock's ConverseStream and InvokeModelWithResponseStream, not a "
            f"{operation} stream"
        )
    gate = _gate(profile, tools, settings)
    taps.tap_messages(stream, gate)
    return GuardedStream(stream, gate, wire=stream, source=stream)


def _guard_wrapped(stream: Any, tools: Any, settings: Settings) -> Any:
    """litellm's ``CustomStreamWrapper``: the SDK stream it keeps is tapped, its own items are
    what the app iterates; sync or async as that stream is."""
    inner = getattr(stream, "completion_stream", None)
    cls = type(inner)
    kind = table_type(cls.__module__.partition(".")[0], cls.__name__)
    if kind is None or kind.role != EVENTS:
        raise UsageError(
            "guard() reads a litellm stream whose provider stream is an openai or anthropic SDK "
            f"stream, not a {cls.__module__}.{cls.__qualname__}: callgate cannot read the "
            "provider's events under it"
        )
    _require_unread(inner)
    url = _request_url(inner)
    provider = settings["provider"] or (provider_from_url(url) if url else None)
    profile = settings["profile"] or stream_profile(kind, url, provider)
    gate = _gate(profile, tools, {**settings, "provider": provider})
    wrapper = AsyncGuardedStream if kind.asynchronous else GuardedStream
    return wrapper(stream, gate, wire=inner)


def _guard_body(stream: Any, kind: StreamType, tools: Any, settings: Settings) -> Any:
    """mistralai's ``EventStream``: callgate reads the body of the HTTP response it keeps."""
    from callgate.integrations.sdk import bodies  # only for mistralai's streams

    _require_unread(stream.generator)
    if stream._closed:
        raise UsageError("guard() takes a stream nothing has read from yet")
    url = _request_url(stream)
    provider = settings["provider"] or (provider_from_url(url) if url else None)
    profile = settings["profile"] or kind.profile
    gate = _gate(profile, tools, {**settings, "provider": provider})
    wrapper = AsyncGuardedStream if kind.asynchronous else GuardedStream
    return wrapper(stream, gate, wire=stream, source=bodies.read(stream, gate, profile))


def _guard_session(stream: Any, kind: StreamType, tools: Any, settings: Settings) -> Any:
    """openai's Realtime or Responses WebSocket connection, or the manager ``connect()``
    returns: each response is judged as it ends, by the tools the app sends the session
    (``session.update``, ``response.create``), else those given here (none: every call is
    ``unknown_tool``)."""
    from callgate.integrations.sdk import sessions  # only for WebSocket sessions

    tools = [] if tools is MISSING or tools is None else tools
    profile = settings["profile"] or kind.profile

    def make(connection: Any) -> Any:
        gate = SessionGate(profile, tools, **_gate_settings(profile, settings))
        wrapper = sessions.AsyncGuardedSession if kind.asynchronous else sessions.GuardedSession
        return wrapper(connection, gate)

    if kind.role == SESSION_MANAGER:
        return sessions.GuardedSessionManager(stream, make)
    return make(stream)


def _gate(profile: str, tools: Any, settings: Settings) -> Gate[Any]:
    return Gate(profile, tools, **_gate_settings(profile, settings))


def _gate_settings(profile: str, settings: Settings) -> dict[str, Any]:
    """A gate's keyword arguments from ``guard``'s settings."""
    choice = settings["tool_choice"]

    def unjudged(fault: BaseException) -> None:
        log.warning(
            "callgate: an unjudged %s turn went on (on_error='pass') after %s: %s",
            profile,
            type(fault).__name__,
            str(fault)[:200],
        )
        record_unjudged(profile, type(fault).__name__)

    return {
        "request": {"tool_choice": choice} if choice is not None else None,
        "provider": settings["provider"],
        "allow": settings["allow"],
        "on_verdict": record_verdict,
        "on_error": settings["on_error"],
        "on_unjudged": unjudged,
    }


def _kind_of(stream: object, profile: str | None) -> tuple[StreamType, str]:
    """How to read ``stream``, and the SDK package it comes from ("" for a plain iterable)."""
    if profile is not None and profile not in PROFILES:
        raise UsageError(f"unknown profile {profile!r}; known: {', '.join(sorted(PROFILES))}")
    cls = type(stream)
    package = cls.__module__.partition(".")[0]
    kind = table_type(package, cls.__name__)
    if kind is not None:
        return kind, package
    package, kind = _generator_kind(stream)
    if kind is not None:
        return kind, package
    if profile is not None and hasattr(stream, "__aiter__"):
        return StreamType(profile, EVENTS, asynchronous=True), ""
    if profile is not None and hasattr(stream, "__iter__"):
        return StreamType(profile, EVENTS, asynchronous=False), ""
    raise UsageError(
        f"guard() cannot read a {cls.__module__}.{cls.__qualname__}: give it the stream an "
        "SDK returned, or an iterable of wire events with profile="
    )


def _generator_kind(stream: object) -> tuple[str, StreamType | None]:
    """The SDK package of a generator, and how to read it, told by its function's module and
    qualified name."""
    code = getattr(stream, "gi_code", None) or getattr(stream, "ag_code", None)
    frame = getattr(stream, "gi_frame", None) or getattr(stream, "ag_frame", None)
    if code is None or frame is None:  # a finished generator tells no module
        return "", None
    package = str(frame.f_globals.get("__name__", "")).partition(".")[0]
    return package, generator_type(package, code.co_qualname)


def _require_unread(stream: object) -> None:
    """Refuse a stream that gave out events already. Its generator is looked at without making
    it: anthropic's stream makes it on first use, on a copy of itself, which must carry the
    tap; one made but not started is dropped, to be made again."""
    if inspect.isgenerator(stream) or inspect.isasyncgen(stream):
        if not _unstarted(stream):
            raise UsageError("guard() takes a stream nothing has read from yet")
        return
    state = vars(stream) if hasattr(stream, "__dict__") else {}
    iterator = state.get("_iterator")
    if iterator is None:
        return
    if not _unstarted(iterator):
        raise UsageError("guard() takes a stream nothing has read from yet")
    if isinstance(getattr(type(stream), "_iterator", None), cached_property):
        del state["_iterator"]


def _unstarted(iterator: object) -> bool:
    if inspect.isgenerator(iterator):
        return inspect.getgeneratorstate(iterator) == inspect.GEN_CREATED
    if inspect.isasyncgen(iterator):
        frame = iterator.ag_frame
        return frame is not None and not iterator.ag_running and frame.f_lasti <= _made_at(iterator)
    return True


def _made_at(iterator: Any) -> int:
    """Where the frame of an async generator not started yet stands: at the instruction that
    made it (after copying its free variables, for a closure such as google-genai's)."""
    import dis  # only for an async generator's state

    made = (
        i.offset for i in dis.get_instructions(iterator.ag_code) if i.opname == "RETURN_GENERATOR"
    )
    return next(made, 0)


def _require_tools(tools: Any, what: str) -> None:
    if tools is MISSING or tools is None:
        raise UsageError(
            f"guard() needs the tools the app gave the SDK (tools=[...], [] for none): {what} "
            "keeps no request to read them from, and a call to a tool callgate was not told "
            "about is unknown_tool"
        )


def _sent_request(stream: object) -> dict[str, Any] | None:
    """The JSON body of the request the SDK sent, where the stream keeps its HTTP response (and
    that its request); None where it keeps none, or the body is not a JSON object."""
    try:
        body = stream.response.request.content  # type: ignore[attr-defined]
        sent = json.loads(body)
    except (AttributeError, RuntimeError, TypeError, ValueError):
        # No response, httpx's "request not read" (a streamed body), or no JSON.
        return None
    return sent if isinstance(sent, dict) else None


def _asked(
    tools: Any, tool_choice: object, sent: dict[str, Any] | None, profile: str, package: str
) -> tuple[Any, object]:
    """The tools and ``tool_choice`` the turn is judged by: those of the request the SDK sent,
    where it can be read; the app's tools, given too, must be the same tools."""
    if sent is None:
        _require_tools(tools, f"a {package} stream")
        return tools, tool_choice
    asked = sent.get("tools") if isinstance(sent.get("tools"), list) else []
    if tools is not MISSING and tools is not None:
        given, read = tool_schemas_of(tools, profile), tool_schemas_of(asked, profile)
        if given != read:
            differ = sorted(set(given) ^ set(read)) or sorted(
                name for name in given if given[name] != read.get(name)
            )
            raise UsageError(
                f"guard(tools=...) differs from the tools the SDK sent ({', '.join(differ)}): "
                "pass the list given to the SDK, or leave tools= out"
            )
    choice = sent.get("tool_choice")
    if tool_choice is None and isinstance(choice, str | dict):
        tool_choice = choice
    return asked, tool_choice


def _request_url(stream: object) -> str | None:
    """The URL the SDK sent the stream's request to, where it keeps its HTTP response."""
    try:
        return str(stream.response.request.url)  # type: ignore[attr-defined]
    except (AttributeError, RuntimeError):  # no response, or httpx's "request not set"
        return None


class GuardedManager:
    """openai's ``.stream()`` and anthropic's ``messages.stream()`` context managers, guarded:
    entering gives the guarded helper stream."""

    def __init__(self, manager: Any, tools: Any, settings: Settings) -> None:
        self._manager, self._tools, self._settings = manager, tools, settings

    def __enter__(self) -> Any:
        return guard(self._manager.__enter__(), self._tools, **self._settings)

    def __exit__(self, *exc: Any) -> Any:
        return self._manager.__exit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._manager, name)


class AsyncGuardedManager(GuardedManager):
    """The async form of ``GuardedManager``."""

    async def __aenter__(self) -> Any:
        return guard(await self._manager.__aenter__(), self._tools, **self._settings)

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._manager.__aexit__(*exc)


def guard_settings(kwargs: Mapping[str, Any]) -> tuple[list[Any], object]:
    """The tools and ``tool_choice`` of an SDK call's keyword arguments: what it left out (or
    passed as the SDK's "not given" marker) is none."""
    tools = kwargs.get("tools")
    choice = kwargs.get("tool_choice")
    return (
        list(tools) if isinstance(tools, list | tuple) else [],
        choice if isinstance(choice, str | dict) else None,
    )
