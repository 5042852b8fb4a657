"""What Python callers hand over from the provider SDKs: their event objects and their tools.

How this works: nothing here imports an SDK or pydantic. An object with a callable
``model_dump`` (a pydantic model: openai's ``ChatCompletionChunk`` and Responses events,
anthropic's stream events, google-genai's responses and ``Tool``) is read as the JSON its API
sent, ``model_dump(mode="json", by_alias=True, exclude_unset=True)``: the SDKs build these objects
from the wire with the wire's field names as aliases, and leave what the wire did not send unset.

A tools list is read entry by entry. Each entry is recognised by the keys its API gives a tool and
read by the very function that reads that API's recorded requests (``callgate.reassemble.
profiles``), so a tool means the same whether it came from a fixture or from the caller. An entry
none of them reads is the caller's mistake, a ``UsageError`` naming its index; tools the provider
defines itself (web search, code execution) have no schema and are left out, as the request
readers leave them out: a call to one is then ``unknown_tool``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from callgate.reassemble.errors import UsageError
from callgate.reassemble.profiles.base import flat_tools, function_tools

#: What the engine reads as it is: JSON values (a non-object one is an ``unsupported_event``
#: finding, as from a fixture) and bytes, which it reports the same way.
_READ_AS_IS = (dict, list, str, int, float, bool, type(None), bytes, bytearray)

#: Gemini ``Tool`` fields of the tools Google runs itself, in proto JSON and snake case.
_GEMINI_BUILT_INS = frozenset(
    {
        "googleSearch",
        "google_search",
        "googleSearchRetrieval",
        "google_search_retrieval",
        "codeExecution",
        "code_execution",
        "urlContext",
        "url_context",
        "retrieval",
        "computerUse",
        "computer_use",
        "fileSearch",
        "file_search",
        "googleMaps",
        "google_maps",
        "enterpriseWebSearch",
        "enterprise_web_search",
    }
)

_EXPECTED = (
    'expected an SDK\'s tool: {"type": "function", "function": {"name", "parameters"}} (OpenAI '
    'Chat, Cohere, Ollama), {"type": "function", "name", "parameters"} (OpenAI Responses), '
    '{"name", "input_schema"} (Anthropic), {"functionDeclarations": [...]} or a declaration '
    '(Gemini), {"toolSpec": {"name", "inputSchema": {"json"}}} (Bedrock)'
)


def event_json(raw: object) -> object:
    """The event ``Reassembler.feed`` reads for ``raw``: ``raw`` itself when it is a JSON value
    (or bytes), else the wire JSON of an SDK's model. Raises ``TypeError`` for anything else."""
    if isinstance(raw, _READ_AS_IS):
        return raw
    dumped = _model_json(raw)
    if dumped is _NOT_A_MODEL:
        raise TypeError(
            "Reassembler.feed() takes one event as parsed from the wire (a dict) or an SDK's "
            f"pydantic model of one, not {_type_name(raw)}"
        )
    return dumped


#: What ``_model_json`` gives for a value without a callable ``model_dump``.
_NOT_A_MODEL = object()


def _model_json(value: object) -> Any:
    dump = getattr(value, "model_dump", None)
    if not callable(dump):
        return _NOT_A_MODEL
    return dump(mode="json", by_alias=True, exclude_unset=True)


def _type_name(value: object) -> str:
    kind = type(value)
    return f"{kind.__module__}.{kind.__qualname__}"


def tool_schemas_of(tools: object, profile: str) -> dict[str, Any]:
    """Tool name -> JSON Schema for ``tools``: such a mapping, taken as it is, or the tools as
    the caller handed them to the provider's SDK (a list, or Bedrock's ``toolConfig``), read
    for ``profile``. Raises ``UsageError`` naming the first entry it cannot read."""
    if type(tools) is dict and not isinstance(tools.get("tools"), list):
        return dict(tools)  # the envelope's own form: nearly every call
    if tools is None:
        return {}
    if isinstance(tools, Mapping):
        # A JSON Schema is never a list: a "tools" list is Bedrock's toolConfig, not a tool.
        listed = tools.get("tools")
        return (
            _listed(listed, profile, "toolConfig.tools") if isinstance(listed, list) else {**tools}
        )
    if isinstance(tools, Sequence) and not isinstance(tools, str | bytes):
        return _listed(tools, profile, "tools")
    dumped = _model_json(tools)
    if dumped is not _NOT_A_MODEL:
        return tool_schemas_of(dumped, profile)
    raise UsageError(
        "tools must map tool names to JSON Schemas or list tools as the provider's SDK takes "
        f"them, not {type(tools).__name__}"
    )


def _listed(entries: Sequence[object], profile: str, label: str) -> dict[str, Any]:
    schemas: dict[str, Any] = {}
    for index, item in enumerate(entries):
        where = f"{label}[{index}]"
        entry = item if isinstance(item, dict) else _model_json(item)
        if entry is _NOT_A_MODEL:
            raise UsageError(
                f"{where}: a tool is a dict or an SDK's pydantic model of one, not "
                f"{_type_name(item)}; {_EXPECTED}"
            )
        schemas.update(_entry_schemas(entry, profile, where))
    return schemas


def _entry_schemas(entry: object, profile: str, where: str) -> dict[str, Any]:
    from callgate.reassemble.profiles.builtin import declared_tools  # for tool lists only

    if not isinstance(entry, dict):
        raise UsageError(f"{where} is not a JSON object; {_EXPECTED}")
    if "functionDeclarations" in entry or "function_declarations" in entry:
        return _declarations(entry, where)
    declared = declared_tools({"tools": [entry]})
    if declared:  # a provider-defined client tool: its input is read by callgate's schema
        return declared
    read = _reader(entry, profile)
    if read is None:
        if _provider_defined(entry):
            return {}
        raise UsageError(f"{where} is no tool callgate can read; {_EXPECTED}")
    name_of, reader = read
    return _checked(name_of(entry), reader(entry), where)


def _checked(name: object, schemas: dict[str, Any], where: str) -> dict[str, Any]:
    """``schemas``, read from the tool named ``name`` at ``where``, when they hold its schema."""
    if not isinstance(name, str):
        raise UsageError(f"{where} has no name (a string); {_EXPECTED}")
    if not isinstance(schemas.get(name), dict | bool):
        raise UsageError(f"{where} ({name}): its schema is not a JSON object; {_EXPECTED}")
    return schemas


_Read = tuple[Callable[[dict[str, Any]], object], Callable[[dict[str, Any]], dict[str, Any]]]


def _reader(entry: dict[str, Any], profile: str) -> _Read | None:
    """How to read the name and the schemas of one tool, by the keys its API gives it."""
    from callgate.reassemble.profiles.bedrock_converse import tool_schemas as bedrock_tools
    from callgate.reassemble.profiles.gemini_schema import declaration_schemas

    if "function" in entry:  # OpenAI Chat, and Cohere v2 and Ollama, which copied it
        return (
            lambda e: _get(e, "function", "name"),
            lambda e: function_tools({"tools": [e]}),
        )
    if "toolSpec" in entry:
        return (
            lambda e: _get(e, "toolSpec", "name"),
            lambda e: bedrock_tools({"toolConfig": {"tools": [e]}}),
        )
    if "input_schema" in entry:
        return (lambda e: e.get("name"), lambda e: flat_tools({"tools": [e]}, "input_schema"))
    if "name" not in entry or _provider_defined(entry):
        return None
    if _gemini_declaration(entry, profile):
        return (lambda e: e.get("name"), lambda e: declaration_schemas([_as_tool(e)]))
    return (lambda e: e.get("name"), lambda e: flat_tools({"tools": [e]}, "parameters"))


def _gemini_declaration(entry: dict[str, Any], profile: str) -> bool:
    """A bare Gemini ``FunctionDeclaration``: its own schema field, or any untyped named entry
    under the Gemini profile (whose ``parameters`` are OpenAPI, not JSON Schema)."""
    if "parametersJsonSchema" in entry or "parameters_json_schema" in entry:
        return True
    return profile == "gemini" and entry.get("type") != "function"


def _as_tool(declaration: object) -> dict[str, Any]:
    return {"functionDeclarations": [declaration]}


def _declarations(tool: dict[str, Any], where: str) -> dict[str, Any]:
    from callgate.reassemble.profiles.gemini_schema import declaration_schemas

    key = "functionDeclarations" if "functionDeclarations" in tool else "function_declarations"
    declarations = tool[key]
    if declarations is None:  # a proto field left unset
        return {}
    if not isinstance(declarations, list):
        raise UsageError(f"{where}.{key} is not a list; {_EXPECTED}")
    schemas: dict[str, Any] = {}
    for index, declaration in enumerate(declarations):
        name = declaration.get("name") if isinstance(declaration, dict) else None
        read = declaration_schemas([_as_tool(declaration)]) if isinstance(name, str) else {}
        schemas.update(_checked(name, read, f"{where}.{key}[{index}]"))
    return schemas


def _provider_defined(entry: dict[str, Any]) -> bool:
    """A tool the provider runs itself: typed but not a function and without ``parameters``
    (OpenAI's ``web_search``, Anthropic's ``web_search_20250305``), or one of Gemini's. (The
    client tools of this kind, ``declared_tools``, are read before this is asked.)"""
    kind = entry.get("type")
    if isinstance(kind, str) and kind != "function" and "parameters" not in entry:
        return True
    return not _GEMINI_BUILT_INS.isdisjoint(entry)


def _get(entry: dict[str, Any], outer: str, key: str) -> object:
    inner = entry.get(outer)
    return inner.get(key) if isinstance(inner, dict) else None
