"""callgate's errors: one family, each error carrying the one line the command line prints.

How this works: everything callgate raises on purpose is a ``CallgateError``, and ``str()`` of
one is a single line naming what is wrong, prefixed with the file or source it is about when
there is one. Every command prints that line after ``callgate: `` and exits 2. The kind says
whose move it is:

- ``InputError``: the data is not what it should be (a file that is not strict JSON, not an
  envelope, not a recording; a stream body that cannot be read). Fix the input.
- ``UsageError``: callgate was called in a way it cannot honour (an option value, a name it does
  not know, a fixture an adapter cannot read). Fix the command.
- ``SetupError``: this machine lacks something (a package, an interpreter). Install it.

Two more are not failures of the input but answers about it: ``NotApplicable`` (an exchange is
not a streamed model call callgate reads; importers skip it with this reason) and
``RedactionRefused`` (writing a fixture would leak a secret or change its verdict).

Provider data is never an exception: a broken stream is a finding in the report.
"""

from __future__ import annotations

from pathlib import Path


class CallgateError(Exception):
    """Base of the family. ``problem`` is the line; ``source`` (a path, a label), when given,
    is put in front of it."""

    def __init__(self, problem: str, source: Path | str | None = None) -> None:
        super().__init__(problem if source is None else f"{source}: {problem}")
        self.problem = problem
        self.source = source


class InputError(CallgateError):
    """The data given cannot be used."""


class UsageError(CallgateError):
    """callgate was called in a way it cannot honour."""


class SetupError(CallgateError):
    """This machine lacks something callgate needs for what was asked."""


class NotApplicable(CallgateError):
    """The exchange is not a streamed model call callgate reads; the line says why."""


class RedactionRefused(CallgateError):
    """Writing this fixture would leak a secret or change its verdict; the line says where."""
