"""Redacting a stream's events: ids to pseudonyms, free text masked, arguments per the mode.

Arguments are masked per call, across all of the call's fragments at once, so that the masked
text keeps the call's syntax and every fragment boundary (``redact.mask``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator, Mapping
from enum import StrEnum
from typing import Any

from reassemble import strict_json
from reassemble.profiles import PROFILES
from redact.mask import Pseudonyms, mask_arguments, mask_text, mask_value

#: Request parameters that pin behaviour and hold no prompt.
REQUEST_PARAMETERS = ("model", "tool_choice", "parallel_tool_calls", "n", "stream",
                      "stream_options", "max_tokens", "max_completion_tokens", "temperature")
#: String fields of stream events that are structure, not content.
_STRUCTURAL_KEYS = frozenset({"type", "object", "role", "finish_reason", "stop_reason", "model",
                              "system_fingerprint", "service_tier", "native_finish_reason",
                              "name", "status"})


class ArgumentMode(StrEnum):
    MASK = "mask"
    KEEP = "keep"
    DROP = "drop"


def redacted_copy(envelope: Mapping[str, Any], arguments: ArgumentMode) -> dict[str, Any]:
    out = copy.deepcopy(dict(envelope))
    out["request"] = {k: v for k, v in out.get("request", {}).items() if k in REQUEST_PARAMETERS}
    key = PROFILES[out["profile"]].stream_key
    keep = _enum_values(out.get("tool_schemas", {}))
    events = out.get(key, [])
    handled = _redact_arguments(out["profile"], events, arguments, keep)
    ids = Pseudonyms()
    out[key] = [_scrub(event, ids, handled) for event in events]
    return out


def _enum_values(schemas: object) -> frozenset[str]:
    """String ``enum``/``const`` values anywhere in the tool schemas: masking keeps these."""
    found: set[str] = set()
    stack = [schemas]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                values = value if key == "enum" and isinstance(value, list) else (
                    [value] if key == "const" else [])
                found.update(v for v in values if isinstance(v, str))
                stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)
    return frozenset(found)


ArgumentRef = tuple[dict[str, Any], str]


def _redact_arguments(profile: str, events: list[Any], mode: ArgumentMode,
                      keep: frozenset[str]) -> set[tuple[int, str]]:
    """Mask each call's argument fragments as one text, in place, per the mode. Returns the
    (container id, field) pairs that hold arguments, which the generic scrub then leaves alone."""
    refs: dict[object, list[ArgumentRef]] = {}
    finder = _anthropic_arguments if profile == "anthropic" else _chat_arguments
    for slot, container, field in finder(events):
        refs.setdefault(slot, []).append((container, field))
    if mode is not ArgumentMode.KEEP:
        differ = _stated_inputs_that_differ(refs) if profile == "anthropic" else set()
        for group in refs.values():
            _mask_group(group, mode, keep, differ)
    return {(id(container), field) for group in refs.values() for container, field in group}


def _mask_group(group: list[ArgumentRef], mode: ArgumentMode, keep: frozenset[str],
                differ: set[int]) -> None:
    texts = [(c, f) for c, f in group if isinstance(c[f], str)]
    masked = mask_arguments([c[f] for c, f in texts], keep) if mode is ArgumentMode.MASK \
        else ["" for _ in texts]
    for (container, field), text in zip(texts, masked, strict=True):
        container[field] = text
    for container, field in group:
        if isinstance(container[field], dict | list):
            mask = "y" if id(container) in differ else "x"
            container[field] = mask_value(container[field], keep, mask) \
                if mode is ArgumentMode.MASK else {}


def _stated_inputs_that_differ(refs: Mapping[object, list[ArgumentRef]]) -> set[int]:
    """Anthropic blocks whose stated ``input`` differs from their streamed input. Masking both
    with one letter could make them equal and hide ``argument_mismatch``; these get another."""
    streamed = {slot[1]: "".join(c[f] for c, f in group if isinstance(c[f], str))
                for slot, group in refs.items() if isinstance(slot, tuple) and slot[0] == "partial"}
    differ = set()
    for slot, group in refs.items():
        if not (isinstance(slot, tuple) and slot[0] == "input" and streamed.get(slot[1])):
            continue
        for container, field in group:
            try:
                same = _canonical(strict_json.loads(streamed[slot[1]])) == _canonical(
                    container[field])
            except (strict_json.StrictJSONError, ValueError):
                same = False
            if not same:
                differ.add(id(container))
    return differ


def _chat_arguments(events: list[Any]) -> Iterator[tuple[object, dict[str, Any], str]]:
    for number, chunk in enumerate(events):
        choices = chunk.get("choices") if isinstance(chunk, dict) else None
        for position, choice in enumerate(choices if isinstance(choices, list) else []):
            if not isinstance(choice, dict):
                continue
            for part in ("delta", "message"):
                yield from _entries(choice.get(part), (part, choice.get("index", position)),
                                    number)


def _entries(holder: object, scope: tuple[object, ...],
             number: int) -> Iterator[tuple[object, dict[str, Any], str]]:
    calls = holder.get("tool_calls") if isinstance(holder, dict) else None
    for position, entry in enumerate(calls if isinstance(calls, list) else []):
        function = entry.get("function") if isinstance(entry, dict) else None
        if isinstance(function, dict) and "arguments" in function:
            index = entry.get("index")
            slot = (*scope, index) if isinstance(index, int) else (*scope, number, position)
            yield slot, function, "arguments"


def _anthropic_arguments(events: list[Any]) -> Iterator[tuple[object, dict[str, Any], str]]:
    for event in events:
        if not isinstance(event, dict):
            continue
        block, delta = event.get("content_block"), event.get("delta")
        if isinstance(block, dict) and "input" in block:
            yield ("input", event.get("index"), id(block)), block, "input"
        if isinstance(delta, dict) and "partial_json" in delta:
            yield ("partial", event.get("index")), delta, "partial_json"


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, allow_nan=False)


def _scrub(value: Any, ids: Callable[[str], str], handled: set[tuple[int, str]],
           key: str = "") -> Any:
    """Ids to pseudonyms, free text masked, structure and numbers kept. Argument fields were
    already handled and are left as they are."""
    if isinstance(value, dict):
        return {k: v if (id(value), k) in handled else _scrub(v, ids, handled, k)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(item, ids, handled, key) for item in value]
    if not isinstance(value, str):
        return value
    if key == "id" or key.endswith(("_id", "Id")):
        return ids(value)
    return value if key in _STRUCTURAL_KEYS else mask_text(value)
