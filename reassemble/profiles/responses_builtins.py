"""The Responses API's built-in client tools: the output items an agent runs on its own machine.

Wire facts (openai-python's generated types, ``openai/types/responses/``; live captures of each
in vercel/ai's ``packages/openai/src/responses/__fixtures__``):

- ``shell_call`` (``FunctionShellTool``): ``action: {commands: [str], timeout_ms,
  max_output_length}``. ``output_item.added`` holds a skeleton (``commands: []``); each command
  streams as ``response.shell_call_command.added`` {output_index, command_index, command},
  ``.delta`` {output_index, command_index, delta} and ``.done`` {output_index, command_index,
  command}. These events carry no ``item_id``: they are matched to the item by ``output_index``.
- ``apply_patch_call`` (``ApplyPatchTool``): ``operation`` = ``create_file`` {path, diff} |
  ``update_file`` {path, diff} | ``delete_file`` {path}. ``output_item.added`` holds the path and
  an empty diff; the diff streams as ``response.apply_patch_call_operation_diff.delta`` {item_id,
  output_index, delta} and ``.done`` {diff} (a live capture shows them; openai-python 2.x's
  event union does not list them).
- ``local_shell_call`` (``LocalShellTool``): ``action: {type: "exec", command: [str], env, ...}``,
  and ``computer_call`` (``ComputerTool``): ``action`` (or ``actions``, a list, for the GA
  ``computer`` tool): no deltas; the added item is a skeleton, the whole input comes at
  ``output_item.done``.

The input of a built-in call is its item's input members as one JSON object (``{"action":
...}``, ``{"operation": ...}``): that is what the schema callgate ships for the tool judges
(``tools_openai``), what ``Report.calls`` shows, and what every later copy must restate. Its
name is the tool's (``shell``, ``apply_patch``, ``local_shell``, ``computer``). Streamed pieces
(commands, the diff) are joined here and must equal every copy of the finished item.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from callgate.reassemble.codes import Code
from callgate.reassemble.events import ArgumentsStated, Event, Problem

#: Built-in call item type -> (the tool's name, the item members that are its input).
BUILTIN_ITEMS: dict[str, tuple[str, tuple[str, ...]]] = {
    "shell_call": ("shell", ("action",)),
    "apply_patch_call": ("apply_patch", ("operation",)),
    "local_shell_call": ("local_shell", ("action",)),
    "computer_call": ("computer", ("action", "actions")),
}

SHELL_EVENTS = (
    "response.shell_call_command.added",
    "response.shell_call_command.delta",
    "response.shell_call_command.done",
)
DIFF_EVENTS = (
    "response.apply_patch_call_operation_diff.delta",
    "response.apply_patch_call_operation_diff.done",
)


def input_text(item: Mapping[str, object]) -> str | None:
    """A built-in item's input as JSON text (members sorted, so that copies that say the same
    compare equal), or None when the item states no input member."""
    _, members = BUILTIN_ITEMS[str(item.get("type"))]
    found = {member: item[member] for member in members if member in item}
    if not found:
        return None
    return json.dumps(found, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


@dataclass
class Pieces:
    """What streamed of one built-in item: each command's text (and whether its ``.done``
    came), or the diff."""

    commands: dict[int, list[str]] = field(default_factory=dict)
    commands_done: set[int] = field(default_factory=set)
    diff: list[str] | None = None

    def command_event(self, kind: str, raw: Mapping[str, object], slot: int) -> list[Event]:
        number = raw.get("command_index")
        if not isinstance(number, int) or isinstance(number, bool) or number < 0:
            return [
                _problem(
                    Code.INVALID_SLOT,
                    f"command_index {number!r} is not an index",
                    "/command_index",
                    slot,
                )
            ]
        text = _text(raw, "delta" if kind.endswith(".delta") else "command", slot)
        if isinstance(text, Problem):
            return [text]
        if kind.endswith(".added"):
            if number in self.commands:
                return [
                    _problem(
                        Code.DUPLICATE_START,
                        f"command {number} was added again",
                        "/command_index",
                        slot,
                    )
                ]
            self.commands[number] = [text]
            return []
        if number not in self.commands:
            return [
                _problem(
                    Code.DELTA_BEFORE_START,
                    f"command {number} has a {kind.rsplit('.', 1)[1]} before it was added",
                    "/command_index",
                    slot,
                )
            ]
        if number in self.commands_done:
            return [
                _problem(
                    Code.DELTA_AFTER_TERMINAL,
                    f"command {number} was already done",
                    "/command_index",
                    slot,
                )
            ]
        if kind.endswith(".delta"):
            self.commands[number].append(text)
            return []
        self.commands_done.add(number)
        return _restated(
            "".join(self.commands[number]), text, f"command {number}", "/command", slot
        )

    def diff_event(self, kind: str, raw: Mapping[str, object], slot: int) -> list[Event]:
        text = _text(raw, "delta" if kind.endswith(".delta") else "diff", slot)
        if isinstance(text, Problem):
            return [text]
        if kind.endswith(".delta"):
            if self.diff is None:
                self.diff = []
            self.diff.append(text)
            return []
        return _restated("".join(self.diff or []), text, "the diff", "/diff", slot)

    def against_item(self, item: Mapping[str, object], pointer: str, slot: int) -> list[Event]:
        """The finished item must restate what streamed: every command, in order, or the
        diff."""
        if self.commands:
            action = item.get("action")
            stated = action.get("commands") if isinstance(action, dict) else None
            streamed = ["".join(self.commands[n]) for n in sorted(self.commands)]
            if stated != streamed or sorted(self.commands) != list(range(len(self.commands))):
                return [
                    _problem(
                        Code.ARGUMENT_MISMATCH,
                        f"the item's commands differ from the {len(streamed)} streamed",
                        pointer + "/action/commands",
                        slot,
                    )
                ]
        if self.diff is not None:
            operation = item.get("operation")
            stated = operation.get("diff") if isinstance(operation, dict) else None
            if stated != "".join(self.diff):
                return [
                    _problem(
                        Code.ARGUMENT_MISMATCH,
                        "the item's diff differs from the streamed diff",
                        pointer + "/operation/diff",
                        slot,
                    )
                ]
        return []


def stated_input(item: Mapping[str, object], pointer: str, slot: int) -> list[Event]:
    """A copy of a built-in item's input, as the engine compares copies."""
    text = input_text(item)
    if text is None:
        members = " or ".join(BUILTIN_ITEMS[str(item.get("type"))][1])
        return [
            _problem(
                Code.ARGUMENT_MISMATCH,
                f"the {item.get('type')} item has no {members}",
                pointer,
                slot,
            )
        ]
    return [ArgumentsStated((0, slot), pointer, text)]


def _text(raw: Mapping[str, object], member: str, slot: int) -> str | Problem:
    text = raw.get(member)
    if isinstance(text, str):
        return text
    return _problem(Code.UNSUPPORTED_EVENT, f"{member} is not a string", f"/{member}", slot)


def _restated(streamed: str, stated: str, what: str, pointer: str, slot: int) -> list[Event]:
    if stated == streamed:
        return []
    return [
        _problem(
            Code.ARGUMENT_MISMATCH,
            f"the done event restates {what} differently from its streamed text",
            pointer,
            slot,
        )
    ]


def _problem(code: Code, message: str, pointer: str, slot: int) -> Problem:
    return Problem(code, message, pointer, choice=0, slot=slot)
