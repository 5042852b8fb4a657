"""Properties of the engine over generated streams (hypothesis), for every profile.

- Re-splitting valid argument text at any boundaries gives the same calls, byte for byte.
- Interleaving two slots' events in any order that keeps each slot's own order changes nothing.
- Every strict prefix of a valid stream that stops before its terminal evidence fails.
- A second terminal inserted anywhere after the first tool event fails.

Each profile has a builder that writes two calls in its own wire shape from fragments of their
argument text. Gemini's calls stream as Vertex ``partialArgs``: the fragments are pieces of one
string value (``$.v``), and one call's pieces come before the next call's (Vertex streams one
call at a time; interleaved pieces are blocked by design).
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from callgate.reassemble import Status, check
from callgate.reassemble.errors import NotApplicable
from callgate.reassemble.mutations import KINDS, mutate
from callgate.reassemble.profiles import PROFILES
from tests.conftest import gemini_chunk

SCHEMAS = {"f": True, "g": True}

json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=12),
)
arguments = st.dictionaries(st.text(max_size=6), json_leaf, max_size=5).map(
    lambda value: json.dumps(value, ensure_ascii=False)
)


@st.composite
def fragments(draw: st.DrawFn, text: str) -> list[str]:
    cuts = sorted(set(draw(st.lists(st.integers(0, len(text)), max_size=8))))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def openai_stream(parts: list[list[str]], order: list[int]) -> list[dict[str, Any]]:
    def chunk(entry: dict[str, Any] | None, finish: str | None = None) -> dict[str, Any]:
        delta = {"tool_calls": [entry]} if entry else {}
        return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    names = ["f", "g"]
    stream = [
        chunk(
            {
                "index": i,
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": names[i], "arguments": ""},
            }
        )
        for i in range(len(parts))
    ]
    cursor = [0] * len(parts)
    for slot in order:
        stream.append(chunk({"index": slot, "function": {"arguments": parts[slot][cursor[slot]]}}))
        cursor[slot] += 1
    return [*stream, chunk(None, "tool_calls"), {"choices": [], "usage": {"total_tokens": 1}}]


def anthropic_stream(parts: list[list[str]], order: list[int]) -> list[dict[str, Any]]:
    names = ["f", "g"]
    stream: list[dict[str, Any]] = [{"type": "message_start", "message": {"content": []}}]
    stream += [
        {
            "type": "content_block_start",
            "index": i,
            "content_block": {
                "type": "tool_use",
                "id": f"toolu_{i}",
                "name": names[i],
                "input": {},
            },
        }
        for i in range(len(parts))
    ]
    cursor = [0] * len(parts)
    for slot in order:
        stream.append(
            {
                "type": "content_block_delta",
                "index": slot,
                "delta": {"type": "input_json_delta", "partial_json": parts[slot][cursor[slot]]},
            }
        )
        cursor[slot] += 1
    stream += [{"type": "content_block_stop", "index": i} for i in range(len(parts))]
    return [
        *stream,
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    ]


def responses_stream(parts: list[list[str]], order: list[int]) -> list[dict[str, Any]]:
    names = ["f", "g"]
    items = [
        {
            "id": f"fc_{i}",
            "type": "function_call",
            "status": "in_progress",
            "arguments": "",
            "call_id": f"call_{i}",
            "name": names[i],
        }
        for i in range(len(parts))
    ]
    stream: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"status": "in_progress", "output": []}}
    ]
    stream += [
        {"type": "response.output_item.added", "item": dict(item), "output_index": i}
        for i, item in enumerate(items)
    ]
    cursor = [0] * len(parts)
    for slot in order:
        stream.append(
            {
                "type": "response.function_call_arguments.delta",
                "item_id": f"fc_{slot}",
                "output_index": slot,
                "delta": parts[slot][cursor[slot]],
            }
        )
        cursor[slot] += 1
    done = [
        dict(item, status="completed", arguments="".join(parts[i])) for i, item in enumerate(items)
    ]
    for i, item in enumerate(done):
        stream.append(
            {
                "type": "response.function_call_arguments.done",
                "item_id": f"fc_{i}",
                "output_index": i,
                "arguments": item["arguments"],
            }
        )
        stream.append({"type": "response.output_item.done", "item": item, "output_index": i})
    stream.append(
        {"type": "response.completed", "response": {"status": "completed", "output": done}}
    )
    return [dict(event, sequence_number=n) for n, event in enumerate(stream)]


def realtime_stream(parts: list[list[str]], order: list[int]) -> list[dict[str, Any]]:
    """One Realtime response: the Responses events' shapes, each naming its response."""
    response = {"id": "resp_1", "status": "completed"}
    stream = [dict(event, response_id="resp_1") for event in responses_stream(parts, order)[1:-1]]
    for event in stream:
        del event["sequence_number"]
    output = [event["item"] for event in stream if event["type"] == "response.output_item.done"]
    return [
        {"type": "response.created", "response": {**response, "status": "in_progress"}},
        *stream,
        {"type": "response.done", "response": {**response, "output": output}},
    ]


def gemini_live_stream(parts: list[list[str]], order: list[int]) -> list[dict[str, Any]]:
    """Calls arrive whole, in one toolCall, so the fragments only make up each call's args."""
    calls = [
        {"id": f"function-call-{i}", "name": name, "args": json.loads("".join(parts[i]))}
        for i, name in enumerate(["f", "g"][: len(parts)])
    ]
    return [
        {"setupComplete": {}},
        {"toolCall": {"functionCalls": calls}},
        {"serverContent": {"turnComplete": True}},
    ]


def gemini_stream(parts: list[list[str]], order: list[int]) -> list[dict[str, Any]]:
    stream = []
    for slot, name in enumerate(["f", "g"][: len(parts)]):
        stream.append(gemini_chunk({"name": name, "willContinue": True}))
        stream += [
            gemini_chunk(
                {
                    "partialArgs": [
                        {"jsonPath": "$.v", "stringValue": piece, "willContinue": True}
                    ],
                    "willContinue": True,
                }
            )
            for piece in parts[slot]
        ]
        stream.append(
            gemini_chunk(
                {"partialArgs": [{"jsonPath": "$.v", "stringValue": ""}], "willContinue": True}
            )
        )
        stream.append(gemini_chunk({}))
    return [*stream, gemini_chunk(None, "STOP")]


def cohere_stream(parts: list[list[str]], order: list[int]) -> list[dict[str, Any]]:
    names = ["f", "g"]
    stream: list[dict[str, Any]] = [{"type": "message-start", "delta": {"message": {}}}]
    stream += [
        {
            "type": "tool-call-start",
            "index": i,
            "delta": {
                "message": {
                    "tool_calls": {
                        "id": f"{names[i]}_{i}",
                        "type": "function",
                        "function": {"name": names[i], "arguments": ""},
                    }
                }
            },
        }
        for i in range(len(parts))
    ]
    cursor = [0] * len(parts)
    for slot in order:
        stream.append(
            {
                "type": "tool-call-delta",
                "index": slot,
                "delta": {
                    "message": {
                        "tool_calls": {"function": {"arguments": parts[slot][cursor[slot]]}}
                    }
                },
            }
        )
        cursor[slot] += 1
    stream += [{"type": "tool-call-end", "index": i} for i in range(len(parts))]
    return [*stream, {"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}}]


def bedrock_stream(parts: list[list[str]], order: list[int]) -> list[dict[str, Any]]:
    names = ["f", "g"]
    stream: list[dict[str, Any]] = [{"messageStart": {"role": "assistant"}}]
    stream += [
        {
            "contentBlockStart": {
                "contentBlockIndex": i,
                "start": {"toolUse": {"toolUseId": f"tooluse_{i}", "name": names[i]}},
            }
        }
        for i in range(len(parts))
    ]
    cursor = [0] * len(parts)
    for slot in order:
        stream.append(
            {
                "contentBlockDelta": {
                    "contentBlockIndex": slot,
                    "delta": {"toolUse": {"input": parts[slot][cursor[slot]]}},
                }
            }
        )
        cursor[slot] += 1
    stream += [{"contentBlockStop": {"contentBlockIndex": i}} for i in range(len(parts))]
    return [
        *stream,
        {"messageStop": {"stopReason": "tool_use"}},
        {"metadata": {"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}}},
    ]


def ollama_stream(parts: list[list[str]], order: list[int]) -> list[dict[str, Any]]:
    """Calls arrive whole, one line each, so the fragments only make up each call's object."""

    def line(message: dict[str, Any], **end: Any) -> dict[str, Any]:
        return {
            "model": "m",
            "created_at": "t",
            "message": {"role": "assistant", "content": "", **message},
            "done": bool(end),
            **end,
        }

    names = ["f", "g"]
    stream = [
        line(
            {
                "tool_calls": [
                    {
                        "id": f"call_{i}",
                        "function": {
                            "index": i,
                            "name": names[i],
                            "arguments": json.loads("".join(parts[i])),
                        },
                    }
                ]
            }
        )
        for i in range(len(parts))
    ]
    return [*stream, line({}, done_reason="stop")]


def expected_arguments(profile: str, parts: list[list[str]]) -> list[str]:
    texts = ["".join(fragments) for fragments in parts]
    if profile == "gemini":
        return [
            json.dumps({"v": text}, ensure_ascii=False, separators=(",", ":")) for text in texts
        ]
    if profile in ("ollama", "gemini-live"):
        return [
            json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":"))
            for text in texts
        ]
    return texts


def run(profile: str, stream: list[dict[str, Any]]) -> Any:
    return check(
        {"profile": profile, "tool_schemas": SCHEMAS, PROFILES[profile].stream_key: stream}
    )


def calls(report: Any) -> list[tuple[Any, ...]]:
    return [(c.id, c.name, c.arguments) for c in report.calls]


BUILDERS = {
    "openai": openai_stream,
    "mistral": openai_stream,
    "anthropic": anthropic_stream,
    "openai-responses": responses_stream,
    "gemini": gemini_stream,
    "cohere": cohere_stream,
    "ollama": ollama_stream,
    "bedrock-converse": bedrock_stream,
    "openai-realtime": realtime_stream,
    "gemini-live": gemini_live_stream,
}
#: Where the terminal evidence is, counted from the end: the finish chunk (a usage chunk
#: follows), message_delta (message_stop follows), response.completed, Gemini's STOP chunk,
#: Cohere's message-end, Ollama's done line, Bedrock's messageStop (metadata follows), the
#: Realtime response.done, Gemini Live's toolCall (the model's turn completes after it).
TERMINAL_FROM_END = {
    "openai": 2,
    "mistral": 2,
    "anthropic": 2,
    "openai-responses": 1,
    "gemini": 1,
    "cohere": 1,
    "ollama": 1,
    "bedrock-converse": 2,
    "openai-realtime": 1,
    "gemini-live": 2,
}
#: The first event that belongs to a call.
FIRST_CALL_EVENT = {
    "openai": 0,
    "mistral": 0,
    "anthropic": 1,
    "openai-responses": 1,
    "gemini": 0,
    "cohere": 1,
    "ollama": 0,
    "bedrock-converse": 1,
    "openai-realtime": 1,
    "gemini-live": 1,
}
#: Argument text for every profile but Gemini, whose fragments are pieces of a string value.
ARGUMENT_TEXT = st.one_of(arguments)
STRING_VALUE = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)


@st.composite
def calls_for(draw: st.DrawFn, profile: str) -> tuple[list[list[str]], list[int]]:
    texts = STRING_VALUE if profile == "gemini" else ARGUMENT_TEXT
    parts = [draw(fragments(draw(texts))), draw(fragments(draw(texts)))]
    order = draw(st.permutations([0] * len(parts[0]) + [1] * len(parts[1])))
    return parts, order


PROFILE_NAMES = sorted(BUILDERS)


@st.composite
def passing_turns(draw: st.DrawFn) -> tuple[str, list[dict[str, Any]]]:
    """A profile, and a passing turn of two calls in its wire format."""
    profile = draw(st.sampled_from(PROFILE_NAMES))
    return profile, BUILDERS[profile](*draw(calls_for(profile)))


def test_every_profile_has_a_builder() -> None:
    assert sorted(PROFILES) == PROFILE_NAMES


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_resplit_and_interleaved_streams_give_the_same_calls(data: st.DataObject) -> None:
    profile = data.draw(st.sampled_from(PROFILE_NAMES))
    parts, order = data.draw(calls_for(profile))
    whole = [["".join(parts[0])], ["".join(parts[1])]]
    reference = run(profile, BUILDERS[profile](whole, [0, 1]))
    report = run(profile, BUILDERS[profile](parts, order))
    assert reference.status is Status.PASS, [f.to_dict() for f in reference.findings]
    assert report.status is Status.PASS, [f.to_dict() for f in report.findings]
    assert calls(report) == calls(reference)
    assert [c.arguments for c in report.calls] == expected_arguments(profile, parts)


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_every_prefix_before_the_terminal_fails(data: st.DataObject) -> None:
    profile, stream = data.draw(passing_turns())
    terminal = len(stream) - TERMINAL_FROM_END[profile]
    cut = data.draw(st.integers(1, terminal))
    report = run(profile, stream[:cut])
    # fail once a call has started, invalid before: never a pass, and only the end is missing
    assert report.status in (Status.FAIL, Status.INVALID)
    assert report.blocking_codes == ["missing_terminal"]


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_a_second_terminal_anywhere_after_the_first_call_event_fails(data: st.DataObject) -> None:
    profile, stream = data.draw(passing_turns())
    terminal = stream[len(stream) - TERMINAL_FROM_END[profile]]
    position = data.draw(st.integers(FIRST_CALL_EVENT[profile] + 1, len(stream)))
    report = run(profile, [*stream[:position], terminal, *stream[position:]])
    assert report.status is Status.FAIL
    # Where the terminal is the calls' message (Gemini Live), a second one sends them again.
    second = "duplicate_call_id" if PROFILES[profile].calls_are_terminal else "duplicate_terminal"
    assert {second, "delta_after_terminal"} & set(report.blocking_codes)


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_every_mutation_of_a_generated_passing_turn_keeps_its_promise(data: st.DataObject) -> None:
    profile, stream = data.draw(passing_turns())
    envelope = {"profile": profile, "tool_schemas": SCHEMAS, PROFILES[profile].stream_key: stream}
    source = run(profile, stream)
    applied = set()
    for name, kind in KINDS.items():
        try:
            variant = mutate(envelope, name)
        except NotApplicable as skipped:
            # For Chat Completions and Messages every kind that finds its material makes the
            # verdict it promises; elsewhere the engine may refuse a variant (sequence numbers,
            # whole calls in the finish chunk), and that refusal is what is reported.
            if profile in ("openai", "anthropic"):
                assert "the variant gives" not in str(skipped), skipped
            continue
        applied.add(name)
        report = check(variant)
        if kind.code is not None:
            assert kind.code.value in report.blocking_codes, (name, report.blocking_codes)
        else:
            assert (report.status, calls(report)) == (Status.PASS, calls(source)), name
    # Every turn has terminal evidence, stating why the turn ended, so the faults about it
    # always apply, and so does an error event from the provider; where the calls' message is
    # itself the evidence (Gemini Live), there is none apart from them to drop or repeat.
    about_the_terminal = {"drop_terminal", "duplicate_terminal", "wrong_terminal"}
    if PROFILES[profile].calls_are_terminal:
        about_the_terminal = set()
    assert {"truncate", "provider_error", *about_the_terminal} <= applied, (profile, applied)
