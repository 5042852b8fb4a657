"""``callgate diff --adapter vercel-ai`` against the real Vercel AI SDK under Node: ai 7.0.173
(@ai-sdk/openai 4.0.118, @ai-sdk/anthropic 4.0.105) and ai 6.0.220 (@ai-sdk/openai 3.0.81,
@ai-sdk/anthropic 3.0.94), pinned in tests/node/ and installed by ``make test`` (``npm ci``).
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from callgate.cli.app import app
from callgate.cli.diff.command import AdapterResult, HandedCall, run_adapter_many, run_diff
from tests.conftest import CONFORMANCE, load

pytestmark = pytest.mark.sdk

NODE = Path(__file__).resolve().parent / "node"
#: The pinned releases, newest first, as docs/bad-streams.md's columns are.
RELEASES = {"7": NODE / "ai-7" / "node_modules", "6": NODE / "ai-6" / "node_modules"}


def node_modules() -> list[Path]:
    """The pinned releases' node_modules folders; the test skips where make test has not
    installed them."""
    if shutil.which("node") is None:
        pytest.skip("no node on PATH (make test installs nodejs and npm)")
    missing = [str(folder) for folder in RELEASES.values() if not (folder / "ai").is_dir()]
    if missing:
        pytest.skip(f"no {', '.join(missing)} (make test runs npm ci in tests/node/)")
    return list(RELEASES.values())


#: The fixtures the tests read each release's result of, run through it at once.
HANDED = ["openai/parseable_prefix_then_more", "openai/reused_index_new_id", "openai/stream_error"]


@pytest.fixture(scope="module")
def handed() -> dict[tuple[str, str], AdapterResult]:
    """What each release hands on for each of ``HANDED``, by (release, fixture): one run of the
    runner per release (importing ai costs more than the streams through it)."""
    folders = dict(zip(RELEASES, node_modules(), strict=True))
    envelopes = [load(fixture(name)) for name in HANDED]
    return {
        (release, name): result
        for release, folder in folders.items()
        for name, result in zip(
            HANDED, run_adapter_many(str(folder), "vercel-ai", envelopes), strict=True
        )
    }


def fixture(name: str) -> Path:
    return CONFORMANCE / f"{name}.json"


def verdicts(names: list[str], adapter: str, folders: list[Path]) -> tuple[int, list[str], str]:
    out, err = io.StringIO(), io.StringIO()
    code = run_diff([fixture(n) for n in names], adapter, None, out, err, folders)
    lines = out.getvalue().splitlines()
    return (
        code,
        [line for line in lines if line.startswith(("agree: ", "DISAGREE: "))],
        err.getvalue(),
    )


def test_ai_6_runs_a_parseable_prefix_and_ai_7_runs_nothing_of_it(
    handed: dict[tuple[str, str], AdapterResult],
) -> None:
    assert verdicts(["openai/parseable_prefix_then_more"], "vercel-ai", node_modules()) == (
        1,
        [
            "agree: neither hands anything to the tool runner",
            "DISAGREE: vercel-ai hands on 1 call; callgate blocks (trailing_data)",
        ],
        "",
    )
    ai_6 = handed["6", "openai/parseable_prefix_then_more"]
    assert (ai_6.version, ai_6.calls) == (
        "6.0.220 (@ai-sdk/openai 3.0.81)",
        (HandedCall("call_w1", "get_weather", '{"city":"Paris"}'),),
    )


def test_ai_7_splits_a_reused_index_into_two_calls_where_ai_6_keeps_the_first(
    handed: dict[tuple[str, str], AdapterResult],
) -> None:
    ai_7, ai_6 = (handed[release, "openai/reused_index_new_id"] for release in RELEASES)
    assert (ai_7.version, ai_7.calls, ai_7.finish, ai_7.error) == (
        "7.0.173 (@ai-sdk/openai 4.0.118)",
        (
            HandedCall("call_A", "get_weather", '{"city":"Oslo"}'),
            HandedCall("call_B", "search", '{"query":"x"}'),
        ),
        "tool-calls",
        None,
    )
    assert (ai_6.calls, ai_6.error) == (
        (HandedCall("call_A", "get_weather", '{"city":"Oslo"}'),),
        None,
    )


def test_both_releases_agree_with_callgate_on_valid_streams_of_both_providers() -> None:
    folders = node_modules()
    assert verdicts(
        ["openai/valid_fragmented", "openai/valid_parallel_interleaved"], "vercel-ai", folders
    ) == (
        0,
        [
            "agree: both hand on the same 1 call",
            "agree: both hand on the same 2 calls",
            "agree: both hand on the same 1 call",
            "agree: both hand on the same 2 calls",
        ],
        "",
    )
    assert verdicts(["anthropic/valid_text_then_two_tools"], "vercel-ai-anthropic", folders) == (
        0,
        ["agree: both hand on the same 2 calls"] * 2,
        "",
    )


def test_a_provider_error_part_is_what_the_sdk_raised(
    handed: dict[tuple[str, str], AdapterResult],
) -> None:
    ai_7, ai_6 = (handed[release, "openai/stream_error"] for release in RELEASES)
    assert (ai_7.error, ai_7.finish) == (
        "StreamProviderError: The server had an error while processing your request.",
        "error",
    )
    assert ai_6.error == "plain object: The server had an error while processing your request."


def test_a_fixture_that_cannot_be_read_is_one_line_whatever_the_number_of_releases(
    tmp_path: Path,
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    out, err = io.StringIO(), io.StringIO()
    paths = [broken, fixture("openai/valid_fragmented")]
    code = run_diff(paths, "vercel-ai", None, out, err, node_modules())
    assert code == 2
    assert len(err.getvalue().splitlines()) == 1, err.getvalue()
    assert str(broken) in err.getvalue()
    assert out.getvalue().count("agree: both hand on the same 1 call") == 2


def test_a_folder_without_the_packages_is_one_line_naming_npm_install(tmp_path: Path) -> None:
    node_modules()
    out, err = io.StringIO(), io.StringIO()
    code = run_diff([fixture("openai/valid_fragmented")], "vercel-ai", None, out, err, [tmp_path])
    assert (code, out.getvalue(), err.getvalue()) == (
        2,
        "",
        f"callgate: adapter vercel-ai finds no ai and @ai-sdk/openai from {tmp_path}: "
        "npm install ai @ai-sdk/openai in your project, or pass --node-modules with a "
        "node_modules folder that has them\n",
    )


def test_without_node_the_line_says_to_install_it_and_the_packages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    out, err = io.StringIO(), io.StringIO()
    code = run_diff([fixture("anthropic/valid_fragmented")], "vercel-ai-anthropic", None, out, err)
    assert (code, err.getvalue()) == (
        2,
        "callgate: adapter vercel-ai-anthropic needs Node.js (node on PATH) and npm install ai "
        "@ai-sdk/anthropic (apt-get install nodejs npm, or nodejs.org)\n",
    )


def test_the_packages_are_found_from_the_current_directory_as_node_finds_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(node_modules()[0].parent)
    result = CliRunner().invoke(
        app, ["diff", str(fixture("openai/valid_fragmented")), "--adapter", "vercel-ai"]
    )
    assert (result.exit_code, result.output.splitlines()[-1]) == (
        0,
        "agree: both hand on the same 1 call",
    )
    assert ("7.0.173" in result.output, "4.0.118" in result.output) == (True, True)
