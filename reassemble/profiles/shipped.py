"""What the schemas callgate ships for provider-defined tools are built from."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from callgate.reassemble.codes import Code
from callgate.reassemble.schema import SchemaProblem

#: The member of a ``tool_schemas`` entry that holds a declared tool's definition in place of a
#: JSON Schema (``builtin``).
TOOL_KEY = "x-callgate-tool"


@dataclass(frozen=True)
class BuiltinSchema:
    """The JSON Schema callgate ships for a tool type and version, and the checks beyond it."""

    schema: dict[str, Any]
    more: Callable[[Any], list[tuple[Code, str]]] | None = None


Builder = Callable[[Mapping[str, Any]], BuiltinSchema | SchemaProblem]


def tagged(
    tag: str,
    properties: Mapping[str, Any],
    variants: Mapping[str, tuple[Sequence[str], Sequence[str]]],
    also: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """An object whose member ``tag`` names its variant (a command, an action): ``properties``
    types every member any variant takes; each variant lists the members it requires and those
    it may have, and any other member is refused. ``also``: more a variant's value must meet."""
    return {
        "type": "object",
        "required": [tag],
        "properties": {tag: {"enum": list(variants)}, **properties},
        "additionalProperties": False,
        "allOf": [
            {
                "if": {"properties": {tag: {"const": value}}, "required": [tag]},
                "then": {
                    "required": list(required),
                    "propertyNames": {"enum": [tag, *required, *optional]},
                    **(also or {}).get(value, {}),
                },
            }
            for value, (required, optional) in variants.items()
        ],
    }


def point(width: object, height: object, length: int = 2) -> dict[str, Any]:
    """``[x, y]`` (or ``[x0, y0, x1, y1]``) in whole pixels, inside the display when the tool
    declares its size."""
    bounds = []
    for position in range(length):
        bound = width if position % 2 == 0 else height
        axis: dict[str, Any] = {"type": "integer", "minimum": 0}
        if isinstance(bound, int) and not isinstance(bound, bool) and bound > 0:
            axis["exclusiveMaximum"] = bound
        bounds.append(axis)
    return {"type": "array", "prefixItems": bounds, "minItems": length, "maxItems": length}
