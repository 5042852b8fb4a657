"""The schemas callgate ships for OpenAI's built-in client tools, and the V4A diff's structure.

A built-in call's input is its item's input members as one object (``responses_builtins``).
Sources, read for each field, its type and whether it is required:

- openai-python 3.63.0, ``openai/types/responses/``: ``response_function_shell_tool_call.py``
  (``shell_call.action``: ``commands`` required, ``timeout_ms`` and ``max_output_length``
  optional integers), ``response_output_item.py`` (``LocalShellCall.action``: ``type: "exec"``,
  ``command`` and ``env`` required; ``timeout_ms``, ``user``, ``working_directory`` optional),
  ``response_apply_patch_tool_call.py`` (``operation``: ``create_file`` / ``update_file``
  {path, diff}, ``delete_file`` {path}), ``response_computer_tool_call.py`` and
  ``computer_action.py`` (``action``, or the GA tool's ``actions`` list, a union on ``type``),
  ``computer_use_preview_tool.py`` (``display_width``, ``display_height``); the OpenAPI spec
  2.3.0 (openai/openai-openapi) agrees on every required member.
- The V4A diff of ``create_file`` / ``update_file``: openai-agents 0.24.0 ``agents/apply_diff.py``,
  the reference implementation that applies it (every line of a created file starts with
  ``+``; an update is hunks of ``@@`` headers and `` ``/``-``/``+`` lines, an empty line read as
  context, ``*** End of File`` after a hunk).

Every object refuses members these sources do not name: a new member could change what runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from callgate.reassemble.codes import Code
from callgate.reassemble.profiles.shipped import Builder, BuiltinSchema, tagged

_TEXT = {"type": "string", "minLength": 1}
_COUNT = {"type": ["integer", "null"], "minimum": 0}
_KEYS = {"type": ["array", "null"], "items": {"type": "string"}}


def _object(properties: Mapping[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": dict(properties),
        "required": required,
        "additionalProperties": False,
    }


SHELL = _object(
    {
        "action": _object(
            {
                "commands": {"type": "array", "minItems": 1, "items": _TEXT},
                "timeout_ms": _COUNT,
                "max_output_length": _COUNT,
            },
            ["commands"],
        )
    },
    ["action"],
)

LOCAL_SHELL = _object(
    {
        "action": _object(
            {
                "type": {"const": "exec"},
                "command": {
                    "type": "array",
                    "minItems": 1,
                    "items": {"type": "string"},
                    "prefixItems": [_TEXT],
                },
                "env": {"type": "object", "additionalProperties": {"type": "string"}},
                "timeout_ms": _COUNT,
                "user": {"type": ["string", "null"]},
                "working_directory": {"type": ["string", "null"]},
            },
            ["type", "command", "env"],
        )
    },
    ["action"],
)

APPLY_PATCH = _object(
    {
        "operation": tagged(
            "type",
            {"path": _TEXT, "diff": {"type": "string"}},
            {
                "create_file": (["path", "diff"], []),
                "update_file": (["path", "diff"], []),
                "delete_file": (["path"], []),
            },
        )
    },
    ["operation"],
)


def _computer_action(width: object, height: object) -> dict[str, Any]:
    """One computer action; ``x``/``y`` inside the display the preview tool declares."""
    axis = {"type": "integer", "minimum": 0}
    x = {**axis, **({"exclusiveMaximum": width} if _size(width) else {})}
    y = {**axis, **({"exclusiveMaximum": height} if _size(height) else {})}
    position = ["x", "y"]
    return tagged(
        "type",
        {
            "button": {"enum": ["left", "right", "wheel", "back", "forward"]},
            "x": x,
            "y": y,
            "keys": _KEYS,
            "path": {"type": "array", "minItems": 2, "items": _object({"x": x, "y": y}, position)},
            "scroll_x": {"type": "integer"},
            "scroll_y": {"type": "integer"},
            "text": {"type": "string"},
        },
        {
            "click": (["button", *position], ["keys"]),
            "double_click": (position, ["keys"]),
            "drag": (["path"], ["keys"]),
            "keypress": (["keys"], []),
            "move": (position, ["keys"]),
            "screenshot": ([], []),
            "scroll": ([*position, "scroll_x", "scroll_y"], ["keys"]),
            "type": (["text"], []),
            "wait": ([], []),
        },
        {"keypress": {"properties": {"keys": {"type": "array", "minItems": 1}}}},
    )


def _size(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def computer(definition: Mapping[str, Any]) -> BuiltinSchema:
    """``computer_call``: one ``action``, or (the GA ``computer`` tool) a list of ``actions``;
    never both."""
    action = _computer_action(definition.get("display_width"), definition.get("display_height"))
    return BuiltinSchema(
        {
            "type": "object",
            "properties": {
                "action": action,
                "actions": {"type": "array", "minItems": 1, "items": action},
            },
            "additionalProperties": False,
            "minProperties": 1,
            "maxProperties": 1,
        }
    )


def diff_problems(arguments: Any) -> list[tuple[Code, str]]:
    """An ``apply_patch`` operation's diff against the structure of its operation."""
    operation = arguments.get("operation") if isinstance(arguments, dict) else None
    if not isinstance(operation, dict) or not isinstance(operation.get("diff"), str):
        return []
    diff, kind = operation["diff"], operation.get("type")
    lines = diff.split("\n")  # never empty: "".split("\n") is [""]
    if lines[-1] == "":
        lines.pop()  # the diff's own last newline
    if not lines:
        return [(Code.INVALID_PATCH, f"the {kind} diff is empty")]
    if kind == "create_file":
        return _created(lines)
    return _updated(lines)


def _created(lines: list[str]) -> list[tuple[Code, str]]:
    for number, line in enumerate(lines, 1):
        if not line.startswith("+"):
            return [
                (
                    Code.INVALID_PATCH,
                    f"line {number} of a create_file diff does not start with '+': {line[:60]!r}",
                )
            ]
    return []


def _updated(lines: list[str]) -> list[tuple[Code, str]]:
    """Hunks: ``@@`` headers (the first hunk may go without), each followed by context,
    removed and added lines; ``*** End of File`` only at the end of a hunk."""
    changed = header = False
    for number, line in enumerate(lines, 1):
        if line == "@@" or line.startswith("@@ "):
            if header and not changed:
                continue  # stacked headers narrow the search
            header, changed = True, False
            continue
        if line == "*** End of File":
            if not changed:
                return [(Code.INVALID_PATCH, f"line {number}: '*** End of File' ends no hunk")]
            header = changed = False
            continue
        if line[:1] not in ("", " ", "-", "+"):
            return [
                (
                    Code.INVALID_PATCH,
                    f"line {number} of an update_file diff is no hunk line: {line[:60]!r}",
                )
            ]
        changed = True
    if header and not changed:
        return [(Code.INVALID_PATCH, "the update_file diff ends with a hunk header and no lines")]
    return []


BUILDERS: dict[str, Builder] = {
    "shell": lambda definition: BuiltinSchema(SHELL),
    "local_shell": lambda definition: BuiltinSchema(LOCAL_SHELL),
    "apply_patch": lambda definition: BuiltinSchema(APPLY_PATCH, diff_problems),
    "computer": computer,
    "computer_use_preview": computer,
}
