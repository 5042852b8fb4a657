"""A long stream's argument-fragment events, redacted and written from the line of the first
event like them, where the events' JSON texts are at hand (the proxy's tap hands them over).

How this works: most events of a long Chat Completions stream are one call's argument fragment
(the profile's ``fragment_site``), and each differs from the call's one before only in its
argument text. Such an event's text is split around its ``arguments`` string: the text before
the string and the text after it name a template. The first event of a template is redacted and
written as every other event is. A later event whose text is the template's two parts with
exactly one JSON string between them parses to the first event with another argument text:
the part before lexes as it did (a lexer reads left to right), the string ends where the
scanner ends it, and the part after then lexes as it did. So its redacted line is the first
event's line with the event's own masked argument text in place of the first's.

Such events are masked with their call (the holder of their text stands where the event's
argument object would) and then left out of the scrub: outside the arguments they hold the very
strings the first event held, whose ids were given their pseudonyms then. Their values, which the
verdict gate judges and the envelope keeps, are the first event's redacted value with their own
argument text: the objects on the path to it are copied, the rest is shared (nothing changes a
redacted event). Neither parsing the event's text, nor the scrub's walk, nor the encoder is then
paid for most events of a long stream.

A template is learnt from an event only once a parse proves where its text was split: the text
with another string in place of the argument string parses to the event with that other
argument text. The learning is bounded (``MOST_TEMPLATES``): where every event differs from the
others outside its arguments, no event matches and the bound caps what learning costs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from callgate.reassemble.envelope import encoded_string, one_line_events
from callgate.reassemble.profiles.base import ArgumentSite, FragmentSite

#: Where an event's argument string starts: just after ``"arguments"`` and its colon.
_ARGUMENTS = re.compile(r'"arguments"[ \t\n\r]*:[ \t\n\r]*"')
#: Templates learnt per stream at most.
MOST_TEMPLATES = 64
#: Stands for the argument text while the first event's line is split; where the first event
#: holds it anywhere else, each event of the template is written alone (``split_line``).
_MARK = "\x00\x00callgate-arguments\x00\x00"
_SCAN_STRING: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


@dataclass
class _Template:
    #: The call's key, as ``argument_sites`` gives it for the first event.
    key: object
    #: The first event of the template, redacted in place with the others.
    first: dict[str, Any]
    #: The steps from the first event to its argument object.
    path: list[Any]
    #: The first event's line, redacted, before and after its argument string (``split_line``).
    line: tuple[str, str] | None = None
    split: bool = False

    def event(self, arguments: str) -> dict[str, Any]:
        """The first event, redacted, with ``arguments``: the objects and lists on the path to
        its argument object copied, the rest shared with it (no one changes a redacted event)."""
        root = node = self.first.copy()
        for step in self.path:
            child = node[step].copy()
            node[step] = child
            node = child
        node["arguments"] = arguments
        return root

    def split_line(self) -> tuple[str, str] | None:
        """``line``, found once; None when the mark stands anywhere else in the first event's
        line (each event is then written alone)."""
        if not self.split:
            self.split = True
            mark = encoded_string(_MARK)
            before, found, after = one_line_events([self.event(_MARK)])[0].partition(mark)
            if found and mark not in after:
                self.line = before, after
        return self.line


class FragmentLines:
    """The events of one stream that take their line from a template. ``parse`` reads the
    events' texts, learning templates and leaving out what it will write from one; ``sites``
    reads the argument sites as redaction does; ``write`` writes every event's line once the
    stream is redacted. ``fragment_site``: the profile's; without one, no event has a template.
    """

    def __init__(self, fragment_site: Callable[[Any], FragmentSite | None] | None) -> None:
        self._fragment_site = fragment_site
        self._templates: dict[tuple[str, str], _Template] = {}
        #: Event number -> its template and the holder of its argument text, which stands for
        #: its argument object (``{"arguments": text}``) while the stream is masked.
        self._matched: dict[int, tuple[_Template, dict[str, str]]] = {}
        #: The redacted events as ``one_line_events`` writes them, once ``write`` is done.
        self.lines: list[str] | None = None

    @property
    def learnt(self) -> int:
        """Templates learnt."""
        return len(self._templates)

    @property
    def from_templates(self) -> int:
        """Events written from a template."""
        return len(self._matched)

    def parse(self, texts: list[str]) -> list[Any]:
        """Each text's JSON value (each was read strictly already, or is a JSON string), but
        None for each event with a template, which is not parsed. A text with an argument
        string is parsed alone while templates may be learnt from it; the rest as one array."""
        fragment_site, templates, matched = self._fragment_site, self._templates, self._matched
        search, scan = _ARGUMENTS.search, _SCAN_STRING
        values: list[Any] = [None] * len(texts)
        together: list[int] = []
        for number, text in enumerate(texts):
            found = None if fragment_site is None else search(text)
            if found is not None:
                start = found.end() - 1  # the argument string's opening quote
                try:
                    arguments, end = scan(text, start + 1, True)
                except ValueError:
                    together.append(number)
                    continue
                parts = text[:start], text[end:]
                template = templates.get(parts)
                if template is not None:
                    matched[number] = template, {"arguments": arguments}
                    continue
                if len(templates) < MOST_TEMPLATES:
                    value = values[number] = json.loads(text)
                    self._learn(parts, value)
                    continue
            together.append(number)
        for number, value in zip(together, parse_texts([texts[n] for n in together]), strict=True):
            values[number] = value
        return values

    def _learn(self, parts: tuple[str, str], event: Any) -> None:
        assert self._fragment_site is not None
        fragment = self._fragment_site(event)
        if fragment is not None and _split_at_arguments(parts, event, fragment[1]):
            key, container, _ = fragment
            self._templates[parts] = _Template(key, event, _path(event, container))

    def sites(
        self,
        fragment_site: Callable[[Any], FragmentSite | None],
        event_sites: Callable[[Any, int], Iterator[ArgumentSite]],
        events: list[Any],
        covered: dict[int, set[str]],
        streams: dict[object, list[tuple[dict[str, Any], str]]],
    ) -> Iterator[ArgumentSite]:
        """``sites_event_by_event`` over ``events`` (as ``parse`` gave them), except that an
        event with a template is not yielded: the holder of its argument text joins its call's
        fragments in ``streams`` (where its first event, before it, put the call)."""
        matched = self._matched
        for number, event in enumerate(events):
            found = matched.get(number)
            if found is not None:
                streams[found[0].key].append((found[1], "arguments"))
                continue
            fragment = fragment_site(event)
            if fragment is None:
                yield from event_sites(event, number)
                continue
            key, container, member = fragment
            covered[id(event)] = {member}
            yield "stream", key, container, "arguments"

    def write(self, events: list[Any]) -> None:
        """Once ``events`` are redacted: the events with a template back in ``events``, and
        each event's line (``lines``)."""
        lines = one_line_events(events)
        for number, (template, holder) in self._matched.items():
            arguments = holder["arguments"]
            events[number] = template.event(arguments)
            line = template.split_line()
            lines[number] = (
                one_line_events([events[number]])[0]
                if line is None
                else line[0] + encoded_string(arguments) + line[1]
            )
        self.lines = lines


def _split_at_arguments(
    parts: tuple[str, str], event: dict[str, Any], function: dict[str, Any]
) -> bool:
    """Whether the string between ``parts`` is the event's argument text: the text with
    another string there parses to the event with that other argument text. (Were it another
    member's string, the parse would differ from the event in that member or in the arguments.)
    """
    original = function["arguments"]
    other = "x" if original == "" else ""
    function["arguments"] = other
    try:
        return bool(json.loads(parts[0] + encoded_string(other) + parts[1]) == event)
    except ValueError:
        return False
    finally:
        function["arguments"] = original


def _path(event: dict[str, Any], target: dict[str, Any]) -> list[Any]:
    """The steps from ``event`` to the object ``target`` within it."""
    stack: list[tuple[Any, list[Any]]] = [(event, [])]
    while stack:
        node, path = stack.pop()
        if node is target:
            return path
        if isinstance(node, dict):
            stack.extend((child, [*path, step]) for step, child in node.items())
        elif isinstance(node, list):
            stack.extend((child, [*path, step]) for step, child in enumerate(node))
    raise LookupError("the argument object is not within its event")


def parse_texts(texts: list[str]) -> list[Any]:
    """Each text's JSON value, the texts parsed as one array: member names repeated across
    events are then one string each (the parser's memo lasts a document), which look-ups and
    hashing gain from."""
    values = json.loads("[" + ",".join(texts) + "]") if texts else []
    if len(values) != len(texts):  # each text is one JSON value: this cannot happen
        raise ValueError(f"{len(texts)} event texts parsed as {len(values)} values")
    return values
