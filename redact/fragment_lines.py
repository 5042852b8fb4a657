"""A long stream's argument-fragment events, redacted and written from the line of the first
event like them, where the events' JSON texts are at hand (the proxy's tap hands them over).

How this works: the texts are read as ``callgate.reassemble.fragment_templates`` tells them
apart: the first event of each template is parsed, redacted and written as every other event
is; a later event of the template is not parsed. Its argument text is masked with its call's
(the holder of its text stands where the event's argument object would), and it is left out of
the scrub: outside the arguments it holds the very strings the first event held, whose ids were
given their pseudonyms then. Its line is the first event's redacted line with its own masked
argument text in place of the first's, and its value, which the verdict gate judges and the
envelope keeps, the first event's redacted value with that text (``Template.event``). Neither
parsing its text, nor the scrub's walk, nor the encoder is then paid for most events of a long
stream.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from callgate.reassemble.envelope import encoded_string, one_line_events
from callgate.reassemble.fragment_templates import Template, Templates
from callgate.reassemble.profiles.base import ArgumentSite, FragmentSite


class FragmentLines:
    """The events of one stream that take their line from a template. ``parse`` reads the
    events' texts, learning templates and leaving out what it will write from one; ``sites``
    reads the argument sites as redaction does; ``write`` writes every event's line once the
    stream is redacted. ``fragment_site``: the profile's; without one, no event has a template.
    """

    def __init__(self, fragment_site: Callable[[Any], FragmentSite | None] | None) -> None:
        self._templates = None if fragment_site is None else Templates(fragment_site)
        #: Event number -> its template and the holder of its argument text, which stands for
        #: its argument object (``{"arguments": text}``) while the stream is masked.
        self._matched: dict[int, tuple[Template, dict[str, str]]] = {}
        #: The redacted events as ``one_line_events`` writes them, once ``write`` is done.
        self.lines: list[str] | None = None

    @property
    def learnt(self) -> int:
        """Templates learnt."""
        return 0 if self._templates is None else self._templates.learnt

    @property
    def from_templates(self) -> int:
        """Events written from a template."""
        return len(self._matched)

    def parse(self, texts: list[str]) -> list[Any]:
        """Each text's JSON value (each was read strictly already, or is a JSON string), but
        None for each event with a template, which is not parsed. A text with an argument
        string that matches no template is parsed alone, to learn one from (up to
        ``MOST_UNMATCHED`` such texts); the rest as one array."""
        templates, matched = self._templates, self._matched
        if templates is None:
            return parse_texts(texts)
        values: list[Any] = [None] * len(texts)
        together: list[int] = []
        for number, text in enumerate(texts):
            found = templates.find(text)
            if found is None:
                together.append(number)
                continue
            parts, arguments, template = found
            if template is not None:
                matched[number] = template, {"arguments": arguments}
                continue
            value = values[number] = json.loads(text)
            templates.learn(parts, value)
        for number, value in zip(together, parse_texts([texts[n] for n in together]), strict=True):
            values[number] = value
        return values

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


def parse_texts(texts: list[str]) -> list[Any]:
    """Each text's JSON value, the texts parsed as one array: member names repeated across
    events are then one string each (the parser's memo lasts a document), which look-ups and
    hashing gain from."""
    values = json.loads("[" + ",".join(texts) + "]") if texts else []
    if len(values) != len(texts):  # each text is one JSON value: this cannot happen
        raise ValueError(f"{len(texts)} event texts parsed as {len(values)} values")
    return values
