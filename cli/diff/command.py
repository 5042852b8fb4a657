"""``callgate diff``: what a real accumulator hands a tool runner, next to callgate's verdict.

How this works: ``cli/diff/adapters/runner.py ADAPTER`` runs in an interpreter
which has the adapter's library (``--python``, else this one), so those libraries never need to
be importable here; the Vercel AI SDK's adapters run ``adapters/vercel_ai.mjs`` under Node, once
per ``node_modules`` folder (``node.py``). The runner reads the envelope on stdin, drives the
library's own accumulator and prints one JSON line: the calls it would hand on, its finish
reason, or what it raised. The same envelope goes to ``callgate.reassemble.check``; callgate
hands on its calls only when the turn passes.
The two agree when they hand on the same calls (id, name, arguments; argument *values* for
adapters that hand on parsed dicts) or both hand on nothing. Only the first choice is compared:
it is the one the adapters read. Exit 0 all agree, 1 some disagree, 2 invalid input or a runner
that cannot run.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from callgate.cli.diff import node
from callgate.cli.files import load_envelope
from callgate.cli.output import console, error_line, safe, styled
from callgate.reassemble import Report, check
from callgate.reassemble.errors import CallgateError, SetupError, UsageError
from callgate.reassemble.framing import SSE
from callgate.reassemble.profiles import PROFILES, framed

RUNNER = Path(__file__).with_name("adapters") / "runner.py"
#: Seconds a runner (or the import probe) may take before the fixture counts as unrunnable.
TIMEOUT = 60.0
#: Longer argument texts are cut in the table (the comparison always uses the whole text).
SHOWN_ARGUMENTS = 200


@dataclass(frozen=True, kw_only=True)
class Adapter:
    #: The module the runner imports: probed to choose an interpreter.
    module: str = ""
    #: What to ``pip install``.
    package: str = ""
    #: What to ``npm install`` for an adapter that runs under Node (then module and package are
    #: unused).
    npm: tuple[str, ...] = ()
    #: Envelope profiles whose streams this adapter consumes.
    profiles: tuple[str, ...]
    #: It hands on parsed arguments (a dict), so argument values are compared, not texts.
    hands_values: bool
    #: It hands on each call's id (ollama-python's models have none: ids are not compared).
    hands_ids: bool = True


ADAPTERS: dict[str, Adapter] = {
    "openai-python": Adapter(
        module="openai", package="openai", profiles=("openai", "mistral"), hands_values=False
    ),
    "anthropic-python": Adapter(
        module="anthropic", package="anthropic", profiles=("anthropic",), hands_values=True
    ),
    "langchain": Adapter(
        module="langchain_openai",
        package="langchain-openai",
        profiles=("openai", "mistral"),
        hands_values=True,
    ),
    "litellm": Adapter(
        module="litellm", package="litellm", profiles=("openai", "mistral"), hands_values=False
    ),
    "ollama-python": Adapter(
        module="ollama", package="ollama", profiles=("ollama",), hands_values=True, hands_ids=False
    ),
    "cohere-python": Adapter(
        module="cohere", package="cohere", profiles=("cohere",), hands_values=False
    ),
    "boto3": Adapter(
        module="boto3", package="boto3", profiles=("bedrock-converse",), hands_values=True
    ),
    "langchain-aws": Adapter(
        module="langchain_aws",
        package="langchain-aws",
        profiles=("bedrock-converse",),
        hands_values=True,
    ),
    "vercel-ai": Adapter(
        npm=("ai", "@ai-sdk/openai"), profiles=("openai", "mistral"), hands_values=True
    ),
    "vercel-ai-anthropic": Adapter(
        npm=("ai", "@ai-sdk/anthropic"), profiles=("anthropic",), hands_values=True
    ),
}


@dataclass(frozen=True)
class HandedCall:
    id: str | None
    name: str | None
    arguments: str | None


@dataclass(frozen=True, kw_only=True)
class AdapterResult:
    adapter: str
    version: str
    calls: tuple[HandedCall, ...]
    finish: str | None
    #: ``"Type: message"`` of what the adapter raised, if it raised.
    error: str | None


@dataclass(frozen=True)
class Verdict:
    agree: bool
    reason: str

    def __str__(self) -> str:
        return f"{'agree' if self.agree else 'DISAGREE'}: {self.reason}"


def run_diff(
    paths: Sequence[Path],
    adapter: str,
    python: str | None,
    out: TextIO,
    err: TextIO,
    node_modules: Sequence[Path] = (),
) -> int:
    """Diff each fixture (with each ``node_modules`` folder's release, for a Node adapter);
    return the worst exit code (2 beats 1 beats 0)."""
    try:
        runtimes = pick_runtimes(adapter, python, node_modules)
    except CallgateError as error:
        return error_line(error, err)
    worst, loaded = 0, []
    for path in paths:  # read and checked once, whatever the number of runtimes
        try:
            envelope = load_envelope(path)
            check_profile(envelope["profile"], adapter)
            loaded.append((path, envelope))
        except CallgateError as error:  # the path goes in front, unless the error names it
            worst = error_line(error if error.source is not None else f"{path}: {error}", err)
    if not loaded:
        return worst
    shown = console(out)
    for runtime in runtimes:
        worst = max(worst, diff_fixtures(shown, loaded, adapter, runtime, err))
    return worst


def diff_fixtures(
    console: Console,
    loaded: Sequence[tuple[Path, dict[str, Any]]],
    adapter: str,
    runtime: str,
    err: TextIO,
) -> int:
    """Print each fixture's diff, all of them through one run of the runner (importing a library
    costs more than a stream through it); 0 agree, 1 disagree, 2 the runner failed."""
    worst = 0
    try:
        results = run_adapter_many(runtime, adapter, [envelope for _, envelope in loaded])
    except CallgateError as error:
        return error_line(error, err)
    for (path, envelope), result in zip(loaded, results, strict=True):
        worst = max(worst, show_diff(console, path, envelope, result))
    return worst


def pick_runtimes(adapter: str, python: str | None, node_modules: Sequence[Path] = ()) -> list[str]:
    """Where ``adapter`` runs: an interpreter (``pick_interpreter``), or for a Node adapter each
    ``node_modules`` folder Node finds its packages from. Raises as ``pick_interpreter`` does."""
    if adapter not in ADAPTERS:
        raise UsageError(f"unknown adapter {adapter!r}; choose one of {', '.join(ADAPTERS)}")
    npm = ADAPTERS[adapter].npm
    if npm:
        return [node.probe(adapter, npm, folder) for folder in node.folders(node_modules)]
    return [pick_interpreter(adapter, python)]


def pick_interpreter(adapter: str, python: str | None) -> str:
    """``python`` or else this interpreter, if it has the adapter's library. Raises
    ``UsageError`` for an unknown adapter and ``SetupError`` when the library is missing."""
    if adapter not in ADAPTERS:
        raise UsageError(f"unknown adapter {adapter!r}; choose one of {', '.join(ADAPTERS)}")
    interpreter = python or sys.executable
    # find_spec, not import: it is quick and runs nothing (importing litellm goes online).
    probe = (
        f"import importlib.util, sys; "
        f"sys.exit(importlib.util.find_spec({ADAPTERS[adapter].module!r}) is None)"
    )
    try:
        done = subprocess.run(
            [interpreter, "-c", probe], capture_output=True, timeout=TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SetupError(f"cannot run --python {interpreter}: {error}") from None
    if done.returncode != 0:
        raise SetupError(missing_message(adapter))
    return interpreter


def missing_message(adapter: str) -> str:
    package = ADAPTERS[adapter].package
    return (
        f"adapter {adapter} needs the {package} package: pip install {package}, "
        f"or pass --python with an interpreter that has it"
    )


def show_diff(console: Console, path: Path, envelope: dict[str, Any], result: AdapterResult) -> int:
    """Print what the adapter hands on beside callgate's verdict; 0 agree, 1 disagree."""
    report = check(envelope)
    verdict = compare(result, report, ADAPTERS[result.adapter])
    console.print(styled((str(path), "bold"), f"  {report.profile}"))
    table = Table()
    # fold, not ellipsis: argument texts have no spaces to wrap at, and every byte matters here.
    table.add_column(f"{result.adapter} {result.version} hands the tool runner", overflow="fold")
    table.add_column("callgate", overflow="fold")
    table.add_row(adapter_cell(result), callgate_cell(report))
    console.print(table)
    console.print(Text(str(verdict), style="green" if verdict.agree else "bold red"))
    return 0 if verdict.agree else 1


def check_profile(profile: str, adapter: str) -> None:
    """``UsageError`` unless ``adapter`` consumes streams of ``profile``."""
    if profile in ADAPTERS[adapter].profiles:
        return
    fitting = [name for name, spec in ADAPTERS.items() if profile in spec.profiles]
    raise UsageError(
        f"profile {profile}: --adapter {adapter} reads "
        f"{' and '.join(ADAPTERS[adapter].profiles)} streams; "
        f"use {' or '.join(fitting)}"
    )


def run_adapter(runtime: str, adapter: str, envelope: dict[str, Any]) -> AdapterResult:
    """What ``adapter``'s runner, run by ``runtime`` (an interpreter; for a Node adapter, the
    ``node_modules`` folder whose packages it runs), reports for ``envelope``.

    Raises ``SetupError`` when the runner cannot run, times out, misses its library or prints no
    result. What the adapter itself raised is part of the result, not an error.
    """
    return run_adapter_many(runtime, adapter, [envelope])[0]


def run_adapter_many(
    runtime: str, adapter: str, envelopes: Sequence[dict[str, Any]]
) -> list[AdapterResult]:
    """``run_adapter`` for several envelopes, in one run of the runner."""
    npm = ADAPTERS[adapter].npm
    if npm:
        command, given = node.command(adapter, npm, runtime), node.lines(envelopes)
    else:
        command = [runtime, str(RUNNER), adapter, "--many"]
        given = json.dumps([with_wire(envelope) for envelope in envelopes])
    try:
        done = subprocess.run(
            command,
            input=given,
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=TIMEOUT * len(envelopes),
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise SetupError(f"the {adapter} runner took longer than {TIMEOUT:g} s") from None
    except OSError as error:
        given_as = f"node for --adapter {adapter}" if npm else f"--python {runtime}"
        raise SetupError(f"cannot run {given_as}: {error}") from None
    if done.returncode == 3:
        raise SetupError(
            node.missing_message(adapter, npm, runtime) if npm else missing_message(adapter)
        )
    lines = done.stdout.strip().splitlines()
    try:
        results = [parse_result(line) for line in lines[len(lines) - len(envelopes) :]]
        if len(results) != len(envelopes):
            raise ValueError("a result is missing")
        return results
    except (IndexError, KeyError, TypeError, ValueError):
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise SetupError(f"the {adapter} runner failed (exit {done.returncode}): {last}") from None


def with_wire(envelope: dict[str, Any]) -> dict[str, Any]:
    """The envelope, and for an API that does not stream SSE (Ollama's JSON lines, Bedrock's
    event stream) its body as callgate frames it (``wire``, base64): the runner has no callgate
    to frame it."""
    profile = PROFILES.get(envelope.get("profile"))  # type: ignore[arg-type]
    if profile is None or SSE in profile.framings:
        return envelope
    data = b"".join(framed(envelope, profile.framings[0]))
    return {**envelope, "wire": base64.b64encode(data).decode()}


def parse_result(stdout: str) -> AdapterResult:
    """The runner's JSON line; ``KeyError``/``ValueError``/... when it is not one."""
    data = json.loads(stdout.strip().splitlines()[-1])
    error = data["error"]
    return AdapterResult(
        adapter=data["adapter"],
        version=data["version"],
        finish=data["finish"],
        calls=tuple(HandedCall(c["id"], c["name"], c["arguments"]) for c in data["calls"]),
        error=None if error is None else f"{error['type']}: {error['message']}",
    )


def allowed_calls(report: Report) -> tuple[HandedCall, ...]:
    """What callgate hands on: the first choice's calls of a passing turn, else nothing."""
    if not report.executable:
        return ()
    return tuple(HandedCall(c.id, c.name, c.arguments) for c in report.calls if c.choice == 0)


def compare(result: AdapterResult, report: Report, adapter: Adapter) -> Verdict:
    """Agree when both hand on the same calls, or both hand on nothing (raising included)."""
    ours = allowed_calls(report)
    theirs = () if result.error else result.calls
    if not ours and not theirs:
        raised = f" ({result.adapter} raises {error_type(result)})" if result.error else ""
        return Verdict(True, f"neither hands anything to the tool runner{raised}")
    if len(ours) == len(theirs) and all(
        same_call(a, b, adapter) for a, b in zip(ours, theirs, strict=True)
    ):
        return Verdict(True, f"both hand on the same {count(len(ours), 'call')}")
    return Verdict(False, disagreement(result, report, ours, theirs))


def disagreement(
    result: AdapterResult,
    report: Report,
    ours: tuple[HandedCall, ...],
    theirs: tuple[HandedCall, ...],
) -> str:
    """How they differ, in one sentence."""
    if result.error:
        return (
            f"{result.adapter} raises {error_type(result)} where callgate would run "
            f"{count(len(ours), 'call')}"
        )
    if not ours:
        blocked = (
            f"callgate blocks ({', '.join(report.blocking_codes)})"
            if report.blocking_codes
            else f"callgate runs nothing ({report.status.value})"
        )
        return f"{result.adapter} hands on {count(len(theirs), 'call')}; {blocked}"
    if not theirs:
        return (
            f"{result.adapter} hands on no call where callgate would run {count(len(ours), 'call')}"
        )
    return f"{result.adapter} hands on other calls than callgate"


def same_call(ours: HandedCall, theirs: HandedCall, adapter: Adapter) -> bool:
    if ours.name != theirs.name or (adapter.hands_ids and ours.id != theirs.id):
        return False
    if not adapter.hands_values or ours.arguments is None or theirs.arguments is None:
        return ours.arguments == theirs.arguments
    return canonical(ours.arguments) == canonical(theirs.arguments)


def canonical(arguments: str) -> str:
    """One text per JSON value (key order and spacing aside); the text itself if not JSON."""
    try:
        return json.dumps(json.loads(arguments), sort_keys=True)
    except ValueError:
        return arguments


def error_type(result: AdapterResult) -> str:
    return (result.error or "").split(":", 1)[0]


def count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def adapter_cell(result: AdapterResult) -> Text:
    if result.error:
        return Text(safe(f"raised {result.error}"))
    lines = [line for call in result.calls for line in call_lines(call)] or ["no call"]
    lines.append(f"finish {result.finish}")
    return Text(safe("\n".join(lines)))


def callgate_cell(report: Report) -> Text:
    lines = [f"{report.status.value} ({'EXECUTABLE' if report.executable else 'BLOCKED'})"]
    if report.blocking_codes:
        lines.append("blocks: " + ", ".join(report.blocking_codes))
    allowed = allowed_calls(report)
    lines += [line for call in allowed for line in call_lines(call)] or ["runs nothing"]
    if report.executable and len(report.calls) > len(allowed):
        lines.append(
            f"+{count(len(report.calls) - len(allowed), 'call')} in other choices (not compared)"
        )
    return Text(safe("\n".join(lines)))


def call_lines(call: HandedCall) -> list[str]:
    arguments = call.arguments if call.arguments is not None else "-"
    if len(arguments) > SHOWN_ARGUMENTS:
        arguments = arguments[: SHOWN_ARGUMENTS - 3] + "..."
    return [f"{call.name}({arguments})", f"  id {call.id}"]
