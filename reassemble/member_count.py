"""Proving from a text that no object in it repeats a member name, without a hook per member.

How this works: the C scanner builds each object itself, keeping one member of each name, and
an object hook notes how many members it kept (``counting_hook``). A member written is a name,
whitespace and a ``:``, and a ``:`` outside strings does nothing else, so a text holds at least
as many colons as members written, and members written are at least the members kept: when the
kept count equals ``text.count(":")``, no name repeated. Where strings hold colons (argument
fragments such as ``{\\"city\\":``, or any prose), ``members_proven`` counts closer: the quotes
that end a name, told from escaped ones by the backslashes before them. What neither proves is
read again with the member-name hook.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def members_proven(text: str, kept: int, colons: int) -> bool:
    """Whether ``kept``, the members of every object a scan of ``text`` built, is every member
    written (no name repeated, since a repeated name keeps one member of two); ``colons`` is
    ``text.count(":")``. False when this cannot decide.

    With no whitespace before any ``:``, each name's closing quote, which an even run of
    backslashes precedes (none, or escaped backslashes), stands just before its colon. Quotes so
    placed are counted from the text (every ``":``, less those after at least one backslash,
    plus those after at least two, and so on), which also counts a string's opening quote before
    a ``:`` it starts with, and any after the value's end. So there are at least as many of them
    as members written, and at least as many members written as kept: when the count equals
    ``kept``, all three are equal. Whitespace before a colon is looked for only when some colon
    follows no quote. A string that starts with a colon right after a name (an argument
    fragment such as ``": 3}``) is taken off the count as ``_opened`` shows."""
    after_quotes = text.count('":')
    # A tab or carriage return is looked for alone first: a one-character search finds none in
    # a fixture file many times faster than a two-character search of the whole text does.
    if after_quotes != colons and (
        " :" in text
        or "\n:" in text
        or ("\t" in text and "\t:" in text)
        or ("\r" in text and "\r:" in text)
    ):
        return False
    quotes, sign, ending = after_quotes, -1, '\\":'
    while (found := text.count(ending)) != 0:
        quotes += sign * found
        sign, ending = -sign, "\\" + ending
    return quotes == kept or quotes - _opened(text) == kept


def _opened(text: str) -> int:
    """Quotes counted by ``members_proven`` that open a string: at least one in each ``":":``
    (or each ``": ":``) the text holds, none after a backslash. Its two quotes are both counted,
    and they cannot both end names: a name's colon is followed by a value, whose quote opens it.
    ``str.count`` finds the pairs without overlap, so no quote is taken off twice."""
    return max(
        0 if '\\":":' in text else text.count('":":'),
        0 if '\\": ":' in text else text.count('": ":'),
    )


def counting_hook(sizes: list[int]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """An object hook for the scanner that notes each object's member count on ``sizes`` and
    keeps the object as it is."""

    def count(obj: dict[str, Any], _append: Any = sizes.append, _len: Any = len) -> dict[str, Any]:
        # ``append`` and ``len`` as locals: the scanner calls this once per object.
        _append(_len(obj))
        return obj

    return count
