"""``callgate explain [NAME]``: what a finding code means, what causes it, how to recover; what
a provider quirk tolerates; with no name, every code and quirk, one line each.

How this works: a code's text is looked up in ``callgate.reassemble.catalogue.CATALOGUE``, the
same entries ``docs/findings.md`` is generated from, and a quirk's in
``callgate.reassemble.quirks.QUIRKS``; both are printed verbatim (no rewrapping) so the terminal,
the docs and the tables can never say different things. A name is read in any case, with ``-``
or ``_`` between its words (``Identity-Collision`` is ``identity_collision``).
"""

from __future__ import annotations

from typing import TextIO

from callgate.cli.output import error_line
from callgate.reassemble.catalogue import CATALOGUE, Entry
from callgate.reassemble.codes import Code
from callgate.reassemble.quirks import QUIRKS, Quirk


def run_explain(code: str | None, out: TextIO, err: TextIO) -> int:
    """Print ``code``'s catalogue entry (or the quirk of that name) to ``out`` and return 0; with
    no ``code``, every code and quirk, one line each.

    An unknown name prints one line naming the known codes to ``err`` and returns 2, the exit code
    callgate uses for input it cannot use.
    """
    if code is None:
        out.write(listing())
        return 0
    name = code.strip().lower().replace("-", "_")
    entry, quirk = _lookup(name), QUIRKS.get(name)
    if entry is None and quirk is None:
        known = ", ".join(sorted(c.value for c in CATALOGUE))
        return error_line(
            f"unknown finding code {code!r}; known: {known} (quirks: `callgate explain`)", err
        )
    # A name can be both (missing_call_id): the code first, then the quirk that relaxes it.
    texts = [explanation(*entry)] if entry is not None else []
    texts += [quirk_explanation(quirk)] if quirk is not None else []
    out.write("\n".join(texts))
    return 0


def listing() -> str:
    """Every finding code with its meaning, then every quirk with the code it relaxes."""
    lines = ["Finding codes (callgate explain CODE):"]
    lines += [f"  {code.value}: {entry.meaning}" for code, entry in CATALOGUE.items()]
    lines += ["", "Provider quirks (--allow-quirk NAME; callgate explain NAME):"]
    lines += [f"  {quirk.name}: relaxes {quirk.relaxes.value}" for quirk in QUIRKS.values()]
    return "\n".join(lines) + "\n"


def quirk_explanation(quirk: Quirk) -> str:
    """The text ``callgate explain`` prints for one quirk, ending with a newline."""
    return (
        f"{quirk.name} (a provider quirk; --allow-quirk {quirk.name})\n\n"
        f"Tolerates: {quirk.description}\n\n"
        f"Relaxes: {quirk.relaxes.value}\n\n"
        f"Seen from: {quirk.seen_from}\n"
    )


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
