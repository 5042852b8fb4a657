"""Where every command's output goes through: consoles that never parse markup, and error lines.

Fixture text is untrusted: a ``provider``, a ``description``, a tool name or an id may hold
``[/x]`` or ``[link=...]``. rich parses markup in every string it is given unless told not to, so
each console here is made with markup off and styles are applied with ``Text`` spans instead.
"""

from __future__ import annotations

from typing import TextIO

from rich.console import Console
from rich.text import Text

from callgate.reassemble.errors import CallgateError

#: The exit code of every ``CallgateError``, whatever the command.
ERROR_EXIT = 2


def console(file: TextIO, *, width: int | None = None, terminal: bool | None = None,
            soft_wrap: bool = True) -> Console:
    """A console that prints text as given: no markup, no highlighting."""
    return Console(file=file, width=width, force_terminal=terminal, markup=False,
                   highlight=False, soft_wrap=soft_wrap)


def styled(*parts: str | tuple[str, str]) -> Text:
    """One line from plain strings and ``(text, style)`` pairs; the text is never markup."""
    return Text.assemble(*parts)


def error_line(error: CallgateError | str, err: TextIO) -> int:
    """Print ``callgate: <the error's one line>`` on ``err``; return the exit code for it."""
    print(f"callgate: {error}", file=err)
    return ERROR_EXIT
