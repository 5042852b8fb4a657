"""What mitmweb shows of a judged flow: the kept body and the callgate view, rendered from the
report and the redacted stream."""

from __future__ import annotations

import json

from callgate.proxy_addon.webview import bounded, event_texts, render
from callgate.reassemble import check
from callgate.reassemble.framing import EVENTSTREAM, JSON_ARRAY, NDJSON, SSE
from callgate.reassemble.profiles import array_frames, framed, frames
from callgate.redact import redact_envelope
from tests.conftest import CONFORMANCE, load


def test_a_failing_turn_renders_verdict_calls_findings_and_marks_the_events_struck() -> None:
    redacted = redact_envelope(load(CONFORMANCE / "openai" / "reused_index_new_id.json"))
    body = b"".join(frames(redacted.envelope))
    lines = [
        "".join(text for _, text in line) for line in render(redacted.report.to_dict(), body, SSE)
    ]
    events = event_texts(body, SSE)
    assert lines[:2] == ["callgate: fail (BLOCKED)  openai/-  identity_collision", "calls (1)"]
    assert lines[2] == (
        '  slot 0  call_redacted2  get_weather  blocked  {"city":"xxxx"}{"query":"x"}'
    )
    assert lines[lines.index("events") + 1 :] == [
        f"{'✗' if n == 2 else ' '} {n:>4}  {text}" for n, text in enumerate(events)
    ]
    finding = next(line for line in lines if line.startswith("  identity_collision"))
    assert finding.endswith("(callgate explain identity_collision)")
    styles = [line[0][0] for line in render(redacted.report.to_dict(), body, SSE)]
    assert styles[lines.index("events") + 3] == "error"


def test_a_turn_without_a_tool_call_is_not_applicable_and_blocked_nothing() -> None:
    redacted = redact_envelope(load(CONFORMANCE / "ollama" / "text_only.json"))
    body = b"".join(framed(redacted.envelope, NDJSON))
    first = "".join(text for _, text in next(render(redacted.report.to_dict(), body, NDJSON)))
    assert first == "callgate: not_applicable (no tool call)  ollama/ollama  no blocking finding"


def test_a_gemini_array_body_is_read_one_element_a_line() -> None:
    envelope = load(CONFORMANCE / "gemini" / "valid_parallel_one_chunk.json")
    body = b"".join(array_frames(envelope))
    assert len(event_texts(body, JSON_ARRAY)) == len(envelope["chunks"])
    assert check(envelope).status.value == "pass"


def test_a_json_lines_body_is_read_one_line_an_event() -> None:
    envelope = load(CONFORMANCE / "ollama" / "reused_index_new_id.json")
    body = b"".join(frames(envelope))
    texts = event_texts(body + b"\n", NDJSON)  # a blank line is no event
    assert [json.loads(text) for text in texts] == envelope["chunks"]
    lines = [
        "".join(text for _, text in line)
        for line in render(check(envelope).to_dict(), body, NDJSON)
    ]
    assert lines[lines.index("events") + 1 :] == [
        f"{'✗' if n == 1 else ' '} {n:>4}  {text}" for n, text in enumerate(texts)
    ]


def test_an_event_stream_body_is_read_one_message_an_event_as_its_profile_reads_it() -> None:
    envelope = load(CONFORMANCE / "anthropic" / "reused_index_new_id.json")
    body = b"".join(framed(envelope, EVENTSTREAM))
    texts = event_texts(body, EVENTSTREAM, "anthropic")
    assert [json.loads(text) for text in texts] == envelope["events"]
    lines = [
        "".join(text for _, text in line)
        for line in render(check(envelope).to_dict(), body, EVENTSTREAM)
    ]
    assert lines[lines.index("events") + 1 :] == [
        f"{'✗' if n == 3 else ' '} {n:>4}  {text}" for n, text in enumerate(texts)
    ]
    # A cut last message is shown as the text the engine was given.
    assert event_texts(body[:-3], EVENTSTREAM, "anthropic")[-1] == json.dumps(
        "event-stream message not read: prelude says 136 bytes, the message has 133"
    )


def test_a_body_over_the_limit_keeps_head_and_tail_and_says_what_it_left_out() -> None:
    body = bytes(range(256)) * 40  # 10,240 bytes
    kept = bounded(body, 1000)
    note = b"\n: callgate left out 9240 bytes of this stream here (limit 1000)\n\n"
    assert kept == body[:500] + note + body[-500:]
    assert bounded(body, len(body)) == body
