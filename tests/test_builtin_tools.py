"""The tools the provider defines: built-in client tools read by the schemas callgate ships,
free-form input by its declared format, and items callgate cannot read blocked in every gate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from callgate import Blocked, check, guard
from callgate.integrations.gateway import GatewayTurn
from callgate.reassemble import Code
from callgate.reassemble.freeform import GrammarProblem, read_format
from callgate.reassemble.profiles import PROFILES, frames
from callgate.reassemble.profiles.builtin import BUILDERS, TOOL_KEY, resolve
from callgate.reassemble.profiles.shipped import BuiltinSchema
from callgate.reassemble.profiles.tools_anthropic import TOOLSET_MEMBERS
from callgate.reassemble.profiles.tools_openai import diff_problems
from callgate.reassemble.schema import (
    SchemaProblem,
    ToolSchema,
    compile_schema,
    shipped_schema_compiled,
)
from callgate.reassemble.sdk import tool_schemas_of
from callgate.reassemble.tool_input import input_check
from callgate.redact.mask import mask_free_text
from tests.conftest import CONFORMANCE, SHARED_CORPUS, corpus_params, load
from tests.test_tap import judging_tap, through

# -- the schemas callgate ships --------------------------------------------------------------------

#: A definition of each tool type callgate ships a schema for, as a request declares it.
DEFINITIONS = {
    kind: {"type": kind, "name": "left_click" if "toolset" in kind else kind.split("_2")[0]}
    for kind in BUILDERS
}


SIZES = {"display_width_px": 1280, "display_height_px": 800, "display_width": 1280}


def shipped_variants(kind: str) -> list[dict[str, Any]]:
    """Definitions of ``kind`` that shape its schema differently: with and without a display's
    size, and each member of a toolset."""
    base = DEFINITIONS[kind]
    names = TOOLSET_MEMBERS.get(kind, (base["name"],))
    return [{**base, "name": name, **sizes} for name in names for sizes in ({}, SIZES)]


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_every_shipped_schema_passes_its_metaschema_and_callgate_s_policy(kind: str) -> None:
    """A shipped schema the policy refused would block every call of its tool; one its
    metaschema refused would be judged wrongly, since a turn compiles it without asking the
    metaschema (``shipped_schema_compiled``)."""
    for definition in shipped_variants(kind):
        built = resolve(definition)
        if isinstance(built, SchemaProblem):  # a toolset member callgate ships no schema for
            assert "toolset" in kind
            continue
        assert isinstance(built, BuiltinSchema)
        assert isinstance(compile_schema(built.schema), ToolSchema), definition
        assert isinstance(shipped_schema_compiled(built.schema), ToolSchema), definition


def test_a_tool_version_callgate_does_not_know_is_unknown_tool_naming_the_known_ones() -> None:
    problem = resolve({"type": "text_editor_20991231", "name": "str_replace_based_edit_tool"})
    assert isinstance(problem, SchemaProblem) and problem.code is Code.UNKNOWN_TOOL
    assert problem.message == (
        "callgate ships no schema for tool type 'text_editor_20991231'; known versions: "
        "text_editor_20241022, text_editor_20250124, text_editor_20250429, text_editor_20250728"
    )


@pytest.mark.parametrize(
    ("definition", "arguments", "codes"),
    [
        # bash: command required unless restart is true
        ({"type": "bash_20250124"}, {"command": "ls"}, []),
        ({"type": "bash_20250124"}, {"restart": True}, []),
        ({"type": "bash_20250124"}, {}, ["schema_violation"]),
        ({"type": "bash_20250124"}, {"command": "ls", "cwd": "/"}, ["schema_violation"]),
        # text_editor: insert takes insert_text (the model) or new_str (the docs)
        (
            {"type": "text_editor_20250728"},
            {"command": "insert", "path": "/a", "insert_line": 0, "new_str": "x"},
            [],
        ),
        (
            {"type": "text_editor_20250728"},
            {"command": "insert", "path": "/a", "insert_line": 0},
            ["schema_violation"],
        ),
        ({"type": "text_editor_20250124"}, {"command": "undo_edit", "path": "/a"}, []),
        # view_range: from line 1; to a line, or -1 for the end of the file
        (
            {"type": "text_editor_20250728"},
            {"command": "view", "path": "/a", "view_range": [1, -1]},
            [],
        ),
        (
            {"type": "text_editor_20250728"},
            {"command": "view", "path": "/a", "view_range": [1, -2]},
            ["schema_violation"],
        ),
        (
            {"type": "text_editor_20250728"},
            {"command": "view", "path": "/a", "view_range": [0, 5]},
            ["schema_violation"],
        ),
        (
            {"type": "text_editor_20250429"},
            {"command": "create", "path": "/a", "file_text": "x", "old_str": "y"},
            ["schema_violation"],
        ),
        # computer: zoom only where the tool enables it; coordinates inside the display
        (
            {"type": "computer_20251124", "display_width_px": 100, "display_height_px": 100},
            {"action": "zoom", "region": [0, 0, 50, 50]},
            ["schema_violation"],
        ),
        (
            {
                "type": "computer_20251124",
                "display_width_px": 100,
                "display_height_px": 100,
                "enable_zoom": True,
            },
            {"action": "zoom", "region": [0, 0, 50, 50]},
            [],
        ),
        (
            {"type": "computer_20250124", "display_width_px": 100, "display_height_px": 100},
            {"action": "scroll", "scroll_direction": "up", "scroll_amount": 3},
            [],
        ),
        (
            {"type": "computer_20250124", "display_width_px": 100, "display_height_px": 100},
            {"action": "scroll", "scroll_direction": "up", "scroll_amount": 0},
            [],
        ),
        (
            {"type": "computer_20250124", "display_width_px": 100, "display_height_px": 100},
            {"action": "scroll", "scroll_direction": "up", "scroll_amount": -1},
            ["schema_violation"],
        ),
        # a display of no size bounds no coordinate: [x, y] is only whole pixels from 0
        (
            {"type": "computer_20250124", "display_width_px": 0, "display_height_px": 0},
            {"action": "left_click", "coordinate": [5, 5]},
            [],
        ),
        ({"type": "computer_toolset_20260801", "name": "wait"}, {"duration": 2}, []),
        ({"type": "computer_toolset_20260801", "name": "wait"}, {}, ["schema_violation"]),
        ({"type": "computer_toolset_20260801", "name": "wait"}, {"duration": 0}, []),
        # the shortest command, path and line number each tool takes
        ({"type": "bash_20250124"}, {"command": "w"}, []),
        ({"type": "text_editor_20250728"}, {"command": "view", "path": "a"}, []),
        (
            {"type": "text_editor_20250728"},
            {"command": "insert", "path": "a", "insert_line": 0, "insert_text": "x"},
            [],
        ),
        (
            {"type": "text_editor_20250728"},
            {"command": "insert", "path": "a", "insert_line": -1, "insert_text": "x"},
            ["schema_violation"],
        ),
        (
            {"type": "text_editor_20250728"},
            {"command": "view", "path": "a", "view_range": [1, 2, 3]},
            ["schema_violation"],
        ),
        (
            {"type": "computer_toolset_20260801", "name": "wait"},
            {"duration": -0.5},
            ["schema_violation"],
        ),
        (  # a member takes its own members only
            {"type": "computer_toolset_20260801", "name": "wait"},
            {"duration": 1, "text": "x"},
            ["schema_violation"],
        ),
        ({"type": "computer_toolset_20260801", "name": "key"}, {"text": "a", "repeat": 1}, []),
        (
            {"type": "computer_toolset_20260801", "name": "key"},
            {"text": "a", "repeat": 0},
            ["schema_violation"],
        ),
        # OpenAI
        ({"type": "shell"}, {"action": {"commands": []}}, ["schema_violation"]),
        ({"type": "shell"}, {"action": {"commands": ["ls"], "sudo": True}}, ["schema_violation"]),
        ({"type": "shell"}, {"action": {"commands": ["ls"], "timeout_ms": 0}}, []),
        (
            {"type": "shell"},
            {"action": {"commands": ["ls"], "timeout_ms": -1}},
            ["schema_violation"],
        ),
        ({"type": "computer"}, {"action": {"type": "keypress", "keys": []}}, ["schema_violation"]),
        # a display of no stated size bounds no coordinate
        (
            {"type": "computer_use_preview", "display_width": 0, "display_height": 0},
            {"action": {"type": "click", "button": "left", "x": 5, "y": 5}},
            [],
        ),
        (
            {"type": "computer"},
            {"action": {"type": "wait"}, "actions": [{"type": "wait"}]},
            ["schema_violation"],
        ),
        # the GA computer tool's batch: one action or more
        ({"type": "computer"}, {"actions": [{"type": "wait"}]}, []),
        ({"type": "computer"}, {"note": "x"}, ["schema_violation"]),  # no action at all
        # the fewest points a drag takes, and keys a keypress takes
        (
            {"type": "computer"},
            {"action": {"type": "drag", "path": [{"x": 0, "y": 0}, {"x": 1, "y": 1}]}},
            [],
        ),
        ({"type": "computer"}, {"action": {"type": "keypress", "keys": ["a"]}}, []),
        # whole pixels from 0, inside a stated display; a display width of True states none
        (
            {"type": "computer_use_preview", "display_width": 10, "display_height": 10},
            {"action": {"type": "move", "x": 0, "y": 9}},
            [],
        ),
        (
            {"type": "computer_use_preview", "display_width": 10, "display_height": 10},
            {"action": {"type": "move", "x": -1, "y": 0}},
            ["schema_violation"],
        ),
        (
            {"type": "computer_use_preview", "display_width": True, "display_height": 10},
            {"action": {"type": "move", "x": 5, "y": 0}},
            [],
        ),
        ({"type": "computer"}, {"actions": []}, ["schema_violation"]),
        (
            {"type": "apply_patch"},
            {"operation": {"type": "delete_file", "path": "a", "diff": "+x"}},
            ["schema_violation"],
        ),
        (
            {"type": "apply_patch"},
            {"operation": {"type": "update_file", "path": "a", "diff": "*** Begin Patch\n"}},
            ["invalid_patch"],
        ),
    ],
)
def test_a_built_in_tool_s_input_is_judged_by_its_type_and_version(
    definition: dict[str, Any], arguments: dict[str, Any], codes: list[str]
) -> None:
    check_ = input_check({TOOL_KEY: definition})
    assert not isinstance(check_, SchemaProblem) and not check_.freeform
    assert sorted({str(problem.code) for problem in check_.problems(arguments)}) == codes


@pytest.mark.parametrize(
    ("operation", "problem"),
    [
        ({"type": "create_file", "diff": "+a\n+\n+b"}, None),
        ({"type": "create_file", "diff": "+a\nb"}, "line 2 of a create_file diff does not start"),
        ({"type": "create_file", "diff": ""}, "the create_file diff is empty"),
        ({"type": "create_file", "diff": "+a\n\n"}, "line 2 of a create_file diff does not start"),
        ({"type": "update_file", "diff": "-a\n+b\n"}, None),  # the first hunk needs no header
        ({"type": "update_file", "diff": "@@ class A\n@@ def f():\n x\n-a\n+b\n\n"}, None),
        ({"type": "update_file", "diff": "@@\n a\n*** End of File\n"}, None),
        ({"type": "update_file", "diff": "@@\n*** End of File\n"}, "ends no hunk"),
        ({"type": "update_file", "diff": "*** End of File\n"}, "line 1: '*** End of File' ends"),
        ({"type": "update_file", "diff": "@@\n@@ def f():\n"}, "ends with a hunk header"),
        (
            {"type": "create_file", "diff": "+a\n" + "b" * 70},
            f"line 2 of a create_file diff does not start with '+': {'b' * 60!r}",
        ),
        (
            {"type": "update_file", "diff": " a\n" + "*" * 70},
            f"line 2 of an update_file diff is no hunk line: {'*' * 60!r}",
        ),
        (  # the end of a file ends its hunk: a second end has none to end
            {"type": "update_file", "diff": "@@\n+a\n*** End of File\n*** End of File\n"},
            "line 4: '*** End of File' ends no hunk",
        ),
        ({"type": "update_file", "diff": "@@\n+a\n@@\n"}, "ends with a hunk header"),
        ({"type": "update_file", "diff": "@@@@\n+a\n"}, "line 1 of an update_file diff is no"),
        ({"type": "update_file", "diff": "+a\n*** End Patch\n"}, "line 2 of an update_file"),
    ],
)
def test_a_v4a_diff_is_checked_for_its_operation_s_structure(
    operation: dict[str, Any], problem: str | None
) -> None:
    found = diff_problems({"operation": {**operation, "path": "a"}})
    if problem is None:
        assert found == []
    else:
        [(code, message)] = found
        assert code is Code.INVALID_PATCH and problem in message


# -- free-form input --------------------------------------------------------------------------

#: OpenAI's documented grammars: the function-calling guide's math grammar (which the lark
#: package cannot build), codex's apply_patch grammar, the cookbook's timestamp regex.
MATH = (CONFORMANCE / "openai-responses" / "custom_tool_call_lark_valid.json", "math_exp")
PATCH = (CONFORMANCE / "openai-responses" / "custom_tool_call_only.json", "apply_patch")
STAMP = (CONFORMANCE / "openai-responses" / "custom_tool_call_regex_violation.json", "timestamp")


def declared_format(source: tuple[Path, str]) -> Any:
    path, name = source
    return load(path)["tool_schemas"][name][TOOL_KEY]["format"]


@pytest.mark.parametrize(
    ("source", "text", "code"),
    [
        (MATH, "4 + 4 * 2", None),
        (MATH, "4 +", Code.GRAMMAR_INCOMPLETE),
        (MATH, "4+4", Code.GRAMMAR_VIOLATION),
        (MATH, "4 + 4\n", Code.GRAMMAR_VIOLATION),
        (PATCH, "*** Begin Patch\n*** Delete File: a.txt\n*** End Patch\n", None),
        (PATCH, "*** Begin Patch\n*** Delete File: a.txt\n", Code.GRAMMAR_INCOMPLETE),
        (PATCH, "*** Begin Patch\n*** End Patch\n", Code.GRAMMAR_VIOLATION),
        (STAMP, "2025-08-07 10:00", None),
        (STAMP, "2025-08-0", Code.GRAMMAR_INCOMPLETE),
        (STAMP, "2025-08-07T10:00", Code.GRAMMAR_VIOLATION),
    ],
)
def test_free_form_input_is_whole_cut_or_refused_by_its_grammar(
    source: tuple[Path, str], text: str, code: Code | None
) -> None:
    found = read_format(declared_format(source)).problems(text)
    assert [c for c, _ in found] == ([] if code is None else [code])


def test_a_refusal_names_the_byte_the_grammar_refuses() -> None:
    [(_, message)] = read_format(declared_format(MATH)).problems("4 + 4x")
    assert message.startswith("the lark grammar refuses byte 5: ")


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        ({"type": "grammar", "syntax": "regex", "definition": "a(b"}, "does not compile"),
        ({"type": "grammar", "syntax": "lark", "definition": "start: foo"}, "does not compile"),
        ({"type": "grammar", "syntax": "ebnf", "definition": "x"}, "is not lark or regex"),
        ({"type": "json"}, "format type 'json' is not known"),
    ],
)
def test_a_format_callgate_cannot_check_blocks_every_call_of_its_tool(
    declared: dict[str, Any], message: str
) -> None:
    with pytest.raises(GrammarProblem, match=message):
        read_format(declared)
    found = resolve({"type": "custom", "name": "t", "format": declared})
    assert isinstance(found, SchemaProblem) and found.code is Code.UNSUPPORTED_GRAMMAR


def test_free_form_masking_keeps_what_a_patch_grammar_reads() -> None:
    """Letters and digits go; a patch's structure lines and line openings stay, cut back at the
    fragments' boundaries."""
    fragments = ["*** Begin Patch\n*** Update File: sr", "c/app.py\n@@ def f():\n-  x = 1\n", "+"]
    assert mask_free_text(fragments) == [
        "*** Begin Patch\n*** Update File: xx",
        "x/xxx.xx\n@@ xxx x():\n-  x = 0\n",
        "+",
    ]
    assert mask_free_text(["rm -rf ./b1"], mask="y") == ["yy -yy ./y1"]


# -- the gates -------------------------------------------------------------------------------------

UNKNOWN_ITEMS = [
    CONFORMANCE / "openai-responses" / "unknown_item_type.json",
    CONFORMANCE / "anthropic" / "unknown_block_type.json",
    CONFORMANCE / "openai" / "unknown_call_type.json",
]


@pytest.mark.parametrize("path", UNKNOWN_ITEMS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_an_item_callgate_cannot_read_blocks_in_every_gate(path: Path) -> None:
    """Where a call could be, what callgate cannot read fails the turn: ``guard`` raises, enforce
    mode sends the provider's error instead of the turn's end, the gateway raises before it."""
    envelope = load(path)
    profile, events = envelope["profile"], envelope[PROFILES[envelope["profile"]].stream_key]
    assert check(envelope).exit_code == 1 and "unsupported_event" in check(envelope).blocking_codes

    with pytest.raises(Blocked):
        for _ in guard(iter(events), envelope["tool_schemas"], profile=profile):
            pass

    body = b"".join(frames(envelope))
    sent = through(judging_tap(envelope, "sse", enforce=True), body, 13)
    assert sent != body and b"callgate blocked this turn" in sent

    turn = GatewayTurn(profile, {"tools": envelope["tool_schemas"]})
    items = events if profile != "anthropic" else [body]
    for item in items:
        turn.take(item)
    with pytest.raises(Blocked):
        turn.finish()


# -- live captures --------------------------------------------------------------------------------

BUILTIN_CORPUS = SHARED_CORPUS / "builtin-tools"
#: Capture -> the tool its request declared (INDEX.tsv's notes), and the call it must give.
CAPTURES = {
    "openai/responses-shell-tool-vercel.jsonl": (
        {"type": "shell"},
        "shell",
        '{"action":{"commands":["ls -a ~/Desktop"],"max_output_length":8912,"timeout_ms":null}}',
    ),
    "openai/responses-apply-patch-create-vercel.jsonl": (
        {"type": "apply_patch"},
        "apply_patch",
        '{"operation":{"diff":"+## Shopping Checklist\\n+\\n+- [ ] Milk\\n+- [ ] Bread\\n+- [ ] '
        'Eggs\\n+- [ ] Fresh fruit\\n+- [ ] Coffee\\n","path":"shopping-checklist.md",'
        '"type":"create_file"}}',
    ),
    "openai/responses-local-shell-vercel.jsonl": (
        {"type": "local_shell"},
        "local_shell",
        '{"action":{"command":["ls","-a","~"],"env":{},"type":"exec"}}',
    ),
}


def capture(name: str) -> list[Any]:
    lines = (BUILTIN_CORPUS / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.mark.corpus
@pytest.mark.parametrize("name", corpus_params(sorted(CAPTURES) if BUILTIN_CORPUS.is_dir() else []))
def test_a_live_capture_of_each_built_in_tool_passes_and_no_prefix_of_it_does(name: str) -> None:
    """The whole turn passes with its one call's input exact; cut after any event before its
    end, it never passes (a cut diff or command still looks whole: only the end tells)."""
    tool, call_name, arguments = CAPTURES[name]
    events = capture(name)
    schemas = tool_schemas_of([tool], "openai-responses")
    envelope = {"profile": "openai-responses", "tool_schemas": schemas, "events": events}
    report = check(envelope)
    assert (report.status.value, [(c.name, c.arguments) for c in report.calls]) == (
        "pass",
        [(call_name, arguments)],
    )
    for end in range(len(events) - 1):
        cut = check({**envelope, "events": events[:end]})
        assert cut.status.value != "pass", end


def test_a_built_in_call_goes_on_a_trace_by_its_tool_s_name() -> None:
    """OpenTelemetry's ``gen_ai.tool.name`` of a built-in call is its tool's: ``shell``."""
    from callgate.integrations.otel import call_attributes

    report = check(load(CONFORMANCE / "openai-responses" / "shell_call_valid.json"))
    assert call_attributes(report) == [
        {
            "callgate.call.slot": 0,
            "gen_ai.tool.call.id": "call_Sh3ll0Cmd",
            "gen_ai.tool.name": "shell",
        }
    ]


def test_a_toolset_member_is_left_out_only_where_its_config_turns_it_off() -> None:
    """Anthropic's toolset ``configs``: ``{"enabled": false}`` leaves a member out; a config
    that enables it, or one that is no object, leaves it in."""
    toolset = {
        "type": "computer_toolset_20260801",
        "name": "computer",
        "display_width_px": 1024,
        "display_height_px": 768,
        "configs": {"left_click": {"enabled": False}, "wait": {"enabled": True}, "scroll": "on"},
    }
    declared = PROFILES["anthropic"].tool_schemas({"tools": [toolset]})
    assert "left_click" not in declared
    assert {"wait", "scroll", "right_click"} <= set(declared)


# -- a built-in call's copies -----------------------------------------------------------------

SHELL = CONFORMANCE / "openai-responses" / "shell_call_valid.json"


def test_a_shell_calls_done_item_that_names_another_call_id_is_an_identity_collision() -> None:
    document = load(SHELL)
    document["events"][14]["item"]["call_id"] = "call_other"
    assert [(f.code, f.path) for f in check(document).findings] == [
        (Code.IDENTITY_COLLISION, "/events/14/item/call_id")
    ]


def test_a_shell_calls_done_item_stating_other_commands_than_its_stream_is_a_mismatch() -> None:
    """The ``.done`` events and the final output agree with the streamed commands: the item
    alone says otherwise, and that is enough to block."""
    document = load(SHELL)
    document["events"][14]["item"]["action"]["commands"][1] = "rm -rf ./build"
    assert [(f.code, f.path, f.message) for f in check(document).findings] == [
        (
            Code.ARGUMENT_MISMATCH,
            "/events/14/item/action/commands",
            "the item's commands differ from the 2 streamed",
        )
    ]


def test_copies_of_a_built_in_input_that_order_its_members_otherwise_say_the_same() -> None:
    document = load(SHELL)
    final = document["events"][15]["response"]["output"][0]
    final["action"] = dict(reversed(list(final["action"].items())))
    assert check(document).status.value == "pass"


def test_a_built_in_input_stated_whole_is_the_call_s_arguments_as_text_says_it() -> None:
    """A ``local_shell_call`` states its command whole: the report's arguments are that input
    as JSON text, non-ASCII kept as it is (as every call's arguments are)."""
    document = load(CONFORMANCE / "openai-responses" / "local_shell_call_valid.json")
    document = json.loads(json.dumps(document).replace('"~"', '"~/café"'))
    [call] = check(document).calls
    assert call.arguments == '{"action":{"command":["ls","-a","~/café"],"env":{},"type":"exec"}}'


def test_a_shell_command_streamed_before_its_item_is_a_delta_before_start() -> None:
    document = load(SHELL)
    del document["events"][2]
    for number, event in enumerate(document["events"]):
        event["sequence_number"] = number
    found = check(document).findings
    assert (found[0].code, found[0].path) == (Code.DELTA_BEFORE_START, "/events/2/type")


def test_a_built_in_items_copy_without_its_input_names_what_it_lacks() -> None:
    document = load(SHELL)
    del document["events"][14]["item"]["action"]
    found = [(f.code, f.path, f.message) for f in check(document).findings]
    assert (Code.ARGUMENT_MISMATCH, "/events/14/item", "the shell_call item has no action") in (
        found
    )


def test_a_call_the_final_response_leaves_out_is_named_by_its_id_clipped_at_64() -> None:
    long_id = "call_" + "x" * 70
    document = json.loads(SHELL.read_text().replace("call_Sh3ll0Cmd", long_id))
    document["events"][15]["response"]["output"] = []
    [finding] = check(document).findings
    assert finding.message == (
        "response.completed's output has no shell_call at output_index 0, which the stream "
        f"gave ({long_id[:64]!r})"
    )


@pytest.mark.parametrize(
    ("kind", "name"),
    [
        ("text_editor_20250124", "str_replace_editor"),
        ("text_editor_20250728", "str_replace_based_edit_tool"),
        ("bash_20250124", "bash"),
    ],
)
def test_an_anthropic_tool_declared_without_a_name_takes_the_one_anthropic_gives_it(
    kind: str, name: str
) -> None:
    assert list(tool_schemas_of([{"type": kind}], "anthropic")) == [name]
