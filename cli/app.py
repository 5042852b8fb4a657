"""The ``callgate`` command line: a thin typer face over functions that return exit codes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from cli.check import ReportFormat, run_check

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


@app.callback()
def _root() -> None:
    """callgate: gate, record, redact and replay streamed LLM tool calls."""


def main() -> None:
    app()
