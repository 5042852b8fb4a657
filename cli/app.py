"""The ``callgate`` command line: a thin typer face over functions that return exit codes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

# Each command imports what it runs when it runs: building the CLI loads none of them.
from callgate.cli.choices import (
    AdapterName,
    Arguments,
    DiffReport,
    OnError,
    ProxyMode,
    ReplayFormat,
    ReportFormat,
    ScanFormat,
    ScanKind,
    WebBodyChoice,
)
from callgate.cli.output import error_line, exit_with, usage
from callgate.cli.tape.face import tape_app
from callgate.reassemble.errors import UsageError
from callgate.reassemble.profile_names import PROFILE_NAMES

#: Each command's example and exit codes, at the foot of its help page.
EPILOGS = {
    "check": usage(
        "callgate check fixtures/openai/ --report text",
        "0 pass, 1 block, 2 invalid input or no streamed tool call (several files: 0 every"
        " applicable turn passed, 1 a turn blocked, 2 none applicable or a file unreadable)",
    ),
    "import": usage(
        "callgate import session.har --output-dir fixtures/captured",
        "0 every streamed exchange found was written, 1 one was refused or none was found, 2 a"
        " source could not be used",
    ),
    "replay": usage(
        "callgate replay fixtures/ --report junit --output callgate.xml",
        "0 every fixture held, 1 one did not (or, with --require-pass, one holds as blocked),"
        " 2 a file unreadable",
    ),
    "scan": usage(
        "callgate scan recordings/ --report sarif --output scan.sarif",
        "0 clean, 1 found, 2 a file unreadable",
    ),
    "diff": usage(
        "callgate diff fixtures/openai/ --adapter openai-python",
        "0 all agree, 1 some disagree, 2 invalid input or adapter missing",
    ),
    "explain": usage(
        "callgate explain identity_collision", "0 explained or listed, 2 an unknown name"
    ),
    "record": usage(
        "callgate record --upstream https://api.openai.com --output-dir fixtures/captured",
        "0 when stopped (Ctrl-C), 2 a bad option, a busy --listen or no mitmproxy",
    ),
    "serve": usage(
        "callgate serve --samples",
        "0 when stopped (Ctrl-C), 2 a bad option, a busy --listen or no fixture",
    ),
    "mutate": usage(
        "callgate mutate fixtures/openai/valid.json --kind truncate --output-dir faults/",
        "0 every variant written, 1 a kind asked for by name could not apply, 2 invalid input",
    ),
    "addon-path": usage('mitmdump -s "$(callgate addon-path)"', "0"),
}


#: An option's spelling before ``--report`` / ``--output`` / ``--output-dir`` were the one set
#: (docs/cli.md): still taken, no longer shown, for one release.
OLD_SPELLING = typer.Option(hidden=True, show_default=False)


def _usage(message: str) -> int:
    return error_line(UsageError(message), sys.stderr)


app = typer.Typer(
    name="callgate",
    help="Decide whether the tool calls of a streamed LLM turn may be executed.",
    epilog=usage(
        "callgate check turn.json",
        "each command's, on its help page; 0 pass, 1 block, 2 invalid or not applicable",
    ),
    no_args_is_help=True,
    rich_markup_mode="markdown",
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.command("check", epilog=EPILOGS["check"])
def check_command(
    fixtures: Annotated[
        list[Path], typer.Argument(help="Envelope JSON files or folders (recursive) to judge.")
    ],
    report: Annotated[
        ReportFormat, typer.Option(help="json: one report per line; text: a readable summary.")
    ] = ReportFormat.json,
    allow_quirk: Annotated[
        list[str] | None,
        typer.Option("--allow-quirk", help="Tolerate a named provider quirk (repeatable)."),
    ] = None,
) -> None:
    """Judge each fixture. One file: exit 0 pass, 1 block, 2 invalid input or no streamed tool
    call. Several: 0 some turn applicable and every applicable one passed, 1 a turn blocked, 2 no
    turn applicable or a file unreadable."""
    from callgate.cli.check import run_check

    exit_with(run_check, fixtures, report, allow_quirk or [], sys.stdout, sys.stderr)


@app.command("import", epilog=EPILOGS["import"])
def import_command(
    sources: Annotated[
        list[Path],
        typer.Argument(
            help="HAR files, mitmproxy flow files, VCR cassettes (.yaml), or raw bodies (.sse, "
            ".jsonl, .json)."
        ),
    ],
    output: Annotated[Path | None, typer.Option(help="Write the one fixture here.")] = None,
    output_dir: Annotated[Path, typer.Option(help="Write fixtures into this folder.")] = Path("."),
    out: Annotated[Path | None, OLD_SPELLING] = None,
    out_dir: Annotated[Path | None, OLD_SPELLING] = None,
    request: Annotated[
        Path | None,
        typer.Option(help="The request body of a raw body (its tools become the schemas)."),
    ] = None,
    profile: Annotated[
        str | None,
        typer.Option(help=f"{', '.join(PROFILE_NAMES)} (default: from the URL or the body)."),
    ] = None,
    provider: Annotated[
        str | None,
        typer.Option(help="Who served it, any name (default: from the host); selects quirks."),
    ] = None,
    url: Annotated[str | None, typer.Option(help="The request URL of a raw body.")] = None,
    arguments: Annotated[
        Arguments, typer.Option(help="Tool-call arguments: mask string values, keep, or drop.")
    ] = Arguments.MASK,
    allow_verdict_change: Annotated[
        bool, typer.Option(help="Write even when redaction changes the verdict (recorded in meta).")
    ] = False,
) -> None:
    """Turn recorded exchanges into redacted fixtures: prompts, credentials and output removed."""
    from callgate.cli.importing.command import ImportOptions, run_import
    from callgate.redact import ArgumentMode

    options = ImportOptions(
        out=out or output,
        out_dir=out_dir or output_dir,
        request=request,
        profile=profile,
        provider=provider,
        url=url,
        arguments=ArgumentMode(arguments.value),
        allow_verdict_change=allow_verdict_change,
    )
    exit_with(run_import, sources, options, sys.stdout, sys.stderr)


@app.command("replay", epilog=EPILOGS["replay"])
def replay_command(
    paths: Annotated[list[Path], typer.Argument(help="Fixture files or folders (recursive).")],
    report: Annotated[
        ReplayFormat,
        typer.Option(help="What to write: a table, JSON, JUnit XML, SARIF or an HTML page."),
    ] = (ReplayFormat.text),
    output: Annotated[Path | None, typer.Option(help="Write the report to this file.")] = None,
    jobs: Annotated[int, typer.Option(min=1, help="Processes to judge fixtures with.")] = 1,
    update_expectations: Annotated[
        bool, typer.Option(help="Rewrite each fixture's expect block to what callgate now says.")
    ] = False,
    require_pass: Annotated[
        bool,
        typer.Option(
            help="Fail (exit 1) when a fixture holds as blocked: recording pins each turn's own "
            "verdict, so a held blocked turn is otherwise green."
        ),
    ] = False,
) -> None:
    """Check every fixture against its pinned expectation: exit 0 all held, 1 not, 2 unreadable."""
    from callgate.cli.replay.runner import run_replay

    exit_with(
        run_replay,
        paths,
        report.value,
        output,
        jobs,
        update_expectations,
        sys.stdout,
        sys.stderr,
        require_pass,
    )


@app.command("scan", epilog=EPILOGS["scan"])
def scan_command(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Recordings, or folders of them (recursive): cassettes, HAR, flows, fixtures, "
            "tapes, raw bodies."
        ),
    ],
    kind: Annotated[
        list[ScanKind] | None,
        typer.Option("--kind", help="Report only this kind (repeatable; default: all)."),
    ] = None,
    report: Annotated[
        ScanFormat,
        typer.Option(help="text: one line per finding; sarif: a SARIF 2.1.0 log."),
    ] = ScanFormat.text,
    output: Annotated[Path | None, typer.Option(help="Write the SARIF log to this file.")] = None,
    report_format: Annotated[ScanFormat | None, typer.Option("--format", hidden=True)] = None,
) -> None:
    """Find credentials, prompts and unmasked output in recordings, one line each, never what
    was found: exit 0 clean, 1 found, 2 a file unreadable."""
    from callgate.cli.scan.command import run_scan
    from callgate.redact.scanning import Kind

    report = report_format or report
    kinds = [Kind(chosen.value) for chosen in kind or []]
    exit_with(run_scan, paths, kinds, report, output, sys.stdout, sys.stderr)


@app.command("diff", epilog=EPILOGS["diff"])
def diff_command(
    fixtures: Annotated[list[Path], typer.Argument(help="Envelope JSON files to diff.")],
    adapter: Annotated[
        list[AdapterName],
        typer.Option(
            help="The accumulator whose result to show beside callgate's (repeat for more)."
        ),
    ],
    python: Annotated[
        str | None,
        typer.Option(help="An interpreter that has the adapter's library (default: this one)."),
    ] = None,
    node_modules: Annotated[
        list[Path] | None,
        typer.Option(
            help="For vercel-ai adapters: a node_modules folder with ai and its provider "
            "(default: found from here, as Node finds it); repeat to compare releases."
        ),
    ] = None,
    mutations: Annotated[
        bool, typer.Option(help="Every fault and variation of one passing turn, as one table.")
    ] = False,
    report: Annotated[
        DiffReport, typer.Option(help="With --mutations: the table as text, markdown or html.")
    ] = DiffReport.text,
) -> None:
    """What a real accumulator hands a tool runner, beside callgate's verdict: exit 0 all agree,
    1 some disagree, 2 invalid input or adapter missing."""
    adapters = [a.value for a in adapter]
    folders = node_modules or []
    if mutations:
        from callgate.cli.diff.mutations import run_diff_mutations

        if len(fixtures) != 1:
            exit_with(_usage, "--mutations takes one fixture")
        exit_with(
            run_diff_mutations,
            fixtures[0],
            adapters,
            python,
            report.value,
            sys.stdout,
            sys.stderr,
            folders,
        )
    if report is not DiffReport.text:
        exit_with(_usage, "--report markdown and html go with --mutations")
    from callgate.cli.diff.command import run_diff

    exit_with(
        lambda: max(
            run_diff(fixtures, name, python, sys.stdout, sys.stderr, folders) for name in adapters
        )
    )


@app.command("explain", epilog=EPILOGS["explain"])
def explain_command(
    code: Annotated[
        str | None,
        typer.Argument(help="A finding code or quirk name (any case, - or _); none: list them."),
    ] = None,
) -> None:
    """What a finding code means, what typically causes it, and how to recover; what a quirk
    tolerates; with no name, every code and quirk."""
    from callgate.cli.explain import run_explain

    exit_with(run_explain, code, sys.stdout, sys.stderr)


@app.command("record", epilog=EPILOGS["record"])
def record_command(
    upstream: Annotated[
        str | None,
        typer.Option(
            help="Required in reverse mode (the default): the API to forward to, e.g."
            " https://api.openai.com."
        ),
    ] = None,
    listen: Annotated[str, typer.Option(help="HOST:PORT to listen on.")] = "127.0.0.1:8080",
    output_dir: Annotated[Path, typer.Option(help="Folder for redacted fixtures.")] = Path(
        "callgate-fixtures"
    ),
    out: Annotated[Path | None, OLD_SPELLING] = None,
    web: Annotated[bool, typer.Option(help="Run mitmweb (flows, live warnings) too.")] = False,
    enforce: Annotated[
        bool, typer.Option(help="Replace the terminal events of a failing turn by an error event.")
    ] = False,
    on_error: Annotated[
        OnError,
        typer.Option(
            help="With --enforce, a turn callgate cannot judge (a failure of its own): block it "
            "(the error event), or pass it on unjudged."
        ),
    ] = OnError.block,
    arguments: Annotated[
        Arguments, typer.Option(help="Tool-call arguments in fixtures.")
    ] = Arguments.MASK,
    provider: Annotated[
        str | None, typer.Option(help="Provider name (default: from the upstream host).")
    ] = None,
    mode: Annotated[
        ProxyMode,
        typer.Option(
            help="reverse (set the app's base URL) or regular (HTTPS_PROXY, needs the CA)."
        ),
    ] = (ProxyMode.reverse),
    allow_raw_dump: Annotated[
        bool, typer.Option(help="Allow mitmproxy's own unredacted writers alongside.")
    ] = False,
    web_body: Annotated[
        WebBodyChoice,
        typer.Option(
            help="With --web, the body mitmweb shows of a judged flow (memory only): the redacted "
            "stream the fixture holds, the raw stream, or none."
        ),
    ] = WebBodyChoice.redacted,
    otel: Annotated[
        bool,
        typer.Option(
            help="Export every verdict as OpenTelemetry over OTLP/HTTP (OTEL_EXPORTER_OTLP_* "
            "variables); needs callgate[proxy,otel-export]."
        ),
    ] = False,
) -> None:
    """Record redacted fixtures from your app's traffic and flag failing streams live."""
    from callgate.cli.record import RecordOptions, run_record

    options = RecordOptions(
        upstream=upstream,
        listen=listen,
        out=out or output_dir,
        web=web,
        enforce=enforce,
        on_error=on_error.value,
        arguments=arguments.value,
        provider=provider,
        mode=mode,
        allow_raw_dump=allow_raw_dump,
        web_body=web_body.value,
        otel=otel,
    )
    exit_with(run_record, options)


#: ``serve``'s help, one paragraph a line (typer keeps a docstring's line breaks).
SERVE_HELP = "\n\n".join(
    [
        "A fake provider on loopback that streams fixtures with each profile's real framing.",
        "`/f/<fixture>/` then the provider's own path serves one fixture (its path under the served"
        " folder, without .json) on every request.",
        "`/s/<scenario>/` then the provider's path plays a scenario, one turn per request, for"
        " agent loops: a folder of fixtures (in name order) or a `<name>.scenario.json` file"
        ' listing fixtures as /f/ names them: {"description": "...", "turns":'
        ' ["openai/valid_fragmented", "openai/text_only"]}. After its last turn a request gets a'
        " 400 saying it has ended."
        " Each scenario's position is the server's, shared by all connections; POST"
        " `/s/<scenario>/reset` (or a restart) starts it over; GET `/s/<scenario>/status` answers"
        ' where it stands ({"scenario", "turns", "served", "requests", "ended"}). --mutate and'
        " x-callgate-mutate apply to a scenario's tool turns only; its text turns are served as"
        " they are. -v writes one line per request to stderr.",
        "--samples serves the fixtures that come with callgate, with or without paths: a passing"
        " and a failing turn per API, `/f/<api>/pass/` and `/f/<api>/fail/` (openai, anthropic,"
        " openai-responses, gemini, mistral, cohere, ollama, bedrock-converse).",
    ]
)


@app.command("serve", help=SERVE_HELP, epilog=EPILOGS["serve"])
def serve_command(
    paths: Annotated[
        list[Path] | None, typer.Argument(help="Fixture files or folders.", show_default=False)
    ] = None,
    samples: Annotated[
        bool, typer.Option(help="Serve the sample fixtures that come with callgate too.")
    ] = False,
    listen: Annotated[str, typer.Option(help="HOST:PORT to listen on.")] = "127.0.0.1:8000",
    timing: Annotated[
        str,
        typer.Option(
            help="fast, recorded (the gaps captured by the proxy), or seconds between events."
        ),
    ] = ("fast"),
    mutate: Annotated[
        str | None,
        typer.Option(help="Serve each fixture's variant of this kind (see callgate mutate)."),
    ] = None,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="One line per request on stderr.")
    ] = False,
) -> None:
    """A fake provider on loopback that streams fixtures (``SERVE_HELP``)."""
    from callgate.cli.serve import run_serve

    log = (lambda line: print(line, file=sys.stderr, flush=True)) if verbose else None
    exit_with(run_serve, paths or [], listen, timing, mutate, log, samples)


@app.command("mutate", epilog=EPILOGS["mutate"])
def mutate_command(
    fixture: Annotated[Path, typer.Argument(help="A passing fixture (or tape turn).")],
    kind: Annotated[
        list[str] | None,
        typer.Option(
            "--kind", help="A kind of fault or variation (repeatable; default: every kind)."
        ),
    ] = None,
    output_dir: Annotated[
        Path | None, typer.Option(help="Where the variants go (default: beside the fixture).")
    ] = None,
    out_dir: Annotated[Path | None, OLD_SPELLING] = None,
) -> None:
    """Derive faults and harmless variations from a passing turn, each checked and pinned:
    `<stem>.<kind>.json`. Exit 0, 1 when a kind asked for by name could not apply."""
    from callgate.cli.mutate import run_mutate

    exit_with(run_mutate, fixture, kind or [], out_dir or output_dir, sys.stdout, sys.stderr)


app.add_typer(tape_app)


@app.command("addon-path", epilog=EPILOGS["addon-path"])
def addon_path_command() -> None:
    """Print the path of the mitmproxy addon, for `mitmdump -s "$(callgate addon-path)"`."""
    from callgate import proxy_addon

    print(Path(proxy_addon.__file__).with_name("script.py"))


def _print_version(asked: bool) -> None:
    if asked:
        from callgate import __version__

        print(f"callgate {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version."
        ),
    ] = False,
) -> None:
    """callgate: gate, record, redact and replay streamed LLM tool calls."""


def main() -> None:
    app()
