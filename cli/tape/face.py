"""``callgate tape``'s typer face: ``serve`` and ``run`` over ``callgate.cli.tape.command``."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from callgate.cli.output import error_line, exit_with, usage
from callgate.reassemble.errors import CallgateError

if TYPE_CHECKING:  # imported when a command runs, as app.py imports each command's module
    from callgate.cli.tape.command import TapeOptions

tape_app = typer.Typer(
    name="tape",
    help="Tapes for any test runner: a folder of tapes served at `/t/<tape>/` on loopback.",
    epilog=usage("callgate tape run tests/tapes -- pytest -q", "those of its commands"),
    no_args_is_help=True,
)

#: The options ``tape serve`` and ``tape run`` share, as typer takes them.
RecordModeOption = Annotated[
    str | None,
    typer.Option(
        "--record-mode",
        help="none (replay only, the default), once (record a tape that has no files), "
        "new_episodes or all. Wins over $CALLGATE_RECORD_MODE.",
    ),
]
UpstreamOption = Annotated[
    list[str] | None,
    typer.Option(
        "--upstream",
        metavar="NAME=URL",
        help="Record route NAME (openai, anthropic, mistral, gemini, ollama) from URL instead "
        "of the provider's public host. Repeatable.",
    ),
]
RedactionOption = Annotated[
    str, typer.Option(help="replay (keep the model's text and arguments) or strict.")
]
AllowOption = Annotated[
    list[str] | None,
    typer.Option("--allow", help="A blocking code a recorded turn may have (repeatable)."),
]
AllowUnusedOption = Annotated[
    bool, typer.Option(help="Recorded exchanges the app did not request fail no tape.")
]
MutateOption = Annotated[
    str | None,
    typer.Option(help="Serve every tape as its variants of this kind (see callgate mutate)."),
]


def _tape_options(
    folder: Path,
    record_mode: str | None,
    upstream: list[str] | None,
    redaction: str,
    allow: list[str] | None,
    allow_unused: bool,
    mutate: str | None,
) -> TapeOptions:
    from callgate.cli.tape.command import TapeOptions

    try:
        return TapeOptions.parse(
            folder,
            record_mode,
            upstream or [],
            os.environ,
            redaction=redaction,
            allow=tuple(allow or ()),
            allow_unused=allow_unused,
            mutate=mutate,
        )
    except CallgateError as error:
        raise typer.Exit(error_line(error, sys.stderr)) from None


@tape_app.command(
    "serve",
    epilog=usage(
        "callgate tape serve tests/tapes --listen 127.0.0.1:8100",
        "0 every tape held when stopped, 1 a tape failed, 2 a bad option or tape",
    ),
)
def tape_serve_command(
    folder: Annotated[Path, typer.Argument(help="The folder of tapes: one folder per tape.")],
    listen: Annotated[str, typer.Option(help="HOST:PORT to listen on.")] = "127.0.0.1:8100",
    record_mode: RecordModeOption = None,
    upstream: UpstreamOption = None,
    redaction: RedactionOption = "replay",
    allow: AllowOption = None,
    allow_unused: AllowUnusedOption = False,
    mutate: MutateOption = None,
) -> None:
    """Serve `FOLDER/<tape>/` at `http://HOST:PORT/t/<tape>/` then the provider's path (a route name
    first picks the route: `/t/<tape>/mistral/v1/...`). On SIGINT or SIGTERM: one line per tape
    (served, unused, mismatched, blocking); exit 1 when a tape failed."""
    from callgate.cli.tape.command import run_tape_serve

    options = _tape_options(folder, record_mode, upstream, redaction, allow, allow_unused, mutate)
    exit_with(run_tape_serve, options, listen, sys.stdout, sys.stderr)


@tape_app.command(
    "run",
    epilog=usage(
        "callgate tape run tests/tapes -- pytest -q",
        "COMMAND's own, or 1 when it passed and a tape failed, 2 a bad option or tape",
    ),
)
def tape_run_command(
    folder: Annotated[Path, typer.Argument(help="The folder of tapes: one folder per tape.")],
    command: Annotated[
        list[str] | None, typer.Argument(help="The command to run, after --.")
    ] = None,
    tape: Annotated[
        str, typer.Option(help="The tape the SDK variables (OPENAI_BASE_URL...) point at.")
    ] = "default",
    record_mode: RecordModeOption = None,
    upstream: UpstreamOption = None,
    redaction: RedactionOption = "replay",
    allow: AllowOption = None,
    allow_unused: AllowUnusedOption = False,
    mutate: MutateOption = None,
) -> None:
    """Run COMMAND with the tapes served on a free loopback port: $CALLGATE_TAPE_URL, and the
    SDK variables pointing at --tape. Exit with COMMAND's code, or 1 when it passed and a tape
    failed."""
    from callgate.cli.tape.command import run_tape_run

    options = _tape_options(folder, record_mode, upstream, redaction, allow, allow_unused, mutate)
    exit_with(run_tape_run, options, command or [], tape, sys.stdout, sys.stderr)
