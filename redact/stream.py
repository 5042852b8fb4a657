"""Redacting a stream's events: ids to pseudonyms, free text masked, arguments per the mode.

Arguments are masked per call, across all of the call's fragments at once, so that the masked
text keeps the call's syntax and every fragment boundary (``callgate.redact.mask``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator, Mapping
from enum import StrEnum
from typing import Any

from callgate.reassemble import strict_json
from callgate.reassemble.profiles import PROFILES, all_structural_keys
from callgate.reassemble.profiles.base import ArgumentSite, Profile, sites_event_by_event
from callgate.reassemble.tool_input import schema_documents
from callgate.redact.fragment_lines import FragmentLines
from callgate.redact.mask import (
    Pseudonyms,
    mask_arguments,
    mask_free_text,
    mask_free_value,
    mask_text,
    mask_value,
    media_stand_in,
)

#: Request parameters that pin behaviour and hold no prompt.
REQUEST_PARAMETERS = (
    "model",
    "tool_choice",
    "parallel_tool_calls",
    "n",
    "stream",
    "stream_options",
    "max_tokens",
    "max_completion_tokens",
    "temperature",
)


class ArgumentMode(StrEnum):
    MASK = "mask"
    KEEP = "keep"
    DROP = "drop"


def request_parameters(request: Mapping[str, Any]) -> dict[str, Any]:
    """The request's non-prompt parameters a fixture keeps."""
    return {key: request[key] for key in REQUEST_PARAMETERS if key in request}


def redacted_copy(
    envelope: Mapping[str, Any],
    arguments: ArgumentMode,
    *,
    owned: bool,
    keep_text: bool,
    lines: FragmentLines | None = None,
) -> dict[str, Any]:
    """The envelope with its stream redacted and its request cut to ``REQUEST_PARAMETERS``.
    Argument fields are masked in place, so the envelope is copied first unless the caller
    ``owned`` it (built it for this and will not look at it again). ``keep_text`` keeps the
    model's free text (a tape replayed to an app must say what the model said). ``lines``:
    what parsed the stream's events (``FragmentLines.parse``), for an envelope the caller owns:
    the events it left out are put in, and its ``lines`` are the redacted events as a fixture
    writes them."""
    out = dict(envelope) if owned else copy.deepcopy(dict(envelope))
    out["request"] = request_parameters(out.get("request", {}))
    key = PROFILES[out["profile"]].stream_key
    keep = _enum_values(schema_documents(out.get("tool_schemas", {})))
    events = out[key]  # every envelope has its stream (checked, or built so)
    handled = _redact_arguments(out["profile"], events, arguments, keep, lines)
    _redact_media(PROFILES[out["profile"]], events, handled)
    # The copy (or the caller's envelope, owned) is scrubbed where it lies: no second copy.
    _scrub(events, Pseudonyms(), handled, _keep if keep_text else mask_text)
    if lines is not None:
        lines.write(events)
    return out


def _redact_media(profile: Profile, events: list[Any], handled: Handled) -> None:
    """Media (a voice session's audio) replaced by its length and digest, in place; the generic
    scrub then leaves those fields alone."""
    if profile.media_sites is None:
        return
    for container, field in profile.media_sites(events):
        container[field] = media_stand_in(container[field])
        handled.setdefault(id(container), set()).add(field)


def scrubbed(value: Any, *, keep_text: bool) -> Any:
    """A JSON value that is not a stream a profile reads (a whole completion, an embedding, an
    error) redacted as stream events are: ids to pseudonyms, free text masked unless
    ``keep_text``, structure and numbers kept. Redacted in place: the caller owns ``value``."""
    text = _keep if keep_text else mask_text
    if isinstance(value, str):
        return text(value)
    if isinstance(value, _CONTAINERS):
        _scrub(value, Pseudonyms(), {}, text)
    return value  # a number, a boolean or null stays


def _keep(text: str) -> str:
    return text


def _enum_values(schemas: object) -> frozenset[str]:
    """String ``enum``/``const`` values anywhere in the tool schemas: masking keeps these."""
    found: set[str] = set()
    stack = [schemas]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                values = (
                    value
                    if key == "enum" and isinstance(value, list)
                    else ([value] if key == "const" else [])
                )
                found.update(v for v in values if isinstance(v, str))
                stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)
    return frozenset(found)


ArgumentRef = tuple[dict[str, Any], str]


#: The fields that hold arguments, by the id of their container.
Handled = dict[int, set[str]]


def _redact_arguments(
    profile: str,
    events: list[Any],
    mode: ArgumentMode,
    keep: frozenset[str],
    lines: FragmentLines | None,
) -> Handled:
    """Mask argument fields in place, per the mode. Returns the fields that hold arguments, by
    container, which the generic scrub then leaves alone."""
    handled: Handled = {}
    streams: dict[object, list[ArgumentRef]] = {}
    texts: dict[object, list[ArgumentRef]] = {}  # free-form input, streamed
    others: list[ArgumentSite] = []  # copies and pieces, in order
    for site in _argument_sites(PROFILES[profile], events, handled, streams, lines):
        kind, key, container, field = site
        handled.setdefault(id(container), set()).add(field)
        if kind == "stream":
            streams.setdefault(key, []).append((container, field))
        elif kind == "text":
            texts.setdefault(key, []).append((container, field))
        else:
            others.append(site)
    if mode is not ArgumentMode.KEEP:
        # What a copy is compared with: its call's streamed text, before it is masked.
        references = (
            {
                key: "".join(c[f] for c, f in refs if isinstance(c[f], str))
                for group in (streams, texts)
                for key, refs in group.items()
            }
            if others
            else {}
        )
        for refs in streams.values():
            _mask_stream(refs, mode, keep)
        for refs in texts.values():
            _mask_stream(refs, mode, keep, free=True)
        _mask_copies(others, references, mode, keep)
    return handled


def _argument_sites(
    profile: Profile,
    events: list[Any],
    handled: Handled,
    streams: dict[object, list[ArgumentRef]],
    lines: FragmentLines | None,
) -> Iterator[ArgumentSite]:
    """``profile.argument_sites(events)``; where the profile reads its sites event by event,
    each argument-fragment event (most of a long stream) also has, in the same pass, the member
    that holds it marked handled: under it the scrub would change nothing (the arguments are
    handled already), and passes over it without a call per object. With ``lines``, a
    fragment event like one before it joins ``streams`` itself, taken out to be written from
    that one's line."""
    if profile.fragment_site is None or profile.event_sites is None:
        return profile.argument_sites(events)
    if lines is not None:
        return lines.sites(profile.fragment_site, profile.event_sites, events, handled, streams)
    return sites_event_by_event(profile.fragment_site, profile.event_sites, events, handled)


def _mask_stream(
    refs: list[ArgumentRef], mode: ArgumentMode, keep: frozenset[str], *, free: bool = False
) -> None:
    """One call's fragments masked as one text: JSON argument text, or (``free``) free-form
    input."""
    texts = [(c, f) for c, f in refs if isinstance(c[f], str)]
    mask = mask_free_text if free else mask_arguments
    masked = (
        mask([c[f] for c, f in texts], keep) if mode is ArgumentMode.MASK else ["" for _ in texts]
    )
    for (container, field), text in zip(texts, masked, strict=True):
        container[field] = text


def _mask_copies(
    others: list[ArgumentSite],
    references: dict[object, str],
    mode: ArgumentMode,
    keep: frozenset[str],
) -> None:
    """Each copy masked alone. A copy that differs from its call's streamed text (or, when
    nothing streamed, from the call's first copy) is masked with another letter: one letter
    for both could make them equal and hide ``argument_mismatch``."""
    for kind, key, container, field in others:
        value = container[field]
        if kind == "piece":
            container[field] = mask_value(value, keep) if mode is ArgumentMode.MASK else ""
            continue
        if kind not in ("copy", "text_copy"):
            # Its field is kept from the scrub as an argument's: skipped here, it would be
            # written as it came.
            raise ValueError(f"an argument site of a kind the redactor does not know: {kind!r}")
        if kind == "text_copy" and not isinstance(value, str):
            # A built-in item's input object holds texts streamed apart (each command, the
            # diff), so it takes the stream's letter; a copy that differs only in letters and
            # digits then masks equal, and the recorder refuses the fixture rather than hide it.
            same = True
        else:
            reference = references.setdefault(
                key, value if isinstance(value, str) else _canonical(value)
            )
            # Free-form input is the same text as its stream, or not; arguments the same JSON.
            same = value == reference if kind == "text_copy" else _same_arguments(value, reference)
        mask = "x" if same else "y"
        if mode is not ArgumentMode.MASK:
            container[field] = "" if isinstance(value, str) else {}
        elif kind == "text_copy":
            container[field] = mask_free_value(value, keep, mask)
        elif isinstance(value, str):
            container[field] = mask_arguments([value], keep, mask)[0]
        else:
            container[field] = mask_value(value, keep, mask)


def _same_arguments(value: object, reference: str) -> bool:
    if isinstance(value, str) and value == reference:
        return True
    try:
        parsed = strict_json.loads(value) if isinstance(value, str) else value
        return _canonical(parsed) == _canonical(strict_json.loads(reference))
    except (strict_json.StrictJSONError, ValueError):
        return False


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, allow_nan=False)


def _scrub(
    container: dict[str, Any] | list[Any],
    ids: Callable[[str], str],
    handled: Handled,
    text: Callable[[str], str],
    key: str = "",
) -> None:
    """In place: ids to pseudonyms, free text through ``text`` (masked, or kept), structure
    and numbers kept. Argument fields were already handled and are left as they are. Depth
    first in order, so that pseudonyms are numbered as the ids first appear."""
    if isinstance(container, dict):
        done = handled.get(id(container), ())
        for name, item in container.items():
            kind = type(item)
            # Numbers, booleans and null stay as they are; by exact type first, as nearly
            # every member of a stream event is one of these or a string. Only a string is
            # replaced (a value replaced under its own name does not disturb the iteration).
            if kind is int or kind is float or kind is bool or item is None or name in done:
                continue
            if kind is str or isinstance(item, str):
                if name not in _KEPT_AS_IS:  # structure ("model", "object"): not a call each
                    container[name] = _scrub_text(item, name, ids, text)
            elif isinstance(item, _CONTAINERS):
                _scrub(item, ids, handled, text, name)
        return
    for index, item in enumerate(container):
        if isinstance(item, str):
            container[index] = _scrub_text(item, key, ids, text)
        elif isinstance(item, _CONTAINERS):
            _scrub(item, ids, handled, text, key)


_CONTAINERS = (dict, list)
#: String fields that are structure in some profile's events: kept as they are.
ALL_STRUCTURAL_KEYS = all_structural_keys()


def _scrub_text(value: str, key: str, ids: Callable[[str], str], text: Callable[[str], str]) -> str:
    if _names_an_id(key):
        return ids(value)
    return value if key in ALL_STRUCTURAL_KEYS else text(value)


def _names_an_id(key: str) -> bool:
    """An id, or a list of them (Gemini Live's ``toolCallCancellation.ids``)."""
    return key in ("id", "ids") or key.endswith(("_id", "Id", "_ids", "Ids"))


#: Members whose string value ``_scrub_text`` keeps as it is: structure that names no id.
_KEPT_AS_IS = frozenset(key for key in ALL_STRUCTURAL_KEYS if not _names_an_id(key))
