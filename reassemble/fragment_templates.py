"""Argument-fragment events told apart by their text alone: most events of a long Chat
Completions stream are one call's argument fragment (the profile's ``fragment_site``), each the
call's fragment before with another argument text.

How this works: an event's text is split around its ``arguments`` string (``Templates.find``);
the text before the string and the text after it name a ``Template``, learnt from the first
event with them (``Templates``). A later event whose text is those two parts with exactly one JSON
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


class Templates:
    """One stream's templates, as its events' texts come, and the bound on those that match
    none (``MOST_UNMATCHED``)."""

    def __init__(self, fragment_site: Callable[[Any], FragmentSite | None]) -> None:
        self._fragment_site = fragment_site
        self._learnt: dict[Parts, Template] = {}
        self._unmatched = 0

    @property
    def learnt(self) -> int:
        return len(self._learnt)

    @property
    def given_up(self) -> bool:
        """``MOST_UNMATCHED`` texts matched no template: no text is split any more."""
        return self._unmatched >= MOST_UNMATCHED

    def find(self, text: str) -> tuple[Parts, str, Template | None] | None:
        """The text split around the first string after ``"arguments":`` (the text before the
        string and the text after it), what the string holds, and the text's template: None
        when none matches (the text counts toward the bound, and its value may teach one:
        ``learn``). None for a text without such a string (or one a strict scanner does not
        read), or once ``given_up``."""
        # Written out, not in a helper: this runs for nearly every event the proxy reads.
        if self._unmatched >= MOST_UNMATCHED:
            return None
        found = _ARGUMENTS.search(text)
        if found is None:
            return None
        start = found.end() - 1
        try:
            arguments, end = _SCAN_STRING(text, start + 1, True)
        except ValueError:
            return None
        parts = text[:start], text[end:]
        template = self._learnt.get(parts)
        if template is None:
            self._unmatched += 1
        return parts, arguments, template

    def learn(self, parts: Parts, event: Any) -> None:
        """Learn the template of ``event``, parsed from the text ``parts`` were split from,
        when it is an argument fragment and the string between ``parts`` is its argument text.
        """
        fragment = self._fragment_site(event) if type(event) is dict else None
        if fragment is None:
            return
        key, function, _ = fragment
        original = function["arguments"]
        other = "x" if original == "" else ""
        function["arguments"] = other
        try:
            # Were the string another member's, the parse would differ from the event in that
            # member or in the arguments. The text parses: ``parts`` hold a whole JSON text but
            # for one string (``find``), and ``other`` is written as a JSON string.
            split_there = json.loads(parts[0] + encoded_string(other) + parts[1]) == event
        finally:
            function["arguments"] = original
        if split_there:
            self._learnt[parts] = Template(key, event, _path(event, function))


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
