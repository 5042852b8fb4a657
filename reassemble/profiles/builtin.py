"""Tools the provider defines: how a request declares them, and what callgate checks calls by.

OpenAI's ``shell``, ``apply_patch``, ``local_shell`` and ``computer`` tools, its free-form
``custom`` tools, and Anthropic's ``bash``, ``text_editor``, ``computer`` and ``memory`` tools
carry no JSON Schema: the provider defines their input. A request that declares one is read
into ``tool_schemas`` as ``{TOOL_KEY: definition}``, the definition cut to what decides the
input (its type and name, a display size, a format), so fixtures keep what the app declared and
not a copy of callgate's schema. ``resolve`` turns a definition into the schema callgate ships
for that tool type and version (``tools_openai``, ``tools_anthropic``), the free-form format a
custom tool declares, or the problem that makes every call to it block: a version callgate does
not know is ``unknown_tool``, with the versions it knows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from callgate.reassemble.codes import Code
from callgate.reassemble.freeform import FreeformFormat, GrammarProblem, read_format
from callgate.reassemble.profiles import tools_anthropic, tools_openai
from callgate.reassemble.profiles.shipped import TOOL_KEY, Builder, BuiltinSchema
from callgate.reassemble.schema import SchemaProblem

#: Members of a definition that decide its calls' input; the rest (descriptions, cache
#: control) is left out of fixtures.
_DECIDING = frozenset(
    {
        "type",
        "name",
        "format",
        "display_width",
        "display_height",
        "display_width_px",
        "display_height_px",
        "enable_zoom",
    }
)


Resolved = BuiltinSchema | FreeformFormat | SchemaProblem
#: Tool type -> how its schema is built, for every type callgate ships one for.
BUILDERS: dict[str, Builder] = {**tools_openai.BUILDERS, **tools_anthropic.BUILDERS}


_VERSIONED = re.compile(r"^(?P<family>[a-z_]+?)_(?:\d{8})$")


def resolve(definition: object) -> Resolved:
    """What calls to the tool ``definition`` declares are checked by."""
    if isinstance(definition, dict) and definition.get("type") == "custom":
        try:
            return read_format(definition.get("format"))
        except GrammarProblem as problem:
            return SchemaProblem(Code.UNSUPPORTED_GRAMMAR, f"/{TOOL_KEY}/format", str(problem))
    shipped = shipped_schema(definition)
    assert shipped is not None  # only a custom tool has none
    return shipped


def shipped_schema(definition: object) -> BuiltinSchema | SchemaProblem | None:
    """The schema callgate ships for the built-in tool ``definition`` declares, or the problem
    that there is none for its type or version; None for a custom tool (free-form input: no
    schema, and its grammar is not compiled here)."""
    if not isinstance(definition, dict) or not isinstance(definition.get("type"), str):
        return SchemaProblem(Code.INVALID_SCHEMA, f"/{TOOL_KEY}", "the tool has no type")
    kind = definition["type"]
    if kind == "custom":
        return None
    builder = BUILDERS.get(kind)
    if builder is not None:
        return builder(definition)
    family = _VERSIONED.match(kind)
    known = sorted(k for k in BUILDERS if family and k.startswith(family["family"] + "_"))
    shown = f"; known versions: {', '.join(known)}" if known else ""
    return SchemaProblem(
        Code.UNKNOWN_TOOL,
        f"/{TOOL_KEY}/type",
        f"callgate ships no schema for tool type {kind[:60]!r}{shown}",
    )


#: OpenAI tool type -> the name its calls take (its call items carry none).
OPENAI_TOOL_NAMES = {
    "shell": "shell",
    "apply_patch": "apply_patch",
    "local_shell": "local_shell",
    "computer": "computer",
    "computer_use_preview": "computer",
}
#: Anthropic's client tool families (``<family>_<date>``); its server tools are not listed.
ANTHROPIC_FAMILIES = ("bash", "text_editor", "computer", "memory")
_TOOLSET = re.compile(r"^(?:computer|browser)_toolset_\d{8}$")


def declared_tools(request: Mapping[str, Any]) -> dict[str, Any]:
    """Tool name -> ``{TOOL_KEY: definition}`` for every provider-defined client tool the
    request's ``tools`` declare (a function tool, or a tool the provider runs itself, is not
    one)."""
    tools = request.get("tools")
    found: dict[str, Any] = {}
    for tool in tools if isinstance(tools, list) else ():
        if isinstance(tool, dict):
            for name, definition in _declared(tool):
                found[name] = {TOOL_KEY: definition}
    return found


def _declared(tool: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    kind = tool.get("type")
    if not isinstance(kind, str):
        return []
    if kind == "custom":
        return _custom(tool)
    if kind in OPENAI_TOOL_NAMES:
        return [(OPENAI_TOOL_NAMES[kind], _deciding(tool))]
    if _TOOLSET.match(kind):
        return _toolset_members(kind, tool)
    family = _VERSIONED.match(kind)
    name = tool.get("name")
    if family and family["family"] in ANTHROPIC_FAMILIES:
        name = name if isinstance(name, str) else tools_anthropic.NAMES.get(kind, family["family"])
        return [(name, _deciding(tool))]
    return []


def _custom(tool: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A Responses custom tool (``name``, ``format`` flat) or a Chat Completions one
    (``custom: {name, format}``, a grammar's ``syntax`` and ``definition`` under ``grammar``)."""
    custom = tool.get("custom")
    inner: Mapping[str, Any] = custom if isinstance(custom, dict) else tool
    name, declared = inner.get("name"), inner.get("format")
    if isinstance(declared, dict) and isinstance(declared.get("grammar"), dict):
        declared = {"type": declared.get("type"), **declared["grammar"]}
    if not isinstance(name, str):
        return []
    definition: dict[str, Any] = {"type": "custom", "name": name}
    if declared is not None:
        definition["format"] = declared
    return [(name, definition)]


def _toolset_members(kind: str, tool: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Anthropic's toolsets: each member is called by its own name (``left_click``), and a
    member its ``configs`` turn off is not declared."""
    configs = tool.get("configs")
    off = {
        member
        for member, config in (configs.items() if isinstance(configs, dict) else ())
        if isinstance(config, dict) and config.get("enabled") is False
    }
    members = tools_anthropic.TOOLSET_MEMBERS.get(kind, ())
    return [(member, {"type": kind, "name": member}) for member in members if member not in off]


def _deciding(tool: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in tool.items() if key in _DECIDING}
