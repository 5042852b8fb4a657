"""Where a Responses stream holds what the client runs: the output item types that are calls,
the events and members that carry a call's input (what redaction masks), and the events that
hand a client a complete call (what a gateway holds). Wire facts: ``openai_responses`` and
``responses_builtins``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from callgate.reassemble.profiles.base import ArgumentSite
from callgate.reassemble.profiles.responses_builtins import BUILTIN_ITEMS

CALL = "function_call"
CUSTOM = "custom_tool_call"
#: Output items the client executes: each is a slot with a call's identity and input.
CALL_ITEMS = frozenset({CALL, CUSTOM, *BUILTIN_ITEMS})
#: Output items the client never executes: the server ran them, or they are not tools at all.
NON_CALL_ITEMS = frozenset(
    {
        "reasoning",
        "message",
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "image_generation_call",
    }
)
#: Event type -> (site kind, member) of the events that carry a call's input: a function's
#: argument text, or free-form input (a custom tool's text, a shell command, a diff), streamed
#: or restated whole.
_INPUT_EVENTS = {
    "response.function_call_arguments.delta": ("stream", "delta"),
    "response.function_call_arguments.done": ("copy", "arguments"),
    "response.custom_tool_call_input.delta": ("text", "delta"),
    "response.custom_tool_call_input.done": ("text_copy", "input"),
    "response.apply_patch_call_operation_diff.delta": ("text", "delta"),
    "response.apply_patch_call_operation_diff.done": ("text_copy", "diff"),
}
#: Shell command events: each command is a stream of its own, keyed by its index too.
_COMMAND_EVENTS = {
    "response.shell_call_command.added": ("text", "command"),
    "response.shell_call_command.delta": ("text", "delta"),
    "response.shell_call_command.done": ("text_copy", "command"),
}


def argument_sites(events: list[Any]) -> Iterator[ArgumentSite]:
    """Each call's input as it streams, and every copy that restates it: the ``done`` event's,
    the item's (added and done) and ``response.completed``'s output."""
    for event in events:
        if not isinstance(event, dict):
            continue
        kind, index = event.get("type"), event.get("output_index")
        if kind in _INPUT_EVENTS:
            site, member = _INPUT_EVENTS[kind]
            if member in event:
                yield site, index, event, member
        elif kind in _COMMAND_EVENTS:
            site, member = _COMMAND_EVENTS[kind]
            if member in event:
                yield site, (index, event.get("command_index")), event, member
        item = event.get("item")
        if isinstance(item, dict):
            yield from _item_sites(item, index)
        response = event.get("response")
        output = response.get("output") if isinstance(response, dict) else None
        for position, entry in enumerate(output if isinstance(output, list) else []):
            if isinstance(entry, dict):
                yield from _item_sites(entry, position)


def _item_sites(item: dict[str, Any], index: object) -> Iterator[ArgumentSite]:
    kind = item.get("type")
    if kind in BUILTIN_ITEMS:
        for member in BUILTIN_ITEMS[kind][1]:
            if member in item:
                yield "text_copy", index, item, member
    elif kind == CUSTOM:
        if "input" in item:
            yield "text_copy", index, item, "input"
    elif "arguments" in item:
        yield "copy", index, item, "arguments"


#: Events that hand a client a complete call, or a complete part of one: a client can act on
#: them long before ``response.completed`` (codex runs a shell_call at ``output_item.done``).
_COMPLETES = frozenset(
    {
        "response.function_call_arguments.done",
        "response.custom_tool_call_input.done",
        "response.shell_call_command.done",
        "response.apply_patch_call_operation_diff.done",
    }
)


def completes_call(raw: object) -> bool:
    """Whether a raw event completes a call or part of one: the ``done`` of its input, or an
    ``output_item.done`` of any item that is not known to be no call."""
    if not isinstance(raw, dict):
        return False
    if raw.get("type") in _COMPLETES:
        return True
    item = raw.get("item")
    return raw.get("type") == "response.output_item.done" and not (
        isinstance(item, dict) and item.get("type") in NON_CALL_ITEMS
    )
