"""What a repository's CI runs: the GitHub Action at the root (``action.yml``) and the
pre-commit hooks (``.pre-commit-hooks.yaml``), each run as its runner runs it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import CONFORMANCE, ROOT
from tests.scan_canaries import OPENAI_KEY, vcr_plain
from tests.test_packaging import copy_checkout, ok, run
from tests.test_replay import sarif_validator

ACTION = ROOT / "action.yml"
_EXPRESSION = re.compile(r"\$\{\{\s*(inputs|steps)\.([\w-]+)(?:\.outputs\.([\w-]+))?\s*\}\}")


def action() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    return document


def test_the_action_takes_path_report_python_version_and_version() -> None:
    document = action()
    inputs = document["inputs"]
    assert list(inputs) == ["path", "report", "require-pass", "python-version", "version"]
    assert inputs["path"]["required"] is True
    assert (inputs["report"]["default"], inputs["version"]["default"]) == ("sarif", "")
    assert document["runs"]["using"] == "composite"
    uses = [step["uses"] for step in document["runs"]["steps"] if "uses" in step]
    assert uses == [
        "actions/setup-python@v5",
        "github/codeql-action/upload-sarif@v3",
        "github/codeql-action/upload-sarif@v3",
    ]
    install = next(s for s in document["runs"]["steps"] if s.get("id") == "install")
    assert "pip install" in install["run"] and "${{ inputs.version }}" in str(install["env"])


def test_the_docs_github_actions_step_uses_this_action_with_its_inputs() -> None:
    replay = (ROOT / "docs" / "replay.md").read_text(encoding="utf-8")
    section = replay[replay.index("GitHub Actions, with the action at the root") :]
    start = section.index("```yaml\n") + len("```yaml\n")
    checkout, step = yaml.safe_load(section[start : section.index("\n```", start)])
    assert checkout == {"uses": "actions/checkout@v4"}
    assert step["uses"] == "OWNER/callgate@v0.1.0"
    assert step["with"] == {"path": "tests/fixtures", "report": "sarif"}
    assert set(step["with"]) <= set(action()["inputs"])


@pytest.mark.parametrize(
    ("version", "requirement"), [("", "callgate"), ("0.3.1", "callgate==0.3.1")]
)
def test_the_install_step_asks_pip_for_callgate_or_the_given_version(
    tmp_path: Path, version: str, requirement: str
) -> None:
    """The install step with a ``python`` on PATH that writes down what it was asked to run:
    the one part of the action that needs PyPI."""
    install = next(s for s in action()["runs"]["steps"] if s.get("id") == "install")
    asked = tmp_path / "asked"
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{asked}"\n')
    python.chmod(0o755)
    env = {"PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}", "CALLGATE_VERSION": version}
    assert install["env"] == {"CALLGATE_VERSION": "${{ inputs.version }}"}
    subprocess.run(["bash", "-e", "-c", install["run"]], cwd=tmp_path, env=env, check=True)
    assert asked.read_text().splitlines() == [
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--quiet",
        requirement,
    ]


def run_action(workdir: Path, inputs: dict[str, str]) -> dict[str, dict[str, str]]:
    """The action's shell steps run as a runner runs them: bash, in ``workdir``, each step's
    ``env`` with its expressions filled in from ``inputs`` and the outputs of the steps before,
    ``GITHUB_OUTPUT`` a file. The install step is left out: ``callgate`` on PATH is this
    checkout's (the step itself installs from PyPI). The upload steps are GitHub's own."""
    document = action()
    values = {name: spec.get("default", "") for name, spec in document["inputs"].items()}
    values.update(inputs)
    bin_folder = workdir.parent / "bin"
    bin_folder.mkdir(exist_ok=True)
    script = bin_folder / "callgate"
    script.write_text(
        f'#!/bin/sh\nexec "{sys.executable}" -c '
        "'import sys; from callgate.cli.app import main; sys.argv[0] = \"callgate\"; main()' "
        '"$@"\n'
    )
    script.chmod(0o755)
    outputs: dict[str, dict[str, str]] = {}
    for step in document["runs"]["steps"]:
        if "run" not in step or step.get("id") == "install":
            continue
        output_file = workdir.parent / f"output-{step.get('id', 'step')}"
        output_file.write_text("")
        env = {
            **os.environ,
            "PATH": f"{bin_folder}{os.pathsep}{os.environ['PATH']}",
            "PYTHONPATH": str(ROOT),
            "GITHUB_OUTPUT": str(output_file),
        }
        for name, value in step.get("env", {}).items():
            env[name] = _EXPRESSION.sub(lambda m: _value(m, values, outputs), str(value))
        done = subprocess.run(
            ["bash", "-e", "-c", step["run"]], cwd=workdir, env=env, capture_output=True, text=True
        )
        written = dict(line.split("=", 1) for line in output_file.read_text().splitlines())
        written |= {"step_exit": str(done.returncode), "log": done.stdout + done.stderr}
        outputs[step.get("id", step["name"])] = written
    return outputs


def _value(match: re.Match[str], inputs: dict[str, str], outputs: dict[str, dict[str, str]]) -> str:
    source, name, output = match.groups()
    return inputs[name] if source == "inputs" else outputs.get(name, {}).get(output or "", "")


def fixtures_folder(workdir: Path) -> Path:
    folder = workdir / "tests" / "fixtures"
    folder.mkdir(parents=True)
    for name in ("valid_fragmented.json", "reused_index_new_id.json"):
        shutil.copy(CONFORMANCE / "openai" / name, folder / name)
    return folder


def test_require_pass_fails_the_replay_on_a_fixture_pinned_as_blocked(tmp_path: Path) -> None:
    workdir = tmp_path / "repo"
    workdir.mkdir()
    fixtures_folder(workdir)  # reused_index_new_id holds as blocked
    outputs = run_action(workdir, {"path": "tests/fixtures", "require-pass": "true"})
    assert outputs["replay"]["exit"] == "1"
    assert (
        "reused_index_new_id.json: pinned as blocked (identity_collision)"
        in (outputs["replay"]["log"])
    )


def test_the_actions_steps_replay_scan_and_write_valid_sarif(tmp_path: Path) -> None:
    workdir = tmp_path / "repo"
    workdir.mkdir()
    fixtures_folder(workdir)
    outputs = run_action(workdir, {"path": "tests/fixtures"})
    assert (outputs["replay"]["exit"], outputs["scan"]["exit"]) == ("0", "0")
    assert outputs["Verdict"]["step_exit"] == "0"
    for report in ("callgate-reports/replay.sarif", "callgate-reports/scan.sarif"):
        log = json.loads((workdir / report).read_text(encoding="utf-8"))
        assert [error.message for error in sarif_validator().iter_errors(log)] == []
    scan_log = json.loads((workdir / "callgate-reports/scan.sarif").read_text())
    assert scan_log["runs"][0]["results"] == []


def test_the_action_fails_on_a_leaking_cassette_and_its_sarif_names_it(tmp_path: Path) -> None:
    workdir = tmp_path / "repo"
    workdir.mkdir()
    fixtures_folder(workdir)
    # One folder of recordings: replay judges the fixtures in it, scan reads everything.
    (workdir / "tests" / "fixtures" / "cassettes").mkdir()
    vcr_plain(workdir / "tests" / "fixtures" / "cassettes")
    outputs = run_action(workdir, {"path": "tests/fixtures", "report": "junit"})
    assert (outputs["replay"]["exit"], outputs["scan"]["exit"]) == ("0", "1")
    assert outputs["Verdict"]["step_exit"] == "1"
    assert (workdir / "callgate-reports/replay.xml").is_file()
    text = (workdir / "callgate-reports/scan.sarif").read_text(encoding="utf-8")
    log = json.loads(text)
    assert [error.message for error in sarif_validator().iter_errors(log)] == []
    results = log["runs"][0]["results"]
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
    assert (len(results), uris) == (13, {"tests/fixtures/cassettes/vcr_plain.yaml"})
    assert OPENAI_KEY not in text


# -- pre-commit --------------------------------------------------------------------------------

CLEAN_CASSETTE = {
    "interactions": [
        {
            "request": {
                "method": "POST",
                "uri": "https://api.example.test/v1/chat/completions",
                "body": json.dumps({"model": "gpt-4o-mini", "stream": True}),
                "headers": {"content-type": ["application/json"]},
            },
            "response": {
                "status": {"code": 200, "message": "OK"},
                "headers": {"content-type": ["text/event-stream"]},
                "body": {"string": "data: [DONE]\n\n"},
            },
        }
    ],
    "version": 1,
}


def throwaway_clone(folder: Path) -> Path:
    """This checkout's files committed in a repository of their own: ``try-repo`` clones HEAD,
    which in a working copy under change is not what is being tested."""
    copy_checkout(folder)
    git(folder, "init", "-q")
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", "callgate")
    return folder


def git(folder: Path, *args: str) -> str:
    return ok(run("git", "-c", "user.name=t", "-c", "user.email=t@example.test", *args, cwd=folder))


@pytest.mark.slow
def test_pre_commit_try_repo_refuses_a_leaking_cassette_and_passes_a_clean_one(
    tmp_path: Path,
) -> None:
    source = throwaway_clone(tmp_path / "callgate")
    app = tmp_path / "app"
    (app / "tests" / "cassettes").mkdir(parents=True)
    git(app, "init", "-q")
    # The hooks' environment is installed from the clone, as a user's is from the release.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PRE_COMMIT_HOME"] = str(tmp_path / "pre-commit-home")
    pre_commit = Path(sys.executable).with_name("pre-commit")

    leaking, _ = vcr_plain(app / "tests" / "cassettes")
    git(app, "add", "-A")
    refused = run(pre_commit, "try-repo", source, cwd=app, env=env)
    log = refused.stdout + refused.stderr
    assert refused.returncode == 1, log
    assert (
        "tests/cassettes/vcr_plain.yaml:interaction 1 request.uri: credential (bearer-token)" in log
    )
    assert OPENAI_KEY not in log

    git(app, "rm", "-q", "--cached", str(leaking.relative_to(app)))
    leaking.unlink()
    (app / "tests" / "cassettes" / "clean.yaml").write_text(yaml.safe_dump(CLEAN_CASSETTE))
    shutil.copy(CONFORMANCE / "openai" / "valid_fragmented.json", app / "tests" / "fixture.json")
    git(app, "add", "-A")
    passed = run(pre_commit, "try-repo", source, cwd=app, env=env)
    log = passed.stdout + passed.stderr
    assert passed.returncode == 0, log
    assert re.search(r"callgate scan .*Passed", log) and re.search(r"callgate replay .*Passed", log)
    git(app, "commit", "-q", "-m", "a clean cassette and a fixture")
