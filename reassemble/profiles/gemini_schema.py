"""Gemini function declarations' ``parameters`` (OpenAPI 3.0 Schema objects) as JSON Schema.

How this works: ``to_json_schema`` walks the OpenAPI tree and writes the 2020-12 schema that
accepts exactly the same arguments, keyword by keyword, using the fields of google-genai's
``Schema`` type. Types are written upper-case (``"OBJECT"``) by the SDKs and lower-case by some
clients; both mean the same. ``nullable: true`` adds ``"null"`` to the type. A field set to
``null`` is unset (proto3 JSON). ``propertyOrdering`` and ``format: "enum"`` only steer
generation and are dropped; ``example`` becomes ``examples``. Integer bounds in the proto are
int64, which proto3 JSON may write as strings (``"minItems": "1"``); they are read as numbers.

Anything it cannot translate without guessing stays in the output renamed
``openapi:<keyword>``, so that ``callgate.reassemble.schema.compile_schema`` rejects the tool with
``unsupported_schema_keyword`` at that very place (fail closed). ``declaration_schemas`` reads a
request's ``tools`` into the envelope's ``tool_schemas``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_TYPES = frozenset({"object", "string", "integer", "number", "boolean", "array", "null"})
_SAME = frozenset({"title", "description", "default", "pattern", "minimum", "maximum"})
_COUNTS = frozenset(
    {"minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties"}
)
_DROPPED = frozenset({"propertyOrdering"})
#: Formats that only say how a number is stored (float, double) or that ``enum`` lists values.
_NOTE_FORMATS = frozenset({"float", "double", "enum"})
_INT_FORMATS = {"int32": 2**31, "int64": 2**63}
UNSUPPORTED_PREFIX = "openapi:"


def to_json_schema(openapi: object) -> object:
    """The JSON Schema (2020-12) equivalent of an OpenAPI 3.0 ``Schema`` object; a keyword or
    value it cannot translate faithfully is kept as ``openapi:<keyword>`` (see the module doc)."""
    return _Translation().node(openapi)


def declaration_schemas(tools: object) -> dict[str, object]:
    """Tool name -> JSON Schema for every function declaration in a request's ``tools``.

    ``parametersJsonSchema`` is taken as it is; ``parameters`` is translated; a declaration with
    neither takes no arguments (``{}`` only); one with both is ambiguous and fails closed.
    Snake-case field names are read as well (proto JSON).
    """
    schemas: dict[str, object] = {}
    for tool in tools if isinstance(tools, list) else []:
        declarations = proto_field(tool, "functionDeclarations") if isinstance(tool, dict) else None
        for declaration in declarations if isinstance(declarations, list) else []:
            name = proto_field(declaration, "name") if isinstance(declaration, dict) else None
            if isinstance(name, str):
                schemas[name] = _declaration_schema(declaration)
    return schemas


def _declaration_schema(declaration: Mapping[str, Any]) -> object:
    parameters = proto_field(declaration, "parameters")
    json_schema = proto_field(declaration, "parametersJsonSchema")
    if parameters is not None and json_schema is not None:
        return {UNSUPPORTED_PREFIX + "parameters": parameters}
    if json_schema is not None:
        return json_schema
    if parameters is None:
        return {"type": "object", "maxProperties": 0}
    return to_json_schema(parameters)


def proto_field(node: Mapping[str, Any], camel: str) -> Any:
    """A field of a Google API message by its camelCase name, or the snake_case name the SDKs
    dump it under."""
    if node.get(camel) is not None:
        return node[camel]
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in camel)
    return node.get(snake)


class _Translation:
    def node(self, schema: object) -> object:
        if not isinstance(schema, dict):
            return self._refuse(None, "", schema)  # not a Schema object
        out: dict[str, Any] = {}
        given = {key: value for key, value in schema.items() if value is not None}
        for key, value in given.items():
            self._keyword(out, key, value)
        if "nullable" in given:
            self._nullable(out, given)
        return out

    def _keyword(self, out: dict[str, Any], key: str, value: Any) -> None:
        if key in _DROPPED or key == "nullable":
            return
        if key == "type":
            lower = value.lower() if isinstance(value, str) else None
            if lower not in _TYPES:
                self._refuse(out, key, value)  # not a Gemini type
                return
            out["type"] = lower
        elif key in _SAME or key in ("enum", "required"):
            out[key] = value
        elif key == "example":
            out["examples"] = [value]
        elif key in _COUNTS:
            count = int(value) if isinstance(value, str) and value.isdigit() else value
            out[key] = count
        elif key == "format":
            self._format(out, value)
        elif key == "properties" and isinstance(value, dict):
            out[key] = {name: self.node(child) for name, child in value.items()}
        elif key == "items":
            out[key] = self.node(value)
        elif key == "anyOf" and isinstance(value, list):
            out[key] = [self.node(child) for child in value]
        else:
            self._refuse(out, key, value)  # no faithful JSON Schema form

    def _format(self, out: dict[str, Any], value: Any) -> None:
        if value in _NOTE_FORMATS:
            return
        if value in _INT_FORMATS:
            bound = _INT_FORMATS[value]
            out.setdefault("allOf", []).append({"minimum": -bound, "maximum": bound - 1})
            return
        out["format"] = value  # a JSON Schema format: the schema policy decides if it is checked

    def _nullable(self, out: dict[str, Any], given: Mapping[str, Any]) -> None:
        nullable = given["nullable"]
        if nullable is False:
            return
        if nullable is not True:
            self._refuse(out, "nullable", nullable)  # not a boolean
        elif "type" not in out:
            # OpenAPI 3.0.3 ties nullable to type; without one, what it allows is unclear.
            self._refuse(out, "nullable", nullable)  # no type to extend
        elif "enum" in out and None not in out["enum"]:
            # with an enum lacking null, OpenAPI 3.0 tools read it two ways
            self._refuse(out, "nullable", nullable)
        elif out["type"] != "null":
            out["type"] = [out["type"], "null"]

    def _refuse(self, out: dict[str, Any] | None, key: str, value: object) -> object:
        if out is None:  # not a schema object: compile_schema reports invalid_schema for it
            return value
        out[UNSUPPORTED_PREFIX + key] = value
        return out
