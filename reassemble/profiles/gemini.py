"""Gemini ``:streamGenerateContent`` (``alt=sse`` or the JSON-array body): ``chunks[]`` of
``GenerateContentResponse``.

Wire facts (google-genai ``types.py``; recorded streams): a candidate's ``content.parts`` carry
``functionCall`` parts whose ``args`` is a JSON *object*, not text; ``id`` is optional and there
is no call index, so a call's identity is its position: slot ``(candidate index, n)`` for the n-th
call part of that candidate across the whole stream. ``index`` is omitted when it is 0 (proto3
JSON drops default values). A candidate ends with ``finishReason``; ``STOP`` ends both text and
call turns, every other reason is wrong for a turn holding calls. A mid-stream failure is a chunk
with ``error``; ``promptFeedback.blockReason`` means the prompt was refused.

Canonical arguments text: a call's ``arguments`` is
``json.dumps(args, ensure_ascii=False, separators=(",", ":"))``: members in the order received, no
whitespace, non-ASCII as itself, numbers as the chunk's JSON reader produced them (``2`` stays
``2``, ``2.0`` stays ``2.0``). NaN is written out rather than refused, so the engine's strict
parser reports it as ``non_finite_number``. A call part without ``args`` has ``{}``.

Vertex streams arguments (``streamFunctionCallArguments``): a call opens with a part holding
``name`` and ``willContinue: true`` (or ``partialArgs``); later name-less parts add
``partialArgs`` items ``{jsonPath, stringValue|numberValue|boolValue|nullValue, willContinue}``;
an empty ``functionCall: {}`` part closes it. ``gemini_partial.Rebuild`` builds the object strictly;
the canonical text of the result is the call's arguments, sent when the call closes. A call still
open at the candidate's finish or at the end of the stream is left unended, which the engine
reports as ``missing_terminal``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from callgate.reassemble.codes import Code
from callgate.reassemble.events import (
    Event,
    Problem,
    SlotDelta,
    SlotEnded,
    SlotKey,
    SlotStarted,
    TurnEnded,
)
from callgate.reassemble.framing import JSON_ARRAY, SSE
from callgate.reassemble.profiles.base import (
    ArgumentSite,
    Profile,
    any_item_has,
    is_index,
    provider_error,
    reason_replaced,
)
from callgate.reassemble.profiles.gemini_partial import Conflict, Rebuild, show_path
from callgate.reassemble.profiles.gemini_schema import declaration_schemas

#: Part fields that carry no client tool call (google-genai ``Part``); a part may hold several.
_OTHER_PART_FIELDS = frozenset(
    {
        "text",
        "thought",
        "thoughtSignature",
        "inlineData",
        "fileData",
        "executableCode",
        "codeExecutionResult",
        "videoMetadata",
        "partMetadata",
        "mediaResolution",
    }
)
_CALL_FIELDS = frozenset({"id", "name", "args", "partialArgs", "willContinue"})


def canonical_arguments(args: object) -> str:
    """The canonical arguments text of a call's ``args`` (module docstring). Raises
    ``RecursionError`` for a value nested beyond what ``json`` can write."""
    return json.dumps(args, ensure_ascii=False, separators=(",", ":"))


@dataclass
class _Streamed:
    key: SlotKey
    rebuild: Rebuild


class GeminiTranslator:
    def __init__(self) -> None:
        self._calls: dict[int, int] = {}  # candidate -> call parts seen
        self._open: dict[int, _Streamed] = {}  # candidate -> Vertex streamed call in progress

    def translate(self, raw: object) -> list[Event]:
        if not isinstance(raw, dict):
            return [Problem(Code.UNSUPPORTED_EVENT, "chunk is not a JSON object", "")]
        refused = self._refusal(raw)
        if refused is not None:
            return [refused]
        candidates = raw.get("candidates")
        if candidates is None:  # usage-only or promptFeedback-only chunk
            return []
        if not isinstance(candidates, list):
            return [Problem(Code.UNSUPPORTED_EVENT, "candidates is not a list", "/candidates")]
        events: list[Event] = []
        for position, candidate in enumerate(candidates):
            events.extend(self._candidate(candidate, f"/candidates/{position}"))
        return events

    @staticmethod
    def _refusal(raw: Mapping[str, object]) -> Problem | None:
        error = raw.get("error")
        if error is not None:
            detail = (
                error.get("message") or error.get("status") if isinstance(error, dict) else (error)
            )
            return provider_error(str(detail)[:200])
        feedback = raw.get("promptFeedback")
        block = feedback.get("blockReason") if isinstance(feedback, dict) else None
        if block is not None:
            return Problem(
                Code.STREAM_ERROR,
                f"the prompt was blocked: {str(block)[:60]}",
                "/promptFeedback/blockReason",
            )
        return None

    def _candidate(self, candidate: object, pointer: str) -> list[Event]:
        if not isinstance(candidate, dict):
            return [Problem(Code.UNSUPPORTED_EVENT, "candidate is not an object", pointer)]
        index = candidate.get("index", 0)
        if not is_index(index):
            return [
                Problem(
                    Code.INVALID_SLOT,
                    f"candidate index {index!r} is not a non-negative integer",
                    pointer + "/index",
                )
            ]
        events = self._content(index, candidate.get("content"), pointer + "/content")
        reason = candidate.get("finishReason")
        if reason is not None:
            if not isinstance(reason, str):
                events.append(
                    Problem(
                        Code.UNSUPPORTED_EVENT,
                        "finishReason is not a string",
                        pointer + "/finishReason",
                        choice=index,
                    )
                )
            else:
                events.append(TurnEnded(index, reason, pointer + "/finishReason"))
        return events

    def _content(self, index: int, content: object, pointer: str) -> list[Event]:
        if content is None:
            return []
        parts = content.get("parts") if isinstance(content, dict) else None
        if parts is None and isinstance(content, dict):
            return []
        if not isinstance(parts, list):
            return [
                Problem(Code.UNSUPPORTED_EVENT, "content has no parts list", pointer, choice=index)
            ]
        events: list[Event] = []
        for position, part in enumerate(parts):
            events.extend(self._part(index, part, f"{pointer}/parts/{position}"))
        return events

    def _part(self, index: int, part: object, pointer: str) -> list[Event]:
        if not isinstance(part, dict):
            return [Problem(Code.UNSUPPORTED_EVENT, "part is not an object", pointer, choice=index)]
        unknown = sorted(set(part) - _OTHER_PART_FIELDS - {"functionCall"})
        if unknown:
            return [
                Problem(
                    Code.UNSUPPORTED_EVENT,
                    f"part field {unknown[0][:40]!r} is not known",
                    f"{pointer}/{unknown[0]}",
                    choice=index,
                )
            ]
        if "functionCall" not in part:
            return []
        call = part["functionCall"]
        pointer += "/functionCall"
        if not isinstance(call, dict):
            return [
                Problem(
                    Code.UNSUPPORTED_EVENT, "functionCall is not an object", pointer, choice=index
                )
            ]
        unknown = sorted(set(call) - _CALL_FIELDS)
        if unknown:
            return [
                Problem(
                    Code.UNSUPPORTED_EVENT,
                    f"functionCall field {unknown[0][:40]!r} is not known",
                    f"{pointer}/{unknown[0]}",
                    choice=index,
                )
            ]
        call = {key: value for key, value in call.items() if value is not None}
        if not call:
            return self._close(index, pointer)
        if index in self._open and "name" not in call:
            return self._more(index, call, pointer)
        return self._begin(index, call, pointer)

    def _begin(self, index: int, call: Mapping[str, object], pointer: str) -> list[Event]:
        """A part that opens a call: whole (``args``) or streamed (``willContinue``/partialArgs).
        A name while a streamed call is open starts a new call; the old one stays unended."""
        self._open.pop(index, None)
        key = (index, self._calls.get(index, 0))
        self._calls[index] = key[1] + 1
        call_id, name = call.get("id"), call.get("name")
        started: list[Event] = [
            SlotStarted(
                key,
                pointer,
                call_id=call_id if isinstance(call_id, str) else None,
                name=name if isinstance(name, str) else None,
            )
        ]
        for field_name, value in (("id", call_id), ("name", name)):
            if value is not None and not isinstance(value, str):
                started.insert(
                    0,
                    Problem(
                        Code.UNSUPPORTED_EVENT,
                        f"{field_name} is not a string",
                        f"{pointer}/{field_name}",
                        choice=key[0],
                        slot=key[1],
                    ),
                )
        if call.get("willContinue") is True or "partialArgs" in call:
            if "args" in call:
                return [
                    *started,
                    Problem(
                        Code.UNSUPPORTED_EVENT,
                        "a streamed call part also carries args",
                        pointer + "/args",
                        choice=key[0],
                        slot=key[1],
                    ),
                ]
            self._open[index] = _Streamed(key, Rebuild())
            return [*started, *self._partial(self._open[index], call, pointer)]
        return [
            *started,
            *whole_arguments(key, call.get("args", {}), pointer),
            SlotEnded(key, pointer),
        ]

    def _more(self, index: int, call: Mapping[str, object], pointer: str) -> list[Event]:
        streamed = self._open[index]
        events: list[Event] = []
        if "id" in call:
            call_id = call["id"]
            events.append(
                SlotDelta(
                    streamed.key,
                    pointer + "/id",
                    call_id=call_id if isinstance(call_id, str) else None,
                )
            )
        if "args" in call:
            return [
                *events,
                Problem(
                    Code.UNSUPPORTED_EVENT,
                    "a streamed call part carries args",
                    pointer + "/args",
                    choice=streamed.key[0],
                    slot=streamed.key[1],
                ),
            ]
        return [*events, *self._partial(streamed, call, pointer)]

    @staticmethod
    def _partial(streamed: _Streamed, call: Mapping[str, object], pointer: str) -> list[Event]:
        items = call.get("partialArgs", [])
        if not isinstance(items, list):
            streamed.rebuild.broken = True
            return [
                Problem(
                    Code.UNSUPPORTED_EVENT,
                    "partialArgs is not a list",
                    pointer + "/partialArgs",
                    choice=streamed.key[0],
                    slot=streamed.key[1],
                )
            ]
        if streamed.rebuild.broken:
            return []
        for position, item in enumerate(items):
            try:
                streamed.rebuild.apply(item)
            except Conflict as conflict:
                streamed.rebuild.broken = True
                return [
                    Problem(
                        conflict.code,
                        f"partialArgs: {conflict.message}",
                        f"{pointer}/partialArgs/{position}",
                        choice=streamed.key[0],
                        slot=streamed.key[1],
                    )
                ]
        return []

    def _close(self, index: int, pointer: str) -> list[Event]:
        streamed = self._open.pop(index, None)
        if streamed is None:
            return [
                Problem(
                    Code.INVALID_SLOT,
                    "an empty functionCall part closes no streamed call",
                    pointer,
                    choice=index,
                )
            ]
        if streamed.rebuild.open_path is not None:
            # The closing part cuts the open string short: its value is not known.
            open_path = show_path(streamed.rebuild.open_path)
            return [
                Problem(
                    Code.INVALID_ARGUMENTS_JSON,
                    f"partialArgs: the call closed while {open_path} was still continuing",
                    pointer,
                    choice=streamed.key[0],
                    slot=streamed.key[1],
                ),
                SlotEnded(streamed.key, pointer),
            ]
        if streamed.rebuild.broken:
            return [SlotEnded(streamed.key, pointer)]
        return [
            *whole_arguments(streamed.key, streamed.rebuild.root, pointer),
            SlotEnded(streamed.key, pointer),
        ]


def whole_arguments(key: SlotKey, args: object, pointer: str) -> list[Event]:
    """A whole call's ``args`` object as its argument text (``canonical_arguments``), or the
    limit finding when it is nested too deeply to write."""
    try:
        text = canonical_arguments(args)
    except RecursionError:
        return [
            Problem(
                Code.LIMIT_EXCEEDED,
                "args are nested too deeply to write as JSON",
                pointer,
                choice=key[0],
                slot=key[1],
            )
        ]
    return [SlotDelta(key, pointer, arguments=text)]


def accepted_reasons(request: Mapping[str, object]) -> frozenset[str]:
    return frozenset({"STOP"})


def argument_sites(events: list[Any]) -> Iterator[ArgumentSite]:
    """Each ``functionCall``'s ``args`` (a whole copy per part) and the string pieces of
    Vertex's ``partialArgs``."""
    for number, chunk in enumerate(events):
        candidates = chunk.get("candidates") if isinstance(chunk, dict) else None
        for candidate in candidates if isinstance(candidates, list) else []:
            content = candidate.get("content") if isinstance(candidate, dict) else None
            parts = content.get("parts") if isinstance(content, dict) else None
            for position, part in enumerate(parts if isinstance(parts, list) else []):
                call = part.get("functionCall") if isinstance(part, dict) else None
                if not isinstance(call, dict):
                    continue
                if "args" in call:
                    yield "copy", (number, position), call, "args"
                for piece in call.get("partialArgs") or []:
                    if isinstance(piece, dict) and isinstance(piece.get("stringValue"), str):
                        yield "piece", None, piece, "stringValue"


def error_body(message: str, codes: Sequence[str]) -> dict[str, object]:
    """Google's error shape (``google.rpc.Status``), as Gemini sends errors; google-genai
    raises ``ClientError`` on it."""
    return {"error": {"code": 409, "message": message, "status": "ABORTED"}}


PROFILE = Profile(
    name="gemini",
    stream_key="chunks",
    # STOP ends text turns too, so no reason claims that the turn holds calls.
    call_reasons=frozenset(),
    accepted_reasons=accepted_reasons,
    turn_ends_slots=False,
    carries_terminal=any_item_has("candidates", "finishReason"),
    terminal_pattern=rb"finishReason",
    cut_short=reason_replaced("finishReason", "MAX_TOKENS"),
    translator=lambda quirks, request: GeminiTranslator(),
    requires_call_id=False,
    whole_calls=True,
    slot_field=False,
    endpoints=(":streamGenerateContent",),
    tool_schemas=lambda request: declaration_schemas(request.get("tools")),
    framings=(JSON_ARRAY, SSE),
    error_body=error_body,
    argument_sites=argument_sites,
    structural_keys=frozenset({"finishReason", "jsonPath", "blockReason", "modelVersion"}),
)
