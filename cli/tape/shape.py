"""A request's shape: what a tape matches on, and all it keeps of the request.

Non-secret and prompt-free: the method, the path without its query (which may hold a key), the
model, the tool names in order, ``stream``, and how many messages each role sent. Two runs of a
deterministic app send the same shapes; a changed model, tool set or conversation does not.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from callgate.redact import request_json

#: Where each API lists a conversation's turns (Chat, Messages; Gemini; Responses).
_TURN_LISTS = ("messages", "contents", "input")
#: Where a system prompt sits outside the turn list (Messages; Gemini; Responses).
_SYSTEM_FIELDS = ("system", "systemInstruction", "system_instruction", "instructions")


def request_shape(route: str, method: str, path: str, body: bytes) -> dict[str, Any]:
    """The shape of a request to ``route`` (a ``SdkRoute`` name) at ``path`` (below the route)."""
    request = request_json(body)
    shape: dict[str, Any] = {"route": route, "method": method, "path": urlsplit(path).path}
    if isinstance(request.get("model"), str):
        shape["model"] = request["model"]
    if tools := tool_names(request):
        shape["tools"] = tools
    if isinstance(request.get("stream"), bool):
        shape["stream"] = request["stream"]
    if roles := _roles(request):
        shape["messages_by_role"] = roles
    return shape


def describe(shape: Mapping[str, Any]) -> str:
    """One line: ``POST /v1/chat/completions (openai) model gpt-4o, tools [a, b], stream, ...``."""
    parts = [f"{shape.get('method')} {shape.get('path')} ({shape.get('route')})"]
    if "model" in shape:
        parts.append(f"model {shape['model']}")
    if "tools" in shape:
        parts.append(f"tools [{', '.join(shape['tools'])}]")
    if "stream" in shape:
        parts.append("stream" if shape["stream"] else "not streamed")
    if "messages_by_role" in shape:
        parts.append(
            "messages "
            + " ".join(f"{role} {count}" for role, count in shape["messages_by_role"].items())
        )
    return ", ".join(parts)


def tool_names(request: Mapping[str, Any]) -> list[str]:
    """The declared tools' names in order, as any of the supported APIs declares them."""
    names = []
    for tool in _dicts(request.get("tools")):
        function = tool.get("function")
        name = function.get("name") if isinstance(function, dict) else tool.get("name")
        if isinstance(name, str):
            names.append(name)
        for declaration in _dicts(
            tool.get("functionDeclarations", tool.get("function_declarations"))
        ):
            if isinstance(declaration.get("name"), str):
                names.append(declaration["name"])
    return names


def _roles(request: Mapping[str, Any]) -> dict[str, int]:
    roles: Counter[str] = Counter()
    for field in _TURN_LISTS:
        for turn in _dicts(request.get(field)):
            roles[str(turn.get("role", turn.get("type", "?")))] += 1
    if any(request.get(field) for field in _SYSTEM_FIELDS):
        roles["system"] += 1
    return dict(sorted(roles.items()))


def _dicts(value: object) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
