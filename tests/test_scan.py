"""``callgate scan`` as a repository's CI meets it: canaries planted in every recording format
are each found, named by file and location and never printed; callgate's own fixtures and the
redacted shared corpus hold nothing."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from callgate.cli.app import app
from callgate.reassemble.profiles import PROFILES
from callgate.redact import redact_envelope
from callgate.redact.mask import mask_text
from callgate.redact.scanning import PATTERN_DOCS, Kind
from tests.conftest import CONFORMANCE, ROOT, load, require_corpus
from tests.scan_canaries import SECRETS, plant
from tests.test_replay import sarif_validator

runner = CliRunner()


def scan(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["scan", *args])
    return result.exit_code, result.stdout, result.stderr


def test_every_canary_is_found_by_file_and_location_and_never_printed(tmp_path: Path) -> None:
    paths, expected = plant(tmp_path)
    code, out, err = scan(*map(str, paths))
    assert (code, err) == (1, "")
    assert sorted(out.splitlines()) == sorted(expected)
    assert [secret for secret in SECRETS if secret in out] == []


def test_detect_secrets_on_the_same_files_finds_fewer(tmp_path: Path) -> None:
    """The general scanner reads a recording as text: what is compressed, base64-encoded or in
    a binary flow file is invisible to it. Both counts are printed (pytest -s)."""
    paths, expected = plant(tmp_path)
    credentials = sorted(line for line in expected if ": credential (" in line)
    detect_secrets = Path(sys.executable).with_name("detect-secrets")
    found = subprocess.run(
        [str(detect_secrets), "scan", "--all-files", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    results = json.loads(found.stdout)["results"]
    theirs = sum(len(items) for items in results.values())
    code, out, _ = scan("--kind", "credential", *map(str, paths))
    ours = len(out.splitlines())
    print(
        f"\ncredential canaries planted: {len(credentials)} in {len(paths)} recordings; "
        f"callgate scan: {ours}; detect-secrets: {theirs} in {len(results)} files"
    )
    assert (code, ours) == (1, len(credentials))
    assert theirs < ours


def test_the_sarif_log_is_valid_2_1_0_and_holds_no_canary(tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    _, expected = plant(tmp_path / "repo")
    (tmp_path / "repo" / "notes.txt").write_text("nothing recorded here")
    report = tmp_path / "scan.sarif"
    code, out, _ = scan(str(tmp_path / "repo"), "--report", "sarif", "--output", str(report))
    assert code == 1
    assert f"skipped {tmp_path / 'repo' / 'notes.txt'}: not a recording" in out.splitlines()
    text = report.read_text(encoding="utf-8")
    log = json.loads(text)
    assert [error.message for error in sarif_validator().iter_errors(log)] == []
    (run,) = log["runs"]
    assert len(run["results"]) == len(expected)
    assert {r["ruleId"] for r in run["results"]} >= {"prompt/tool-result", "output/arguments"}
    assert run["invocations"][0]["executionSuccessful"] is True
    assert [secret for secret in SECRETS if secret in text] == []


def test_kind_chooses_what_is_reported(tmp_path: Path) -> None:
    paths, expected = plant(tmp_path)
    code, out, _ = scan("--kind", "prompt", "--kind", "output", *map(str, paths))
    wanted = {line for line in expected if ": credential (" not in line}
    assert (code, set(out.splitlines())) == (1, wanted)


def test_callgates_own_fixtures_hold_nothing() -> None:
    assert scan(str(ROOT / "fixtures")) == (0, "", "")


def test_a_file_that_is_no_recording_is_named_once_and_passes(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# cassettes\n")
    (tmp_path / "settings.yaml").write_text("retries: 3\n")
    (tmp_path / "package.json").write_text('{"name": "app", "prompt": "shown at login"}')
    (tmp_path / "tsconfig.json").write_text('{\n  // comments\n  "strict": true\n}\n')
    (tmp_path / "deployment.yaml").write_text("name: {{ .Values.name }}\n  bad: [\n")
    code, out, err = scan(str(tmp_path), str(tmp_path / "README.md"))
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"skipped {tmp_path / 'README.md'}: not a recording",
        f"skipped {tmp_path / 'deployment.yaml'}: not a recording",
        f"skipped {tmp_path / 'package.json'}: not a recording",
        f"skipped {tmp_path / 'settings.yaml'}: not a recording",
        f"skipped {tmp_path / 'tsconfig.json'}: not a recording",
    ]


def test_a_request_body_names_its_prompt_fields_and_tool_results(tmp_path: Path) -> None:
    request = {
        "model": "m",
        "instructions": "Be brief.",
        "input": [
            {"role": "user", "content": "hi"},
            {"type": "function_call_output", "call_id": "c1", "output": "42"},
        ],
    }
    gemini = {"contents": [{"role": "user", "parts": [{"functionResponse": {"name": "f"}}]}]}
    (tmp_path / "responses.request.json").write_text(json.dumps(request))
    (tmp_path / "gemini.request.json").write_text(json.dumps(gemini))
    code, out, _ = scan(str(tmp_path))
    assert (code, out.splitlines()) == (
        1,
        [
            f"{tmp_path / 'gemini.request.json'}:/contents: prompt (contents)",
            f"{tmp_path / 'gemini.request.json'}:/contents/0/parts/0: prompt (tool-result)",
            f"{tmp_path / 'responses.request.json'}:/input: prompt (input)",
            f"{tmp_path / 'responses.request.json'}:/input/1: prompt (tool-result)",
            f"{tmp_path / 'responses.request.json'}:/instructions: prompt (instructions)",
        ],
    )


def test_an_unreadable_recording_is_exit_2_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").write_text("interactions: [\n")
    (tmp_path / "cut.json").write_text('{"profile": "openai", "chunks": [')
    paths = [tmp_path / "broken.yaml", tmp_path / "cut.json", tmp_path / "missing.har"]
    code, out, err = scan(*map(str, paths))
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        f"callgate: {paths[0]}: not a VCR cassette: did not find expected node "
        "content at line 2 column 1",
        f"callgate: {paths[1]}: not JSON: Expecting value at line 1 column 34 (the file ends "
        "there: truncated?)",
        f"callgate: {paths[2]}: cannot read: No such file or directory",
    ]


def test_text_a_fixture_says_it_masked_but_holds_is_output(tmp_path: Path) -> None:
    envelope = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    envelope["chunks"].insert(0, {"choices": [{"index": 0, "delta": {"content": "Sure."}}]})
    redacted = redact_envelope(envelope).envelope
    assert scan_envelope(redacted, tmp_path) == (0, "", "")
    unmasked = copy.deepcopy(redacted)
    unmasked["chunks"][0]["choices"][0]["delta"]["content"] = "Sure."
    path = tmp_path / "fixture.json"
    assert scan_envelope(unmasked, tmp_path) == (
        1,
        f"{path}:/chunks/0/choices/0/delta/content: output (text)\n",
        "",
    )


def test_a_tape_record_that_says_it_masked_its_text_but_holds_it_is_output(
    tmp_path: Path,
) -> None:
    record = {
        "tape_record": 1,
        "request": {"route": "openai", "method": "GET", "path": "/v1/models"},
        "response": {"status": 200, "content_type": "text/plain", "text": "Sure, here it is."},
        "redaction": {"text": "mask"},
    }
    path = tmp_path / "001.exchange.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    assert scan(str(path)) == (1, f"{path}:/response/text: output (text)\n", "")
    record["response"]["text"] = mask_text("Sure, here it is.")  # masked as the record says
    path.write_text(json.dumps(record), encoding="utf-8")
    assert scan(str(path)) == (0, "", "")


def scan_envelope(envelope: object, folder: Path) -> tuple[int, str, str]:
    path = folder / "fixture.json"
    path.write_text(json.dumps(envelope), encoding="utf-8")
    return scan(str(path))


def test_every_pattern_has_a_line_of_documentation() -> None:
    docs = (ROOT / "docs" / "scan.md").read_text(encoding="utf-8")
    for kind, patterns in PATTERN_DOCS.items():
        for pattern, text in patterns.items():
            assert f"| `{kind.value}` | `{pattern}` | {text} |" in docs
    assert set(PATTERN_DOCS) == set(Kind)


@pytest.mark.corpus
def test_the_shared_corpus_redacted_into_fixtures_holds_nothing(tmp_path: Path) -> None:
    require_corpus("real")
    from tests.test_corpus_real import (
        REAL,
        STREAMS,
        body_events,
        profile_of,
        provider_of,
        schemas_and_request,
    )

    for row in STREAMS:
        path = REAL / row["file"]
        events = body_events(path)
        schemas, request = schemas_and_request(path, events)
        profile = profile_of(row)
        envelope = {
            "profile": profile,
            "provider": provider_of(row),
            "tool_schemas": schemas,
            "request": request,
            PROFILES[profile].stream_key: events,
        }
        fixture = tmp_path / (row["file"].replace("/", "__") + ".json")
        fixture.write_bytes(redact_envelope(envelope, allow_verdict_change=True).data)
    assert len(list(tmp_path.iterdir())) == len(STREAMS) > 0
    assert scan(str(tmp_path)) == (0, "", "")
