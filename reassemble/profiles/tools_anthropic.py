"""The schemas callgate ships for Anthropic's client tools, one per tool type and version.

Anthropic's SDKs leave these tools' ``tool_use.input`` an untyped dict (anthropic-sdk-python
2.17.0, ``types/tool_use_block.py``) except the memory tool and the toolsets, so each schema is
written from Anthropic's tool documentation (docs.claude.com, "Bash tool", "Text editor tool",
"Computer use tool", "Memory tool"), checked against the SDK's typed inputs where they exist
(``types/beta/beta_memory_tool_20250818_*command.py``, ``types/beta/beta_computer_*_input.py``)
and the reference implementation (anthropics/anthropic-quickstarts,
``computer-use-demo/computer_use_demo/tools/``). Where the documentation and the model differ,
the model is followed:

- ``bash``: ``command`` is required "unless the tool is being restarted" (``restart: true``).
- ``text_editor``'s ``insert`` is documented with ``new_str``, but the model sends
  ``insert_text`` (anthropic-sdk-python issue #1155: a live ``text_editor_20250728`` call on
  claude-opus-4-5 gave ``{"command": "insert", "path", "insert_line", "insert_text"}``): either
  is taken, and one of them is required.
- ``computer``: a click's modifier keys are ``text`` (the documentation and the 2026 toolset's
  typed inputs; the reference implementation's older ``key`` is not taken).

Coordinates must lie inside the display the tool declares (``display_width_px``,
``display_height_px``); ``zoom`` is taken only when the tool declares ``enable_zoom: true``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from callgate.reassemble.profiles.shipped import Builder, BuiltinSchema, point, tagged

_TEXT = {"type": "string"}
_PATH = {"type": "string", "minLength": 1}

BASH = {
    "type": "object",
    "properties": {"command": {"type": "string", "minLength": 1}, "restart": {"type": "boolean"}},
    "additionalProperties": False,
    "anyOf": [
        {"required": ["command"]},
        {"required": ["restart"], "properties": {"restart": {"const": True}}},
    ],
}

_EDITOR_PROPERTIES = {
    "path": _PATH,
    "file_text": _TEXT,
    "old_str": _TEXT,
    "new_str": _TEXT,
    "insert_line": {"type": "integer", "minimum": 0},
    "insert_text": _TEXT,
    "view_range": {
        "type": "array",
        "prefixItems": [{"type": "integer", "minimum": 1}, {"type": "integer", "minimum": -1}],
        "minItems": 2,
        "maxItems": 2,
    },
}
_EDITOR_COMMANDS: dict[str, tuple[Sequence[str], Sequence[str]]] = {
    "view": (["path"], ["view_range"]),
    "create": (["path", "file_text"], []),
    "str_replace": (["path", "old_str"], ["new_str"]),
    "insert": (["path", "insert_line"], ["insert_text", "new_str"]),
    "undo_edit": (["path"], []),
}
_INSERT_TEXT = {"insert": {"anyOf": [{"required": ["insert_text"]}, {"required": ["new_str"]}]}}


def _editor(*commands: str) -> dict[str, Any]:
    return tagged(
        "command",
        _EDITOR_PROPERTIES,
        {command: _EDITOR_COMMANDS[command] for command in commands},
        _INSERT_TEXT,
    )


_EDITOR_2024 = _editor("view", "create", "str_replace", "insert", "undo_edit")
_EDITOR_2025 = _editor("view", "create", "str_replace", "insert")

#: Computer actions by version, each with the members it requires and may have.
_CLICK: tuple[Sequence[str], Sequence[str]] = ([], ["coordinate", "text"])
_ACTIONS_2024: dict[str, tuple[Sequence[str], Sequence[str]]] = {
    "key": (["text"], []),
    "type": (["text"], []),
    "mouse_move": (["coordinate"], []),
    "left_click_drag": (["coordinate"], []),
    "left_click": ([], []),
    "right_click": ([], []),
    "middle_click": ([], []),
    "double_click": ([], []),
    "screenshot": ([], []),
    "cursor_position": ([], []),
}
_ACTIONS_2025: dict[str, tuple[Sequence[str], Sequence[str]]] = {
    **_ACTIONS_2024,
    "left_click_drag": (["start_coordinate", "coordinate"], ["text"]),
    "left_click": _CLICK,
    "right_click": _CLICK,
    "middle_click": _CLICK,
    "double_click": _CLICK,
    "triple_click": _CLICK,
    "left_mouse_down": ([], []),
    "left_mouse_up": ([], []),
    "hold_key": (["text", "duration"], []),
    "scroll": (["scroll_direction", "scroll_amount"], ["coordinate", "text"]),
    "wait": (["duration"], []),
}
_ACTIONS_ZOOM = {**_ACTIONS_2025, "zoom": (["region"], [])}


def _computer_properties(definition: Mapping[str, Any]) -> dict[str, Any]:
    width, height = definition.get("display_width_px"), definition.get("display_height_px")
    return {
        "coordinate": point(width, height),
        "start_coordinate": point(width, height),
        "region": point(width, height, 4),
        "text": _TEXT,
        "duration": {"type": "number", "minimum": 0},
        "scroll_direction": {"enum": ["up", "down", "left", "right"]},
        "scroll_amount": {"type": "integer", "minimum": 0},
        "repeat": {"type": "integer", "minimum": 1},
    }


def _computer(actions: Mapping[str, tuple[Sequence[str], Sequence[str]]]) -> Builder:
    def build(definition: Mapping[str, Any]) -> BuiltinSchema:
        chosen = actions
        if "zoom" in actions and definition.get("enable_zoom") is not True:
            chosen = {name: spec for name, spec in actions.items() if name != "zoom"}
        return BuiltinSchema(tagged("action", _computer_properties(definition), chosen))

    return build


MEMORY = tagged(
    "command",
    {**_EDITOR_PROPERTIES, "old_path": _PATH, "new_path": _PATH},
    {
        "view": (["path"], ["view_range"]),
        "create": (["path", "file_text"], []),
        "str_replace": (["path", "old_str", "new_str"], []),
        "insert": (["path", "insert_line", "insert_text"], []),
        "delete": (["path"], []),
        "rename": (["old_path", "new_path"], []),
    },
)

#: The computer toolset (``computer_toolset_20260801``): each member is a tool of its own,
#: called by its name with its own input, no ``action`` (anthropic-sdk-python 2.17.0,
#: ``types/beta/beta_computer_*_input.py``, ``beta_computer_member_name.py``).
_TOOLSET_COMPUTER: dict[str, tuple[Sequence[str], Sequence[str]]] = {
    "key": (["text"], ["repeat"]),
    "hold_key": (["text", "duration"], []),
    "type": (["text"], []),
    "cursor_position": ([], []),
    "mouse_move": (["coordinate"], []),
    "left_mouse_down": ([], []),
    "left_mouse_up": ([], []),
    "left_click": _CLICK,
    "right_click": _CLICK,
    "middle_click": _CLICK,
    "double_click": _CLICK,
    "triple_click": _CLICK,
    "left_click_drag": (["coordinate", "start_coordinate"], ["text"]),
    "scroll": (["scroll_amount", "scroll_direction"], ["coordinate", "text"]),
    "wait": (["duration"], []),
    "screenshot": ([], []),
    "zoom": (["region"], []),
}
#: Toolset type -> its members; the browser toolset's members are known by name only, so a
#: call to one is ``unknown_tool`` until callgate ships their schemas.
TOOLSET_MEMBERS: dict[str, tuple[str, ...]] = {
    "computer_toolset_20260801": tuple(_TOOLSET_COMPUTER),
    "browser_toolset_20260801": (
        "navigate",
        "list_tabs",
        "new_tab",
        "switch_tab",
        "close_tab",
        "read_page",
        "get_page_text",
        "read_console",
        "read_network",
        "find",
        "form_input",
        "file_upload",
        "scroll_to",
        "screenshot",
        "zoom",
        "left_click",
        "right_click",
        "middle_click",
        "double_click",
        "triple_click",
        "hover",
        "left_click_drag",
        "left_mouse_down",
        "left_mouse_up",
        "mouse_move",
        "scroll",
        "type",
        "key",
        "hold_key",
        "wait",
        "javascript_exec",
    ),
}


def _toolset_member(definition: Mapping[str, Any]) -> BuiltinSchema:
    required, optional = _TOOLSET_COMPUTER.get(str(definition.get("name")), ([], []))
    properties = _computer_properties(definition)
    return BuiltinSchema(
        {
            "type": "object",
            "properties": {name: properties[name] for name in [*required, *optional]},
            "required": list(required),
            "additionalProperties": False,
        }
    )


BUILDERS: dict[str, Builder] = {
    "bash_20241022": lambda definition: BuiltinSchema(BASH),
    "bash_20250124": lambda definition: BuiltinSchema(BASH),
    "text_editor_20241022": lambda definition: BuiltinSchema(_EDITOR_2024),
    "text_editor_20250124": lambda definition: BuiltinSchema(_EDITOR_2024),
    "text_editor_20250429": lambda definition: BuiltinSchema(_EDITOR_2025),
    "text_editor_20250728": lambda definition: BuiltinSchema(_EDITOR_2025),
    "computer_20241022": _computer(_ACTIONS_2024),
    "computer_20250124": _computer(_ACTIONS_2025),
    "computer_20251124": _computer(_ACTIONS_ZOOM),
    "memory_20250818": lambda definition: BuiltinSchema(MEMORY),
    "computer_toolset_20260801": _toolset_member,
}

#: Tool type -> the name Anthropic gives it, for a definition that does not say.
NAMES = {
    "text_editor_20241022": "str_replace_editor",
    "text_editor_20250124": "str_replace_editor",
    "text_editor_20250429": "str_replace_based_edit_tool",
    "text_editor_20250728": "str_replace_based_edit_tool",
}
