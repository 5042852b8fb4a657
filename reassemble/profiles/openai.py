"""OpenAI-compatible Chat Completions: ``chunks[].choices[].delta.tool_calls[]``.

Wire facts this relies on (OpenAI's streaming docs and recorded streams): a call's id, type and
name come in its first delta and continuations carry ``index`` plus argument text; a choice ends
with a non-null ``finish_reason``; a usage-only chunk has ``choices: []`` (or ``null`` on vLLM);
Azure adds chunks with ``choices: []`` and ``prompt_filter_results``; a mid-stream error is a chunk
with an ``error`` key (vLLM: ``"object": "error"``). Fields this profile does not name
(``obfuscation``, ``x_groq``, ``provider``, ``timings``, ...) carry no tool call and are ignored;
tool data in a form it cannot read (legacy ``function_call``) is ``unsupported_event``, and a
call of a type it does not know could be one the client runs: it fails the turn.

A call to a custom tool (``type: "custom"``, ``custom: {name, input}``; openai-python
``chat_completion_message_custom_tool_call.py``) takes free-form text as its input. Its stream
is read like a function's, with ``custom.input`` for ``function.arguments``; openai-python's
chunk type knows no custom member (openai-python issue #2530), so a fragment is taken as custom
input by its ``custom`` member, whether or not it restates ``type``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from callgate.reassemble.codes import Code
from callgate.reassemble.events import Event, Problem, SlotDelta, SlotKey, SlotStarted, TurnEnded
from callgate.reassemble.findings import Severity
from callgate.reassemble.profiles.base import (
    ArgumentSite,
    FragmentSite,
    Profile,
    any_item_has,
    function_tools,
    is_index,
    openai_error,
    provider_error,
    reason_replaced,
    sites_event_by_event,
)


def _optional_str(entry: Mapping[str, object], key: str) -> tuple[str | None, bool]:
    """(value, ok): a string or None is fine; anything else is not readable."""
    value = entry.get(key)
    return (value, True) if value is None or isinstance(value, str) else (None, False)


#: Where the entry of a continuation chunk is (one choice, one entry).
_CONTINUATION = "/choices/0/delta/tool_calls/0"


class ChatTranslator:
    """Reads Chat Completions chunks. A tool call without ``index`` is placed by ``mistral``
    and ``quirks``: with ``mistral`` (Mistral's API) one carrying an id and a name takes the
    choice's next slot; with the ``missing_tool_call_index`` quirk in ``quirks`` one carrying a
    name takes it, as a tolerated finding; any other is an ``invalid_slot`` finding."""

    def __init__(self, quirks: frozenset[str], *, mistral: bool = False) -> None:
        self._mistral = mistral
        self._indexless_quirk = "missing_tool_call_index" in quirks
        self._mirror_quirk = "choice_message_mirror" in quirks
        self._mirror_reported = False
        self._seen: set[SlotKey] = set()
        #: The slots whose call is a custom tool's (free-form input).
        self._custom: set[SlotKey] = set()
        self._next_slot: dict[int, int] = {}

    def translate(self, raw: object) -> list[Event]:
        if type(raw) is dict:
            fast = self.continuation(raw)
            if fast is not None:
                return [SlotDelta(fast[0], _CONTINUATION, fast[1])]
        if not isinstance(raw, dict):
            return [Problem(Code.UNSUPPORTED_EVENT, "chunk is not a JSON object", "")]
        error = self._stream_error(raw)
        if error is not None:
            return [error]
        choices = raw.get("choices")
        if choices is None and "usage" in raw:
            return []
        if not isinstance(choices, list):
            return [Problem(Code.UNSUPPORTED_EVENT, "chunk has no choices list", "/choices")]
        events: list[Event] = []
        for position, choice in enumerate(choices):
            events.extend(self._choice(choice, f"/choices/{position}", position))
        return events

    #: Where in a chunk the argument text of ``continuation`` is.
    continuation_pointer = _CONTINUATION

    def continuation(self, raw: Any) -> tuple[SlotKey, str] | None:
        """The chunk most streams are made of: one choice whose one tool-call entry adds
        argument text to a slot already seen, and nothing else that this profile reads: its
        slot and text, which ``translate`` gives as one ``SlotDelta`` at ``_CONTINUATION``
        exactly as the general reading does, with a fraction of the steps (the engine reads it
        without the event); None for any other chunk, which then takes the general reading.
        (Subscripts and unpacking rather than a ``get`` and a type or length test per step: of
        JSON's values only an object takes a string subscript or has ``get``, so a chunk of any
        other shape fails on one of them, or on unpacking exactly one item, and takes the
        general reading.)"""
        try:
            (choice,) = raw["choices"]
            delta = choice["delta"]
            calls = delta.get("tool_calls")
            if calls is None:  # a text chunk: no exception for the commonest other chunk
                return None
            (entry,) = calls
            function = entry["function"]
            arguments, index, slot = function["arguments"], choice["index"], entry["index"]
        except (KeyError, TypeError, ValueError, AttributeError):
            return None
        key = (index, slot)
        if (
            type(arguments) is not str
            or type(index) is not int
            or type(slot) is not int
            or "error" in raw
            or raw.get("object") == "error"
            or choice.get("finish_reason") is not None
            or "message" in choice
            or key not in self._seen
            or key in self._custom  # a function's fragment on a custom call's slot collides
        ):
            return None
        # The entry, its function and the delta most often hold nothing else: counting their
        # members then spares looking each other field up.
        if len(entry) == 2 and len(function) == 1 and len(delta) == 1:
            return key, arguments
        if (
            "function_call" in delta
            or entry.get("id") is not None
            or entry.get("type") not in (None, "", "function")
            or function.get("name") is not None
        ):
            return None
        return key, arguments

    @staticmethod
    def _stream_error(raw: Mapping[str, object]) -> Problem | None:
        error = raw.get("error")
        if error is not None:
            detail = error.get("message") or error.get("code") if isinstance(error, dict) else error
            return provider_error(str(detail)[:200])
        if raw.get("object") == "error":
            return provider_error(str(raw.get("message")), "")
        return None

    def _choice(self, choice: object, pointer: str, position: int) -> list[Event]:
        if not isinstance(choice, dict):
            return [Problem(Code.UNSUPPORTED_EVENT, "choice is not an object", pointer)]
        index = choice.get("index", position)
        if not is_index(index):
            return [Problem(Code.INVALID_SLOT, f"choice index {index!r} is not a number", pointer)]
        delta = choice.get("delta")
        delta = {} if delta is None else delta
        if not isinstance(delta, dict):
            return [Problem(Code.UNSUPPORTED_EVENT, "delta is not an object", pointer + "/delta")]
        events = self._message_mirror(choice, delta, index, pointer)
        events += self._tool_calls(index, delta, pointer + "/delta")
        if delta.get("function_call") is not None:
            events.append(
                Problem(
                    Code.UNSUPPORTED_EVENT,
                    "legacy function_call deltas are not reassembled",
                    pointer + "/delta/function_call",
                    choice=index,
                )
            )
        events.extend(self._finish(index, choice.get("finish_reason"), pointer))
        return events

    def _message_mirror(
        self, choice: Mapping[str, object], delta: Mapping[str, object], index: int, pointer: str
    ) -> list[Event]:
        """A streamed choice has no ``message``; Writer mirrors ``delta`` there. Anything else in
        it could be tool data this profile does not read."""
        message = choice.get("message")
        if message is None:
            return []
        if not (self._mirror_quirk and message == delta):
            return [
                Problem(
                    Code.UNSUPPORTED_EVENT,
                    "a streamed choice carries a message object",
                    pointer + "/message",
                    choice=index,
                )
            ]
        if self._mirror_reported:
            return []
        self._mirror_reported = True
        return [
            Problem(
                Code.UNSUPPORTED_EVENT,
                "choices carry a message object equal to their delta",
                pointer + "/message",
                choice=index,
                severity=Severity.TOLERATED,
                quirk="choice_message_mirror",
            )
        ]

    @staticmethod
    def _finish(choice: int, reason: object, pointer: str) -> list[Event]:
        if reason is None:
            return []
        if not isinstance(reason, str):
            return [
                Problem(
                    Code.UNSUPPORTED_EVENT,
                    "finish_reason is not a string",
                    pointer + "/finish_reason",
                    choice=choice,
                )
            ]
        return [TurnEnded(choice, reason, pointer + "/finish_reason")]

    def _tool_calls(self, choice: int, delta: Mapping[str, object], pointer: str) -> list[Event]:
        calls = delta.get("tool_calls")
        if calls is None:
            return []
        if not isinstance(calls, list):
            return [
                Problem(
                    Code.UNSUPPORTED_EVENT,
                    "tool_calls is not a list",
                    pointer + "/tool_calls",
                    choice=choice,
                )
            ]
        events: list[Event] = []
        for position, entry in enumerate(calls):
            events.extend(self._entry(choice, entry, f"{pointer}/tool_calls/{position}"))
        return events

    def _entry(self, choice: int, entry: object, pointer: str) -> list[Event]:
        fields = self._fields(choice, entry, pointer)
        if isinstance(fields, Problem):
            return [fields]
        call_id, name, arguments = fields
        assert isinstance(entry, dict)
        custom = "custom" in entry
        placed = self._place(choice, entry.get("index"), call_id, name, pointer)
        if isinstance(placed, Problem):
            return [placed]
        key, notes = placed
        text_at = pointer + ("/custom/input" if custom else "/function/arguments")
        if key not in self._seen:
            self._seen.add(key)
            if custom:
                self._custom.add(key)
            self._next_slot[choice] = max(self._next_slot.get(choice, 0), key[1] + 1)
            events: list[Event] = [
                *notes,
                SlotStarted(key, pointer, call_id=call_id, name=name, freeform=custom),
            ]
            if arguments is not None:
                events.append(SlotDelta(key, text_at, arguments=arguments))
            return events
        if custom != (key in self._custom):
            was, now = ("function", "custom") if custom else ("custom", "function")
            return [
                *notes,
                Problem(
                    Code.IDENTITY_COLLISION,
                    f"slot {key[1]} holds a {was} call; a later fragment is a {now} call's",
                    pointer,
                    choice=choice,
                    slot=key[1],
                ),
            ]
        return [*notes, SlotDelta(key, pointer, call_id=call_id, name=name, arguments=arguments)]

    @staticmethod
    def _fields(choice: int, entry: object, pointer: str) -> tuple[str | None, ...] | Problem:
        """(id, name, arguments) of one tool_calls entry, or why it cannot be read."""
        if not isinstance(entry, dict):
            return Problem(
                Code.UNSUPPORTED_EVENT, "tool call is not an object", pointer, choice=choice
            )
        kind = entry.get("type")
        # The member that holds the call names its type; a type that restates it must agree.
        custom = "custom" in entry
        member, text = ("custom", "input") if custom else ("function", "arguments")
        if kind not in (None, "", member):
            return Problem(
                Code.UNSUPPORTED_EVENT,
                f"tool call type {str(kind)[:40]!r} is not known; it could be a call",
                pointer + "/type",
                choice=choice,
            )
        function = entry.get(member)
        function = {} if function is None else function
        if not isinstance(function, dict) or (custom and "function" in entry):
            return Problem(
                Code.UNSUPPORTED_EVENT,
                f"{member} is not an object",
                pointer + f"/{member}",
                choice=choice,
            )
        call_id, ok_id = _optional_str(entry, "id")
        name, ok_name = _optional_str(function, "name")
        arguments, ok_args = _optional_str(function, text)
        for ok, where in (
            (ok_id, "/id"),
            (ok_name, f"/{member}/name"),
            (ok_args, f"/{member}/{text}"),
        ):
            if not ok:
                return Problem(
                    Code.UNSUPPORTED_EVENT,
                    f"{where[1:]} is not a string",
                    pointer + where,
                    choice=choice,
                )
        return call_id, name, arguments

    def _place(
        self, choice: int, index: object, call_id: str | None, name: str | None, pointer: str
    ) -> tuple[SlotKey, list[Event]] | Problem:
        """The slot an entry belongs to, plus any tolerated-quirk note."""
        if index is not None:
            if not is_index(index):
                return Problem(
                    Code.INVALID_SLOT,
                    f"tool call index {index!r} is not a non-negative integer",
                    pointer + "/index",
                    choice=choice,
                )
            return (choice, index), []
        next_key = (choice, self._next_slot.get(choice, 0))
        if self._mistral and call_id and name:
            return next_key, []
        if self._indexless_quirk and name:
            return next_key, [
                Problem(
                    Code.INVALID_SLOT,
                    "tool call has no index; it names a function, so it takes the next slot",
                    pointer,
                    choice=choice,
                    slot=next_key[1],
                    severity=Severity.TOLERATED,
                    quirk="missing_tool_call_index",
                )
            ]
        need = "an id and a name" if self._mistral else "an index"
        return Problem(
            Code.INVALID_SLOT,
            f"tool call without index has no {need}; it cannot be placed in a slot",
            pointer,
            choice=choice,
        )


def accepted_reasons(request: Mapping[str, object]) -> frozenset[str]:
    """Finish reasons that end a choice holding calls. OpenAI documents ``stop`` for a call forced
    by a named ``tool_choice`` (corpus: openai/chat-forced-tool-finish-stop-magentic.sse)."""
    choice = request.get("tool_choice")
    forced = isinstance(choice, dict) and choice.get("type") == "function"
    return frozenset({"tool_calls", "stop"} if forced else {"tool_calls"})


def argument_sites(events: list[Any]) -> Iterator[ArgumentSite]:
    """Each call's argument fragments (``delta``) and, where a server mirrors it, its
    ``message`` copy, keyed by choice and index."""
    return sites_event_by_event(fragment_site, chunk_sites, events)


def chunk_sites(chunk: Any, number: int) -> Iterator[ArgumentSite]:
    """The argument sites of chunk ``number``, read in full."""
    choices = chunk.get("choices") if isinstance(chunk, dict) else None
    for position, choice in enumerate(choices if isinstance(choices, list) else []):
        if not isinstance(choice, dict):
            continue
        for part in ("delta", "message"):
            yield from _entries(choice.get(part), (part, choice.get("index", position)), number)


#: Values the redaction's scrub leaves as they are: numbers, booleans and null.
_INERT = (int, float, bool, type(None))


def fragment_site(chunk: Any) -> FragmentSite | None:
    """The chunk most streams are made of, one choice whose one tool-call entry holds only its
    ``index`` and a ``function`` holding only ``arguments`` text, the choice's other members
    numbers, booleans or null: the key and the object of its one argument site, as
    ``argument_sites`` finds them (``("delta", choice index, slot)``, the ``function``), and
    ``"choices"``, under which nothing is text or an id but the arguments (redaction scrubs
    only the chunk's other members); None for any other chunk. (Subscripts and unpacking,
    as in ``ChatTranslator.continuation``: a value of any other shape fails on one of them.)"""
    try:
        (choice,) = chunk["choices"]
        delta = choice["delta"]
        (entry,) = delta["tool_calls"]
        function = entry["function"]
        slot, arguments = entry["index"], function["arguments"]
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    if (
        type(slot) is not int
        or type(arguments) is not str
        or len(delta) != 1
        or len(entry) != 2
        or len(function) != 1
    ):
        return None
    for name, value in choice.items():
        if name != "delta" and type(value) not in _INERT:
            return None
    return ("delta", choice.get("index", 0), slot), function, "choices"


def _entries(holder: object, scope: tuple[object, ...], number: int) -> Iterator[ArgumentSite]:
    calls = holder.get("tool_calls") if isinstance(holder, dict) else None
    for position, entry in enumerate(calls if isinstance(calls, list) else []):
        if not isinstance(entry, dict):
            continue
        index = entry.get("index")
        key = (*scope, index) if isinstance(index, int) else (*scope, number, position)
        function, custom = entry.get("function"), entry.get("custom")
        if isinstance(function, dict) and "arguments" in function:
            yield "stream", key, function, "arguments"
        elif isinstance(custom, dict) and "input" in custom:
            yield "text", key, custom, "input"


def names_cannot_repeat(value: Any, text: str) -> bool:
    """The ``names_proof`` of a chunk of one choice with one tool-call entry (most chunks of a
    call's arguments): it holds when the text's ``:`` characters, less those in the arguments
    and in the chunk's own string members, are exactly the members of the chunk, its choice,
    delta, entry and function.

    Why that proves it: outside strings, a ``:`` ends each member name written in the text, and
    an object that repeats a name keeps fewer members than were written; inside strings, with
    no ``\\u`` escape in the text, each ``:`` of a parsed string is one in the text. So the
    text's ``:`` characters less those strings' are at least the members written, which are at
    least the members kept in all objects of the value, which are at least those of the five
    objects. When the first equals the last, every object keeps every member written."""
    try:
        (choice,) = value["choices"]
        delta = choice["delta"]
        (entry,) = delta["tool_calls"]
        function = entry["function"]
        arguments = function["arguments"]
        if type(arguments) is not str:
            return False
        members = len(value) + len(choice) + len(delta) + len(entry) + len(function)
        colons = text.count(":") - arguments.count(":")
        if colons == members:
            return True
        # The chunk's own strings, looked at only now (most chunks have no colon there): a
        # server's model name may hold one ("qwen2.5:7b"), and without this every chunk of such
        # a stream would be parsed twice.
        return (
            colons - sum(field.count(":") for field in value.values() if type(field) is str)
            == members
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        return False


def _declared_tools(request: Mapping[str, Any]) -> dict[str, Any]:
    """``builtin.declared_tools``, loaded with the first request read: a check of a fixture that
    states its tool schemas never needs it."""
    from callgate.reassemble.profiles.builtin import declared_tools

    return declared_tools(request)


#: What every Chat Completions server shares; Mistral's profile differs only in its translator.
CHAT_WIRE: dict[str, Any] = {
    "stream_key": "chunks",
    "call_reasons": frozenset({"tool_calls"}),
    "accepted_reasons": accepted_reasons,
    "turn_ends_slots": True,
    "done_sentinel": True,
    "carries_terminal": any_item_has("choices", "finish_reason"),
    # Every chunk has finish_reason; only a chunk whose finish_reason is not null can end a turn.
    # "Null" only on one line: a line end there could be an SSE comment (": null") between two
    # data lines, which the event's JSON does not hold.
    "terminal_pattern": rb'finish_reason"(?![ \t]*:[ \t]*null)',
    "endpoints": ("/chat/completions", "/v1/chat"),
    "tool_schemas": lambda request: {**function_tools(request), **_declared_tools(request)},
    "version_headers": ("openai-beta",),
    "error_body": openai_error,
    "cut_short": reason_replaced("finish_reason", "length"),
    "argument_sites": argument_sites,
    "fragment_site": fragment_site,
    "event_sites": chunk_sites,
    # OpenRouter restates the upstream's own reason as native_finish_reason.
    "structural_keys": frozenset({"finish_reason", "native_finish_reason"}),
    "fragments_restate_identity": True,
    "names_proof": names_cannot_repeat,
}


PROFILE = Profile(
    name="openai",
    translator=lambda quirks, request: ChatTranslator(quirks),
    sniff=lambda first: isinstance(first, dict) and "choices" in first,
    **CHAT_WIRE,
)
