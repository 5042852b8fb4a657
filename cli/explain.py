"""``callgate explain CODE``: what a finding code means, what causes it, how to recover.

How this works: the text is looked up in ``callgate.reassemble.catalogue.CATALOGUE``, the same
entries
``docs/findings.md`` is generated from, and printed verbatim (no rewrapping) so the terminal, the
docs and the catalogue can never say different things.
"""

from __future__ import annotations

from typing import TextIO

from callgate.cli.output import error_line
from callgate.reassemble.catalogue import CATALOGUE, Entry
from callgate.reassemble.codes import Code


def run_explain(code: str, out: TextIO, err: TextIO) -> int:
    """Print ``code``'s catalogue entry to ``out`` and return 0.

    An unknown code prints one line naming the known codes to ``err`` and returns 2, the exit code
    callgate uses for input it cannot use.
    """
    entry = _lookup(code.strip())
    if entry is None:
        known = ", ".join(sorted(c.value for c in CATALOGUE))
        return error_line(f"unknown finding code {code!r}; known: {known}", err)
    found, text = entry
    out.write(explanation(found, text))
    return 0


def explanation(code: Code, entry: Entry) -> str:
    """The text ``callgate explain`` prints for one code, ending with a newline."""
    return (
        f"{code.value}\n\n"
        f"Meaning: {entry.meaning}\n\n"
        f"Typical causes: {entry.causes}\n\n"
        f"Recovery: {entry.recovery}\n"
    )


def _lookup(code: str) -> tuple[Code, Entry] | None:
    # Codes are the stable wire values; matching them exactly keeps "explain" and "check"
    # output interchangeable (what check prints is what explain accepts).
    try:
        known = Code(code)
    except ValueError:
        return None
    entry = CATALOGUE.get(known)
    return None if entry is None else (known, entry)
