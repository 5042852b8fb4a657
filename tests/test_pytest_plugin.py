"""The ``callgate`` pytest plugin, run in throwaway projects by pytest's own ``pytester``."""

from __future__ import annotations

import json
import shutil
from importlib.metadata import entry_points
from pathlib import Path

import pytest

import callgate.cli.replay.outcome  # noqa: F401
from tests.conftest import CONFORMANCE

# (callgate.cli.replay.outcome is imported above only to load the engine once: pytester's
# in-process runs forget the modules each run imports, and loading the engine each time is slow.)

pytest_plugins = ["pytester"]

GOOD = ["openai/valid_fragmented.json", "anthropic/reused_index_new_id.json"]


def plugin() -> list[str]:
    """``-p callgate.cli.pytest_plugin`` until the ``pytest11`` entry point is installed; after
    that pytest loads the plugin by itself and a second ``-p`` would register it twice.
    Hypothesis's plugin is left out: it has nothing to do here and costs a second per in-process
    run."""
    installed = entry_points(group="pytest11", name="callgate")
    ours = [] if installed else ["-p", "callgate.cli.pytest_plugin"]
    return [*ours, "-p", "no:hypothesispytest"]


def failure_lines(output: str) -> list[str]:
    """The lines a failing fixture printed under its ``___ callgate fixture NAME ___`` header."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if "_ callgate fixture " in line) + 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith(("=", "_")))
    return lines[start:end]


def add_fixture(folder: Path, name: str, expect: dict[str, object] | None = None) -> Path:
    """Copy a conformance fixture to ``folder/name``, optionally with another ``expect`` block."""
    target = folder / name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(CONFORMANCE / name, target)
    if expect is not None:
        envelope = json.loads(target.read_text(encoding="utf-8"))
        target.write_text(json.dumps({**envelope, "expect": expect}), encoding="utf-8")
    return target


@pytest.fixture
def fixtures(pytester: pytest.Pytester) -> Path:
    """Two fixtures whose expectation holds and one pinning a code that does not occur."""
    folder = pytester.path / "fixtures"
    for name in GOOD:
        add_fixture(folder, name)
    add_fixture(
        folder,
        "openai/truncated.json",
        {"status": "fail", "codes": ["missing_terminal", "identity_collision"]},
    )
    return folder


def test_two_holding_fixtures_pass_and_a_wrong_pinned_code_fails_with_the_problem(
    pytester: pytest.Pytester, fixtures: Path
) -> None:
    result = pytester.runpytest(*plugin(), "--callgate", "fixtures")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ callgate fixture openai/truncated.json _*",
            "codes: expected but did not occur: identity_collision",
            "*= short test summary info =*",
        ]
    )


def test_a_failure_shows_only_the_problem_lines_without_a_traceback(
    pytester: pytest.Pytester, fixtures: Path
) -> None:
    output = pytester.runpytest(*plugin(), "--callgate", "fixtures").stdout.str()
    assert failure_lines(output) == ["codes: expected but did not occur: identity_collision"]
    assert "FixtureFailure" not in output and "def runtest" not in output


def test_each_fixture_is_an_item_named_by_its_path_relative_to_the_folder(
    pytester: pytest.Pytester, fixtures: Path
) -> None:
    result = pytester.runpytest(*plugin(), "--callgate", "fixtures", "--collect-only", "-q")
    assert result.stdout.lines[:3] == [
        "fixtures/anthropic/reused_index_new_id.json::anthropic/reused_index_new_id.json",
        "fixtures/openai/truncated.json::openai/truncated.json",
        "fixtures/openai/valid_fragmented.json::openai/valid_fragmented.json",
    ]


def test_a_corrupt_file_fails_with_its_one_line_message(pytester: pytest.Pytester) -> None:
    folder = pytester.mkdir("fixtures")
    add_fixture(folder, GOOD[0])
    corrupt = folder / "corrupt.json"
    corrupt.write_text('{"profile": "openai", "chunks": [', encoding="utf-8")
    result = pytester.runpytest(*plugin(), "--callgate", "fixtures")
    result.assert_outcomes(passed=1, failed=1)
    assert failure_lines(result.stdout.str()) == [
        f"{corrupt}: not strict JSON (invalid_arguments_json): Expecting value"
    ]


def test_a_file_that_is_not_an_envelope_fails_with_its_one_line_message(
    pytester: pytest.Pytester,
) -> None:
    (pytester.path / "not_an_envelope.json").write_text('{"profile": "nope"}', encoding="utf-8")
    result = pytester.runpytest(*plugin(), "--callgate", "not_an_envelope.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"{pytester.path / 'not_an_envelope.json'}: *"])


def test_a_folder_outside_the_test_folders_and_the_rootdir_is_collected(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    add_fixture(elsewhere, GOOD[0])
    pytester.makeini("[pytest]\ntestpaths = tests\n")
    pytester.mkdir("tests").joinpath("test_app.py").write_text("def test_app():\n    pass\n")
    result = pytester.runpytest(*plugin(), "--callgate", str(elsewhere), "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*::openai/valid_fragmented.json PASSED*"])


def test_minus_m_callgate_runs_only_the_fixtures(pytester: pytest.Pytester, fixtures: Path) -> None:
    pytester.makepyfile(test_app="def test_app():\n    pass\n")
    pytester.runpytest(*plugin(), "--callgate", "fixtures").assert_outcomes(passed=3, failed=1)
    pytester.runpytest(*plugin(), "--callgate", "fixtures", "-m", "callgate").assert_outcomes(
        passed=2, failed=1, deselected=1
    )


def test_one_fixture_reruns_by_its_node_id(pytester: pytest.Pytester, fixtures: Path) -> None:
    node = "fixtures/openai/truncated.json::openai/truncated.json"
    result = pytester.runpytest(*plugin(), "--callgate", "fixtures", node)
    result.assert_outcomes(failed=1)


def test_json_outside_the_callgate_paths_and_hidden_folders_are_not_collected(
    pytester: pytest.Pytester, fixtures: Path
) -> None:
    add_fixture(pytester.path / "other", GOOD[0])
    add_fixture(fixtures / ".cache", GOOD[0])
    pytester.runpytest(*plugin(), "--callgate", "fixtures").assert_outcomes(passed=2, failed=1)
    assert pytester.runpytest(*plugin()).ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_a_missing_path_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*plugin(), "--callgate", "nowhere")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--callgate: no such file or folder: *nowhere"])


# -- callgate_tape's settings (the tapes themselves: tests/test_tape.py) -------------------------

TAPE_TEST = """
import pytest

def test_mode(callgate_tape):
    print("MODE", callgate_tape.mode.value, callgate_tape.recording)

@pytest.mark.callgate_tape(redaction="loose")
def test_bad_marker(callgate_tape):
    pass

@pytest.mark.callgate_tape(mutate="scramble")
def test_bad_mutation(callgate_tape):
    pass

def test_mutate_while_recording(callgate_tape):
    callgate_tape.mutate("truncate")
"""


def test_the_record_mode_option_wins_over_the_environment_and_replay_is_the_default(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_app=TAPE_TEST)
    monkeypatch.delenv("CALLGATE_RECORD_MODE", raising=False)
    default = pytester.runpytest_inprocess(*plugin(), "-s", "-k", "test_mode")
    monkeypatch.setenv("CALLGATE_RECORD_MODE", "all")
    from_environment = pytester.runpytest_inprocess(*plugin(), "-s", "-k", "test_mode")
    from_option = pytester.runpytest_inprocess(
        *plugin(), "-s", "-k", "test_mode", "--callgate-record-mode=none"
    )
    assert [
        next(line.split(" ", 1)[1] for line in run.outlines if " MODE " in line)
        for run in (default, from_environment, from_option)
    ] == ["MODE none False", "MODE all True", "MODE none False"]


def test_a_bad_record_mode_upstream_or_marker_is_one_usage_line(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_app=TAPE_TEST)
    monkeypatch.setenv("CALLGATE_RECORD_MODE", "sometimes")
    result = pytester.runpytest_inprocess(*plugin())
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        "ERROR: CALLGATE_RECORD_MODE: 'sometimes' is not one of none, once, new_episodes, all"
        in result.errlines
    )
    monkeypatch.delenv("CALLGATE_RECORD_MODE")
    for upstream, line in [
        ("openai", "--callgate-upstream takes NAME=http(s)://..., not 'openai'"),
        (
            "openai=http://127.0.0.1:9101/v1",
            "--callgate-upstream openai=http://127.0.0.1:9101/v1: requests already start with "
            "/v1 (they would go to /v1/v1/...); give the URL without it: http://127.0.0.1:9101",
        ),
        (
            "bedrock=http://127.0.0.1:9101",
            "--callgate-upstream: no route 'bedrock' (one of openai, anthropic, mistral, gemini, "
            "ollama)",
        ),
    ]:
        result = pytester.runpytest_inprocess(*plugin(), "--callgate-upstream", upstream)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert f"ERROR: {line}" in result.errlines
    result = pytester.runpytest_inprocess(*plugin(), "-k", "test_bad_marker")
    result.assert_outcomes(errors=1)
    assert any(
        "callgate_tape redaction is replay or strict, not 'loose'" in line
        for line in result.outlines
    )
    result = pytester.runpytest_inprocess(*plugin(), "-k", "test_bad_mutation")
    result.assert_outcomes(errors=1)
    assert any(
        "callgate_tape mutate: no mutation 'scramble' (one of truncate, " in line
        for line in result.outlines
    )
    result = pytester.runpytest_inprocess(
        *plugin(), "-k", "test_mutate_while_recording", "--callgate-record-mode=once"
    )
    result.assert_outcomes(failed=1)
    folder = pytester.path / "tapes" / "test_app" / "test_mutate_while_recording"
    assert any(
        f"tape test_app.py::test_mutate_while_recording: no recorded tape at {folder} to mutate "
        "(mutate never records): record it first" in line
        for line in result.outlines
    ), result.outlines


FAULTS_TEST = """
import pytest

@pytest.mark.callgate_tape(name="test_agent/test_weather", mutate="truncate", allow_unused=True)
def test_fault(callgate_tape):
    print("FAULTED", callgate_tape.folder, callgate_tape.recording)

@pytest.mark.callgate_tape(name="test_agent/test_wether")
def test_typo(callgate_tape):
    callgate_tape.mutate("truncate")

@pytest.mark.callgate_tape(name="test_agent/test_wether", mutate="truncate")
def test_typo_in_the_marker(callgate_tape):
    pass
"""


@pytest.mark.parametrize("mode", ["none", "once", "new_episodes", "all"])
def test_fault_tests_in_their_own_module_mutate_another_modules_tape_in_every_mode(
    pytester: pytest.Pytester, mode: str
) -> None:
    """``name="test_agent/test_weather"`` in ``test_faults.py`` is the tape ``test_agent.py``
    recorded; a misspelt one fails naming where it looked, whatever the record mode."""
    from callgate.cli.tape import store
    from callgate.reassemble import check

    tapes = pytester.path / "tapes"
    envelope = json.loads((CONFORMANCE / GOOD[0]).read_text(encoding="utf-8"))
    shape = {"route": "openai", "method": "POST", "path": "/v1/chat/completions"}
    store.write(
        tapes / "test_agent" / "test_weather", 1, shape, envelope=envelope, report=check(envelope)
    )
    pytester.makepyfile(test_faults=FAULTS_TEST)
    result = pytester.runpytest_inprocess(*plugin(), "-s", f"--callgate-record-mode={mode}")
    result.assert_outcomes(passed=1, failed=1, errors=1)  # the marker's fails the test's setup
    faulted = f"FAULTED {tapes / 'test_agent' / 'test_weather'} False"
    assert any(faulted in line for line in result.outlines), result.outlines
    for test in ("test_typo", "test_typo_in_the_marker"):
        assert any(
            line.startswith(
                f"tape test_faults.py::{test}: no recorded tape at "
                f"{tapes / 'test_agent' / 'test_wether'} to mutate (mutate never records)"
            )
            for line in result.outlines
        ), result.outlines
    assert sorted(p.name for p in (tapes / "test_agent" / "test_weather").iterdir()) == ["001.json"]


AGENT_FAULT_TEST = """
import json, urllib.error, urllib.request
import pytest

def ask(callgate_tape, messages):
    request = urllib.request.Request(
        callgate_tape.base_url("openai") + "/chat/completions",
        data=json.dumps({"model": "m", "messages": messages}).encode(),
        method="POST",
    )
    try:
        with urllib.request.urlopen(request) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())["error"]["code"]

@pytest.mark.callgate_tape(name="test_agent/test_weather", mutate="reuse_slot")
def test_the_agent_stops_after_the_merged_call(callgate_tape):
    assert ask(callgate_tape, [{"role": "user"}])[0] == 200
    # One tool result where two were recorded: not on the tape, no failure.
    user, assistant, tool = {"role": "user"}, {"role": "assistant"}, {"role": "tool"}
    assert ask(callgate_tape, [user, assistant, tool]) == (400, "callgate")
    print("FAULTED", callgate_tape.faulted)

@pytest.mark.callgate_tape(name="test_agent/test_weather", mutate="reuse_slot")
def test_the_fault_is_never_asked_for(callgate_tape):
    print("FAULTED", callgate_tape.faulted)
"""


def test_a_fault_test_passes_on_its_own_assertions_whatever_the_app_asks_after_the_fault(
    pytester: pytest.Pytester,
) -> None:
    """No ``allow_unused``: the answer the agent never asked for, and the request the tape
    cannot hold, came after the fault; a fault never served leaves the tape unused, a failure."""
    from callgate.cli.tape import store
    from callgate.reassemble import check

    folder = pytester.path / "tapes" / "test_agent" / "test_weather"
    chat = {"route": "openai", "method": "POST", "path": "/v1/chat/completions", "model": "m"}
    for number, (name, roles) in enumerate(
        [
            ("valid_parallel_interleaved", {"user": 1}),
            ("text_only", {"assistant": 1, "tool": 2, "user": 1}),
        ],
        1,
    ):
        envelope = json.loads((CONFORMANCE / "openai" / f"{name}.json").read_text())
        shape = {**chat, "messages_by_role": roles}
        store.write(folder, number, shape, envelope=envelope, report=check(envelope))
    pytester.makepyfile(test_faults=AGENT_FAULT_TEST)
    result = pytester.runpytest_inprocess(*plugin(), "-s")
    result.assert_outcomes(passed=2, errors=1)  # the unused tape fails the teardown
    output = result.stdout.str()
    assert (
        "FAULTED Faulted(kind='reuse_slot', served=True, turn=0, file='001.json', "
        "requests_after=1, refused_after=1)\n"
    ) in output
    assert (
        "FAULTED Faulted(kind='reuse_slot', served=False, turn=None, file=None, "
        "requests_after=0, refused_after=0)\n"
    ) in output
    assert (
        f"\ntape test_faults.py::test_the_fault_is_never_asked_for ({folder}): 2 recorded "
        "exchange(s) were not requested, from 001.json"
    ) in output
