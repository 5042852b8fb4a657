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
from callgate.reassemble.profiles import PROFILES
from callgate.redact.mask import Pseudonyms, mask_arguments, mask_text, mask_value

#: Request parameters that pin behaviour and hold no prompt.
REQUEST_PARAMETERS = ("model", "tool_choice", "parallel_tool_calls", "n", "stream",
                      "stream_options", "max_tokens", "max_completion_tokens", "temperature")
#: String fields of stream events that are structure, not content.
_STRUCTURAL_KEYS = frozenset({"type", "object", "role", "finish_reason", "stop_reason", "model",
                              "system_fingerprint", "service_tier", "native_finish_reason",
                              "name", "status", "finishReason", "jsonPath", "blockReason",
                              "modelVersion"})


class ArgumentMode(StrEnum):
    MASK = "mask"
    KEEP = "keep"
    DROP = "drop"


def request_parameters(request: Mapping[str, Any]) -> dict[str, Any]:
    """The request's non-prompt parameters a fixture keeps."""
    return {key: request[key] for key in REQUEST_PARAMETERS if key in request}


def redacted_copy(envelope: Mapping[str, Any], arguments: ArgumentMode) -> dict[str, Any]:
    out = copy.deepcopy(dict(envelope))
    out["request"] = request_parameters(out.get("request", {}))
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
#: What a profile's finder yields: (kind, call key, container, field). ``stream`` fragments of a
#: call are masked as one text; each ``copy`` (a full restatement of a call's arguments, text or
#: object) is masked alone; a ``piece`` is part of one string value (Vertex ``partialArgs``).
Found = tuple[str, object, dict[str, Any], str]


def _redact_arguments(profile: str, events: list[Any], mode: ArgumentMode,
                      keep: frozenset[str]) -> set[tuple[int, str]]:
    """Mask argument fields in place, per the mode. Returns the (container id, field) pairs that
    hold arguments, which the generic scrub then leaves alone."""
    found = list(_FINDERS.get(profile, _chat_arguments)(events))
    if mode is not ArgumentMode.KEEP:
        streams: dict[object, list[ArgumentRef]] = {}
        for kind, key, container, field in found:
            if kind == "stream":
                streams.setdefault(key, []).append((container, field))
        references = {key: "".join(c[f] for c, f in refs if isinstance(c[f], str))
                      for key, refs in streams.items()}
        for refs in streams.values():
            _mask_stream(refs, mode, keep)
        _mask_copies(found, references, mode, keep)
    return {(id(container), field) for _, _, container, field in found}


def _mask_stream(refs: list[ArgumentRef], mode: ArgumentMode, keep: frozenset[str]) -> None:
    texts = [(c, f) for c, f in refs if isinstance(c[f], str)]
    masked = mask_arguments([c[f] for c, f in texts], keep) if mode is ArgumentMode.MASK \
        else ["" for _ in texts]
    for (container, field), text in zip(texts, masked, strict=True):
        container[field] = text


def _mask_copies(found: list[Found], references: dict[object, str], mode: ArgumentMode,
                 keep: frozenset[str]) -> None:
    """Each copy masked alone. A copy that differs from its call's streamed text (or, when
    nothing streamed, from the call's first copy) is masked with another letter: one letter
    for both could make them equal and hide ``argument_mismatch``."""
    for kind, key, container, field in found:
        value = container[field]
        if kind == "piece":
            container[field] = mask_value(value, keep) if mode is ArgumentMode.MASK else ""
            continue
        if kind != "copy":
            continue
        reference = references.setdefault(key, value if isinstance(value, str) else
                                          _canonical(value))
        mask = "x" if _same_arguments(value, reference) else "y"
        if mode is not ArgumentMode.MASK:
            container[field] = "" if isinstance(value, str) else {}
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


def _chat_arguments(events: list[Any]) -> Iterator[Found]:
    for number, chunk in enumerate(events):
        choices = chunk.get("choices") if isinstance(chunk, dict) else None
        for position, choice in enumerate(choices if isinstance(choices, list) else []):
            if not isinstance(choice, dict):
                continue
            for part in ("delta", "message"):
                yield from _entries(choice.get(part), (part, choice.get("index", position)),
                                    number)


def _entries(holder: object, scope: tuple[object, ...], number: int) -> Iterator[Found]:
    calls = holder.get("tool_calls") if isinstance(holder, dict) else None
    for position, entry in enumerate(calls if isinstance(calls, list) else []):
        function = entry.get("function") if isinstance(entry, dict) else None
        if isinstance(function, dict) and "arguments" in function:
            index = entry.get("index")
            key = (*scope, index) if isinstance(index, int) else (*scope, number, position)
            yield "stream", key, function, "arguments"


def _anthropic_arguments(events: list[Any]) -> Iterator[Found]:
    for event in events:
        if not isinstance(event, dict):
            continue
        block, delta = event.get("content_block"), event.get("delta")
        if isinstance(block, dict) and "input" in block:
            yield "copy", event.get("index"), block, "input"
        if isinstance(delta, dict) and "partial_json" in delta:
            yield "stream", event.get("index"), delta, "partial_json"


def _responses_arguments(events: list[Any]) -> Iterator[Found]:
    for event in events:
        if not isinstance(event, dict):
            continue
        kind, index = event.get("type"), event.get("output_index")
        if kind == "response.function_call_arguments.delta" and "delta" in event:
            yield "stream", index, event, "delta"
        elif kind == "response.function_call_arguments.done" and "arguments" in event:
            yield "copy", index, event, "arguments"
        item = event.get("item")
        if isinstance(item, dict) and "arguments" in item:
            yield "copy", index, item, "arguments"
        response = event.get("response")
        output = response.get("output") if isinstance(response, dict) else None
        for position, entry in enumerate(output if isinstance(output, list) else []):
            if isinstance(entry, dict) and "arguments" in entry:
                yield "copy", position, entry, "arguments"


def _gemini_arguments(events: list[Any]) -> Iterator[Found]:
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


_FINDERS: dict[str, Callable[[list[Any]], Iterator[Found]]] = {
    "anthropic": _anthropic_arguments,
    "openai-responses": _responses_arguments,
    "gemini": _gemini_arguments,
}


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
