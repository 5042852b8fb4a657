"""The Messages translator's short path for ``content_block_delta`` events of a ``tool_use``
block: held to the general reading, event by event and in the engine, over events changed in
up to two places (the short path is on the hot path of the proxy's tap, the guard and replay)."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from callgate import Reassembler
from callgate.reassemble.events import SlotDelta, SlotKey
from callgate.reassemble.limits import Limits
from callgate.reassemble.profiles import PROFILES
from callgate.reassemble.profiles.anthropic import MessagesTranslator
from tests.test_profiles import _DELETE, _changed


class _GeneralMessages(MessagesTranslator):
    """The Messages translator without its short path."""

    def continuation(self, raw: Any) -> tuple[SlotKey, str] | None:
        return None


#: Where a delta event can differ, and how: (the path of a container, key, new value).
_CHANGES = [
    *(((), "type", value) for value in ("content_block_start", "message_delta", "x", 1, _DELETE)),
    *(((), "index", value) for value in (0, 1, 2, 5, -1, True, "1", 1.0, None, _DELETE)),
    *(((), "delta", value) for value in (None, "x", [], {}, _DELETE)),
    *(((), "extra", value) for value in (None, {"a": 1})),
    *((("delta",), "type", value) for value in ("text_delta", "thinking_delta", None, 1, _DELETE)),
    *((("delta",), "partial_json", value) for value in (None, "", 1, ["x"], _DELETE)),
    *((("delta",), "text", value) for value in ("hi", None)),
]

#: A text block on index 0, a tool_use block on index 1, a thinking block on index 2.
_STARTS = [
    {"type": "message_start", "message": {"id": "msg_1", "content": []}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {
        "type": "content_block_start",
        "index": 1,
        "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}},
    },
    {"type": "content_block_start", "index": 2, "content_block": {"type": "thinking"}},
]
_ENDS = [
    {"type": "content_block_stop", "index": 0},
    {"type": "content_block_stop", "index": 1},
    {"type": "content_block_stop", "index": 2},
    {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
    {"type": "message_stop"},
]


def _delta(text: str) -> dict[str, Any]:
    return {
        "type": "content_block_delta",
        "index": 1,
        "delta": {"type": "input_json_delta", "partial_json": text},
    }


ChangeList = list[list[tuple[tuple[Any, ...], Any, Any]]]


@settings(max_examples=1000, deadline=None)
@given(changes=st.lists(st.lists(st.sampled_from(_CHANGES), max_size=2), min_size=1, max_size=3))
def test_the_messages_short_path_reads_each_delta_as_the_general_reading_does(
    changes: ChangeList,
) -> None:
    short, general = MessagesTranslator(), _GeneralMessages()
    for event in [*_STARTS, *(_changed(_delta("x"), some) for some in changes)]:
        fast = short.continuation(event)
        read = general.translate(event)
        if fast is not None:  # the one event the general reading makes of it
            assert read == [SlotDelta(fast[0], MessagesTranslator.continuation_pointer, fast[1])]
        assert short.translate(event) == read
        assert vars(short) == vars(general)


#: The Messages profile read without the translator's short path, in the engine too.
_GENERAL_PROFILE = dataclasses.replace(
    PROFILES["anthropic"], translator=lambda quirks, request: _GeneralMessages()
)


@settings(max_examples=500, deadline=None)
@given(
    changes=st.lists(st.lists(st.sampled_from(_CHANGES), max_size=2), min_size=1, max_size=4),
    texts=st.lists(st.sampled_from(["x", "", "é", "\ud800", "{}", "yyyyyy"]), min_size=1),
    max_bytes=st.sampled_from([4, 9, 1 << 20]),
)
def test_the_engine_reads_a_short_delta_as_it_reads_the_general_event(
    changes: ChangeList, texts: list[str], max_bytes: int
) -> None:
    """The same findings after each event and the same report as with the general reading,
    over deltas changed as above, texts of other widths and a limit the text can pass."""
    events: list[Any] = list(_STARTS)
    for some, text in zip(changes, itertools.cycle(texts), strict=False):
        events.append(_changed(_delta(text), some))
    events += _ENDS
    limits = Limits(max_argument_bytes=max_bytes)
    PROFILES["anthropic-general"] = _GENERAL_PROFILE
    try:
        short = Reassembler("anthropic", [{"name": "f", "input_schema": {}}], limits=limits)
        general = Reassembler(
            "anthropic-general", [{"name": "f", "input_schema": {}}], limits=limits
        )
    finally:
        del PROFILES["anthropic-general"]
    for event in events:
        assert short.feed(event) == general.feed(event)
    assert short.close() == general.close()
