"""Mutated fixtures through the Python API: whatever the events hold, ``check`` answers with a
report (exit 0, 1 or 2) that is strict JSON, or raises ``EnvelopeError`` for a non-envelope, and
nothing else.

Each example takes a bundled fixture and changes its stream a few times: a value replaced by
one of many shapes (a lone surrogate, a huge integer, infinity, the wrong container, a terminal
reason), a member dropped or added under a name the profiles read, an event dropped or repeated.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from callgate import EnvelopeError, check
from callgate.reassemble import strict_json
from callgate.reassemble.profiles import PROFILES
from tests.conftest import CONFORMANCE, conformance_fixtures, load

FIXTURES = [load(path) for path in conformance_fixtures()]
SHAPES: list[object] = [None, True, False, 0, -1, 2**70, 1.5, float("inf"), float("nan"), "",
                        "x", "\ud800", [], {}, [1], {"a": 1}, "tool_calls", "tool_use", "STOP",
                        "completed", {"index": 0}, -0.0, 1e308, "[/x]", "\x1b[2J"]
NAMES = ["index", "id", "type", "name", "arguments", "delta", "choices", "finish_reason",
         "content_block", "partial_json", "output_index", "item", "candidates", "functionCall",
         "partialArgs", "jsonPath", "stop_reason", "error", "sequence_number"]


def mutate(value: Any, draw: st.DrawFn) -> None:
    """One change somewhere inside ``value`` (a list or an object), in place."""
    while True:
        if isinstance(value, dict) and value:
            key = draw(st.sampled_from(sorted(value)))
            action = draw(st.sampled_from(["replace", "drop", "add", "descend"]))
            if action == "replace":
                value[key] = copy.deepcopy(draw(st.sampled_from(SHAPES)))
            elif action == "drop":
                del value[key]
            elif action == "add":
                value[draw(st.sampled_from(NAMES))] = copy.deepcopy(draw(st.sampled_from(SHAPES)))
            if action != "descend" or not isinstance(value.get(key), dict | list):
                return
            value = value[key]
        elif isinstance(value, list) and value:
            index = draw(st.integers(0, len(value) - 1))
            action = draw(st.sampled_from(["replace", "drop", "repeat", "descend"]))
            if action == "replace":
                value[index] = copy.deepcopy(draw(st.sampled_from(SHAPES)))
            elif action == "drop":
                del value[index]
            elif action == "repeat":
                value.insert(index, copy.deepcopy(value[index]))
            if action != "descend" or not isinstance(value[index], dict | list):
                return
            value = value[index]
        else:
            return


@st.composite
def mutated_fixtures(draw: st.DrawFn) -> dict[str, Any]:
    envelope = copy.deepcopy(draw(st.sampled_from(FIXTURES)))
    stream = envelope[PROFILES[envelope["profile"]].stream_key]
    for _ in range(draw(st.integers(1, 5))):
        mutate(stream, draw)
    return envelope


def with_lone_surrogate_id() -> dict[str, Any]:
    """Found by a longer run: a call id that is a lone surrogate reached the report as is."""
    envelope = copy.deepcopy(load(CONFORMANCE / "openai" / "valid_fragmented.json"))
    envelope["chunks"][0]["choices"][0]["delta"]["tool_calls"][0]["id"] = "\ud800"
    return envelope


@settings(max_examples=1000, deadline=None)
@example(with_lone_surrogate_id())
@given(mutated_fixtures())
def test_any_mutated_stream_gets_a_strict_json_report_or_an_envelope_error(
        envelope: dict[str, Any]) -> None:
    try:
        report = check(envelope)
    except EnvelopeError:
        return
    assert report.exit_code in (0, 1, 2)
    strict_json.loads(json.dumps(report.to_dict(), allow_nan=False))
