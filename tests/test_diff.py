"""``callgate diff`` against the real accumulators (openai 3.57.0, anthropic 2.14.0,
langchain-openai 1.7.4, litellm 1.110.2).

The adapters run in the SDK virtualenv (``.venv-apps``), as they would in a user's app; the
values asserted here are what the libraries produced, matching notes/peers.md.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from callgate.cli.diff import command, mutations
from callgate.cli.diff.command import AdapterResult, HandedCall, run_adapter, run_diff
from callgate.reassemble import check
from callgate.reassemble.errors import NotApplicable, SetupError
from callgate.reassemble.mutations import KINDS, mutate
from tests.conftest import CONFORMANCE, load
from tests.proxy_harness import APPS_PYTHON

#: The tests that share the module's adapter runs (``adapter_runs``): on one xdist worker, so
#: each adapter's runner starts once.
pytestmark = [pytest.mark.sdk, pytest.mark.xdist_group("diff-adapter-runs")]

#: The fixtures the tests below have each adapter run on, and (``--mutations``) those whose
#: variants they have it run on.
RUNS = {
    "openai-python": [
        "openai/reused_index_new_id",
        "openai/valid_fragmented",
        "mistral/native_whole_call",
        "openai/truncated",
        "openai/stream_error",
    ],
    "anthropic-python": ["anthropic/reused_index_new_id", "anthropic/valid_fragmented"],
    "ollama-python": [
        "ollama/reused_index_new_id",
        "ollama/valid_parallel_calls_two_lines",
        "ollama/truncated_before_done",
    ],
    "boto3": [
        "bedrock-converse/reused_index_new_id",
        "bedrock-converse/valid_parallel_calls",
        "bedrock-converse/valid_no_argument_tool",
    ],
    "langchain-aws": [
        "bedrock-converse/reused_index_new_id",
        "bedrock-converse/valid_parallel_calls",
        "bedrock-converse/truncated_inside_input",
    ],
    "cohere-python": [
        "cohere/stream_error",
        "cohere/valid_parallel_calls",
        "cohere/valid_no_argument_tool",
    ],
    "langchain": [
        "openai/reused_index_new_id",
        "openai/truncated",
        "openai/repeated_identical_id_and_name",
        "mistral/native_parallel_calls",
        "openai/valid_fragmented",
    ],
    "litellm": [
        "openai/reused_index_new_id",
        "openai/truncated",
        "mistral/native_parallel_calls",
        "openai/valid_fragmented",
    ],
}
MUTATED = {
    "openai-python": ["openai/valid_parallel_interleaved"],
    "langchain": ["openai/valid_parallel_interleaved"],
    "litellm": ["openai/valid_parallel_interleaved"],
    "anthropic-python": ["anthropic/valid_text_then_two_tools"],
}


def planned(adapter: str) -> list[dict[str, Any]]:
    """The envelopes the tests have ``adapter`` run on: ``RUNS``, and the variants of ``MUTATED``
    as ``callgate diff --mutations`` makes them."""
    envelopes = [load(fixture(name)) for name in RUNS.get(adapter, [])]
    for name in MUTATED.get(adapter, []):
        for kind in KINDS:
            with contextlib.suppress(NotApplicable):  # --mutations leaves it out likewise
                envelopes.append(mutate(load(fixture(name)), kind, fixture(name).name))
    return envelopes


@pytest.fixture(scope="module")
def adapter_runs() -> Iterator[None]:
    """Each adapter's runs in one run of its runner (``--many``), the first time a test has the
    SDK environment run that adapter: importing a library costs seconds, one stream through it
    milliseconds. ``callgate diff`` then takes the result of the same runner on the same
    envelope; a run not planned (another interpreter, an envelope not in ``RUNS``), or any run of
    an adapter whose batch failed, is made as it comes, so a failure is the failing test's
    own."""
    real = command.run_adapter_many
    python, results, batched = str(APPS_PYTHON), {}, set()

    def key(adapter: str, envelope: dict[str, Any]) -> str:
        return json.dumps([adapter, envelope], sort_keys=True)

    def run_adapter_many(
        interpreter: str, adapter: str, envelopes: Sequence[dict[str, Any]]
    ) -> list[AdapterResult]:
        if interpreter == python and adapter not in batched:
            batched.add(adapter)
            batch = [*planned(adapter), *envelopes]
            with contextlib.suppress(SetupError):
                ran = real(python, adapter, batch)
                results.update(zip((key(adapter, e) for e in batch), ran, strict=True))
        keys = [key(adapter, envelope) for envelope in envelopes]
        if interpreter == python and all(k in results for k in keys):
            return [results[k] for k in keys]
        return real(interpreter, adapter, envelopes)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(command, "run_adapter_many", run_adapter_many)
        patch.setattr(mutations, "run_adapter_many", run_adapter_many)
        yield


@pytest.fixture
def apps_python(adapter_runs: None) -> str:
    if not APPS_PYTHON.exists():
        pytest.skip(f"no SDK virtualenv at {APPS_PYTHON} (make test builds it)")
    return str(APPS_PYTHON)


def fixture(name: str) -> Path:
    return CONFORMANCE / f"{name}.json"


def adapter_result(python: str, adapter: str, name: str) -> AdapterResult:
    return run_adapter(python, adapter, load(fixture(name)))


def diff(names: list[str], adapter: str, python: str | None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run_diff([fixture(name) for name in names], adapter, python, out, err)
    return code, out.getvalue(), err.getvalue()


def verdict_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(("agree: ", "DISAGREE: "))]


def test_openai_python_merges_a_reused_index_into_one_call_that_callgate_blocks(
    apps_python: str,
) -> None:
    result = adapter_result(apps_python, "openai-python", "openai/reused_index_new_id")
    assert result == AdapterResult(
        adapter="openai-python",
        version="3.57.0",
        finish="tool_calls",
        error=None,
        calls=(HandedCall("call_Acall_B", "get_weathersearch", '{"city":"Oslo"}{"query":"x"}'),),
    )
    assert check(load(fixture("openai/reused_index_new_id"))).blocking_codes == [
        "identity_collision"
    ]
    code, out, err = diff(["openai/reused_index_new_id"], "openai-python", apps_python)
    assert (code, err) == (1, "")
    assert verdict_lines(out) == [
        "DISAGREE: openai-python hands on 1 call; callgate blocks (identity_collision)"
    ]
    assert "openai-python 3.57.0 hands the tool runner" in " ".join(out.split())


def test_openai_python_and_callgate_agree_on_a_valid_fragmented_call(apps_python: str) -> None:
    result = adapter_result(apps_python, "openai-python", "openai/valid_fragmented")
    assert (result.calls, result.finish, result.error) == (
        (HandedCall("call_w1", "get_weather", '{"city":"Paris","unit":"c"}'),),
        "tool_calls",
        None,
    )
    code, out, err = diff(["openai/valid_fragmented"], "openai-python", apps_python)
    assert (code, err, verdict_lines(out)) == (0, "", ["agree: both hand on the same 1 call"])


def test_openai_python_raises_type_error_on_a_mistral_whole_call_that_callgate_passes(
    apps_python: str,
) -> None:
    result = adapter_result(apps_python, "openai-python", "mistral/native_whole_call")
    assert (result.calls, result.finish, result.error) == (
        (),
        None,
        "TypeError: list indices must be integers or slices, not NoneType",
    )
    code, out, err = diff(["mistral/native_whole_call"], "openai-python", apps_python)
    assert (code, err) == (1, "")
    assert verdict_lines(out) == [
        "DISAGREE: openai-python raises TypeError where callgate would run 1 call"
    ]


def test_openai_python_hands_on_a_truncated_call_that_callgate_blocks(apps_python: str) -> None:
    result = adapter_result(apps_python, "openai-python", "openai/truncated")
    assert (result.calls, result.finish, result.error) == (
        (HandedCall("call_w1", "get_weather", '{"city": "Par'),),
        None,
        None,
    )
    code, out, err = diff(["openai/truncated"], "openai-python", apps_python)
    assert (code, err) == (1, "")
    assert verdict_lines(out) == [
        "DISAGREE: openai-python hands on 1 call; callgate blocks (missing_terminal)"
    ]


def test_anthropic_python_gives_a_reused_index_both_inputs_to_the_first_block(
    apps_python: str,
) -> None:
    result = adapter_result(apps_python, "anthropic-python", "anthropic/reused_index_new_id")
    assert result == AdapterResult(
        adapter="anthropic-python",
        version="2.14.0",
        finish="tool_use",
        error=None,
        calls=(
            HandedCall("toolu_A", "get_weather", '{"city": "Oslo"}'),
            HandedCall("toolu_B", "search", "{}"),
        ),
    )
    code, out, err = diff(["anthropic/reused_index_new_id"], "anthropic-python", apps_python)
    assert (code, err) == (1, "")
    assert verdict_lines(out) == [
        "DISAGREE: anthropic-python hands on 2 calls; callgate blocks "
        "(duplicate_start, identity_collision)"
    ]


def test_anthropic_python_and_callgate_agree_on_a_valid_fragmented_input(apps_python: str) -> None:
    result = adapter_result(apps_python, "anthropic-python", "anthropic/valid_fragmented")
    assert (result.calls, result.finish, result.error) == (
        (HandedCall("toolu_w1", "get_weather", '{"city": "Paris", "unit": "c"}'),),
        "tool_use",
        None,
    )
    code, out, err = diff(["anthropic/valid_fragmented"], "anthropic-python", apps_python)
    assert (code, err, verdict_lines(out)) == (0, "", ["agree: both hand on the same 1 call"])


def test_ollama_python_hands_on_both_calls_at_one_index_and_ids_are_not_compared(
    apps_python: str,
) -> None:
    result = adapter_result(apps_python, "ollama-python", "ollama/reused_index_new_id")
    assert result == AdapterResult(
        adapter="ollama-python",
        version="0.6.3",
        finish="stop",
        error=None,
        calls=(
            HandedCall(None, "get_weather", '{"city": "Paris"}'),
            HandedCall(None, "get_weather", '{"city": "Rome"}'),
        ),
    )
    code, out, err = diff(["ollama/reused_index_new_id"], "ollama-python", apps_python)
    assert (code, err) == (1, "")
    assert verdict_lines(out) == [
        "DISAGREE: ollama-python hands on 2 calls; callgate blocks "
        "(duplicate_start, identity_collision)"
    ]
    # callgate's calls carry the ids the stream gave; ollama-python keeps none.
    code, out, err = diff(
        ["ollama/valid_parallel_calls_two_lines", "ollama/truncated_before_done"],
        "ollama-python",
        apps_python,
    )
    assert (code, err, verdict_lines(out)) == (
        1,
        "",
        [
            "agree: both hand on the same 2 calls",
            "DISAGREE: ollama-python hands on 1 call; callgate blocks (missing_terminal)",
        ],
    )


def test_a_boto3_converse_accumulator_runs_a_moved_call_and_fails_on_a_tool_without_input(
    apps_python: str,
) -> None:
    result = adapter_result(apps_python, "boto3", "bedrock-converse/reused_index_new_id")
    assert (result.calls, result.finish, result.error) == (
        (
            HandedCall("tooluse_w7Kx2PqR9sTuVw3YzAbCdE", "get_weather", '{"city": "Paris"}'),
            HandedCall("tooluse_r5H1c8UeQ2nMxZ7VbPkTaS", "get_weather", '{"city": "Rome"}'),
        ),
        "tool_use",
        None,
    )
    code, out, err = diff(
        [
            "bedrock-converse/valid_parallel_calls",
            "bedrock-converse/reused_index_new_id",
            "bedrock-converse/valid_no_argument_tool",
        ],
        "boto3",
        apps_python,
    )
    assert (code, err, verdict_lines(out)) == (
        1,
        "",
        [
            "agree: both hand on the same 2 calls",
            "DISAGREE: boto3 hands on 2 calls; callgate blocks (delta_after_terminal, "
            "duplicate_start, duplicate_terminal, identity_collision)",
            # Bedrock sends one "" fragment for a tool without parameters: json.loads("") raises.
            "DISAGREE: boto3 raises JSONDecodeError where callgate would run 1 call",
        ],
    )


def test_langchain_aws_gives_a_call_whose_input_it_cannot_read_empty_arguments(
    apps_python: str,
) -> None:
    result = adapter_result(apps_python, "langchain-aws", "bedrock-converse/reused_index_new_id")
    assert (result.calls, result.finish, result.error) == (
        (
            HandedCall("tooluse_w7Kx2PqR9sTuVw3YzAbCdE", "get_weather", '{"city": "Paris"}'),
            HandedCall("tooluse_r5H1c8UeQ2nMxZ7VbPkTaS", "get_weather", "{}"),
        ),
        "tool_use",
        None,
    )
    code, out, err = diff(
        ["bedrock-converse/valid_parallel_calls", "bedrock-converse/truncated_inside_input"],
        "langchain-aws",
        apps_python,
    )
    assert (code, err, verdict_lines(out)) == (
        0,
        "",
        [
            "agree: both hand on the same 2 calls",
            "agree: neither hands anything to the tool runner"
            " (langchain-aws raises ConnectionError)",
        ],
    )


def test_cohere_python_hands_on_the_calls_of_a_stream_that_ended_with_error(
    apps_python: str,
) -> None:
    result = adapter_result(apps_python, "cohere-python", "cohere/stream_error")
    assert (result.calls, result.finish, result.error) == (
        (HandedCall("get_weather_fx01", "get_weather", '{\n    "city'),),
        "ERROR",
        None,
    )
    code, out, err = diff(
        ["cohere/valid_parallel_calls", "cohere/stream_error", "cohere/valid_no_argument_tool"],
        "cohere-python",
        apps_python,
    )
    assert (code, err, verdict_lines(out)) == (
        1,
        "",
        [
            "agree: both hand on the same 2 calls",
            "DISAGREE: cohere-python hands on 1 call; callgate blocks (missing_terminal, "
            "stream_error, wrong_terminal_reason)",
            # The tool without parameters: "" where callgate gives {}.
            "DISAGREE: cohere-python hands on other calls than callgate",
        ],
    )


def test_an_adapter_that_raises_agrees_with_a_callgate_that_runs_nothing(apps_python: str) -> None:
    code, out, _ = diff(["openai/stream_error"], "openai-python", apps_python)
    assert (code, verdict_lines(out)) == (
        0,
        ["agree: neither hands anything to the tool runner (openai-python raises APIError)"],
    )


def test_several_fixtures_give_the_worst_exit_and_an_unreadable_one_does_not_stop_the_rest(
    apps_python: str,
) -> None:
    code, out, err = diff(
        ["openai/valid_fragmented", "openai/reused_index_new_id"], "openai-python", apps_python
    )
    assert (code, verdict_lines(out)) == (
        1,
        [
            "agree: both hand on the same 1 call",
            "DISAGREE: openai-python hands on 1 call; callgate blocks (identity_collision)",
        ],
    )
    code, out, err = diff(
        ["openai/no_such_fixture", "openai/valid_fragmented"], "openai-python", apps_python
    )
    assert (code, verdict_lines(out)) == (2, ["agree: both hand on the same 1 call"])
    assert err == (
        f"callgate: {fixture('openai/no_such_fixture')}: cannot read: No such file or directory\n"
    )


@pytest.mark.parametrize(
    ("adapter", "package"), [("langchain", "langchain-openai"), ("litellm", "litellm")]
)
@pytest.mark.parametrize("given", [True, False], ids=["--python", "this interpreter"])
def test_an_adapter_whose_library_is_missing_exits_2_with_the_install_line(
    adapter: str, package: str, given: bool
) -> None:
    module = "langchain_openai" if adapter == "langchain" else adapter
    if importlib.util.find_spec(module) is not None:
        pytest.skip(f"{module} is installed in callgate's own environment")
    python = sys.executable if given else None
    code, out, err = diff(["openai/valid_fragmented"], adapter, python)
    assert (code, out) == (2, "")
    assert err == (
        f"callgate: adapter {adapter} needs the {package} package: pip install "
        f"{package}, or pass --python with an interpreter that has it\n"
    )


def test_an_anthropic_fixture_with_openai_python_is_one_line_and_exit_2(apps_python: str) -> None:
    code, out, err = diff(["anthropic/valid_fragmented"], "openai-python", apps_python)
    assert (code, out) == (2, "")
    assert err == (
        f"callgate: {fixture('anthropic/valid_fragmented')}: profile anthropic: "
        "--adapter openai-python reads openai and mistral streams; "
        "use anthropic-python or vercel-ai-anthropic\n"
    )


def test_a_python_that_does_not_exist_is_one_line_and_exit_2() -> None:
    code, out, err = diff(["openai/valid_fragmented"], "openai-python", "/nonexistent/python")
    assert (code, out, err) == (
        2,
        "",
        "callgate: cannot run --python /nonexistent/python: "
        "[Errno 2] No such file or directory: '/nonexistent/python'\n",
    )


def test_langchain_and_litellm_each_hand_on_their_own_wrong_calls_for_a_reused_index(
    apps_python: str,
) -> None:
    # One slot, two ids: langchain splits it by id (the second call's arguments went to the
    # first), litellm keeps the last id and name and concatenates both argument texts.
    name = "openai/reused_index_new_id"
    assert adapter_result(apps_python, "langchain", name) == AdapterResult(
        adapter="langchain",
        version="1.7.4",
        finish="tool_calls",
        error=None,
        calls=(
            HandedCall("call_A", "get_weather", '{"city": "Oslo"}'),
            HandedCall("call_B", "search", "{}"),
        ),
    )
    assert adapter_result(apps_python, "litellm", name) == AdapterResult(
        adapter="litellm",
        version="1.110.2",
        finish="tool_calls",
        error=None,
        calls=(HandedCall("call_B", "search", '{"city":"Oslo"}{"query":"x"}'),),
    )
    code, out, _ = diff([name], "langchain", apps_python)
    assert (code, verdict_lines(out)) == (
        1,
        ["DISAGREE: langchain hands on 2 calls; callgate blocks (identity_collision)"],
    )


def test_langchain_completes_a_truncated_call_and_litellm_raises(apps_python: str) -> None:
    # langchain's partial-JSON parser closes {"city": "Par into a valid-looking object.
    name = "openai/truncated"
    langchain = adapter_result(apps_python, "langchain", name)
    assert (langchain.calls, langchain.finish, langchain.error) == (
        (HandedCall("call_w1", "get_weather", '{"city": "Par"}'),),
        None,
        None,
    )
    litellm = adapter_result(apps_python, "litellm", name)
    assert (litellm.calls, litellm.finish) == ((), None)
    assert litellm.error is not None and litellm.error.startswith("MidStreamFallbackError: ")
    assert "Stream ended before a finish_reason was received" in litellm.error
    assert verdict_lines(diff([name], "langchain", apps_python)[1]) == [
        "DISAGREE: langchain hands on 1 call; callgate blocks (missing_terminal)"
    ]
    assert verdict_lines(diff([name], "litellm", apps_python)[1]) == [
        "agree: neither hands anything to the tool runner (litellm raises MidStreamFallbackError)"
    ]


def test_langchain_concatenates_a_name_that_is_repeated_on_every_delta(apps_python: str) -> None:
    name = "openai/repeated_identical_id_and_name"
    assert adapter_result(apps_python, "langchain", name).calls == (
        HandedCall("call_w1", "get_weatherget_weather", '{"city": "Oslo"}'),
    )
    code, out, _ = diff([name], "langchain", apps_python)
    assert (code, verdict_lines(out)) == (
        1,
        ["DISAGREE: langchain hands on other calls than callgate"],
    )


@pytest.mark.parametrize("adapter", ["langchain", "litellm"])
def test_langchain_and_litellm_agree_with_callgate_on_valid_streams(
    apps_python: str, adapter: str
) -> None:
    code, out, err = diff(
        ["mistral/native_parallel_calls", "openai/valid_fragmented"], adapter, apps_python
    )
    assert (code, err, verdict_lines(out)) == (
        0,
        "",
        ["agree: both hand on the same 2 calls", "agree: both hand on the same 1 call"],
    )


@pytest.mark.parametrize(
    ("name", "adapters"),
    [
        (
            "openai/valid_parallel_interleaved",
            ["openai-python", "langchain", "litellm", "vercel-ai"],
        ),
        ("anthropic/valid_text_then_two_tools", ["anthropic-python", "vercel-ai-anthropic"]),
    ],
)
def test_the_readmes_mutation_tables_are_what_diff_mutations_prints(
    apps_python: str, name: str, adapters: list[str]
) -> None:
    from callgate.cli.diff.mutations import run_diff_mutations
    from tests.test_diff_vercel import node_modules

    out, err = io.StringIO(), io.StringIO()
    code = run_diff_mutations(
        fixture(name), adapters, apps_python, "markdown", out, err, node_modules()
    )
    assert (code, err.getvalue()) == (1, "")  # every library disagrees somewhere
    table = [line for line in out.getvalue().splitlines() if line.startswith("|")]
    page = (Path(__file__).resolve().parents[1] / "docs" / "bad-streams.md").read_text("utf-8")
    command = f"`callgate diff fixtures/conformance/{name}.json --mutations"
    shown = page.split(command, 1)[1].split("\n\n", 2)[1].splitlines()
    assert shown == table
    # A library that hands on anything where callgate blocks is in bold.
    assert table[2].split(" | ")[2].startswith("**runs ")


@pytest.mark.browser
def test_the_html_table_chromium_draws_has_the_markdown_tables_cells(
    apps_python: str, tmp_path: Path
) -> None:
    import html
    import re

    from callgate.cli.diff.mutations import run_diff_mutations
    from tests.test_html_report import CHROMIUM, chromium

    if CHROMIUM is None:
        pytest.skip("chromium is not installed (make test installs Debian's chromium package)")
    name, adapters = "anthropic/valid_text_then_two_tools", ["anthropic-python"]
    pages = {}
    for report in ("markdown", "html"):
        out, err = io.StringIO(), io.StringIO()
        assert run_diff_mutations(fixture(name), adapters, apps_python, report, out, err) == 1
        pages[report] = out.getvalue()
    dom = chromium(tmp_path, pages["html"], "--dump-dom").stdout.decode("utf-8")
    drawn = [
        [
            (html.unescape(re.sub(r"<[^>]+>", "", cell)), "<strong>" in cell)
            for cell in re.findall(r"<td[^>]*>(.*?)</td>", row)
        ]
        for row in re.findall(r'<tr data-kind="[^"]+">(.*?)</tr>', dom)
    ]
    table = [
        line.strip("|").split(" | ")
        for line in pages["markdown"].splitlines()[2:]
        if line.startswith("|")
    ]
    assert drawn == [
        [(c.strip().strip("`*").replace("\\*", "*"), c.strip().startswith("**")) for c in row]
        for row in table
    ]
    # Only the kinds an Anthropic turn can take are tried: of those, one finds nothing here.
    assert dom.endswith(
        "<h2>Not applicable</h2><ul><li>drop_coordinates: no computer action states "
        "coordinates</li></ul>\n</body></html>\n"
    )
