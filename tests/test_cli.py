"""``callgate check`` as a user meets it: exit codes, JSON lines, one-line errors, no tracebacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from callgate.cli.app import app
from tests.conftest import CONFORMANCE

runner = CliRunner()
GOOD = CONFORMANCE / "openai" / "valid_fragmented.json"
BAD = CONFORMANCE / "openai" / "reused_index_new_id.json"
TEXT = CONFORMANCE / "anthropic" / "text_only.json"


def invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["check", *args])
    return result.exit_code, result.stdout, result.stderr


def test_a_valid_fixture_exits_0_with_its_exact_call() -> None:
    code, out, _ = invoke(str(GOOD))
    report = json.loads(out)
    assert code == 0
    assert (report["status"], report["executable"], report["fixture"]) == ("pass", True, str(GOOD))
    assert [(c["id"], c["name"], c["arguments"]) for c in report["calls"]] == [
        ("call_w1", "get_weather", '{"city":"Paris","unit":"c"}')
    ]


def test_a_reused_slot_exits_1_with_identity_collision() -> None:
    code, out, _ = invoke(str(BAD))
    report = json.loads(out)
    assert (code, report["status"], report["executable"]) == (1, "fail", False)
    assert {f["code"] for f in report["findings"]} == {"identity_collision"}


def test_a_text_only_stream_exits_2_not_applicable() -> None:
    code, out, _ = invoke(str(TEXT))
    assert (code, json.loads(out)["status"], json.loads(out)["applicable"]) == (
        2,
        "not_applicable",
        False,
    )


def test_several_fixtures_give_one_line_each_and_the_worst_exit() -> None:
    code, out, _ = invoke(str(GOOD), str(BAD))
    assert code == 1
    assert [json.loads(line)["status"] for line in out.splitlines()] == ["pass", "fail"]


def test_text_report_names_the_verdict_and_the_finding() -> None:
    code, out, _ = invoke("--report", "text", str(BAD))
    assert code == 1
    assert "fail (BLOCKED)" in out and "identity_collision" in out


def test_allow_quirk_tolerates_a_repeated_finish(tmp_path: Path) -> None:
    envelope = json.loads(
        (CONFORMANCE / "openai" / "quirk_repeated_finish_openrouter.json").read_text()
    )
    del envelope["provider"]
    path = tmp_path / "repeat.json"
    path.write_text(json.dumps(envelope))
    assert invoke(str(path))[0] == 1
    assert invoke("--allow-quirk", "repeated_finish_chunk", str(path))[0] == 0


def test_an_unknown_quirk_name_is_one_line_and_exit_2() -> None:
    code, out, err = invoke("--allow-quirk", "be_nice", str(GOOD))
    assert (code, out) == (2, "")
    assert err.startswith("callgate: unknown quirk 'be_nice'") and err.count("\n") == 1


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"\xff\xfe{}", "not strict JSON (invalid_unicode)"),
        (b'{"profile": "openai", "profile": "anthropic", "chunks": []}', "duplicate_key"),
        (b'{"profile": "openai", "chunks": [NaN]}', "non_finite_number"),
        (b'{"profile": "openai", "chunks": []', "not strict JSON (invalid_arguments_json)"),
        (b'{"profile": "acme-chat", "chunks": []}', "not a callgate envelope: at /profile"),
        (b'{"profile": "anthropic", "chunks": []}', "'events' is a required property"),
        (b'{"profile": "openai", "chunks": [], "tool_schema": {}}', "Additional properties"),
        (b"[]", "not a callgate envelope: at (root)"),
    ],
)
def test_bad_input_is_one_line_naming_the_file_and_exit_2(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    code, out, err = invoke(str(path))
    assert (code, out) == (2, "")
    assert err.startswith(f"callgate: {path}: ") and problem in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_a_missing_file_is_one_line_and_the_rest_still_run(tmp_path: Path) -> None:
    code, out, err = invoke(str(tmp_path / "absent.json"), str(GOOD))
    assert code == 2
    assert err == f"callgate: {tmp_path / 'absent.json'}: cannot read: No such file or directory\n"
    assert json.loads(out)["status"] == "pass"


@pytest.mark.parametrize(
    "command", [["serve", str(CONFORMANCE)], ["record", "--upstream", "http://127.0.0.1:9"]]
)
@pytest.mark.parametrize("listen", ["127.0.0.1:abc", "[::1]:70000", "localhost:"])
def test_a_bad_listen_address_is_one_line_and_exit_2(command: list[str], listen: str) -> None:
    result = runner.invoke(app, [*command, "--listen", listen])
    assert (result.exit_code, result.stdout, result.stderr) == (
        2,
        "",
        f"callgate: --listen takes HOST:PORT, not {listen!r}\n",
    )


@pytest.mark.parametrize("upstream", ["http://127.0.0.1:9101/v1", "https://openrouter.ai/api/v1/"])
def test_a_record_upstream_with_a_path_is_one_line_and_exit_2(upstream: str) -> None:
    """mitmproxy keeps each request's own path, so the path would be said twice (or, as
    mitmproxy itself refuses it, fail the proxy's start with a traceback)."""
    result = runner.invoke(app, ["record", "--upstream", upstream])
    host = upstream.split("/", 3)
    assert (result.exit_code, result.stdout, result.stderr) == (
        2,
        "",
        f"callgate: --upstream takes a scheme, host and port alone, not {upstream!r}: requests "
        f"keep their own path (/v1/... from the app's base URL); give {host[0]}//{host[2]}\n",
    )


@pytest.mark.parametrize("upstream", ["api.openai.com", "api.openai.com/v1", "localhost:8000"])
def test_a_record_upstream_without_a_scheme_is_one_whole_line_and_exit_2(upstream: str) -> None:
    result = runner.invoke(app, ["record", "--upstream", upstream])
    host = upstream.split("/")[0]
    assert (result.exit_code, result.stdout, result.stderr) == (
        2,
        "",
        f"callgate: --upstream takes a scheme, host and port, not {upstream!r}: "
        f"give https://{host}\n",
    )


@pytest.mark.parametrize("hostile", ["[/x]", "[bold]loud[/bold]", "[link=file:///etc]y[/link]"])
def test_fixture_text_that_looks_like_markup_is_printed_as_it_is(
    hostile: str, tmp_path: Path
) -> None:
    envelope = json.loads(GOOD.read_text())
    envelope["provider"] = hostile
    for chunk in envelope["chunks"]:
        for choice in chunk["choices"]:
            for call in choice["delta"].get("tool_calls", []):
                if "name" in call.get("function", {}):
                    call["function"]["name"] = hostile
                if "id" in call:
                    call["id"] = hostile
    envelope["tool_schemas"] = {hostile: next(iter(envelope["tool_schemas"].values()))}
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(envelope))
    code, out, err = invoke("--report", "text", str(path))
    assert (code, err) == (0, "")
    header, row = out.splitlines()[0], out.splitlines()[4]
    assert header == f"{path}  openai/{hostile}  pass (EXECUTABLE)"
    shown = hostile if len(hostile) <= 14 else hostile[:13] + "\u2026"  # cut to the column
    assert [cell.strip() for cell in row.split("\u2502")[3:5]] == [shown, shown]


ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x9b31m"


def test_control_characters_from_a_fixture_or_a_file_name_never_reach_the_terminal(
    tmp_path: Path,
) -> None:
    envelope = json.loads(GOOD.read_text())
    envelope["provider"] = ESCAPES
    good = tmp_path / "good.json"
    good.write_text(json.dumps(envelope))
    hostile_name = tmp_path / f"bad{ESCAPES}.json"
    hostile_name.write_text("{")
    code, out, err = invoke("--report", "text", str(good), str(hostile_name))
    replayed = runner.invoke(app, ["replay", str(tmp_path), "--report", "text"])
    for text in (out, err, replayed.stdout, replayed.stderr):
        assert not any((ord(c) < 32 and c not in "\n") or 0x7F <= ord(c) <= 0x9F for c in text)
    assert code == 2 and "openai/\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m  pass" in out
    assert err == (
        f"callgate: {tmp_path}/bad\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m.json: not strict "
        "JSON (invalid_arguments_json): Expecting property name enclosed in double "
        "quotes\n"
    )


def command_paths() -> list[list[str]]:
    """Every command of the app, as the words that run it (``["tape", "serve"]``)."""
    import typer.main

    def walk(group: object, prefix: list[str]) -> list[list[str]]:
        found = []
        for name, command in sorted(getattr(group, "commands", {}).items()):
            found.append([*prefix, name])
            found += walk(command, [*prefix, name])
        return found

    return walk(typer.main.get_command(app), [])


def test_version_prints_the_package_version() -> None:
    from callgate import __version__

    result = runner.invoke(app, ["--version"])
    assert (result.exit_code, result.stdout) == (0, f"callgate {__version__}\n")


def test_every_command_answers_h_as_it_answers_help() -> None:
    paths = command_paths()
    assert ["check"] in paths and ["tape", "serve"] in paths
    for words in [[], *paths]:
        short, long = runner.invoke(app, [*words, "-h"]), runner.invoke(app, [*words, "--help"])
        assert (short.exit_code, short.stdout) == (0, long.stdout), words
        assert "Usage: callgate" in short.stdout, words


#: Option spellings before ``--report`` / ``--output`` / ``--output-dir`` (docs/cli.md): hidden,
#: still taken.
OLD_SPELLINGS = ("--out ", "--out-dir", "--format")


def test_every_help_page_has_an_example_and_its_exit_codes_and_no_old_spelling() -> None:
    for words in [[], *command_paths()]:
        shown = runner.invoke(app, [*words, "--help"], env={"COLUMNS": "200"}).stdout
        assert "Example: " in shown and "Exit codes: " in shown, words
        assert not [old for old in OLD_SPELLINGS if old in shown], words
    assert "--install-completion" in runner.invoke(app, ["--help"]).stdout


def test_the_old_option_spellings_are_still_taken(tmp_path: Path) -> None:
    fixture = tmp_path / "turn.json"
    fixture.write_bytes((CONFORMANCE / "openai" / "valid_fragmented.json").read_bytes())
    mutated = runner.invoke(
        app, ["mutate", str(fixture), "--kind", "truncate", "--out-dir", str(tmp_path / "old")]
    )
    assert (mutated.exit_code, sorted(p.name for p in (tmp_path / "old").iterdir())) == (
        0,
        ["turn.truncate.json"],
    )
    scanned = runner.invoke(app, ["scan", "--format", "sarif", str(fixture)])
    assert (scanned.exit_code, json.loads(scanned.stdout)["version"]) == (0, "2.1.0")


@pytest.mark.parametrize(
    "command",
    [["serve", str(CONFORMANCE / "openai")], ["record", "--upstream", "https://api.openai.com"]],
    ids=["serve", "record"],
)
def test_a_listen_address_in_use_is_one_line_naming_listen_and_exit_2(command: list[str]) -> None:
    """Not mitmproxy's advice (a flag ``record`` refuses) nor a traceback."""
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = runner.invoke(app, [*command, "--listen", f"127.0.0.1:{port}"])
    assert (result.exit_code, result.stdout, result.stderr) == (
        2,
        "",
        f"callgate: --listen 127.0.0.1:{port}: Address already in use; give another --listen "
        "HOST:PORT\n",
    )
