"""Argument-fragment events told apart by their text alone: most events of a long Chat
Completions stream are one call's argument fragment (the profile's ``fragment_site``), each the
call's fragment before with another argument text.

How this works: an event's text is split around its ``arguments`` string (``split_arguments``);
the text before the string and the text after it name a ``Template``, learnt from the first
event with them (``learn``). A later event whose text is those two parts with exactly one JSON
string between them is the first event with that string's text as its arguments: the part
before lexes as it did (a lexer reads left to right), the string ends where the scanner ends it,
and the part after then lexes as it did. Its value is then built from the first event's
(``Template.event``) instead of being parsed, and its one-line text from the first event's
(``Template.split_line``). A template is learnt only once a parse proves where the text was
split: the text with another string in place of the argument string parses to the event with
that other argument text. The proxy's tap reads events this way (``readers.template_reader``),
and so does the fixture writer (``callgate.redact.fragment_lines``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from callgate.reassemble.envelope import encoded_string, one_line_events
from callgate.reassemble.profiles.base import FragmentSite

#: Where an event's argument string starts: just after ``"arguments"`` and its colon.
_ARGUMENTS = re.compile(r'"arguments"[ \t\n\r]*:[ \t\n\r]*"')
#: Events with an argument string that match no template, per stream, before the matching
#: stops: where every event differs from the others outside its arguments (OpenAI's per-chunk
#: padding), or none is a plain fragment (a server that repeats a call's id in every chunk),
#: nothing matches, and past the bound the events are read as they were without templates.
#: (Each template is learnt from one of these, so this also bounds the templates.) A stream of
#: 16 parallel calls whose starts all come first has 32 such events before its first match.
MOST_UNMATCHED = 32
#: Stands for the argument text while the first event's line is split; where the first event
#: holds it anywhere else, each event of the template is written alone (``split_line``).
MARK = "\x00\x00callgate-arguments\x00\x00"
_SCAN_STRING: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]

#: The text before an event's argument string and the text after it.
Parts = tuple[str, str]


def split_arguments(text: str) -> tuple[Parts, str] | None:
    """The text before the first string after ``"arguments":`` and the text after it, and what
    the string holds; None without one (or where the string is not one a strict scanner reads)."""
    found = _ARGUMENTS.search(text)
    if found is None:
        return None
    start = found.end() - 1  # the string's opening quote
    try:
        arguments, end = _SCAN_STRING(text, start + 1, True)
    except ValueError:
        return None
    return (text[:start], text[end:]), arguments


@dataclass
class Template:
    #: The call's key, as ``fragment_site`` gives it for the first event.
    key: object
    #: The first event of the template (the fixture writer redacts it in place).
    first: dict[str, Any]
    #: The steps from the first event to its argument object.
    path: list[Any]
    #: The first event's line, before and after its argument string (``split_line``).
    line: Parts | None = None
    split: bool = False

    def event(self, arguments: str) -> dict[str, Any]:
        """The first event with ``arguments``: the objects and lists on the path to its argument
        object copied, the rest shared with it (so no one may change either)."""
        root = node = self.first.copy()
        for step in self.path:
            child = node[step].copy()
            node[step] = child
            node = child
        node["arguments"] = arguments
        return root

    def split_line(self) -> Parts | None:
        """``line``, found once (the first event as it is then, redacted or not); None when the
        mark stands anywhere else in the first event's line."""
        if not self.split:
            self.split = True
            mark = encoded_string(MARK)
            before, found, after = one_line_events([self.event(MARK)])[0].partition(mark)
            if found and mark not in after:
                self.line = before, after
        return self.line


def learn(
    parts: Parts, event: Any, fragment_site: Callable[[Any], FragmentSite | None]
) -> Template | None:
    """The template of ``event``, parsed from the text ``parts`` were split from, when it is an
    argument fragment and the string between ``parts`` is its argument text; else None."""
    fragment = fragment_site(event)
    if fragment is None:
        return None
    key, function, _ = fragment
    original = function["arguments"]
    other = "x" if original == "" else ""
    function["arguments"] = other
    try:
        # Were the string another member's, the parse would differ from the event in that
        # member or in the arguments.
        split_there = json.loads(parts[0] + encoded_string(other) + parts[1]) == event
    except ValueError:
        split_there = False
    finally:
        function["arguments"] = original
    return Template(key, event, _path(event, function)) if split_there else None


def _path(event: dict[str, Any], target: dict[str, Any]) -> list[Any]:
    """The steps from ``event`` to the object ``target`` within it."""
    stack: list[tuple[Any, list[Any]]] = [(event, [])]
    while stack:
        node, path = stack.pop()
        if node is target:
            return path
        steps = node.items() if type(node) is dict else enumerate(node)
        stack.extend((child, [*path, step]) for step, child in steps if type(child) in (dict, list))
    raise LookupError("the argument object is not within its event")
