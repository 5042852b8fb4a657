"""Ollama's native chat stream (``POST /api/chat``): ``chunks[]``, one ``ChatResponse`` per line of
newline-delimited JSON (``application/x-ndjson``).

Wire facts (ollama/ollama ``api/types.go``; recorded Ollama Cloud streams in the shared corpus):
each line has ``model``, ``created_at``, ``message`` (``role``, ``content``, ``thinking``,
``tool_calls``) and ``done``. Calls arrive whole: ``message.tool_calls[]`` entries
``{"id", "function": {"index", "name", "arguments"}}`` whose ``arguments`` is a JSON *object*, not
text. ``index`` counts the calls of the stream (the server keeps one counter across lines,
``server/routes.go``); ``id`` (``call_`` and 8 characters) is newer than ``index``, and
ollama-python (0.6.3) models neither, so neither is required: a call without ``index`` takes the
next slot, a call without ``id`` is matched by name and position, as Ollama's own tool messages
are. A second call at an index already taken is not a restatement (calls are never sent twice):
the engine reports ``duplicate_start``, and ``identity_collision`` when its id or name differs
(older servers sent index 0 for every call: ollama/ollama #15457, #7881).

The last line has ``done: true`` and ``done_reason``: ``stop`` ends text and call turns alike,
``length`` means the output hit its limit. A failure mid-stream is a line ``{"error": "..."}``,
on which ollama-python raises ``ResponseError``.

Canonical arguments text: as for Gemini (``gemini.canonical_arguments``): members in the order
received, no whitespace, non-ASCII as itself. A call without ``arguments`` has ``{}``; ``null``
or any other non-object is written as it is, so the strict parse reports
``arguments_not_object``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from callgate.reassemble.codes import Code
from callgate.reassemble.events import (
    Event,
    Problem,
    SlotDelta,
    SlotEnded,
    SlotStarted,
    TurnEnded,
)
from callgate.reassemble.framing import NDJSON
from callgate.reassemble.profiles.base import (
    ArgumentSite,
    Profile,
    function_tools,
    is_index,
    provider_error,
    reason_replaced,
)
from callgate.reassemble.profiles.gemini import canonical_arguments

_CALLS = "/message/tool_calls"


class ChatTranslator:
    def __init__(self) -> None:
        self._next = 0  # the slot a call without an index takes
        self._taken: set[int] = set()

    def translate(self, raw: object) -> list[Event]:
        if not isinstance(raw, dict):
            return [Problem(Code.UNSUPPORTED_EVENT, "line is not a JSON object", "")]
        if "error" in raw:
            return [provider_error(str(raw["error"])[:200])]
        events = self._message(raw.get("message"))
        done = raw.get("done", False)
        if done is True:
            # Without a done_reason the turn still ends, with no reason that accepts its calls.
            reason = raw.get("done_reason")
            events.append(
                TurnEnded(0, reason, "/done_reason")
                if isinstance(reason, str)
                else TurnEnded(0, "", "/done")
            )
        elif done is not False:
            events.append(Problem(Code.UNSUPPORTED_EVENT, "done is not a boolean", "/done"))
        return events

    def _message(self, message: object) -> list[Event]:
        if message is None:
            return []
        if not isinstance(message, dict):
            return [Problem(Code.UNSUPPORTED_EVENT, "message is not an object", "/message")]
        calls = message.get("tool_calls")
        if calls is None:
            return []
        if not isinstance(calls, list):
            return [Problem(Code.UNSUPPORTED_EVENT, "tool_calls is not a list", _CALLS)]
        events: list[Event] = []
        for position, call in enumerate(calls):
            events.extend(self._call(call, f"{_CALLS}/{position}"))
        return events

    def _call(self, call: object, pointer: str) -> list[Event]:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(call, dict) or not isinstance(function, dict):
            return [Problem(Code.UNSUPPORTED_EVENT, "tool call has no function object", pointer)]
        index = function.get("index", self._next)
        if not is_index(index):
            return [
                Problem(
                    Code.INVALID_SLOT,
                    f"function.index {str(index)[:40]!r} is not a non-negative integer",
                    pointer + "/function/index",
                )
            ]
        self._next = max(self._next, index + 1)
        key = (0, index)
        call_id, name = call.get("id"), function.get("name")
        started = SlotStarted(
            key,
            pointer,
            call_id=call_id if isinstance(call_id, str) else None,
            name=name if isinstance(name, str) else None,
        )
        if index in self._taken:
            # Only the start: the engine reports the slot opened twice (and a differing id or
            # name); the call's arguments and end would only repeat that finding.
            return [started]
        self._taken.add(index)
        events: list[Event] = [
            Problem(
                Code.UNSUPPORTED_EVENT,
                f"{label} is not a string",
                f"{pointer}/{where}",
                choice=key[0],
                slot=key[1],
            )
            for label, where, value in (("id", "id", call_id), ("name", "function/name", name))
            if value is not None and not isinstance(value, str)
        ]
        events.append(started)
        arguments = pointer + "/function/arguments"
        try:
            text = canonical_arguments(function.get("arguments", {}))
        except RecursionError:
            events.append(
                Problem(
                    Code.LIMIT_EXCEEDED,
                    "arguments are nested too deeply to write as JSON",
                    arguments,
                    choice=key[0],
                    slot=key[1],
                )
            )
        else:
            events.append(SlotDelta(key, arguments, arguments=text))
        events.append(SlotEnded(key, pointer))
        return events


def accepted_reasons(request: Mapping[str, object]) -> frozenset[str]:
    return frozenset({"stop"})


def argument_sites(events: list[Any]) -> Iterator[ArgumentSite]:
    """Each call's ``function.arguments`` (a whole copy per call)."""
    for number, chunk in enumerate(events):
        message = chunk.get("message") if isinstance(chunk, dict) else None
        calls = message.get("tool_calls") if isinstance(message, dict) else None
        for position, call in enumerate(calls if isinstance(calls, list) else []):
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and "arguments" in function:
                yield "copy", (number, position), function, "arguments"


def error_body(message: str, codes: Sequence[str]) -> dict[str, object]:
    """Ollama's error line, on which ollama-python raises ``ResponseError``."""
    return {"error": message}


def _done(raw: object) -> bool:
    return isinstance(raw, dict) and raw.get("done") is True


PROFILE = Profile(
    name="ollama",
    stream_key="chunks",
    # "stop" ends text turns too, so no reason claims that the turn holds calls.
    call_reasons=frozenset(),
    accepted_reasons=accepted_reasons,
    turn_ends_slots=False,
    carries_terminal=_done,
    ends_stream=_done,
    cut_short=reason_replaced("done_reason", "length"),
    translator=lambda quirks, request: ChatTranslator(),
    requires_call_id=False,
    whole_calls=True,
    endpoints=("/api/chat",),
    tool_schemas=function_tools,
    framings=(NDJSON,),
    error_body=error_body,
    sniff=lambda first: isinstance(first, dict) and {"created_at", "done", "message"} <= set(first),
    argument_sites=argument_sites,
    structural_keys=frozenset({"done_reason", "created_at"}),
)
