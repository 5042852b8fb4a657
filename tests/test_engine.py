"""The engine's contract: live findings, the state table, identity, limits, quirks, misuse."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from callgate.reassemble import Code, Limits, Reassembler, Severity, SlotState, Status, check
from callgate.reassemble.errors import UsageError
from callgate.reassemble.state import LIFECYCLE, TRANSITIONS, SlotInput
from tests.conftest import CONFORMANCE, load

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def chunk(*entries: dict[str, Any], finish: str | None = None, choice: int = 0) -> dict[str, Any]:
    delta = {"tool_calls": list(entries)} if entries else {}
    return {"choices": [{"index": choice, "delta": delta, "finish_reason": finish}]}


def entry(
    index: int, arguments: str, call_id: str | None = None, name: str | None = None
) -> dict[str, Any]:
    function: dict[str, Any] = {"arguments": arguments}
    if name is not None:
        function["name"] = name
    out: dict[str, Any] = {"index": index, "function": function}
    if call_id is not None:
        out["id"] = call_id
    return out


def openai() -> Reassembler:
    return Reassembler("openai", {"get_weather": WEATHER})


def test_feed_returns_the_collision_at_the_event_that_causes_it() -> None:
    engine = openai()
    assert engine.feed(chunk(entry(0, '{"city":"Oslo"}', "call_A", "get_weather"))) == []
    findings = engine.feed(chunk(entry(0, "", "call_B", "get_weather")))
    assert [(f.code, f.slot, f.event, f.path) for f in findings] == [
        (Code.IDENTITY_COLLISION, 0, 1, "/chunks/1/choices/0/delta/tool_calls/0")
    ]


def test_parseable_arguments_are_not_validated_before_the_finish_reason() -> None:
    engine = openai()
    engine.feed(chunk(entry(0, '{"city":"Oslo"}', "call_A", "get_weather")))
    assert engine.feed(chunk(entry(0, "}"))) == []
    findings = engine.feed(chunk(finish="tool_calls"))
    assert [f.code for f in findings] == [Code.TRAILING_DATA]
    assert findings[0].event == 1  # the fragment where the trailing text begins


def test_truncated_stream_is_reported_at_close() -> None:
    engine = openai()
    engine.feed(chunk(entry(0, '{"city":"Oslo"}', "call_A", "get_weather")))
    report = engine.close()
    assert report.status is Status.FAIL and report.exit_code == 1
    assert report.blocking_codes == ["missing_terminal"]
    assert report.calls[0].state is SlotState.BLOCKED
    assert report.calls[0].parsed_arguments is None


def test_a_valid_call_is_validated_with_exact_arguments() -> None:
    engine = openai()
    engine.feed(chunk(entry(0, '{"city":', "call_A", "get_weather")))
    engine.feed(chunk(entry(0, ' "Oslo"}')))
    engine.feed(chunk(finish="tool_calls"))
    report = engine.close()
    assert report.executable
    call = report.calls[0]
    assert (call.id, call.name, call.arguments, call.parsed_arguments, call.state) == (
        "call_A",
        "get_weather",
        '{"city": "Oslo"}',
        {"city": "Oslo"},
        SlotState.VALIDATED,
    )
    assert report.to_dict()["calls"][0]["state"] == "validated"
    assert report.to_dict()["calls"][0]["events"] == {"opened": 0, "grew": [0, 1], "ended": 2}


def test_fragments_that_restate_the_calls_identity_each_count_as_growth() -> None:
    engine = openai()
    engine.feed(chunk(entry(0, "", "call_A", "get_weather")))
    for part in ('{"city":', ' "Os', 'lo"}'):
        engine.feed(chunk(entry(0, part, "call_A", "get_weather")))
    engine.feed(chunk(finish="tool_calls"))
    assert engine.close().to_dict()["calls"][0]["events"] == {
        "opened": 0,
        "grew": [0, 1, 2, 3],
        "ended": 4,
    }


def test_a_fragment_that_also_carries_a_legacy_function_call_reports_it() -> None:
    engine = openai()
    engine.feed(chunk(entry(0, '{"city":', "call_A", "get_weather")))
    fragment = chunk(entry(0, ' "Oslo"}'))
    fragment["choices"][0]["delta"]["function_call"] = {"arguments": "{}"}
    assert [(f.code, f.path) for f in engine.feed(fragment)] == [
        (Code.UNSUPPORTED_EVENT, "/chunks/1/choices/0/delta/function_call")
    ]


def test_a_call_entry_whose_function_is_not_an_object_is_unsupported_there() -> None:
    engine = openai()
    findings = engine.feed(chunk({"index": 0, "id": "call_A", "function": "get_weather"}))
    assert [(f.code, f.message, f.path) for f in findings] == [
        (
            Code.UNSUPPORTED_EVENT,
            "function is not an object",
            "/chunks/0/choices/0/delta/tool_calls/0/function",
        )
    ]


def test_a_second_terminal_names_both_reasons_the_second_clipped_at_40_characters() -> None:
    engine = openai()
    engine.feed(chunk(entry(0, '{"city": "Oslo"}', "call_A", "get_weather")))
    engine.feed(chunk(finish="tool_calls"))
    [finding] = engine.feed(chunk(finish="x" * 50))
    assert (finding.code, finding.message) == (
        Code.DUPLICATE_TERMINAL,
        f"the turn already ended with 'tool_calls'; a second terminal says {'x' * 40!r}",
    )


def test_argument_limit_blocks_without_keeping_the_text() -> None:
    engine = Reassembler("openai", {"get_weather": WEATHER}, limits=Limits(max_argument_bytes=16))
    engine.feed(chunk(entry(0, '{"city":"Osl', "call_A", "get_weather")))
    findings = engine.feed(chunk(entry(0, 'o, Norway"}')))
    assert [f.code for f in findings] == [Code.LIMIT_EXCEEDED]
    engine.feed(chunk(finish="tool_calls"))
    assert engine.close().calls[0].arguments == ""


@pytest.mark.parametrize("pieces", [1, 3])
def test_the_argument_limit_holds_exactly_its_bytes(pieces: int) -> None:
    """15 bytes under a limit of 15 pass; 16 are blocked as they arrive, the text dropped: in
    one fragment and in several (each fragment after the first read on the short path)."""
    verdicts = []
    for text in ('{"city":"Oslo"}', '{"city":"Osloo"}'):
        engine = Reassembler(
            "openai", {"get_weather": WEATHER}, limits=Limits(max_argument_bytes=15)
        )
        cut = [text[n * len(text) // pieces : (n + 1) * len(text) // pieces] for n in range(pieces)]
        found = engine.feed(chunk(entry(0, cut[0], "call_A", "get_weather")))
        for piece in cut[1:]:
            found += engine.feed(chunk(entry(0, piece)))
        engine.feed(chunk(finish="tool_calls"))
        report = engine.close()
        verdicts.append(([f.message for f in found], report.calls[0].arguments))
    assert verdicts == [([], '{"city":"Oslo"}'), (["arguments exceed 15 bytes"], "")]


def test_multibyte_text_counts_in_utf8_bytes_against_the_limit() -> None:
    engine = Reassembler("openai", {"get_weather": WEATHER}, limits=Limits(max_argument_bytes=15))
    findings = engine.feed(chunk(entry(0, '{"city":"ÅÅÅ"}', "call_A", "get_weather")))
    assert [f.code for f in findings] == [Code.LIMIT_EXCEEDED]  # 14 characters, 17 bytes


def test_allowing_a_quirk_by_name_tolerates_and_reports_it() -> None:
    stream = [
        chunk(entry(0, '{"city":"Oslo"}', "call_A", "get_weather")),
        chunk(finish="tool_calls"),
        chunk(finish="tool_calls"),
    ]
    strict = openai()
    lenient = Reassembler(
        "openai", {"get_weather": WEATHER}, allow_quirks=["repeated_finish_chunk"]
    )
    for raw in stream:
        strict.feed(raw)
        lenient.feed(raw)
    assert strict.close().blocking_codes == ["duplicate_terminal"]
    report = lenient.close()
    assert report.status is Status.PASS
    assert [(f.code, f.severity, f.quirk) for f in report.findings] == [
        (Code.DUPLICATE_TERMINAL, Severity.TOLERATED, "repeated_finish_chunk")
    ]


def test_a_repeated_finish_with_a_different_reason_is_not_the_quirk() -> None:
    engine = Reassembler("openai", {"get_weather": WEATHER}, provider="openrouter")
    engine.feed(chunk(entry(0, '{"city":"Oslo"}', "call_A", "get_weather")))
    engine.feed(chunk(finish="tool_calls"))
    engine.feed(chunk(finish="stop"))
    assert engine.close().blocking_codes == ["duplicate_terminal"]


def test_quirks_apply_only_to_the_providers_that_have_them() -> None:
    stream = [
        chunk(entry(0, '{"city":"Oslo"}', "call_A", "get_weather")),
        chunk(finish="tool_calls"),
        chunk(finish="tool_calls"),
    ]
    for provider, status in (
        ("openrouter", Status.PASS),
        ("openai", Status.FAIL),
        (None, Status.FAIL),
    ):
        engine = Reassembler("openai", {"get_weather": WEATHER}, provider=provider)
        for raw in stream:
            engine.feed(raw)
        assert engine.close().status is status, provider


def test_unknown_profile_and_unknown_quirk_are_caller_errors() -> None:
    with pytest.raises(UsageError, match="unknown profile"):
        Reassembler("acme-chat")
    with pytest.raises(UsageError, match="unknown quirk"):
        Reassembler("openai", allow_quirks=["be_nice"])


def test_feeding_after_close_is_a_caller_error() -> None:
    engine = openai()
    engine.close()
    with pytest.raises(RuntimeError):
        engine.feed(chunk(finish="stop"))


def test_close_twice_gives_the_same_report() -> None:
    engine = openai()
    engine.feed(chunk(entry(0, "{", "call_A", "get_weather")))
    assert engine.close().to_dict() == engine.close().to_dict()


def test_a_chunk_that_is_not_an_object_is_unsupported() -> None:
    assert [f.code for f in openai().feed(["not", "a", "chunk"])] == [Code.UNSUPPORTED_EVENT]


def test_a_usage_only_chunk_with_null_choices_is_consumed() -> None:
    assert openai().feed({"choices": None, "usage": {"total_tokens": 3}}) == []


def test_azure_prompt_filter_chunk_is_consumed() -> None:
    assert openai().feed({"choices": [], "prompt_filter_results": [{"prompt_index": 0}]}) == []


def test_schema_violation_names_the_keyword_and_argument_path() -> None:
    engine = openai()
    engine.feed(chunk(entry(0, '{"city": 7}', "call_A", "get_weather"), finish="tool_calls"))
    finding = engine.close().findings[0]
    assert finding.code is Code.SCHEMA_VIOLATION
    assert finding.to_dict()["keyword"] == "type"
    assert finding.to_dict()["argument_path"] == "/city"


def test_unsupported_schema_keyword_points_into_the_tool_schema() -> None:
    engine = Reassembler("openai", {"get/weather": {"type": "object", "requird": ["city"]}})
    engine.feed(chunk(entry(0, '{"city":"Oslo"}', "call_A", "get/weather"), finish="tool_calls"))
    finding = engine.close().findings[0]
    assert (finding.code, finding.path) == (
        Code.UNSUPPORTED_SCHEMA_KEYWORD,
        "/tool_schemas/get~1weather/requird",
    )


def test_the_table_has_a_row_for_every_lifecycle_state_and_input() -> None:
    assert set(TRANSITIONS) == {(state, move) for state in LIFECYCLE for move in SlotInput}


def test_blocked_is_permanent_and_later_violations_are_still_reported() -> None:
    engine = Reassembler("anthropic", {"get_weather": WEATHER})
    engine.feed(
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "get_weather",
                "input": {},
            },
        }
    )
    engine.feed(
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"city":'},
        }
    )
    assert [f.code for f in engine.feed({"type": "content_block_stop", "index": 0})] == [
        Code.INVALID_ARGUMENTS_JSON
    ]
    late = engine.feed(
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '"Oslo"}'},
        }
    )
    assert [f.code for f in late] == [Code.DELTA_AFTER_TERMINAL]
    engine.feed({"type": "message_delta", "delta": {"stop_reason": "tool_use"}})
    assert engine.close().calls[0].state is SlotState.BLOCKED


def test_a_fragment_for_a_tool_use_left_open_after_the_turn_ended_is_refused() -> None:
    """The turn's end closes every call of it to fragments, ended by the provider or not."""
    engine = Reassembler("anthropic", {"get_weather": WEATHER})
    start = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}},
    }

    def fragment(text: str) -> dict[str, Any]:
        return {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": text},
        }

    assert engine.feed(start) == []
    assert engine.feed(fragment('{"city":')) == []
    assert engine.feed({"type": "message_delta", "delta": {"stop_reason": "tool_use"}}) == []
    (late,) = engine.feed(fragment('"Oslo"}'))
    assert (late.code, late.path) == (Code.DELTA_AFTER_TERMINAL, "/events/3/delta/partial_json")
    report = engine.close()
    assert report.calls[0].arguments == '{"city":'
    assert report.calls[0].grew == (1,)
    assert report.calls[0].findings == (Code.DELTA_AFTER_TERMINAL, Code.MISSING_TERMINAL)


def test_anthropic_tool_use_left_open_at_message_delta_is_missing_its_terminal() -> None:
    engine = Reassembler("anthropic", {"get_weather": WEATHER})
    engine.feed(
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "get_weather",
                "input": {},
            },
        }
    )
    engine.feed(
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"city":"Oslo"}'},
        }
    )
    engine.feed({"type": "message_delta", "delta": {"stop_reason": "tool_use"}})
    report = engine.close()
    assert report.blocking_codes == ["missing_terminal"]
    assert report.calls[0].findings == (Code.MISSING_TERMINAL,)


def test_a_blocking_profile_finding_about_a_started_slot_blocks_that_slot() -> None:
    engine = Reassembler("anthropic", {"get_weather": WEATHER})
    engine.feed(
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "get_weather",
                "input": {},
            },
        }
    )
    findings = engine.feed(
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}}
    )
    assert [(f.code, f.slot) for f in findings] == [(Code.UNSUPPORTED_EVENT, 0)]
    engine.feed(
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"city":"Oslo"}'},
        }
    )
    engine.feed({"type": "content_block_stop", "index": 0})
    engine.feed({"type": "message_delta", "delta": {"stop_reason": "tool_use"}})
    report = engine.close()
    assert report.calls[0].state is SlotState.BLOCKED and report.blocking_codes == [
        "unsupported_event"
    ]


@pytest.mark.parametrize(
    "profile", ["anthropic", "gemini", "mistral", "openai", "openai-responses"]
)
def test_a_lone_surrogate_handed_over_from_python_is_invalid_unicode(profile: str) -> None:
    """``json.loads`` accepts a lone surrogate escape, so a Python caller can hand one over; the
    size check used to raise ``UnicodeEncodeError`` on it."""
    from tests.test_properties import BUILDERS, run

    first, second = ("\ud800", "x") if profile == "gemini" else ('{"a": "\ud800"}', "{}")
    report = run(profile, BUILDERS[profile]([[first], [second]], [0, 1]))
    assert (report.status.value, report.blocking_codes) == ("fail", ["invalid_unicode"])
    assert "\ufffd" in report.to_dict()["calls"][0]["arguments"]  # written out as U+FFFD


def test_a_report_is_strict_json_even_when_provider_text_holds_a_lone_surrogate() -> None:
    from callgate.reassemble import strict_json
    from tests.test_properties import BUILDERS, run

    stream = BUILDERS["openai"]([['{"a": 1}'], ["{}"]], [0, 1])
    stream[0]["choices"][0]["delta"]["tool_calls"][0]["id"] = "call_\ud800"
    report = run("openai", stream)
    written = strict_json.loads(json.dumps(report.to_dict(), allow_nan=False))
    assert written["calls"][0]["id"] == "call_\ufffd"


def test_each_finding_names_the_choice_and_slot_of_the_call_it_is_about() -> None:
    engine = openai()
    engine.feed(chunk(entry(0, '{"city":"Oslo"}', "call_a", "get_weather"), choice=1))
    engine.feed(chunk(entry(1, '{"city":', "call_b", "get_weather"), choice=1))
    engine.feed(chunk(entry(1, "}"), choice=1))
    engine.feed(chunk(entry(2, '{"town":"Rome"}', "call_c", "get_weather"), choice=1))
    engine.feed(chunk(finish="tool_calls", choice=1))
    report = engine.close()
    assert [(f.code, f.choice, f.slot) for f in report.findings if f.blocking] == [
        (Code.INVALID_ARGUMENTS_JSON, 1, 1),
        (Code.SCHEMA_VIOLATION, 1, 2),
    ]
    assert [(c.choice, c.slot, c.state) for c in report.calls] == [
        (1, 0, SlotState.VALIDATED),
        (1, 1, SlotState.BLOCKED),
        (1, 2, SlotState.BLOCKED),
    ]


def test_a_report_as_data_is_version_1_with_every_field_in_place() -> None:
    engine = openai()
    engine.feed(chunk(entry(0, '{"city":"Oslo"}', "call_a", "get_weather")))
    engine.feed(chunk(finish="tool_calls"))
    data = engine.close().to_dict()
    assert data == {
        "report_version": 1,
        "status": "pass",
        "applicable": True,
        "executable": True,
        "profile": "openai",
        "provider": None,
        "findings": [],
        "calls": [data["calls"][0]],
    }
    assert {
        key: data["calls"][0][key] for key in ("choice", "slot", "id", "name", "arguments")
    } == {
        "choice": 0,
        "slot": 0,
        "id": "call_a",
        "name": "get_weather",
        "arguments": '{"city":"Oslo"}',
    }


def test_stated_input_alone_becomes_its_json_text_in_order_and_unescaped() -> None:
    engine = Reassembler("anthropic", {"get_weather": {"type": "object"}})
    for event in [
        {"type": "message_start", "message": {"id": "m", "content": []}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {
                "type": "tool_use",
                "id": "toolu_a",
                "name": "get_weather",
                "input": {"unit": "c", "city": "Zürich ☀", "days": [1, 2.5]},
            },
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    ]:
        engine.feed(event)
    report = engine.close()
    assert report.status is Status.PASS
    assert [call.arguments for call in report.calls] == [
        '{"unit":"c","city":"Zürich ☀","days":[1,2.5]}'
    ]


def test_a_block_started_again_after_its_stop_is_a_duplicate_start_of_that_block() -> None:
    events = json.loads((CONFORMANCE / "anthropic" / "valid_fragmented.json").read_text())["events"]
    events.insert(10, events[1])  # content_block_start of block 0 again, after its stop
    engine = Reassembler("anthropic", {"get_weather": {"type": "object"}})
    for event in events:
        engine.feed(event)
    report = engine.close()
    assert [(f.code, f.slot, f.event, f.path) for f in report.findings if f.blocking] == [
        (Code.DUPLICATE_START, 0, 10, "/events/10/content_block")
    ]


def stated(value: object) -> Reassembler:
    """An Anthropic turn whose one call's input is only stated, as ``value``."""
    engine = Reassembler("anthropic", {"f": {"type": "object"}})
    for event in [
        {"type": "message_start", "message": {"id": "m", "content": []}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t", "name": "f", "input": value},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    ]:
        engine.feed(event)
    return engine


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ({"x": float("nan")}, Code.NON_FINITE_NUMBER),
        ({"x": float("inf")}, Code.NON_FINITE_NUMBER),
        ({"x": {1, 2}}, Code.INVALID_ARGUMENTS_JSON),
        ({"x": b"bytes"}, Code.INVALID_ARGUMENTS_JSON),
    ],
)
def test_stated_input_json_cannot_hold_blocks_the_call_and_never_raises(
    value: object, code: Code
) -> None:
    assert stated(value).close().blocking_codes == [code.value]


@pytest.mark.parametrize(("padding", "codes"), [(0, []), (1, ["limit_exceeded"])])
def test_by_default_arguments_may_hold_one_mebibyte(padding: int, codes: list[str]) -> None:
    wrapper = '{"city":""}'
    text = wrapper[:9] + "x" * ((1 << 20) - len(wrapper) + padding) + wrapper[9:]
    engine = openai()
    engine.feed(chunk(entry(0, text, "call_a", "get_weather")))
    engine.feed(chunk(finish="tool_calls"))
    assert engine.close().blocking_codes == codes


def test_an_entry_without_a_function_object_opens_its_call_and_later_entries_fill_it() -> None:
    engine = openai()
    engine.feed(chunk({"index": 0, "id": "call_a", "type": "function"}))
    engine.feed(chunk(entry(0, '{"city":"Oslo"}', name="get_weather")))
    engine.feed(chunk(finish="tool_calls"))
    report = engine.close()
    assert (report.status, [(c.id, c.name, c.arguments) for c in report.calls]) == (
        Status.PASS,
        [("call_a", "get_weather", '{"city":"Oslo"}')],
    )


def test_of_several_unknown_quirks_the_first_by_name_is_named() -> None:
    with pytest.raises(UsageError, match=r"^unknown quirk 'aa_unknown'; known: "):
        Reassembler("openai", allow_quirks=["zz_unknown", "aa_unknown"])


def test_a_violation_of_the_whole_arguments_object_is_located_at_the_root() -> None:
    engine = openai()
    engine.feed(chunk(entry(0, "{}", "call_a", "get_weather")))
    engine.feed(chunk(finish="tool_calls"))
    [finding] = engine.close().findings
    assert (finding.code, finding.message) == (
        Code.SCHEMA_VIOLATION,
        "'required' fails at (root): 'city' is a required property",
    )


def test_a_name_changed_mid_call_quotes_both_names_clipped_to_64_characters() -> None:
    engine = openai()
    engine.feed(chunk(entry(0, "", "call_a", "a" * 100)))
    engine.feed(chunk(entry(0, "{}", name="b" * 100)))
    engine.feed(chunk(finish="tool_calls"))
    found = [f for f in engine.close().findings if f.code is Code.IDENTITY_COLLISION]
    assert len(found) == 1
    assert f"{'a' * 64!r}; a later fragment says {'b' * 64!r}" in found[0].message


def run_chat(chunks: list[dict[str, Any]], provider: str | None = None) -> Any:
    engine = Reassembler("openai", {"get_weather": {"type": "object"}}, provider=provider)
    for item in chunks:
        engine.feed(item)
    return engine.close()


def test_writers_mirrored_message_is_tolerated_once_and_only_when_equal_to_the_delta() -> None:
    call = {
        "tool_calls": [
            {
                "index": 0,
                "id": "a",
                "type": "function",
                "function": {"name": "get_weather", "arguments": "{}"},
            }
        ]
    }
    mirrored = [
        {"choices": [{"index": 0, "delta": call, "message": call}]},
        {"choices": [{"index": 0, "delta": {}, "message": {}, "finish_reason": "tool_calls"}]},
    ]
    report = run_chat(mirrored, "writer")
    assert (
        report.status,
        [(f.code, f.severity, f.path, f.choice, f.quirk) for f in report.findings],
    ) == (
        Status.PASS,
        [
            (
                Code.UNSUPPORTED_EVENT,
                Severity.TOLERATED,
                "/chunks/0/choices/0/message",
                0,
                "choice_message_mirror",
            )
        ],
    )
    mirrored[1]["choices"][0]["message"] = {"role": "assistant"}  # no longer the delta
    assert [(f.code, f.severity, f.path) for f in run_chat(mirrored, "writer").findings] == [
        (Code.UNSUPPORTED_EVENT, Severity.TOLERATED, "/chunks/0/choices/0/message"),
        (Code.UNSUPPORTED_EVENT, Severity.BLOCKING, "/chunks/1/choices/0/message"),
    ]


def test_tool_calls_that_are_no_list_and_a_long_tool_type_are_pointed_at() -> None:
    not_a_list = run_chat([{"choices": [{"index": 0, "delta": {"tool_calls": "x"}}]}])
    typed = run_chat(
        [
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {"tool_calls": [{"index": 0, "id": "a", "type": "t" * 100}]},
                    }
                ]
            }
        ]
    )
    assert [(f.path, f.message) for f in [not_a_list.findings[0], typed.findings[0]]] == [
        ("/chunks/0/choices/0/delta/tool_calls", "tool_calls is not a list"),
        (
            "/chunks/0/choices/0/delta/tool_calls/0/type",
            f"tool call type {'t' * 40!r} is not known; it could be a call",
        ),
    ]


def test_a_problem_of_the_whole_text_points_at_the_calls_first_fragment() -> None:
    # A lone surrogate escape, like a depth or size limit, is found in the whole text, not at a
    # character: the finding names the fragment where the call's text begins.
    engine = openai()
    engine.feed(chunk(entry(0, '{"city":', "call_a", "get_weather")))
    engine.feed(chunk(entry(0, '"\\ud800"}')))
    engine.feed(chunk(finish="tool_calls"))
    assert [(f.code, f.event, f.path) for f in engine.close().findings] == [
        (Code.INVALID_UNICODE, 0, "/chunks/0/choices/0/delta/tool_calls/0/function/arguments")
    ]


def test_a_stop_after_calls_is_tolerated_and_reported_when_the_quirk_is_allowed() -> None:
    engine = Reassembler(
        "openai", {"get_weather": {"type": "object"}}, allow_quirks=["stop_finish_with_tool_calls"]
    )
    engine.feed(chunk(entry(0, "{}", "call_a", "get_weather")))
    engine.feed(chunk(finish="stop"))
    report = engine.close()
    assert (report.status, [(f.code, f.severity, f.quirk) for f in report.findings]) == (
        Status.PASS,
        [(Code.WRONG_TERMINAL_REASON, Severity.TOLERATED, "stop_finish_with_tool_calls")],
    )


def test_an_error_keeps_its_problem_and_source_apart() -> None:
    from pathlib import Path

    from callgate.reassemble.errors import InputError

    error = InputError("not strict JSON", Path("a.json"))
    assert (str(error), error.problem, error.source) == (
        "a.json: not strict JSON",
        "not strict JSON",
        Path("a.json"),
    )


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ("true", "boolean"),
        ("false", "boolean"),
        ("null", "null"),
        ("[1]", "array"),
        ('"x"', "string"),
        ("1", "number"),
        ("1.5", "number"),
    ],
)
def test_arguments_that_are_not_an_object_are_named_by_their_json_type(
    arguments: str, said: str
) -> None:
    engine = openai()
    engine.feed(chunk(entry(0, arguments, "call_A", "get_weather")))
    engine.feed(chunk(finish="tool_calls"))
    finding = next(f for f in engine.close().findings if f.code is Code.ARGUMENTS_NOT_OBJECT)
    assert finding.message.endswith(f"{said}, not an object")


def test_a_long_tool_name_is_cut_to_64_characters_in_messages() -> None:
    name = "t" * 70
    engine = Reassembler("openai", {name: {"type": "object", "minProperties": "x"}})
    engine.feed(chunk(entry(0, "{}", "call_A", name)))
    engine.feed(chunk(finish="tool_calls"))
    unknown = Reassembler("openai", {})
    unknown.feed(chunk(entry(0, "{}", "call_A", name)))
    unknown.feed(chunk(finish="tool_calls"))
    said = [
        f.message
        for report in (engine.close(), unknown.close())
        for f in report.findings
        if f.code in (Code.INVALID_SCHEMA, Code.UNKNOWN_TOOL)
    ]
    assert len(said) == 2
    cut = repr("t" * 64)
    assert said[0].startswith(f"tool {cut}: ") and said[1] == f"no schema for tool {cut}"


def test_a_tolerated_finding_names_its_quirk_in_the_report_and_others_have_none() -> None:
    from callgate.reassemble import check
    from tests.conftest import load

    report = check(load(CONFORMANCE / "openai" / "quirk_ollama_missing_index_and_stop.json"))
    assert [(f["code"], f.get("quirk")) for f in report.to_dict()["findings"]] == [
        ("invalid_slot", "missing_tool_call_index"),
        ("wrong_terminal_reason", "stop_finish_with_tool_calls"),
    ]
    plain = check(load(CONFORMANCE / "openai" / "truncated.json")).to_dict()["findings"]
    assert plain and all("quirk" not in f for f in plain)


@pytest.mark.parametrize(
    ("stated", "streamed"),
    [
        ({"unit": "c", "city": "Oslo"}, '{"city":"Oslo","unit":"c"}'),
        ({"unit": "c", "city": "Oslo"}, '{"unit":"c","city":"Oslo"}'),
        ({"city": "Oslo", "unit": "c"}, '{"unit":"c","city":"Oslo"}'),
    ],
)
def test_stated_input_and_streamed_arguments_are_compared_whatever_their_key_order(
    stated: dict[str, str], streamed: str
) -> None:
    from callgate.reassemble import check
    from tests.conftest import load

    envelope = load(CONFORMANCE / "anthropic" / "stated_input_matches_deltas.json")
    start = next(e for e in envelope["events"] if e["type"] == "content_block_start")
    delta = next(e for e in envelope["events"] if e["type"] == "content_block_delta")
    start["content_block"]["input"], delta["delta"]["partial_json"] = stated, streamed
    report = check(envelope)
    assert (report.status, report.blocking_codes) == (Status.PASS, [])
    start["content_block"]["input"] = {**stated, "unit": "f"}
    assert check(envelope).blocking_codes == ["argument_mismatch"]


def test_a_tool_use_restarting_a_text_block_gives_that_block_no_call_id() -> None:
    # Block 0 is text; a second start of it as a tool_use is a duplicate start, and the id it
    # carries is not taken, so block 1 may use that id without a duplicate_call_id.
    tool_use = {"type": "tool_use", "id": "toolu_a", "name": "get_weather", "input": {}}
    engine = Reassembler("anthropic", {"get_weather": {"type": "object"}})
    for event in [
        {"type": "message_start", "message": {"id": "m", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_start", "index": 0, "content_block": tool_use},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": tool_use},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    ]:
        engine.feed(event)
    report = engine.close()
    assert [(f.code, f.slot, f.event) for f in report.findings if f.blocking] == [
        (Code.DUPLICATE_START, 0, 2)
    ]
    assert [(call.slot, call.id) for call in report.calls] == [(1, "toolu_a")]


def test_a_reports_finding_cannot_be_changed_by_the_app_that_reads_it() -> None:
    report = check(load(CONFORMANCE / "openai" / "reused_index_new_id.json"))
    finding = report.findings[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        finding.message = "changed"  # type: ignore[misc]


def test_a_finding_is_made_with_named_fields_only() -> None:
    """Its fields are named, never placed: their order can change without breaking a caller."""
    from callgate.reassemble.findings import Finding

    assert Finding(code=Code.STREAM_ERROR, message="m").code is Code.STREAM_ERROR
    with pytest.raises(TypeError):
        Finding(Code.STREAM_ERROR, "m")  # type: ignore[misc]


def test_ollama_arguments_nested_too_deeply_to_write_are_a_limit_not_a_crash() -> None:
    """A Python caller's event holds its arguments as an object: one nested past what can be
    written as JSON is ``limit_exceeded`` at the call, found as the event is read."""
    arguments: dict[str, Any] = {"x": 1}
    for _ in range(3000):
        arguments = {"a": arguments}
    engine = Reassembler("ollama", {"f": {"type": "object"}})
    call = {"function": {"name": "f", "arguments": arguments}}
    message = {"role": "assistant", "content": "", "tool_calls": [call]}
    found = engine.feed({"model": "m", "message": message, "done": False})
    assert [(f.code, f.message) for f in found] == [
        (Code.LIMIT_EXCEEDED, "arguments are nested too deeply to write as JSON")
    ]


def test_a_call_without_an_id_is_tolerated_and_reported_when_the_quirk_is_allowed() -> None:
    engine = Reassembler("openai", {"get_weather": WEATHER}, allow_quirks=["missing_call_id"])
    engine.feed(chunk(entry(0, '{"city":"Oslo"}', None, "get_weather")))
    engine.feed(chunk(finish="tool_calls"))
    report = engine.close()
    found = [(f.code, f.severity, f.quirk, f.message, f.slot) for f in report.findings]
    assert (report.status, found) == (
        Status.PASS,
        [(Code.MISSING_CALL_ID, Severity.TOLERATED, "missing_call_id", "the call has no id", 0)],
    )


def test_the_same_other_id_stated_again_is_one_collision() -> None:
    engine = openai()
    engine.feed(chunk(entry(0, '{"city":', "call_A", "get_weather")))
    first = engine.feed(chunk(entry(0, "", "call_B")))
    again = engine.feed(chunk(entry(0, '"Oslo"}', "call_B")))
    third = engine.feed(chunk(entry(0, "", "call_C")))
    assert ([f.code for f in first], again, [f.message for f in third]) == (
        [Code.IDENTITY_COLLISION],
        [],
        ["slot 0 has id 'call_A'; a later fragment says 'call_C'"],
    )


def test_an_end_for_a_block_never_started_is_no_call() -> None:
    engine = Reassembler("anthropic", {"get_weather": WEATHER})
    for event in (
        {"type": "message_start", "message": {"id": "msg_1", "content": []}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
        {"type": "message_stop"},
    ):
        engine.feed(event)
    report = engine.close()
    assert (report.status, [(f.code, f.path) for f in report.findings], report.calls) == (
        Status.INVALID,
        [(Code.DELTA_BEFORE_START, "/events/1")],
        (),
    )


def test_long_names_ids_and_reasons_are_quoted_clipped() -> None:
    """A tool name or call id is quoted to 64 characters, a finish reason to 40."""
    name, call_id = "t" * 70, "c" * 70
    engine = Reassembler("openai", {name: {"type": "object"}})
    engine.feed(chunk({"index": 0, "id": "call_A", "type": "custom", "custom": {"name": name}}))
    engine.feed(chunk(finish="tool_calls"))
    [mismatch] = engine.close().findings
    engine = Reassembler("openai", {"get_weather": {"type": "object"}})
    for index in (1, 2):
        engine.feed(chunk(entry(index, "{}", call_id, "get_weather")))
    engine.feed(chunk(finish="x" * 50))
    assert [mismatch.message, *(f.message for f in engine.close().findings)] == [
        f"tool {name[:64]!r} takes JSON; this call gives free-form input",
        f"call id {call_id[:64]!r} is also the id of choice 0 slot 1",
        f"the turn made tool calls but ended with {'x' * 40!r}, not 'tool_calls'",
    ]


def test_an_error_the_parser_cannot_place_is_named_at_the_first_fragment() -> None:
    """A repeated member name is found when the parse builds the object, with no position:
    the finding points at where the arguments start."""
    engine = openai()
    engine.feed(chunk(entry(0, '{"city": "Oslo",', "call_A", "get_weather")))
    engine.feed(chunk(entry(0, ' "days": 2,')))
    engine.feed(chunk(entry(0, ' "city": "Bergen"}')))
    engine.feed(chunk(finish="tool_calls"))
    assert [(f.code, f.message, f.event, f.path) for f in engine.close().findings] == [
        (
            Code.DUPLICATE_KEY,
            "arguments: member name 'city' appears twice",
            0,
            "/chunks/0/choices/0/delta/tool_calls/0/function/arguments",
        )
    ]
