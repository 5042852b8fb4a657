"""The ``callgate`` command line: a thin typer face over functions that return exit codes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from cli.check import ReportFormat, run_check
from cli.importing import ImportOptions, run_import
from redact import ArgumentMode

app = typer.Typer(
    name="callgate",
    help="Decide whether the tool calls of a streamed LLM turn may be executed.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.command("check")
def check_command(
    fixtures: Annotated[list[Path], typer.Argument(help="Envelope JSON files to judge.")],
    report: Annotated[ReportFormat, typer.Option(help="json: one report per line; text: "
                                                 "a readable summary.")] = ReportFormat.json,
    allow_quirk: Annotated[list[str] | None, typer.Option(
        "--allow-quirk", help="Tolerate a named provider quirk (repeatable).")] = None,
) -> None:
    """Judge each fixture: exit 0 pass, 1 block, 2 invalid input or no streamed tool call."""
    code = run_check(fixtures, report, allow_quirk or [], sys.stdout, sys.stderr)
    raise typer.Exit(code)


@app.command("import")
def import_command(
    sources: Annotated[list[Path], typer.Argument(
        help="HAR files, mitmproxy flow files, VCR cassettes (.yaml), or raw bodies (.sse, "
             ".jsonl, .json).")],
    out: Annotated[Path | None, typer.Option(help="Write the one fixture here.")] = None,
    out_dir: Annotated[Path, typer.Option(help="Write fixtures into this folder.")] = Path("."),
    request: Annotated[Path | None, typer.Option(
        help="The request body of a raw body (its tools become the schemas).")] = None,
    profile: Annotated[str | None, typer.Option(
        help="openai, mistral or anthropic (default: from the URL or the body).")] = None,
    provider: Annotated[str | None, typer.Option(
        help="Who served it, any name (default: from the host); selects quirks.")] = None,
    url: Annotated[str | None, typer.Option(help="The request URL of a raw body.")] = None,
    arguments: Annotated[ArgumentMode, typer.Option(
        help="Tool-call arguments: mask string values, keep, or drop.")] = ArgumentMode.MASK,
    allow_verdict_change: Annotated[bool, typer.Option(
        help="Write even when redaction changes the verdict (recorded in meta).")] = False,
) -> None:
    """Turn recorded exchanges into redacted fixtures: prompts, credentials and output removed."""
    options = ImportOptions(out, out_dir, request, profile, provider, url, arguments,
                            allow_verdict_change)
    raise typer.Exit(run_import(sources, options, sys.stdout, sys.stderr))


@app.callback()
def _root() -> None:
    """callgate: gate, record, redact and replay streamed LLM tool calls."""


def main() -> None:
    app()
