"""What a call's input is checked against, given its tool's entry in ``tool_schemas``.

An entry is either the tool's JSON Schema (a function tool) or, for a tool the provider defines
(OpenAI's ``shell``, ``apply_patch``, ``computer`` and ``custom`` tools, Anthropic's ``bash``,
``text_editor``, ``computer`` and ``memory`` tools), the tool's definition as the request
declared it, under ``TOOL_KEY`` (``callgate.reassemble.profiles.builtin``): such a tool carries
no schema of its own, so callgate reads its input by the schema it ships for that tool type and
version, or by the free-form format the definition declares. ``input_check`` turns an entry into
one ``InputCheck``, or the ``SchemaProblem`` that makes every call to the tool block.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from callgate.reassemble.codes import Code
from callgate.reassemble.profiles.shipped import TOOL_KEY, BuiltinSchema
from callgate.reassemble.schema import (
    SchemaProblem,
    ToolSchema,
    compiled_schema,
    shipped_schema_compiled,
)

if TYPE_CHECKING:  # the module (with llguidance behind it) is loaded for a declared tool only
    from callgate.reassemble.freeform import FreeformFormat


@dataclass(frozen=True)
class InputProblem:
    """One way the input fails its tool: a finding's code, message and detail."""

    code: Code
    message: str
    detail: dict[str, str] = field(default_factory=dict)


class InputCheck(Protocol):
    @property
    def freeform(self) -> bool:
        """Whether the tool takes free-form text (``str``) rather than JSON arguments."""
        ...

    def problems(self, value: Any) -> list[InputProblem]:
        """Every way ``value`` (parsed arguments, or free-form text) fails the tool."""
        ...


@dataclass(frozen=True)
class JSONInput:
    """Parsed arguments against a JSON Schema, then any checks the schema cannot state (an
    ``apply_patch`` diff's structure)."""

    schema: ToolSchema
    more: Callable[[Any], list[tuple[Code, str]]] | None = None
    freeform: bool = False

    def problems(self, value: Any) -> list[InputProblem]:
        found = [
            InputProblem(
                Code.SCHEMA_VIOLATION,
                f"{v.keyword!r} fails at {v.instance_path or '(root)'}: {v.message}",
                {
                    "keyword": v.keyword,
                    "argument_path": v.instance_path,
                    "schema_path": v.schema_path,
                },
            )
            for v in self.schema.violations(value)
        ]
        if not found and self.more is not None:
            found = [InputProblem(code, message) for code, message in self.more(value)]
        return found


@dataclass(frozen=True)
class FreeformInput:
    """Free-form text against the format its tool declares."""

    format: FreeformFormat
    freeform: bool = True

    def problems(self, value: Any) -> list[InputProblem]:
        return [InputProblem(code, message) for code, message in self.format.problems(value)]


def input_check(entry: object) -> InputCheck | SchemaProblem:
    """The check for calls to a tool whose ``tool_schemas`` entry is ``entry``. A declared
    tool's check is made once per process for each definition: building a shipped schema (a
    computer tool's takes 50 us) or compiling a grammar is not work for every turn."""
    if isinstance(entry, dict) and TOOL_KEY in entry:
        try:
            key = json.dumps(entry[TOOL_KEY], sort_keys=True, ensure_ascii=False)
        except (TypeError, ValueError):  # not JSON (a Python caller's): made, not kept
            return _declared_check(entry[TOOL_KEY])
        return _kept_declared_check(key)
    schema = compiled_schema(entry)
    return schema if isinstance(schema, SchemaProblem) else JSONInput(schema)


@functools.lru_cache(maxsize=256)
def _kept_declared_check(definition: str) -> InputCheck | SchemaProblem:
    """``_declared_check`` of a definition given as its JSON text, remembered."""
    return _declared_check(json.loads(definition))


def _declared_check(definition: object) -> InputCheck | SchemaProblem:
    from callgate.reassemble.profiles.builtin import resolve  # only a declared tool needs it

    found = resolve(definition)
    if isinstance(found, SchemaProblem):
        return found
    if isinstance(found, BuiltinSchema):
        schema = shipped_schema_compiled(found.schema)
        if isinstance(schema, SchemaProblem):  # a shipped schema is tested: never here
            return schema
        return JSONInput(schema, found.more)
    return FreeformInput(found)


def schema_documents(tool_schemas: object) -> list[object]:
    """The JSON Schemas behind ``tool_schemas``: each entry's own, or the one callgate ships for
    a declared built-in tool (what redaction reads the enums to keep from)."""
    from callgate.reassemble.profiles.builtin import shipped_schema

    documents: list[object] = []
    for entry in tool_schemas.values() if isinstance(tool_schemas, dict) else ():
        if isinstance(entry, dict) and TOOL_KEY in entry:
            found = shipped_schema(entry[TOOL_KEY])
            if isinstance(found, BuiltinSchema):
                documents.append(found.schema)
        else:
            documents.append(entry)
    return documents
