"""The proxy's stream tap, fed directly: what reaches the client in enforce mode, byte for byte,
and the live verdict it hands the fixture writer.

The proxy tests drive the tap through real mitmproxy; here the bodies are cut where a network can
cut them (mid-line, mid-element, before the end-of-body call) and the tap itself is made to fail.
"""

from __future__ import annotations

import gc
import gzip
import inspect
import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from callgate.integrations.enforce import backlog
from callgate.integrations.enforce.backlog import MAX_LOOKS, Backlog
from callgate.integrations.enforce.tap import (
    StreamTap,
    TapState,
    deciding_pattern,
    may_decide,
    refusing,
    route,
)
from callgate.reassemble import Reassembler
from callgate.reassemble.errors import NotApplicable, RedactionRefused
from callgate.reassemble.eventstream import decode
from callgate.reassemble.framing import EVENTSTREAM, JSON_ARRAY, MEDIA_TYPES, NDJSON, SSE
from callgate.reassemble.profiles import PROFILES, array_frames, framed, frames
from callgate.redact import Exchange, fixture_bytes, redact_exchange, request_context
from tests.conftest import (
    BLOCKED_LINE,
    CONFORMANCE,
    blocked_event,
    body_fixtures,
    deciding,
    fixture_id,
    load,
)
from tests.proxy_harness import request_body_of


def tap_for(
    envelope: dict[str, Any],
    framing: str,
    failures: list[str] | None = None,
    on_error: str = "block",
) -> StreamTap:
    engine = Reassembler(
        envelope["profile"], envelope.get("tool_schemas", {}), request=envelope.get("request")
    )
    return StreamTap(
        engine,
        envelope["profile"],
        "",
        enforce=True,
        on_finding=lambda _: None,
        on_failure=(failures if failures is not None else []).append,
        framing=framing,
        on_error=on_error,
    )


def assert_failed_closed(sent: bytes, body: bytes, terminal: bytes, fault: str) -> None:
    """What enforce mode sent a client when it failed before the verdict: a prefix of the body
    without its terminal evidence, then the error event saying callgate could not judge."""
    same = next(
        (n for n, (a, b) in enumerate(zip(sent, body, strict=False)) if a != b),
        min(len(sent), len(body)),
    )
    assert terminal not in sent[:same] and terminal in body
    rest = sent[same:]
    assert rest.count(f"callgate could not judge this turn ({fault}), so".encode()) == 1, rest
    assert terminal not in rest


def judging_tap(
    envelope: dict[str, Any],
    framing: str,
    *,
    enforce: bool,
    encoding: str = "",
    defer: Any = None,
    on_failure: Callable[[str], object] = pytest.fail,
    max_body: int = 64 << 20,
    on_finding: Callable[[Any], object] = lambda _: None,
) -> StreamTap:
    """A tap as the addon builds one for the envelope's turn: the schemas and parameters of its
    request, its provider; a failure inside the tap fails the test unless ``on_failure`` takes
    it."""
    profile = envelope["profile"]
    schemas, parameters = request_context(request_body_of(envelope), profile)
    return StreamTap(
        Reassembler(profile, schemas, request=parameters, provider=envelope.get("provider")),
        profile,
        encoding,
        enforce=enforce,
        on_finding=on_finding,
        on_failure=on_failure,
        framing=framing,
        defer=defer,
        max_body=max_body,
    )


def through(tap: StreamTap, body: bytes, piece: int, *, end: bool = True) -> bytes:
    """The client's bytes: ``body`` in ``piece``-byte chunks, then the end-of-body call."""
    out: list[bytes] = []
    for chunk in [body[i : i + piece] for i in range(0, len(body), piece)] + ([b""] if end else []):
        sent = tap(chunk)
        out += sent if isinstance(sent, list) else [sent]
    return b"".join(out)


def gemini(name: str) -> tuple[dict[str, Any], bytes]:
    envelope = load(CONFORMANCE / "gemini" / f"{name}.json")
    return envelope, b"".join(array_frames(envelope))


def gemini_error(code: str) -> dict[str, Any]:
    return {"error": {"code": 409, "message": BLOCKED_LINE.format(code), "status": "ABORTED"}}


@pytest.mark.parametrize("piece", [1, 7, 100_000])
def test_a_failing_array_without_a_finish_chunk_still_ends_as_one_valid_array(piece: int) -> None:
    envelope, body = gemini("truncated_before_finish")
    sent = through(tap_for(envelope, JSON_ARRAY), body, piece)
    assert json.loads(sent) == [*envelope["chunks"], gemini_error("missing_terminal")]


@pytest.mark.parametrize("piece", [1, 7, 100_000])
def test_an_array_cut_inside_an_element_gets_the_error_instead_of_the_cut_element(
    piece: int,
) -> None:
    envelope, body = gemini("valid_parallel_two_chunks")
    cut = body[: body.index(b"\n,\r\n") + 30]
    sent = through(tap_for(envelope, JSON_ARRAY), cut, piece)
    assert json.loads(sent) == [envelope["chunks"][0], gemini_error("missing_terminal")]


@pytest.mark.parametrize(
    "name",
    sorted(
        p.stem
        for p in (CONFORMANCE / "gemini").glob("*.json")
        if load(p)["expect"]["status"] == "pass"
    ),
)
def test_a_passing_array_is_released_unchanged_at_its_closing_bracket(name: str) -> None:
    # No end-of-body call: the closing bracket alone decides, as [DONE] does for SSE.
    envelope, body = gemini(name)
    tap = tap_for(envelope, JSON_ARRAY)
    assert through(tap, body, 7, end=False) == body
    assert tap.end_marker_seen


def test_an_sse_body_cut_mid_line_gets_the_error_event_after_its_last_whole_event() -> None:
    envelope = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    *whole, finish, usage, done = frames(envelope)
    assert b'"finish_reason": "tool_calls"' in finish and done == b"data: [DONE]\n\n"
    cut = b"".join(whole) + finish[:20]  # the finish chunk, cut: no terminal evidence arrived
    error = {
        "error": {
            "message": BLOCKED_LINE.format("missing_terminal"),
            "type": "callgate_blocked",
            "code": "missing_terminal",
            "param": None,
        }
    }
    sent = through(tap_for(envelope, SSE), cut, 5)
    assert sent == b"".join(whole) + f"data: {json.dumps(error)}\n\n".encode()
    # Cut after its terminal evidence, the turn passes, but the cut event was never read: it
    # goes no further than the error event, and the held finish chunk with it.
    cut = b"".join(whole) + finish + usage[:20]
    tap = tap_for(envelope, SSE)
    assert through(tap, cut, 5) == b"".join(whole) + blocked_event("openai", [])
    assert tap.close().exit_code == 0


def mistral_cut_inside_its_finish_event() -> tuple[dict[str, Any], bytes, bytes]:
    """Mistral's native turn, its body ending right after the JSON of the chunk with both calls
    and ``finish_reason``: (envelope, the role chunk's whole event, the cut body)."""
    envelope = load(CONFORMANCE / "mistral" / "native_parallel_calls.json")
    role, calls, done = frames(envelope)
    assert b'"finish_reason": "tool_calls"' in calls and done == b"data: [DONE]\n\n"
    return envelope, role, role + calls.removesuffix(b"\n\n")


@pytest.mark.parametrize("deferred", [False, True], ids=["read-at-once", "read-later"])
@pytest.mark.parametrize("piece", [1, 7, 100_000])
def test_an_sse_body_ending_inside_its_finish_event_gets_the_error_event_instead(
    piece: int, deferred: bool
) -> None:
    """The reader drops the unfinished event, so the turn is judged without its calls and
    finish (``missing_terminal``, exit 2, which releases on its own), while mistralai's decoder
    hands that event out: the app would run calls no verdict covered."""
    envelope, role, cut = mistral_cut_inside_its_finish_event()
    asked: list[Any] = []
    tap = judging_tap(envelope, SSE, enforce=True, defer=asked.append if deferred else None)
    assert through(tap, cut, piece) == role + blocked_event("mistral", ["missing_terminal"])
    report = tap.close()
    assert (report.exit_code, report.blocking_codes, report.calls) == (2, ["missing_terminal"], ())
    # Observe mode never withholds: the client gets the body as it came.
    assert through(judging_tap(envelope, SSE, enforce=False), cut, piece) == cut


@pytest.mark.parametrize(
    "tail",
    [
        b"",
        b"\n",
        b"\r\n",
        b" \t",
        b": keep-alive",
        b": keep-alive\n",
        b"data: [DONE]",
        b"data: [DONE]\n",
        b"data:[DONE]\r",
        b"event: ping",
        b"id: 7\nretry: 10",
    ],
)
def test_a_passing_body_ending_in_a_tail_that_holds_no_unread_event_goes_out_as_it_came(
    tail: bytes,
) -> None:
    """Blank lines, comments, fields that make no event, and ``[DONE]`` without its blank
    line carry nothing to judge."""
    envelope = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    body = b"".join(frames(envelope)).removesuffix(b"data: [DONE]\n\n") + tail
    tap = judging_tap(envelope, SSE, enforce=True)
    assert through(tap, body, 11) == body
    assert tap.close().exit_code == 0


@pytest.mark.parametrize(
    "tail",
    [b"data", b"data:", b"data: {}", b'data: {"choices": []}\n', b"data: [DONE] "],
)
def test_a_passing_body_ending_inside_any_other_event_gets_the_error_event_instead(
    tail: bytes,
) -> None:
    envelope = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    *whole, finish, usage, _ = frames(envelope)
    body = b"".join(whole) + finish + usage + tail
    tap = judging_tap(envelope, SSE, enforce=True)
    assert through(tap, body, 11) == b"".join(whole) + blocked_event("openai", [])


@pytest.mark.parametrize(
    ("framing", "name"),
    [(SSE, "openai/valid_fragmented"), (JSON_ARRAY, "gemini/valid_single_call")],
)
def test_a_failure_inside_the_tap_at_the_verdict_sends_every_byte_once(
    framing: str, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    envelope = load(CONFORMANCE / f"{name}.json")
    body = b"".join(array_frames(envelope) if framing == JSON_ARRAY else frames(envelope))

    def broken_close(self: Reassembler) -> Any:
        raise RuntimeError("engine fault")

    monkeypatch.setattr(Reassembler, "close", broken_close)
    failures: list[str] = []
    sent = through(tap_for(envelope, framing, failures, on_error="pass"), body, 9)
    assert (sent, failures) == (body, ["RuntimeError"])
    # Failing closed (the default), the held end is replaced by the error event.
    failures = []
    sent = through(tap_for(envelope, framing, failures), body, 9)
    terminal = b'"finishReason"' if framing == JSON_ARRAY else b'"finish_reason": "'
    assert_failed_closed(sent, body, terminal, "RuntimeError")
    assert failures == ["RuntimeError"]


def test_a_fault_after_the_verdict_passes_the_rest_on_with_no_byte_sent_twice() -> None:
    """Enforcing, the turn passed; then, among comment lines after the stream's end, one chunk
    fails to decode, a fault no real decoder makes once and then recovers from, hence the
    stand-in: it goes on as it came, the chunks after it follow, and nothing released before
    is sent again."""
    envelope = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    events = list(frames(envelope))
    tap = tap_for(envelope, SSE)
    tap._identity = False
    failing = b"ng"

    def decode_once(chunk: bytes) -> bytes:
        if chunk == failing:
            raise ValueError("corrupt")
        return chunk

    tap.decompressor = decode_once  # type: ignore[assignment]
    out: list[bytes] = []
    for chunk in [*events, b": a\n\n: pi", failing, b"\n\n", b""]:
        sent = tap(chunk)
        out += sent if isinstance(sent, list) else [sent]
        if chunk is events[0]:
            assert tap.state is TapState.READING and not tap.judged
        if chunk is events[-1]:
            assert tap.state is TapState.PASSED and tap.judged
    assert b"".join(out) == b"".join(events) + b": a\n\n: ping\n\n"


def test_each_finding_is_handed_on_as_it_is_read() -> None:
    envelope = load(CONFORMANCE / "openai" / "malformed_arguments.json")
    found: list[Any] = []
    tap = judging_tap(envelope, SSE, enforce=False, on_finding=found.append)
    through(tap, b"".join(frames(envelope)), 40)
    assert found and found == list(tap.close().findings)


def test_refusing_sends_the_error_event_once_as_a_whole_body() -> None:
    refuse = refusing("gemini", JSON_ARRAY, "ValueError")
    first = refuse(b'[{"candidates": []}')
    assert refuse(b"]") == [] and len(first) == 1
    assert json.loads(first[0]) == [
        PROFILES["gemini"].error_body(
            "callgate could not judge this turn (ValueError), so it may not run",
            ["callgate_unjudged"],
        )
    ]


def test_a_json_array_blocked_or_failed_before_any_byte_went_is_one_whole_array(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nothing went before the error element: it opens the array too, so the client reads one
    valid JSON array (an element after nothing would begin with a comma)."""
    envelope, body = gemini("valid_single_call")
    tap = judging_tap(envelope, JSON_ARRAY, enforce=True, max_body=10)
    (limited,) = json.loads(through(tap, body, 40))
    assert limited["error"]["message"] == BLOCKED_LINE.format("limit_exceeded")

    def broken_feed(self: Reassembler, raw: object) -> Any:
        raise RuntimeError("engine fault")

    monkeypatch.setattr(Reassembler, "feed", broken_feed)
    # The error element goes with the chunk that failed: the next one may be long in coming.
    tap = tap_for(envelope, JSON_ARRAY)
    (failed,) = json.loads(b"".join(tap(body)))  # type: ignore[arg-type]
    assert "could not judge this turn (RuntimeError)" in failed["error"]["message"]
    assert tap(b"") == []


@pytest.mark.parametrize("read_later_at", [1, 2, 3, 5])
def test_a_failure_reading_released_events_later_still_sends_every_byte_once(
    read_later_at: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Enforce mode reads the events it released early at a look, or before the next event
    that can decide the turn: a fault then stops the reading, and every byte still
    reaches the client once, the bytes of a cut event the framer was holding among them."""
    envelope = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    body = b"".join(frames(envelope))
    fed = 0
    feed = Reassembler.feed

    def failing_feed(self: Reassembler, raw: object) -> Any:
        nonlocal fed
        fed += 1
        if fed == 3:
            raise RuntimeError("engine fault")
        return feed(self, raw)

    monkeypatch.setattr(Reassembler, "feed", failing_feed)
    for on_error in ("pass", "block"):
        fed = 0
        failures: list[str] = []
        asked: list[Any] = []
        tap = StreamTap(
            Reassembler("openai", {}),
            "openai",
            "",
            enforce=True,
            on_finding=lambda _: None,
            on_failure=failures.append,
            defer=asked.append,
            on_error=on_error,
        )
        out: list[bytes] = []
        chunks = [body[i : i + 50] for i in range(0, len(body), 50)] + [b""]
        for n, chunk in enumerate(chunks, 1):
            sent = tap(chunk)
            out += sent if isinstance(sent, list) else [sent]
            if n % read_later_at == 0:
                while asked:
                    asked.pop()()
        assert failures == ["RuntimeError"]
        if on_error == "pass":
            assert b"".join(out) == body
        else:  # failing closed: what went unread stays sent, the rest is the error event
            assert_failed_closed(b"".join(out), body, b'"finish_reason": "', "RuntimeError")


@pytest.mark.parametrize("enforce", [False, True])
def test_an_event_over_a_mebibyte_is_read_as_import_reads_it(enforce: bool) -> None:
    # response.completed restates the whole response: with long instructions it is large.
    envelope = load(CONFORMANCE / "openai-responses" / "valid_single_call.json")
    envelope["events"][-1]["response"]["instructions"] = "x" * (2 << 20)
    body = b"".join(frames(envelope))
    engine = Reassembler("openai-responses", envelope["tool_schemas"])
    tap = StreamTap(
        engine,
        "openai-responses",
        "",
        enforce=enforce,
        on_finding=lambda _: None,
        on_failure=lambda _: None,
    )
    sent = through(tap, body, 64 << 10)
    assert (tap.close().status.value, tap.close().blocking_codes) == ("pass", [])
    assert sent == body


#: Framings their clients read to the end of the body, with a profile that streams in each.
READ_TO_THE_END = [
    ("ollama", NDJSON),
    ("bedrock-converse", EVENTSTREAM),
    ("anthropic", EVENTSTREAM),
]
TO_THE_END_CASES = [
    (path, framing)
    for profile, framing in READ_TO_THE_END
    for path in sorted((CONFORMANCE / profile).glob("*.json"))
]


@pytest.mark.parametrize("piece", [1, 7, 100_000])
@pytest.mark.parametrize(
    ("path", "framing"),
    TO_THE_END_CASES,
    ids=lambda v: v.parent.name + "/" + v.stem if hasattr(v, "stem") else v,
)
def test_lines_and_messages_pass_whole_or_end_with_the_error_after_what_came_before_the_terminal(
    path: Any, framing: str, piece: int
) -> None:
    envelope = load(path)
    profile = PROFILES[envelope["profile"]]
    events = envelope[profile.stream_key]
    pieces = list(framed(envelope, framing))
    assert len(pieces) == len(events)
    tap = tap_for(envelope, framing)
    sent = through(tap, b"".join(pieces), piece)
    report = tap.close()
    assert (report.status.value, report.blocking_codes) == (
        envelope["expect"]["status"],
        envelope["expect"]["codes"],
    )
    if report.exit_code != 1:
        assert sent == b"".join(pieces)
        return
    # Released: every event before the first that carries the terminal evidence (which is held,
    # with all after it, until the body ends).
    held = next((n for n, raw in enumerate(events) if profile.carries_terminal(raw)), len(events))
    assert sent == b"".join(pieces[:held]) + blocked_event(
        envelope["profile"], report.blocking_codes, framing
    )


def test_the_error_line_and_message_are_the_provider_s_own() -> None:
    assert blocked_event("ollama", ["x", "y"], NDJSON) == (
        b'{"error": "callgate blocked this turn: x, y"}\n'
    )
    message = decode(blocked_event("bedrock-converse", ["x"], EVENTSTREAM))
    assert (
        message.header(":message-type"),
        message.header(":exception-type"),
        message.payload,
    ) == ("exception", "modelStreamErrorException", b'{"message": "callgate blocked this turn: x"}')


def test_a_call_after_the_done_line_is_judged_before_anything_from_the_done_line_goes_out() -> None:
    envelope = load(CONFORMANCE / "ollama" / "call_after_done.json")
    first, done, late = frames(envelope)
    tap = tap_for(envelope, NDJSON)
    # The done line would pass the turn so far; it is held until the body ends.
    assert through(tap, first + done, 100_000, end=False) == first
    assert (
        through(tap, late, 100_000)
        == json.dumps({"error": BLOCKED_LINE.format("delta_after_terminal")}).encode() + b"\n"
    )


@pytest.mark.parametrize("enforce", [False, True])
def test_json_lines_without_a_last_newline_and_with_blank_lines_read_as_import_reads_them(
    enforce: bool,
) -> None:
    envelope = load(CONFORMANCE / "ollama" / "valid_parallel_calls_two_lines.json")
    body = b"\xef\xbb\xbf" + b"\r\n\n".join(line.rstrip(b"\n") for line in frames(envelope))
    engine = Reassembler("ollama", envelope["tool_schemas"])
    tap = StreamTap(
        engine,
        "ollama",
        "",
        enforce=enforce,
        on_finding=lambda _: None,
        on_failure=lambda _: None,
        framing=NDJSON,
    )
    assert through(tap, body, 5) == body
    assert [(c.name, c.arguments) for c in tap.close().calls] == [
        (c["name"], c["arguments"]) for c in envelope["expect"]["calls"]
    ]
    assert tap.end_marker_seen


@pytest.mark.parametrize("enforce", [False, True])
def test_a_compressed_chunk_that_decodes_to_nothing_yet_does_not_end_the_body(
    enforce: bool,
) -> None:
    """A gzip body a few bytes at a time: its first chunks (the gzip header) decode to no text,
    which must not read as the end of the body."""
    envelope = load(CONFORMANCE / "openai" / "valid_parallel_interleaved.json")
    body = b"".join(framed(envelope, SSE))
    tap = judging_tap(envelope, SSE, enforce=enforce, encoding="gzip")  # no failure, or it fails
    compressed = gzip.compress(body)  # once: the header holds the time it was made
    sent = through(tap, compressed, 3)
    assert tap.close().status.value == "pass"
    assert sent == (body if enforce else compressed)


@pytest.mark.parametrize("path", body_fixtures(), ids=fixture_id)
def test_observing_with_deferred_reads_passes_each_chunk_at_once_and_judges_the_same(
    path: Path,
) -> None:
    """With ``defer`` the tap reads what came once the stream pauses: every chunk still passes
    unchanged the moment it comes, one look is asked for at a time, and the verdict, findings
    and events are those of reading each chunk as it comes."""
    envelope = load(path)
    framing = PROFILES[envelope["profile"]].framings[0]
    body = b"".join(framed(envelope, framing))
    asked: list[Any] = []
    deferred = judging_tap(envelope, framing, enforce=False, defer=asked.append)
    direct = judging_tap(envelope, framing, enforce=False)
    chunks = [body[i : i + 40] for i in range(0, len(body), 40)]
    read_before = 0
    for n, chunk in enumerate(chunks, 1):
        assert deferred(chunk) is chunk
        direct(chunk)
        if n % 3 == 0:  # the stream pauses after every third chunk, for two looks
            assert len(asked) == 1
            asked.pop()()  # chunks came since it was asked for: no read, another look
            assert len(asked) == 1 and len(deferred.event_times) == read_before
            asked.pop()()  # nothing came since the last look: read
            read_before = len(direct.event_times)
            assert (asked, len(deferred.event_times)) == ([], read_before)
    assert deferred(b"") == b""  # the body's end is read with the rest, later
    direct(b"")
    assert deferred.close().to_dict() == direct.close().to_dict()
    assert len(deferred.event_times) == len(direct.event_times)
    assert deferred.end_marker_seen == direct.end_marker_seen
    for late in asked:
        late()  # a look asked for before the end finds nothing left to read


def test_a_last_json_line_without_its_newline_is_read_at_the_end_with_deferred_reads() -> None:
    """Ollama's last line need not end in a newline: only the body's end completes it, so the
    end read later must still be read, and the turn passes as it does read at once."""
    envelope = load(CONFORMANCE / "ollama" / "valid_parallel_calls_two_lines.json")
    body = b"".join(framed(envelope, NDJSON))
    assert body.endswith(b"}\n")
    asked: list[Any] = []
    tap = judging_tap(envelope, NDJSON, enforce=False, defer=asked.append)
    assert tap(body[:-1]) == body[:-1]
    assert tap(b"") == b""
    report = tap.close()
    assert (report.status.value, len(report.calls), tap.end_marker_seen) == ("pass", 2, True)


def test_a_stream_that_never_pauses_is_read_at_the_last_look() -> None:
    envelope = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    body = b"".join(framed(envelope, SSE))
    size = len(body) // (MAX_LOOKS + 1)
    pieces = iter([body[i : i + size] for i in range(0, len(body), size)])
    asked: list[Any] = []
    tap = judging_tap(envelope, SSE, enforce=False, defer=asked.append)
    tap(next(pieces))
    for _ in range(MAX_LOOKS - 1):
        tap(next(pieces))
        asked.pop()()
    assert tap.event_times == [] and len(asked) == 1
    tap(next(pieces))
    asked.pop()()
    assert asked == [] and len(tap.event_times) > 0


def test_events_read_later_are_timed_when_their_chunks_came() -> None:
    """A pause between chunks stays in the event times, however late the chunks were read."""
    envelope = load(CONFORMANCE / "openai" / "valid_parallel_interleaved.json")
    events = list(framed(envelope, SSE))
    asked: list[Any] = []
    tap = judging_tap(envelope, SSE, enforce=False, defer=asked.append)
    tap(events[0])
    tap(events[1])
    time.sleep(0.05)
    for event in events[2:]:
        tap(event)
    tap(b"")
    tap.close()
    times = tap.event_times
    assert len(times) == len(events) - 1  # [DONE] is not an event
    assert times[0] == 0.0  # counted from the first event
    assert times[1] - times[0] < 0.05 <= times[2] - times[1]


def test_a_read_parses_each_event_as_the_engine_takes_it() -> None:
    """When the engine takes the first event of a read, the others are not parsed yet: the
    parsed events of a long turn, held together, would survive the garbage collector's youngest
    generation and, promoted, make it sweep every object of the proxy. Measured as the tracked
    objects allocated since the last collection and not freed (``gc.get_count``), about seven
    per parsed chunk."""

    def chunk(entry: dict[str, Any]) -> bytes:
        data = {
            "id": "c",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"tool_calls": [entry]}, "finish_reason": None}],
        }
        return f"data: {json.dumps(data)}\n\n".encode()

    fragments = 2000
    body = b"".join(
        [
            chunk(
                {
                    "index": 0,
                    "id": "call_0",
                    "type": "function",
                    "function": {"name": "f", "arguments": "["},
                }
            ),
            *(chunk({"index": 0, "function": {"arguments": "1,"}}) for _ in range(fragments)),
            chunk({"index": 0, "function": {"arguments": "1]"}}),
        ]
    )
    asked: list[Any] = []
    tap = StreamTap(
        Reassembler("openai", {}),
        "openai",
        "",
        enforce=False,
        on_finding=lambda _: None,
        on_failure=pytest.fail,
        defer=asked.append,
    )
    alive: list[int] = []
    feed = tap.engine.feed
    tap.engine.feed = lambda event: (alive.append(gc.get_count()[0]), feed(event))[1]  # type: ignore[method-assign]
    tap(body)
    gc.collect()
    gc.disable()
    try:
        while asked:  # the first look finds the chunk fresh, the second reads it
            asked.pop()()
    finally:
        gc.enable()
    assert len(alive) == fragments + 2
    assert alive[0] < 100, alive[0]


def test_a_body_let_go_at_its_limit_is_not_read_at_the_next_look() -> None:
    """Observing with deferred reads: the chunks that went on unread before the body grew past
    ``max_body`` are let go with it, not read when the look comes."""
    envelope = load(CONFORMANCE / "openai" / "valid_parallel_interleaved.json")
    events = list(framed(envelope, SSE))
    asked: list[Any] = []
    first = len(events[0])
    tap = judging_tap(envelope, SSE, enforce=False, defer=asked.append, max_body=first)
    assert tap(events[0]) is events[0] and tap(events[1]) is events[1]
    assert tap.over_limit and len(asked) == 1
    while asked:  # each look the backlog asks for, until it reads
        asked.pop()()
    assert tap.event_times == []


def test_the_backlog_hands_over_chunks_that_came_within_a_millisecond_of_the_first_as_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Chunks of one network read come within ``SAME_MOMENT`` (1 ms) of the first of them and
    are read as one, timed when the last of them came; a chunk exactly 1 ms after the first
    still belongs with it."""
    moments = iter([0.0, 0.0005, 0.001, 0.0015, 0.0024, 0.0031])
    monkeypatch.setattr(backlog.time, "monotonic", lambda: next(moments))
    waiting = Backlog(lambda look: None, lambda: None)
    for chunk in (b"a", b"b", b"c", b"d", b"e"):
        waiting.add(chunk)
    waiting.end()
    assert list(waiting.take()) == [(b"abc", 0.001), (b"de", 0.0024), (b"", 0.0031)]
    assert list(waiting.take()) == []


def test_a_tap_closed_before_its_deferred_read_reads_what_it_was_given_first() -> None:
    envelope = load(CONFORMANCE / "openai" / "valid_parallel_interleaved.json")
    body = b"".join(framed(envelope, SSE))
    asked: list[Any] = []
    tap = judging_tap(envelope, SSE, enforce=False, defer=asked.append)
    assert tap(body) is body and tap.event_times == [] and len(asked) == 1
    assert tap.close().status.value == "pass" and tap.end_marker_seen
    asked.pop()()
    assert tap.close().status.value == "pass"


@pytest.mark.parametrize("piece", [1, 7, 100_000])
def test_events_before_a_byte_that_is_not_utf8_are_read_however_the_body_was_cut(
    piece: int,
) -> None:
    """The events before the bad byte, then the rest as one text event: also when the bad byte
    comes in the same chunk as the events before it."""
    envelope = load(CONFORMANCE / "openai" / "valid_parallel_interleaved.json")
    events = list(framed(envelope, SSE))
    body = b"".join([*events[:2], b'data: {"bad": "\xff"}\n\n', *events[2:]])
    tap = judging_tap(envelope, SSE, enforce=False)
    assert through(tap, body, piece) == body
    report = tap.close()
    assert (len(tap.event_times), report.status.value) == (3, "fail")
    assert [(f.code.value, f.event, f.slot) for f in report.findings if f.blocking] == [
        ("unsupported_event", 2, None),
        ("missing_terminal", 2, 0),
        ("missing_terminal", 2, 1),
        ("missing_terminal", 2, None),
    ]


# -- enforce mode releases the events that cannot decide the turn before reading them ----------

#: Fixtures of the profiles whose SSE events enforce mode may release before reading them (the
#: others, JSON lines and event streams, read every event first).
RELEASING = [
    path
    for path in body_fixtures()
    if PROFILES[path.parent.name].terminal_pattern and SSE in PROFILES[path.parent.name].framings
]


def test_the_profiles_that_release_events_unread_are_the_sse_ones_with_a_terminal_pattern() -> None:
    assert sorted({path.parent.name for path in RELEASING}) == [
        "anthropic",
        "cohere",
        "gemini",
        "mistral",
        "openai",
        "openai-responses",
    ]


@pytest.mark.parametrize("path", RELEASING, ids=fixture_id)
def test_every_event_that_can_decide_a_turn_is_read_before_it_goes(path: Path) -> None:
    """The bytes of each event that carries the terminal evidence, ends the stream or is
    ``[DONE]`` match the profile's deciding pattern: ``may_decide`` never lets one go unread."""
    envelope = load(path)
    profile = envelope["profile"]
    pattern = deciding_pattern(PROFILES[profile])
    stream = envelope[PROFILES[profile].stream_key]
    blocks = list(framed(envelope, SSE))
    assert len(blocks) >= len(stream)  # each event, then [DONE] where the profile sends it
    for raw, block in zip(stream, blocks, strict=False):
        assert may_decide(block, pattern) or not deciding(profile, raw), block
    assert all(may_decide(block, pattern) for block in blocks[len(stream) :])


@pytest.mark.parametrize(
    ("data", "decides"),
    [
        (b'{"choices":[{"index":0,"delta":{},"finish_reason":null}]}', False),
        (b'{"choices": [{"finish_reason" :\t null, "index": 0}]}', False),
        # Two data lines with a comment line between: the JSON says "stop".
        (b'{"choices":[{"finish_reason"\n: null\ndata: :"stop"}]}', True),
        (b'{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}', True),
        (b'{"choices":[{"finish_reason" : "stop"}]}', True),
        (b'{"choices":[{"finish_reason":null,"native_finish_reason":"stop"}]}', True),
        (b'{"choices":[{"finish\\u005freason":"stop"}]}', True),  # spelled with an escape
        (b'{"choices":[{"delta":{"content":"\xc3\xa9"},"finish_reason":null}]}', False),
        (b'{"choices":[{"delta":{"content":"\xc3"},"finish_reason":null}]}', True),  # not UTF-8
        (b"[DONE]", True),
    ],
)
def test_a_chat_completions_event_may_decide_the_turn_only_with_a_finish_reason_that_is_not_null(
    data: bytes, decides: bool
) -> None:
    assert may_decide(b"data: " + data + b"\n\n", deciding_pattern(PROFILES["openai"])) == decides


@pytest.mark.parametrize("events_per_chunk", [0, 1, 2])
@pytest.mark.parametrize("path", body_fixtures(), ids=fixture_id)
def test_enforcing_with_deferred_reads_sends_the_same_bytes_at_the_same_moments(
    path: Path, events_per_chunk: int
) -> None:
    """With ``defer``, enforce mode sends what it sends without it, chunk for chunk: an event
    that cannot decide the turn goes at once either way, read or not yet. Chunks are 40-byte
    pieces (0), or whole events, one or two at a time, which go without being cut into events
    when none of them may decide the turn: as one piece, where the framer would give one per
    event, so the bytes of each call are compared."""
    envelope = load(path)
    profile = envelope["profile"]
    framings = PROFILES[profile].framings
    framing = SSE if SSE in framings else framings[0]
    events = list(framed(envelope, framing))
    body = b"".join(events)
    asked: list[Any] = []
    deferred = judging_tap(envelope, framing, enforce=True, defer=asked.append)
    direct = judging_tap(envelope, framing, enforce=True)
    chunks = (
        [
            b"".join(events[i : i + events_per_chunk])
            for i in range(0, len(events), events_per_chunk)
        ]
        if events_per_chunk
        else [body[i : i + 40] for i in range(0, len(body), 40)]
    )
    chunks.append(b"")
    read_later = 0
    for n, chunk in enumerate(chunks, 1):
        assert b"".join(deferred(chunk)) == b"".join(direct(chunk))
        if n % 3 == 0 and asked:
            asked.pop()()
            read_later += 1
    assert deferred.close().to_dict() == direct.close().to_dict()
    assert len(deferred.event_times) == len(direct.event_times)
    # A first event that cannot decide the turn goes unread, in a profile that releases any.
    first = next(framed(envelope, framing))
    assert bool(read_later or asked) == (
        path in RELEASING and not may_decide(first, deciding_pattern(PROFILES[profile]))
    )


@pytest.mark.parametrize(
    ("name", "passes"), [("valid_fragmented", True), ("malformed_arguments", False)]
)
def test_an_event_after_the_verdict_goes_only_if_the_turn_passed(name: str, passes: bool) -> None:
    """Once the turn is judged, what follows the end marker goes as the verdict says, also a
    whole event that could never decide a turn."""
    envelope = load(CONFORMANCE / "openai" / f"{name}.json")
    events = list(framed(envelope, SSE))
    after = b'data: {"choices":[],"usage":{"total_tokens":1}}\n\n'
    asked: list[Any] = []
    tap = judging_tap(envelope, SSE, enforce=True, defer=asked.append)
    sent = [b"".join(tap(event)) for event in events]  # type: ignore[arg-type]
    assert sent[-1] and tap(after) == ([after] if passes else []) and tap(b"") == []
    assert (tap.close().status.value == "pass") is passes


# -- the fixture writer is handed the live verdict ----------------------------------------------


@pytest.mark.parametrize("path", body_fixtures(), ids=fixture_id)
def test_a_fixture_built_with_the_live_verdict_is_the_one_built_by_judging_again(
    path: Path,
) -> None:
    """The proxy's writer compares the redacted verdict with the report the tap already has;
    judging the unredacted envelope again gives the same fixture, byte for byte, or the same
    refusal."""
    envelope = load(path)
    profile = envelope["profile"]
    framing = PROFILES[profile].framings[0]
    body, request = b"".join(framed(envelope, framing)), request_body_of(envelope)
    tap = judging_tap(envelope, framing, enforce=False)
    through(tap, body, 100)
    exchange = Exchange(
        method="POST",
        url="https://llm.example/v1/stream",
        request_headers=[],
        request_body=request,
        status=200,
        response_headers=[("content-type", MEDIA_TYPES[framing][0])],
        response_body=body,
        capture="proxy",
    )
    options: dict[str, Any] = {"profile": profile, "provider": envelope.get("provider")}
    try:
        judged_again = fixture_bytes(redact_exchange(exchange, **options).envelope)
    except (RedactionRefused, NotApplicable) as refused:
        with pytest.raises(type(refused), match=re.escape(str(refused))):
            redact_exchange(exchange, **options, verdict=tap.close())
        return
    assert (
        fixture_bytes(redact_exchange(exchange, **options, verdict=tap.close()).envelope)
        == judged_again
    )


def test_a_body_that_stops_decoding_is_judged_on_every_event_that_came_before_it() -> None:
    """Observing with deferred reads, a gzip body whose trailer is corrupt: the events decoded
    before it, not read yet, are read before the tap stops reading, so the report covers them."""
    envelope = load(CONFORMANCE / "openai" / "valid_parallel_interleaved.json")
    body = b"".join(framed(envelope, SSE))
    compressed = gzip.compress(body)
    asked: list[Any] = []
    failed: list[str] = []
    tap = judging_tap(
        envelope, SSE, enforce=False, encoding="gzip", defer=asked.append, on_failure=failed.append
    )
    head, trailer = compressed[:-8], bytes(byte ^ 0xFF for byte in compressed[-8:])
    assert tap(head) is head  # every event decoded, none read yet
    assert len(tap.event_times) == 0 and asked
    assert tap(trailer) is trailer  # the trailer does not decode: reading stops after this
    assert tap.broken and failed == ["error"]  # zlib's
    report = tap.close()
    assert len(tap.event_times) == len(envelope["chunks"])
    assert [call.name for call in report.calls] == ["get_weather", "search"]


SSE_TYPE = "text/event-stream; charset=utf-8"


@pytest.mark.parametrize(
    ("method", "status", "gated"),
    [
        ("POST", 200, True),
        ("POST", 299, True),
        ("POST", 300, False),
        ("POST", 199, False),
        ("GET", 200, False),
    ],
)
def test_only_a_successful_post_is_a_turn_to_gate(method: str, status: int, gated: bool) -> None:
    found = route(method, status, "https://api.openai.com/v1/chat/completions", SSE_TYPE, None)
    assert found == (("openai", "openai", SSE) if gated else None)


def test_a_body_whose_end_never_came_is_not_read_whole() -> None:
    envelope = load(CONFORMANCE / "openai" / "valid_parallel_interleaved.json")
    body = b"".join(framed(envelope, SSE))
    unended, ended = (judging_tap(envelope, SSE, enforce=False) for _ in range(2))
    through(unended, body, 64, end=False)
    through(ended, body, 64)
    assert (unended.close().status.value, ended.close().status.value) == ("pass", "pass")
    assert (unended.read_whole, ended.read_whole) == (False, True)


def test_a_tap_keeps_64_mib_of_body_by_default_as_the_recorder_does() -> None:
    """``docs/recording.md`` and ``docs/reliability.md`` give the default as 64 MiB; the
    transport's tap takes the tap's default, the recorder its ``callgate_max_body``."""
    from callgate.proxy_addon.settings import Settings

    default = inspect.signature(StreamTap).parameters["max_body"].default
    assert (default, Settings().max_body) == (64 * 2**20, 64 * 2**20)
