"""Where every command's output goes through: consoles that never parse markup, text that can
carry no terminal control sequence, and error lines.

Fixture text and file names are untrusted: a ``provider``, a ``description``, a tool name, an id
or a path may hold ``[/x]`` or ``[link=...]``, which rich parses as markup unless told not to, or
``ESC [2J`` and ``ESC ] 0;title BEL``, which a terminal executes. Each console here is made with
markup off and styles are applied with ``Text`` spans; every untrusted string goes through
``safe`` first, which writes control characters out as ``\\xNN``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

import typer

from callgate.reassemble.errors import CallgateError

if TYPE_CHECKING:  # rich is imported where it prints: a command that prints JSON never loads it
    from rich.console import Console
    from rich.text import Text

#: The exit code of every ``CallgateError``, whatever the command.
ERROR_EXIT = 2


def console(
    file: TextIO, *, width: int | None = None, terminal: bool | None = None, soft_wrap: bool = True
) -> Console:
    """A console that prints text as given: no markup, no highlighting."""
    from rich.console import Console

    return Console(
        file=file,
        width=width,
        force_terminal=terminal,
        markup=False,
        highlight=False,
        soft_wrap=soft_wrap,
    )


#: C0 controls but tab and newline, DEL and the C1 controls (ESC starts a terminal sequence; a
#: C1 CSI does so alone on some terminals).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_LINE_BREAK = re.compile("[\n\r\u2028\u2029]")


def safe(text: object, *, one_line: bool = False) -> str:
    """``text`` with control characters written out (``\\x1b``); with ``one_line`` line breaks
    too, so that one problem stays one line."""
    shown = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))
    return _LINE_BREAK.sub(lambda m: f"\\u{ord(m.group()):04x}", shown) if one_line else shown


def styled(*parts: str | tuple[str, str]) -> Text:
    """One line from plain strings and ``(text, style)`` pairs; the text is never markup and
    carries no control character."""
    from rich.text import Text

    return Text.assemble(
        *(
            safe(part, one_line=True)
            if isinstance(part, str)
            else (safe(part[0], one_line=True), part[1])
            for part in parts
        )
    )


def line(text: str, file: TextIO) -> None:
    """Print one line of output that holds untrusted text (a path, a reason)."""
    print(safe(text, one_line=True), file=file)


def error_line(error: CallgateError | str, err: TextIO) -> int:
    """Print ``callgate: <the error's one line>`` on ``err``; return the exit code for it."""
    line(f"callgate: {error}", err)
    return ERROR_EXIT


def exit_with(run: Callable[..., int], *arguments: Any) -> NoReturn:
    """Run a command and exit with its code. Every command maps a ``CallgateError`` the same
    way: its one line on stderr, exit 2."""
    try:
        code = run(*arguments)
    except CallgateError as error:
        code = error_line(error, sys.stderr)
    raise typer.Exit(code)


def usage(example: str, exits: str) -> str:
    """A help page's epilog: one example and the exit codes."""
    return f"Example: `{example}`\n\nExit codes: {exits}."
