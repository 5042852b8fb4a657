"""``callgate check`` over one file and over a set of recorded turns: the exit code and the text
report's verdict, where text-only turns (``not_applicable``) sit beside tool-call turns."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from callgate.cli.app import app
from callgate.cli.replay.outcome import judge
from callgate.cli.replay.reports.html_report import render_html
from tests.conftest import CONFORMANCE

runner = CliRunner()
PASSES = CONFORMANCE / "openai" / "valid_fragmented.json"
BLOCKS = CONFORMANCE / "openai" / "reused_index_new_id.json"
TEXT = CONFORMANCE / "openai" / "text_only.json"
OTHER_TEXT = CONFORMANCE / "anthropic" / "text_only.json"
BROKEN = CONFORMANCE / "gemini" / "prompt_blocked.json"  # invalid: no call, and a broken stream


def check(*args: str | Path) -> tuple[int, str, str]:
    result = runner.invoke(app, ["check", *map(str, args)])
    return result.exit_code, result.stdout, result.stderr


def statuses(out: str) -> list[str]:
    return [json.loads(line)["status"] for line in out.splitlines()]


def folder_of(tmp_path: Path, *fixtures: Path) -> Path:
    """A folder of recorded turns: a copy of each fixture, numbered in the given order."""
    folder = tmp_path / "recorded"
    folder.mkdir()
    for number, fixture in enumerate(fixtures):
        shutil.copy(fixture, folder / f"{number:02d}-{fixture.parent.name}-{fixture.name}")
    return folder


def test_the_text_report_of_a_text_only_turn_says_no_tool_call_and_not_blocked() -> None:
    code, out, _ = check("--report", "text", TEXT)
    assert code == 2
    assert out.splitlines()[0] == f"{TEXT}  openai  not_applicable (no tool call)"
    assert "BLOCKED" not in out


def test_the_text_report_keeps_executable_and_blocked_for_tool_turns() -> None:
    code, out, _ = check("--report", "text", PASSES, BLOCKS, BROKEN)
    headers = [line for line in out.splitlines() if line.startswith(str(CONFORMANCE))]
    assert code == 1
    assert [header.rsplit("  ", 1)[1] for header in headers] == [
        "pass (EXECUTABLE)",
        "fail (BLOCKED)",
        "invalid (BLOCKED)",
    ]


def test_one_text_only_file_keeps_exit_2_not_applicable() -> None:
    code, out, _ = check(TEXT)
    assert (code, statuses(out)) == (2, ["not_applicable"])


def test_a_folder_holding_one_text_only_turn_is_judged_and_exits_2(tmp_path: Path) -> None:
    code, out, err = check(folder_of(tmp_path, TEXT))
    assert (code, statuses(out), err) == (2, ["not_applicable"], "")


def test_a_folder_of_passing_and_text_turns_exits_0(tmp_path: Path) -> None:
    code, out, err = check(folder_of(tmp_path, PASSES, TEXT, OTHER_TEXT))
    assert (code, err) == (0, "")
    assert statuses(out) == ["pass", "not_applicable", "not_applicable"]


def test_several_paths_of_passing_and_text_turns_exit_0() -> None:
    code, out, _ = check(TEXT, PASSES)
    assert (code, statuses(out)) == (0, ["not_applicable", "pass"])


def test_several_files_exit_1_when_a_turn_blocked(tmp_path: Path) -> None:
    code, out, _ = check(folder_of(tmp_path, PASSES, TEXT, BLOCKS))
    assert (code, statuses(out)) == (1, ["pass", "not_applicable", "fail"])


def test_an_invalid_turn_among_several_counts_as_blocked() -> None:
    code, out, _ = check(PASSES, TEXT, BROKEN)
    assert (code, statuses(out)) == (1, ["pass", "not_applicable", "invalid"])


def test_several_files_exit_2_when_no_turn_was_applicable(tmp_path: Path) -> None:
    code, out, _ = check(folder_of(tmp_path, TEXT, OTHER_TEXT))
    assert (code, statuses(out)) == (2, ["not_applicable", "not_applicable"])


def test_several_files_exit_2_when_one_could_not_be_read(tmp_path: Path) -> None:
    folder = folder_of(tmp_path, PASSES, BLOCKS)
    (folder / "99-broken.json").write_text("{")
    code, out, err = check(folder)
    assert code == 2
    assert statuses(out) == ["pass", "fail"]
    assert err.startswith(f"callgate: {folder / '99-broken.json'}: not strict JSON")


def test_an_empty_folder_is_one_line_and_exit_2(tmp_path: Path) -> None:
    code, out, err = check(tmp_path)
    assert (code, out) == (2, "")
    assert err == f"callgate: {tmp_path}: no *.json fixture in this folder\n"


def test_paths_keep_their_order_and_a_folder_expands_in_place(tmp_path: Path) -> None:
    folder = folder_of(tmp_path, TEXT, PASSES)
    code, out, _ = check(BLOCKS, folder, PASSES)
    assert code == 1
    assert [json.loads(line)["fixture"] for line in out.splitlines()] == [
        str(BLOCKS),
        str(folder / f"00-openai-{TEXT.name}"),
        str(folder / f"01-openai-{PASSES.name}"),
        str(PASSES),
    ]


def test_the_replay_page_says_a_text_only_turn_had_no_tool_call() -> None:
    page = render_html([judge(TEXT), judge(BLOCKS)])
    assert "<dd>not_applicable (no tool call)</dd>" in page
    assert "<dd>fail (blocked)</dd>" in page and "not_applicable (blocked)" not in page
