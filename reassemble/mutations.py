"""Faults and harmless variations made from one passing turn, in the turn's own wire format.

How this works: each kind is a pure function from a profile and a turn's events to new events,
or to the reason it cannot apply to this turn (no second fragment to re-cut, arguments that
arrive whole). It knows the wire format only through the profile: which events carry the
terminal evidence (``Profile.carries_terminal``) and where arguments sit
(``Profile.argument_sites``), so every kind works for every profile that offers those. Then the
engine judges the variant: a fault must produce its code, a variation must pass with the very
calls of the source. A variant that does not is never handed out: ``mutate`` raises
``NotApplicable`` saying what the engine said instead. Pure: no files.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from callgate.reassemble.codes import Code
from callgate.reassemble.envelope import check
from callgate.reassemble.errors import NotApplicable
from callgate.reassemble.events import SlotStarted
from callgate.reassemble.profiles import PROFILES
from callgate.reassemble.profiles.base import Profile
from callgate.reassemble.report import Report, Status
from callgate.reassemble.tool_input import schema_documents


@dataclass(frozen=True)
class Source:
    """What the engine said of the passing turn a variant is made from, and its tools."""

    report: Report
    tool_schemas: Mapping[str, Any]


#: What a kind makes of a turn's events: new events, or why it cannot apply.
Make = Callable[[Profile, list[Any], Source], "list[Any] | str"]


@dataclass(frozen=True, kw_only=True)
class Kind:
    name: str
    #: The code a fault must produce; None for a variation, which must pass unchanged.
    code: Code | None
    description: str
    make: Make
    #: Whether a profile's turns can never take this kind (whole calls have no fragments or
    #: slot field; only some APIs' fragments can state their call's identity again).
    never: Callable[[Profile], bool] = lambda profile: False

    @property
    def blocking(self) -> bool:
        return self.code is not None


def _terminal_at(profile: Profile, events: list[Any]) -> list[int]:
    return [n for n, event in enumerate(events) if profile.carries_terminal(event)]


def _truncate(profile: Profile, events: list[Any], source: Source) -> list[Any] | str:
    ends = _terminal_at(profile, events)
    return events[: ends[0]] if ends else "no event carries the terminal evidence"


def _drop_terminal(profile: Profile, events: list[Any], source: Source) -> list[Any] | str:
    ends = set(_terminal_at(profile, events))
    return (
        [e for n, e in enumerate(events) if n not in ends]
        if ends
        else "no event carries the terminal evidence"
    )


def _duplicate_terminal(profile: Profile, events: list[Any], source: Source) -> list[Any] | str:
    ends = _terminal_at(profile, events)
    if not ends:
        return "no event carries the terminal evidence"
    return [*events[: ends[0] + 1], copy.deepcopy(events[ends[0]]), *events[ends[0] + 1 :]]


def _delta_after_terminal(profile: Profile, events: list[Any], source: Source) -> list[Any] | str:
    ends = _terminal_at(profile, events)
    if not ends:
        return "no event carries the terminal evidence"
    holders = _keys_by_event(profile, events, ("stream",))
    last = [n for n in range(ends[0]) if holders[n]]
    if not last:
        return "no argument fragment comes before the terminal evidence"
    return [*events[: ends[0] + 1], copy.deepcopy(events[last[-1]]), *events[ends[0] + 1 :]]


def _streams(
    profile: Profile, events: list[Any], site: str = "stream"
) -> dict[object, list[tuple[dict[str, Any], str]]]:
    """Each call's streamed argument fragments (or, ``site`` ``text``, free-form input's), as
    (container, field), in stream order."""
    streams: dict[object, list[tuple[dict[str, Any], str]]] = {}
    for kind, key, container, field in profile.argument_sites(events):
        if kind == site and isinstance(container.get(field), str):
            streams.setdefault(key, []).append((container, field))
    return streams


def _corrupt_arguments(profile: Profile, events: list[Any], source: Source) -> list[Any] | str:
    events = copy.deepcopy(events)
    streams = _streams(profile, events)
    if not streams:
        return "no call streams its arguments (they arrive whole)"
    key, fragments = next(iter(streams.items()))
    # A second opening brace: no JSON text starts "{{", wherever the call's text goes on. Text
    # copies of the same call (OpenAI Responses restates them) get it too, so that they still
    # agree with the stream and the fault is the JSON, not a mismatch.
    container, field = fragments[0]
    container[field] = "{" + container[field]
    for kind, site_key, copy_container, copy_field in profile.argument_sites(events):
        if kind == "copy" and site_key == key and isinstance(copy_container[copy_field], str):
            copy_container[copy_field] = "{" + copy_container[copy_field]
    return events


def _resplit(profile: Profile, events: list[Any], source: Source) -> list[Any] | str:
    events = copy.deepcopy(events)
    moved = False
    for fragments in _streams(profile, events).values():
        text = "".join(c[f] for c, f in fragments)
        cuts, at = [], 0
        for container, field in fragments[:-1]:
            at += len(container[field])
            cuts.append(at)
        # Each cut one character later (the end of the text at most): inside escapes, names and
        # numbers alike. The cuts stay in order, as they were.
        shifted = [min(cut + 1, len(text)) for cut in cuts]
        if shifted == cuts:
            continue
        bounds = [0, *shifted, len(text)]
        for (container, field), start, end in zip(fragments, bounds, bounds[1:], strict=False):
            container[field] = text[start:end]
        moved = True
    return events if moved else "no call's arguments come in two fragments or more"


def _empty_deltas(profile: Profile, events: list[Any], source: Source) -> list[Any] | str:
    # Only the inserted copies are edited: the source's events go out as they are.
    holders = _keys_by_event(profile, events, ("stream",))
    reader = profile.translator(frozenset(), {})
    out: list[Any] = []
    for event, holds in zip(events, holders, strict=True):
        out.append(event)
        # An event that opens a call (Cohere's tool-call-start holds its first fragment) would
        # open it again: only the events that add to a call are repeated.
        if holds and not any(isinstance(e, SlotStarted) for e in reader.translate(event)):
            empty = copy.deepcopy(event)
            for fragments in _streams(profile, [empty]).values():
                for container, field in fragments:
                    container[field] = ""
            out.append(empty)
    return out if len(out) > len(events) else "no event only adds argument text to a call"


def _terminal_ended(
    profile: Profile, events: list[Any], ended: Callable[[object], object | None], none: str
) -> list[Any] | str:
    """The turn with its first event of terminal evidence that ``ended`` can restate as another
    end of the turn so restated; ``none`` when no such event comes."""
    ends = _terminal_at(profile, events)
    for n in ends:
        other = ended(events[n])
        if other is not None:
            return [*events[:n], other, *events[n + 1 :]]
    return none if ends else "no event carries the terminal evidence"


def _wrong_terminal(profile: Profile, events: list[Any], source: Source) -> list[Any] | str:
    return _terminal_ended(
        profile, events, profile.cut_short, "no event states why the output ended"
    )


def _cancel(profile: Profile, events: list[Any], source: Source) -> list[Any] | str:
    if profile.cancelled is None:
        return "this API has no cancelled turn end"
    return _terminal_ended(
        profile, events, profile.cancelled, "no event ends the turn as completed"
    )


def _withdraw(profile: Profile, events: list[Any], source: Source) -> list[Any] | str:
    if profile.withdrawal is None:
        return "this API cannot withdraw a call it sent"
    call_id = next((c.id for c in source.report.calls if c.id), None)
    ends = _terminal_at(profile, events)
    if call_id is None or not ends:
        return "no call with an id to withdraw"
    return [*events[: ends[0] + 1], profile.withdrawal([call_id]), *events[ends[0] + 1 :]]


def _repeat_after_cancel(profile: Profile, events: list[Any], source: Source) -> list[Any] | str:
    """The response ends cancelled, then a new response makes the same calls again and completes
    (the model asked again after the user spoke over it): each id of the response's events
    (the response's, its items', its calls', its events') made its own in the new one."""
    cancelled = _cancel(profile, events, source)
    if isinstance(cancelled, str):
        return cancelled
    if not source.report.calls:
        return "no call to make again"
    start = next((n for n, e in enumerate(events) if isinstance(e, dict) and "response" in e), None)
    if start is None:
        return "no event names the response"
    return [*cancelled, *with_own_ids(events[start:], "again")]


def with_own_ids(events: list[Any], suffix: str) -> list[Any]:
    """A copy of a response's events with each id they give (the response's, its items', its
    calls', the events' own) made its own: ``<id>_<suffix>``, wherever it appears."""
    found: set[str] = set()
    for holder in _objects(events):
        for field in ("id", "item_id", "call_id", "event_id", "response_id"):
            value = holder.get(field)
            if isinstance(value, str) and value:
                found.add(value)
    text = json.dumps(events)
    for old in sorted(found, key=len, reverse=True):
        text = text.replace(json.dumps(old), json.dumps(f"{old}_{suffix}"))
    return list(json.loads(text))


def _repeat_call(profile: Profile, events: list[Any], source: Source) -> list[Any] | str:
    """The message that holds the first call comes again right after it, the call's id with it
    (an app that runs each message's calls runs the tool twice)."""
    if _not_whole_messages(profile):
        return "this API sends no session messages that each hold whole calls"
    call_id = next((c.id for c in source.report.calls if c.id), None)
    if call_id is None:
        return "no call with an id to send again"
    quoted = json.dumps(call_id)
    at = next((n for n, e in enumerate(events) if quoted in json.dumps(e)), None)
    if at is None:
        return "no event holds the call's id"
    return [*events[: at + 1], copy.deepcopy(events[at]), *events[at + 1 :]]


def _provider_error(profile: Profile, events: list[Any], source: Source) -> list[Any] | str:
    fragments = [n for n, holds in enumerate(_keys_by_event(profile, events, ("stream",))) if holds]
    ends = _terminal_at(profile, events)
    at = fragments[0] + 1 if fragments else ends[0] if ends else None
    if at is None:
        return "no argument fragment and no terminal evidence to stop before"
    error = profile.error_body(
        "Overloaded (a provider error made by callgate mutate)", ["overloaded"]
    )
    return [*events[:at], error]


#: Fields that name a call's slot in the profiles' events.
_SLOT_FIELDS = frozenset({"index", "output_index", "contentBlockIndex"})
#: Objects whose ``index`` is a choice's, not a call's (Chat Completions' ``choices[]``); an
#: event named by its ``type`` holds a call's (Cohere's ``tool-call-*`` beside their ``delta``).
#: Only ``index`` is ambiguous: Bedrock's ``contentBlockIndex`` sits beside a ``delta`` too.
_CHOICE_FIELDS = frozenset({"delta", "message", "finish_reason"})


def _reuse_slot(profile: Profile, events: list[Any], source: Source) -> list[Any] | str:
    pairs = [
        (a, b)
        for a, b in zip(source.report.calls, source.report.calls[1:], strict=False)
        if a.choice == b.choice
    ]
    if not pairs:
        return "no second call in the first call's choice to move onto its slot"
    first, second = pairs[0]
    events = copy.deepcopy(events)
    moved = 0
    for holder in _objects(events):
        choice = "type" not in holder and not _CHOICE_FIELDS.isdisjoint(holder)
        for field in _SLOT_FIELDS & holder.keys():
            if field == "index" and choice:
                continue
            if holder[field] == second.slot and type(holder[field]) is int:
                holder[field] = first.slot
                moved += 1
    return events if moved else "no field of the events names the calls' slots"


def _drop_id(profile: Profile, events: list[Any], source: Source) -> list[Any] | str:
    if not profile.requires_call_id:
        return "call ids are optional in this API"
    call = next((c for c in source.report.calls if c.id), None)
    if call is None:
        return "no call has an id"
    events = copy.deepcopy(events)
    dropped = 0
    for holder in _objects(events):
        for field in [f for f in ("id", "call_id", "toolUseId") if holder.get(f) == call.id]:
            del holder[field]
            dropped += 1
    return events if dropped else f"the id {call.id!r} sits in no field named id"


def _schema_violation(profile: Profile, events: list[Any], source: Source) -> list[Any] | str:
    events = copy.deepcopy(events)
    sites = list(profile.argument_sites(events))
    if any(kind == "piece" for kind, *_ in sites):
        return "arguments arrive as partial pieces"
    for call in source.report.calls:
        # A provider-defined tool's schema is the one callgate ships for it.
        schema = next(iter(schema_documents({"": source.tool_schemas.get(call.name or "")})), None)
        wrong = _wrong_value(schema, call.parsed_arguments)
        key = _site_key(sites, call)
        if wrong is None or key is None:
            continue
        _write_arguments(sites, key, {**call.parsed_arguments, wrong[0]: wrong[1]})
        return events
    return "no call has an argument whose declared type could be broken"


def _texts(profile: Profile, events: list[Any]) -> dict[object, list[tuple[dict[str, Any], str]]]:
    """Each free-form input's streamed fragments (a command, a diff, a custom tool's text)."""
    return _streams(profile, events, "text")


def _word_cut(text: str) -> int | None:
    """Where a text is cut at its last word boundary: before the last run of white space that
    has more text after it (``rm -rf ./build`` -> ``rm -rf``), or None for a single word."""
    stripped = text.rstrip()
    at = max(stripped.rfind(" "), stripped.rfind("\n"))
    return at if at > 0 and stripped[:at].strip() else None


def _cut_input(profile: Profile, events: list[Any], source: Source) -> list[Any] | str:
    events = copy.deepcopy(events)
    owners = _keys_by_event(profile, events, ("text",))
    for key, fragments in _texts(profile, events).items():
        text = "".join(c[f] for c, f in fragments)
        cut = _word_cut(text)
        if cut is None:
            continue
        at = 0
        for container, field in fragments:
            if at + len(container[field]) >= cut:
                container[field] = container[field][: cut - at]
                holder = next(
                    n
                    for n, event in enumerate(events)
                    if key in owners[n] and any(d is container for d in _objects(event))
                )
                return events[: holder + 1]
            at += len(container[field])
    return "no free-form input (a command, a diff, a custom tool's text) streams two words"


def _cut_copies(
    profile: Profile, events: list[Any], *, stream_too: bool, keys: set[object] | None = None
) -> list[Any] | str:
    """The first free-form input (of ``keys``, when given) cut at its last word boundary in
    every text copy that restates it, and with ``stream_too`` in its stream as well."""
    events = copy.deepcopy(events)
    sites = list(profile.argument_sites(events))
    for key, fragments in _texts(profile, events).items():
        if keys is not None and key not in keys:
            continue
        text = "".join(c[f] for c, f in fragments)
        cut = _word_cut(text)
        # A copy restates the whole text; an item's copy sent before the text came (``""``)
        # restates nothing and stays as it was.
        copies = [
            (c, f) for kind, k, c, f in sites if kind == "text_copy" and k == key and c[f] == text
        ]
        if cut is None or not (copies or stream_too):
            continue
        for container, field in copies:
            container[field] = text[:cut]
        if stream_too:
            at = 0
            for container, field in fragments:
                piece = container[field]
                container[field] = piece[: max(0, cut - at)]
                at += len(piece)
        return events
    return "no streamed free-form input of two words or more with a restated copy"


def _restate_other_arguments(
    profile: Profile, events: list[Any], source: Source
) -> list[Any] | str:
    """The first copy that restates a streamed call's arguments (a ``.done`` event, an item, the
    final output) says other arguments: the streamed object with one member more."""
    events = copy.deepcopy(events)
    streams = _streams(profile, events)
    for kind, key, container, field in profile.argument_sites(events):
        if kind != "copy" or key not in streams or not isinstance(container.get(field), str):
            continue
        streamed = "".join(c[f] for c, f in streams[key])
        if container[field] != streamed:  # an item's copy before its arguments came
            continue
        try:
            value = json.loads(streamed)
        except ValueError:
            continue
        if not isinstance(value, dict):
            continue
        other = {**value, "restated": "otherwise"}
        container[field] = json.dumps(other, separators=(",", ":"))
        return events
    return "no copy restates a streamed call's arguments"


def _restate_other_input(profile: Profile, events: list[Any], source: Source) -> list[Any] | str:
    return _cut_copies(profile, events, stream_too=False)


def _cut_free_form_input(profile: Profile, events: list[Any], source: Source) -> list[Any] | str:
    # A free-form call's input is its text, never parsed: the source passed, so every call
    # whose arguments did not parse takes free-form input.
    inputs = {c.arguments for c in source.report.calls if c.parsed_arguments is None}
    if not inputs:
        return "no call takes free-form input"
    keys = {
        key
        for key, fragments in _texts(profile, events).items()
        if "".join(c[f] for c, f in fragments) in inputs
    }
    return _cut_copies(profile, events, stream_too=True, keys=keys)


def _drop_coordinates(profile: Profile, events: list[Any], source: Source) -> list[Any] | str:
    events = copy.deepcopy(events)
    sites = list(profile.argument_sites(events))
    dropped = 0
    for kind, _, container, field in sites:
        if kind == "text_copy" and isinstance(container[field], dict | list):
            for holder in _objects(container[field]):
                for name in ("x", "y"):
                    if name in holder and "type" in holder:
                        del holder[name]
                        dropped += 1
    if dropped:
        return events
    for call in source.report.calls:
        arguments = call.parsed_arguments
        key = _site_key(sites, call)
        if isinstance(arguments, dict) and "coordinate" in arguments and key is not None:
            without = {k: v for k, v in arguments.items() if k != "coordinate"}
            _write_arguments(sites, key, without)
            return events
    return "no computer action states coordinates"


def _write_arguments(sites: list[Any], key: object, arguments: dict[str, Any]) -> None:
    """A call's arguments written anew: the whole text in its first fragment (the rest
    emptied), and in every copy that restates them."""
    text = json.dumps(arguments, ensure_ascii=False)
    streamed = [(c, f) for kind, k, c, f in sites if kind == "stream" and k == key]
    for n, (container, field) in enumerate(streamed):
        container[field] = text if n == 0 else ""
    for kind, k, container, field in sites:
        if kind == "copy" and k == key:
            value = container[field]
            if isinstance(value, str):
                container[field] = text
            elif isinstance(value, dict) and (value or not streamed):
                container[field] = copy.deepcopy(arguments)


def _wrong_value(schema: object, arguments: object) -> tuple[str, object] | None:
    """An argument the schema gives a simple type, with a value of another type."""
    if not (isinstance(schema, dict) and isinstance(arguments, dict)):
        return None
    properties = schema.get("properties")
    for name, declared in properties.items() if isinstance(properties, dict) else ():
        kind = declared.get("type") if isinstance(declared, dict) else None
        wrong = _WRONG.get(kind.lower()) if isinstance(kind, str) else None
        if name in arguments and wrong is not None:
            return name, wrong
    return None


_WRONG: dict[str, object] = {
    "string": 12345,
    "number": "12345",
    "integer": "12345",
    "boolean": "yes",
    "array": {"not": "an array"},
    "object": ["not", "an", "object"],
}


def _site_key(sites: list[Any], call: Any) -> object:
    """The argument sites' key of ``call``: the one whose fragments make its exact text, or
    whose stated arguments are its parsed ones."""
    texts: dict[object, str] = {}
    for kind, key, container, field in sites:
        if kind == "stream" and isinstance(container.get(field), str):
            texts[key] = texts.get(key, "") + container[field]
    for key, text in texts.items():
        if text == call.arguments:
            return key
    for kind, key, container, field in sites:
        if kind == "copy" and container.get(field) in (call.arguments, call.parsed_arguments):
            return key
    return None


def _objects(value: object) -> list[dict[str, Any]]:
    """Every object inside ``value``, outermost first."""
    found, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found.append(item)
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return found


def _keys_by_event(
    profile: Profile, events: list[Any], kinds: tuple[str, ...] = ("stream", "copy")
) -> list[set[object]]:
    """For each event, the calls (argument site keys) it holds a site of: streamed fragments,
    and with ``copy`` the texts that restate them."""
    holders = {
        id(container): key
        for kind, key, container, field in profile.argument_sites(events)
        if kind in kinds and (kind != "stream" or isinstance(container.get(field), str))
    }
    return [{holders[id(d)] for d in _objects(event) if id(d) in holders} for event in events]


def _interleave(profile: Profile, events: list[Any], source: Source) -> list[Any] | str:
    owners = _keys_by_event(profile, events)
    keys = list(dict.fromkeys(k for found in owners for k in found))
    if len(keys) < 2:
        return "one call in the turn: nothing to interleave"
    first, second = (_events_of(profile, events, owners, key) for key in keys[:2])
    if not first or not second or set(first) & set(second):
        return "the first two calls share their events"
    if max(first) > min(second):
        return "the first two calls already take turns"
    places = sorted(first + second)
    order = [
        n
        for pair in zip(first + [-1] * len(second), second + [-1] * len(first), strict=True)
        for n in pair
        if n >= 0
    ]
    out = list(events)
    for place, taken in zip(places, order, strict=True):
        out[place] = events[taken]
        # Events numbered in stream order (OpenAI Responses) keep the numbers of their places.
        if (
            isinstance(events[place], dict)
            and "sequence_number" in events[place]
            and isinstance(events[taken], dict)
        ):
            out[place] = {**events[taken], "sequence_number": events[place]["sequence_number"]}
    return out


def _events_of(
    profile: Profile, events: list[Any], owners: list[set[object]], key: object
) -> list[int]:
    """The events that hold only ``key``'s arguments; the one right before them that opens the
    call without holding any (Bedrock's ``contentBlockStart``); and those right after its last
    one that hold no call's and open none (a block's end), up to the terminal evidence."""
    own = [n for n, found in enumerate(owners) if found == {key}]
    if not own:
        return []
    before = own[0] - 1
    if before >= 0 and not owners[before] and _opens_call(profile, events[before]):
        own.insert(0, before)
    after = own[-1] + 1
    while (
        after < len(events)
        and not owners[after]
        and not profile.carries_terminal(events[after])
        and not _opens_call(profile, events[after])
    ):
        own.append(after)
        after += 1
    return own


def _opens_call(profile: Profile, event: Any) -> bool:
    return any(
        isinstance(e, SlotStarted) and e.is_call
        for e in profile.translator(frozenset(), {}).translate(event)
    )


def _chat_entries(
    profile: Profile, events: list[Any]
) -> list[tuple[object, dict[str, Any], dict[str, Any]]]:
    """(call key, entry, function) of every streamed fragment in a Chat-shaped call entry
    (``{"index", "id", "function": {"name", "arguments"}}``), the only shape whose fragments
    may carry the call's identity again."""
    parents = {
        id(value): d for d in _objects(events) for value in d.values() if isinstance(value, dict)
    }
    found = []
    for kind, key, container, field in profile.argument_sites(events):
        entry = parents.get(id(container))
        if (
            kind == "stream"
            and field == "arguments"
            and entry is not None
            and entry.get("function") is container
            and "index" in entry
        ):
            found.append((key, entry, container))
    return found


_NO_ENTRIES = (
    "no argument fragment sits in an indexed Chat Completions call entry, the one "
    "place where a fragment can state its call's identity again"
)


def _each_chat_call(
    profile: Profile, events: list[Any], change: Callable[[list[Any]], bool], none: str
) -> list[Any] | str:
    """A copy of ``events`` with ``change`` applied to each call's Chat entries (in stream
    order); ``none`` when it changed no call."""
    events = copy.deepcopy(events)
    entries = _chat_entries(profile, events)
    if not entries:
        return _NO_ENTRIES
    changed = [
        change([e for e in entries if e[0] == key])
        for key in dict.fromkeys(k for k, _, _ in entries)
    ]
    return events if any(changed) else none


def _repeat_identity(profile: Profile, events: list[Any], source: Source) -> list[Any] | str:
    def repeat(own: list[Any]) -> bool:
        ids = [entry["id"] for _, entry, _ in own if isinstance(entry.get("id"), str)]
        names = [f["name"] for _, _, f in own if isinstance(f.get("name"), str)]
        if not ids or not names or len(own) < 2:
            return False
        for _, entry, function in own[1:]:
            entry["id"], function["name"] = ids[0], names[0]
        return True

    return _each_chat_call(
        profile, events, repeat, "no call has a second fragment to repeat its identity on"
    )


def _delayed_identity(profile: Profile, events: list[Any], source: Source) -> list[Any] | str:
    def delay(own: list[Any]) -> bool:
        if len(own) < 2 or "id" not in own[0][1] or "name" not in own[0][2]:
            return False
        (_, first, first_function), (_, second, second_function) = own[0], own[1]
        second["id"], second_function["name"] = first.pop("id"), first_function.pop("name")
        first.pop("type", None)
        return True

    return _each_chat_call(
        profile, events, delay, "no call has a second fragment to move its identity to"
    )


#: How ``split_events`` re-cuts the framed stream (bytes per piece, in turn): small and odd,
#: so that pieces end inside events, escapes and multi-byte characters.
SPLIT_PIECES = (1, 2, 3, 5, 7, 11, 13)


def _split_events(profile: Profile, events: list[Any], source: Source) -> list[Any] | str:
    return [copy.deepcopy(event) for event in events]


def _whole_calls(profile: Profile) -> bool:
    return profile.whole_calls


def _calls_are_terminal(profile: Profile) -> bool:
    return profile.calls_are_terminal


def _ids_optional(profile: Profile) -> bool:
    return not profile.requires_call_id


def _not_cancelled(profile: Profile) -> bool:
    return profile.cancelled is None


def _not_withdrawn(profile: Profile) -> bool:
    return profile.withdrawal is None


def _not_whole_messages(profile: Profile) -> bool:
    """Whether this is not a session whose messages each hold whole calls that name no slot
    (Gemini Live's ``toolCall``): a message sent again is then the same calls again."""
    return not (profile.whole_calls and profile.over_websocket) or bool(profile.slot_field)


def _no_slot_field(profile: Profile) -> bool:
    return not profile.slot_field


def _identity_once(profile: Profile) -> bool:
    return not profile.fragments_restate_identity


def _no_free_form(profile: Profile) -> bool:
    """Free-form input streams in the Responses API's built-in and custom tool calls and in
    Chat Completions' custom tool calls (OpenAI's; Mistral's API has none)."""
    return profile.name not in ("openai-responses", "openai")


def _no_restated_input(profile: Profile) -> bool:
    """Only the Responses API restates a free-form input (its ``.done`` events and items)."""
    return profile.name != "openai-responses"


def _no_restated_arguments(profile: Profile) -> bool:
    """Only OpenAI's Responses and Realtime APIs restate streamed arguments (their ``.done``
    events, items and final output)."""
    return profile.name not in ("openai-responses", "openai-realtime")


def _no_computer(profile: Profile) -> bool:
    """Computer actions: OpenAI's computer_call items and Anthropic's computer tool."""
    return profile.name not in ("openai-responses", "anthropic")


KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        Kind(
            name="truncate",
            code=Code.MISSING_TERMINAL,
            description="the stream stops before the event that carries the terminal evidence",
            make=_truncate,
        ),
        Kind(
            name="drop_terminal",
            code=Code.MISSING_TERMINAL,
            description="every event that carries the terminal evidence is left out",
            make=_drop_terminal,
            never=_calls_are_terminal,
        ),
        Kind(
            name="duplicate_terminal",
            code=Code.DUPLICATE_TERMINAL,
            description="the first event that carries the terminal evidence comes twice",
            make=_duplicate_terminal,
            never=_calls_are_terminal,
        ),
        Kind(
            name="delta_after_terminal",
            code=Code.DELTA_AFTER_TERMINAL,
            description="the last argument fragment comes again after the terminal evidence",
            make=_delta_after_terminal,
            never=_whole_calls,
        ),
        Kind(
            name="wrong_terminal",
            code=Code.WRONG_TERMINAL_REASON,
            description="the turn ends as if the output hit the token limit",
            make=_wrong_terminal,
            never=_calls_are_terminal,
        ),
        Kind(
            name="cancel",
            code=Code.WRONG_TERMINAL_REASON,
            description="the turn ends cancelled, as when the user speaks over a voice model",
            make=_cancel,
            never=_not_cancelled,
        ),
        Kind(
            name="repeat_after_cancel",
            code=Code.WRONG_TERMINAL_REASON,
            description=(
                "the turn ends cancelled, then a new response makes the same calls again and "
                "completes: only the new response's calls may run"
            ),
            make=_repeat_after_cancel,
            never=_not_cancelled,
        ),
        Kind(
            name="repeat_call",
            code=Code.DUPLICATE_CALL_ID,
            description="the message that holds the first whole call comes again, with its id",
            make=_repeat_call,
            never=_not_whole_messages,
        ),
        Kind(
            name="withdraw",
            code=Code.CALL_WITHDRAWN,
            description="the server withdraws the first call right after sending it",
            make=_withdraw,
            never=_not_withdrawn,
        ),
        Kind(
            name="reuse_slot",
            code=Code.IDENTITY_COLLISION,
            description="the second call comes on the first call's slot, with its own id",
            make=_reuse_slot,
            never=_no_slot_field,
        ),
        Kind(
            name="drop_id",
            code=Code.MISSING_CALL_ID,
            description="the first call's id is left out",
            make=_drop_id,
            never=_ids_optional,
        ),
        Kind(
            name="corrupt_arguments",
            code=Code.INVALID_ARGUMENTS_JSON,
            description="the first call's argument text gets a second opening brace",
            make=_corrupt_arguments,
            never=_whole_calls,
        ),
        Kind(
            name="schema_violation",
            code=Code.SCHEMA_VIOLATION,
            description="an argument gets a value of another type than its schema declares",
            make=_schema_violation,
        ),
        Kind(
            name="provider_error",
            code=Code.STREAM_ERROR,
            description=(
                "the provider's own error event after the first argument fragment, and nothing "
                "after it"
            ),
            make=_provider_error,
        ),
        Kind(
            name="cut_input",
            code=Code.MISSING_TERMINAL,
            description=(
                "the stream stops inside the first free-form input (a shell command, a patch's "
                "diff, a custom tool's text), at its last word boundary"
            ),
            make=_cut_input,
            never=_no_free_form,
        ),
        Kind(
            name="restate_other_input",
            code=Code.ARGUMENT_MISMATCH,
            description=(
                "every copy that restates the first free-form input (its .done, the item) says "
                "it cut at its last word boundary"
            ),
            make=_restate_other_input,
            never=_no_restated_input,
        ),
        Kind(
            name="restate_other_arguments",
            code=Code.ARGUMENT_MISMATCH,
            description=(
                "the first copy that restates a streamed call's arguments says other ones"
            ),
            make=_restate_other_arguments,
            never=_no_restated_arguments,
        ),
        Kind(
            name="cut_free_form_input",
            code=Code.GRAMMAR_INCOMPLETE,
            description=(
                "a custom tool's input cut at its last word boundary in its stream and every "
                "copy, the turn ending as it did: its grammar's sentence is not whole"
            ),
            make=_cut_free_form_input,
            never=_no_free_form,
        ),
        Kind(
            name="drop_coordinates",
            code=Code.SCHEMA_VIOLATION,
            description="a computer action's coordinates are left out",
            make=_drop_coordinates,
            never=_no_computer,
        ),
        Kind(
            name="resplit",
            code=None,
            description="each call's argument text cut one character later",
            make=_resplit,
            never=_whole_calls,
        ),
        Kind(
            name="interleave",
            code=None,
            description="the first two calls' events take turns",
            make=_interleave,
            never=_calls_are_terminal,
        ),
        Kind(
            name="empty_deltas",
            code=None,
            description="an empty copy after every argument fragment",
            make=_empty_deltas,
            never=_whole_calls,
        ),
        Kind(
            name="repeat_identity",
            code=None,
            description="every fragment of a call repeats its id and name",
            make=_repeat_identity,
            never=_identity_once,
        ),
        Kind(
            name="delayed_identity",
            code=None,
            description="each call's id and name come with its second fragment, not its first",
            make=_delayed_identity,
            never=_identity_once,
        ),
        Kind(
            name="split_events",
            code=None,
            description=(
                "the same events, sent in pieces of 1 to 13 bytes "
                "(callgate serve re-cuts the framed stream; the events do not change)"
            ),
            make=_split_events,
        ),
    )
}


def mutations(blocking: bool | None = None, profile: str | None = None) -> list[str]:
    """The kinds' names: all, the faults (``blocking=True``) or the variations (``False``);
    with ``profile``, only those its turns can take (whether one turn can, ``mutate`` says).
    Raises ``KeyError`` for an unknown profile."""
    return [
        name
        for name, kind in KINDS.items()
        if (blocking is None or kind.blocking == blocking)
        and (profile is None or not kind.never(PROFILES[profile]))
    ]


def mutate(envelope: Mapping[str, Any], kind_name: str, source: str = "") -> dict[str, Any]:
    """The variant of a passing ``envelope`` made by ``kind_name``, its verdict pinned in
    ``expect`` and its making in ``meta.mutation``. Raises ``NotApplicable`` when the kind
    cannot apply to this turn, or the engine does not say what the kind must make it say,
    ``EnvelopeError`` when ``envelope`` is not an envelope, and ``KeyError`` for an unknown
    kind."""
    kind = KINDS[kind_name]
    before = check(envelope)
    if before.status is not Status.PASS:
        raise NotApplicable(
            f"the source does not pass ({before.status.value} "
            f"[{', '.join(before.blocking_codes)}]): mutate a passing turn"
        )
    profile = PROFILES[envelope["profile"]]
    made = kind.make(
        profile,
        list(envelope[profile.stream_key]),
        Source(before, envelope.get("tool_schemas") or {}),
    )
    if isinstance(made, str):
        raise NotApplicable(f"{kind.name}: {made}")
    variant = {key: copy.deepcopy(value) for key, value in envelope.items() if key != "expect"}
    variant[profile.stream_key] = made
    variant["description"] = f"{kind.description} ({kind.name} of {source or 'a passing turn'})"
    variant.setdefault("meta", {})["mutation"] = {"kind": kind.name, "source": source}
    if kind.name == "split_events":
        variant["meta"]["mutation"]["pieces"] = list(SPLIT_PIECES)
    after = check(variant)
    _require(kind, before, after)
    variant["expect"] = {"status": after.status.value, "codes": after.blocking_codes}
    return variant


def _require(kind: Kind, before: Report, after: Report) -> None:
    said = f"{after.status.value} [{', '.join(after.blocking_codes)}]"
    if kind.code is not None and kind.code.value not in after.blocking_codes:
        raise NotApplicable(f"{kind.name}: the variant gives {said}, not {kind.code.value}")
    calls = [(c.id, c.name, c.arguments) for c in before.calls]
    if kind.code is None and (
        after.status is not Status.PASS
        or [(c.id, c.name, c.arguments) for c in after.calls] != calls
    ):
        raise NotApplicable(
            f"{kind.name}: the variant gives {said} with other calls; a "
            "variation must pass with the same calls"
        )
