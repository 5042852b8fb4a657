"""Properties of the engine over generated streams (hypothesis).

- Re-splitting valid argument text at any boundaries gives the same calls, byte for byte.
- Interleaving two slots' events in any order that keeps each slot's own order changes nothing.
- Every strict prefix of a valid stream that stops before its terminal evidence fails.
- A second terminal inserted anywhere after the first tool event fails.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from callgate.reassemble import Status, check

SCHEMAS = {"f": True, "g": True}

json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                      st.floats(allow_nan=False, allow_infinity=False),
                      st.text(st.characters(blacklist_categories=("Cs",)), max_size=12))
arguments = st.dictionaries(st.text(max_size=6), json_leaf, max_size=5).map(
    lambda value: json.dumps(value, ensure_ascii=False))


@st.composite
def fragments(draw: st.DrawFn, text: str) -> list[str]:
    cuts = sorted(set(draw(st.lists(st.integers(0, len(text)), max_size=8))))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


@st.composite
def two_calls(draw: st.DrawFn) -> tuple[list[list[str]], list[int]]:
    """Fragments of two calls, and an interleaving that keeps each call's order."""
    parts = [draw(fragments(draw(arguments))), draw(fragments(draw(arguments)))]
    order = draw(st.permutations([0] * len(parts[0]) + [1] * len(parts[1])))
    return parts, order


def openai_stream(parts: list[list[str]], order: list[int]) -> list[dict[str, Any]]:
    def chunk(entry: dict[str, Any] | None, finish: str | None = None) -> dict[str, Any]:
        delta = {"tool_calls": [entry]} if entry else {}
        return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    names = ["f", "g"]
    stream = [chunk({"index": i, "id": f"call_{i}", "type": "function",
                     "function": {"name": names[i], "arguments": ""}}) for i in range(len(parts))]
    cursor = [0] * len(parts)
    for slot in order:
        stream.append(chunk({"index": slot, "function": {"arguments": parts[slot][cursor[slot]]}}))
        cursor[slot] += 1
    return [*stream, chunk(None, "tool_calls"), {"choices": [], "usage": {"total_tokens": 1}}]


def anthropic_stream(parts: list[list[str]], order: list[int]) -> list[dict[str, Any]]:
    names = ["f", "g"]
    stream: list[dict[str, Any]] = [{"type": "message_start", "message": {"content": []}}]
    stream += [{"type": "content_block_start", "index": i, "content_block": {
        "type": "tool_use", "id": f"toolu_{i}", "name": names[i], "input": {}}}
        for i in range(len(parts))]
    cursor = [0] * len(parts)
    for slot in order:
        stream.append({"type": "content_block_delta", "index": slot, "delta": {
            "type": "input_json_delta", "partial_json": parts[slot][cursor[slot]]}})
        cursor[slot] += 1
    stream += [{"type": "content_block_stop", "index": i} for i in range(len(parts))]
    return [*stream, {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
            {"type": "message_stop"}]


def run(profile: str, stream: list[dict[str, Any]]) -> Any:
    key = "events" if profile == "anthropic" else "chunks"
    return check({"profile": profile, "tool_schemas": SCHEMAS, key: stream})


def calls(report: Any) -> list[tuple[Any, ...]]:
    return [(c.id, c.name, c.arguments) for c in report.calls]


BUILDERS = {"openai": openai_stream, "anthropic": anthropic_stream}
TERMINAL_FROM_END = {"openai": 2, "anthropic": 2}  # finish chunk / message_delta position


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(sorted(BUILDERS)), two_calls())
def test_resplit_and_interleaved_streams_give_the_same_calls(profile: str, drawn: Any) -> None:
    parts, order = drawn
    whole = [["".join(parts[0])], ["".join(parts[1])]]
    reference = run(profile, BUILDERS[profile](whole, [0, 1]))
    report = run(profile, BUILDERS[profile](parts, order))
    assert reference.status is Status.PASS
    assert report.status is Status.PASS
    assert calls(report) == calls(reference)
    assert [c.arguments for c in report.calls] == ["".join(parts[0]), "".join(parts[1])]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(BUILDERS)), two_calls(), st.data())
def test_every_prefix_before_the_terminal_fails(profile: str, drawn: Any,
                                                data: st.DataObject) -> None:
    stream = BUILDERS[profile](*drawn)
    terminal = len(stream) - TERMINAL_FROM_END[profile]
    cut = data.draw(st.integers(1, terminal))
    report = run(profile, stream[:cut])
    # fail once a call has started, invalid before: never a pass, and only the end is missing
    assert report.status in (Status.FAIL, Status.INVALID)
    assert report.blocking_codes == ["missing_terminal"]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(BUILDERS)), two_calls(), st.data())
def test_a_second_terminal_anywhere_after_the_first_call_event_fails(
        profile: str, drawn: Any, data: st.DataObject) -> None:
    stream = BUILDERS[profile](*drawn)
    terminal = stream[len(stream) - TERMINAL_FROM_END[profile]]
    first_call = 1 if profile == "anthropic" else 0
    position = data.draw(st.integers(first_call + 1, len(stream)))
    report = run(profile, [*stream[:position], terminal, *stream[position:]])
    assert report.status is Status.FAIL
    assert {"duplicate_terminal", "delta_after_terminal"} & set(report.blocking_codes)
