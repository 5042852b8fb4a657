"""The live verdict is the recorded one: what the proxy's tap judges as a stream passes equals
``check()`` of the body it recorded, and the fixture the writer builds from the tap's events and
report is the one built by parsing that body and judging it again, byte for byte.

Proved over every conformance fixture in each of its profile's framings, every stream of the
shared corpus as its provider sent it, and the property tests' generated turns; each fed the way
the addon feeds it (deferred reads, observing and enforcing), in chunks that cut events apart.
"""

from __future__ import annotations

import base64
import dataclasses
import gc
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from callgate.integrations.enforce.tap import StreamTap, unpack_body
from callgate.proxy_addon import writer
from callgate.reassemble import Reassembler, Report, check
from callgate.reassemble.body import parse_stream_body
from callgate.reassemble.framing import EVENTSTREAM, JSON_ARRAY, MEDIA_TYPES, NDJSON, SSE
from callgate.reassemble.profiles import PROFILES, framed
from callgate.redact import (
    ArgumentMode,
    Exchange,
    NotApplicable,
    RedactionRefused,
    redact_exchange,
    request_context,
)
from callgate.redact.fragment_lines import FragmentLines
from callgate.redact.policy import recorded_envelope
from tests.conftest import CONFORMANCE, body_fixtures, corpus_params, fixture_id, load
from tests.proxy_harness import request_body_of
from tests.test_corpus_real import (
    REAL,
    STREAMS,
    accept_all_request,
    body_events,
    called_names,
    profile_of,
    provider_of,
)
from tests.test_engine import chunk as chat_chunk
from tests.test_engine import entry
from tests.test_properties import SCHEMAS, passing_turns


def exchange_of(body: bytes, request: bytes, framing: str) -> Exchange:
    return Exchange(
        method="POST",
        url="https://llm.example/v1/stream",
        request_headers=[],
        request_body=request,
        status=200,
        response_headers=[("content-type", MEDIA_TYPES[framing][0])],
        response_body=body,
        capture="proxy",
    )


def streamed(
    body: bytes, request: bytes, profile: str, provider: str | None, framing: str, **mode: Any
) -> StreamTap:
    """A tap as the addon builds one, fed ``body`` in chunks that cut events apart, each
    deferred read run as the event loop would run it, then the end of the body."""
    schemas, parameters = request_context(request, profile)
    asked: list[Any] = []
    tap = StreamTap(
        Reassembler(profile, schemas, request=parameters, provider=provider),
        profile,
        "",
        on_finding=lambda _: None,
        on_failure=pytest.fail,
        framing=framing,
        defer=asked.append,
        **mode,
    )
    for chunk in [body[i : i + 37] for i in range(0, len(body), 37)] + [b""]:
        tap(chunk)
        while asked:
            asked.pop(0)()
    tap.close()
    return tap


def written(exchange: Exchange, options: dict[str, Any]) -> tuple[bytes, Report] | str:
    """The fixture and its report, or why none is written."""
    try:
        redacted = redact_exchange(exchange, **options)
    except (NotApplicable, RedactionRefused) as refused:
        return f"{type(refused).__name__}: {refused}"
    return redacted.data, redacted.report


def assert_live_is_recorded(
    tap: StreamTap, exchange: Exchange, profile: str, provider: str | None
) -> None:
    """Once the tap read the body whole: its report equals ``check()`` of the recorded body,
    and the fixture written from its report, and from its events too when it hands them on, is
    the fixture written by parsing and judging again, or the same refusal. (A tap that did not
    read the body whole hands on neither: the writer parses and judges the body again.)"""
    if not tap.read_whole:
        assert tap.read_body() is None
        return
    live = tap.close()
    options: dict[str, Any] = {"profile": profile, "provider": provider}
    recorded = check(recorded_envelope(exchange, **options))
    assert live == recorded
    assert live.to_dict() == recorded.to_dict()
    judged_again = written(exchange, options)
    assert written(exchange, {**options, "verdict": live}) == judged_again
    body = tap.read_body()
    if body is not None:
        content_type = exchange.header("content-type", response=True)
        assert body == parse_stream_body(exchange.response_body, content_type, profile=profile)
        # As the writer process gets them: a copy of its own (redaction masks them in place),
        # and read as the writer reads them (the events it writes from a template not parsed).
        packed = tap.packed_body()
        assert packed is not None
        lines = FragmentLines(PROFILES[profile].fragment_site)
        body = unpack_body(packed, lines)
        one_parse = {**options, "verdict": live, "body": body, "lines": lines}
        assert written(exchange, one_parse) == judged_again


MODES = [
    pytest.param({"enforce": False}, id="observe"),
    pytest.param({"enforce": True}, id="enforce"),
]
MATRIX = [
    pytest.param(path, framing, id=f"{fixture_id(path)}-{framing}")
    for path in body_fixtures()
    for framing in PROFILES[load(path)["profile"]].framings
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("path", "framing"), MATRIX)
def test_every_conformance_stream_is_judged_live_as_recorded(
    path: Path, framing: str, mode: dict[str, Any]
) -> None:
    envelope = load(path)
    body, request = b"".join(framed(envelope, framing)), request_body_of(envelope)
    profile, provider = envelope["profile"], envelope.get("provider")
    tap = streamed(body, request, profile, provider, framing, **mode)
    assert tap.read_whole or mode["enforce"]
    assert_live_is_recorded(tap, exchange_of(body, request, framing), profile, provider)


#: The framing a corpus file's bytes are in, by its suffix.
CORPUS_FRAMINGS = {".sse": SSE, ".json": JSON_ARRAY, ".ndjson": NDJSON, ".b64": EVENTSTREAM}


def corpus_stream(row: dict[str, str]) -> tuple[bytes, bytes, str]:
    """(body, request, framing): the bytes as the provider sent them, or, recorded in a framing
    the profile does not stream in (an SDK's own log of the events), the events framed as the
    provider frames them."""
    path, profile = REAL / row["file"], profile_of(row)
    events = body_events(path)
    request_path = path.with_name(path.name.split(".")[0] + ".request.json")
    request = (
        request_path.read_bytes()
        if request_path.is_file()
        else json.dumps(accept_all_request(profile, sorted(called_names(events)))).encode()
    )
    framing = CORPUS_FRAMINGS.get(path.suffix)
    if framing in PROFILES[profile].framings:
        raw = path.read_bytes()
        return (base64.b64decode(raw) if framing == EVENTSTREAM else raw), request, framing
    framing = PROFILES[profile].framings[0]
    envelope = {"profile": profile, PROFILES[profile].stream_key: events}
    return b"".join(framed(envelope, framing)), request, framing


@pytest.mark.corpus
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("row", corpus_params(STREAMS, ids=lambda r: r["file"]))
def test_every_corpus_stream_is_judged_live_as_recorded(
    row: dict[str, str], mode: dict[str, Any]
) -> None:
    body, request, framing = corpus_stream(row)
    profile, provider = profile_of(row), provider_of(row)
    tap = streamed(body, request, profile, provider, framing, **mode)
    assert tap.read_whole or mode["enforce"]
    assert_live_is_recorded(tap, exchange_of(body, request, framing), profile, provider)


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_every_generated_turn_is_judged_live_as_recorded(data: st.DataObject) -> None:
    over_http = passing_turns().filter(lambda turn: not PROFILES[turn[0]].over_websocket)
    profile, stream = data.draw(over_http)
    envelope = {"profile": profile, "tool_schemas": SCHEMAS, PROFILES[profile].stream_key: stream}
    framing = data.draw(st.sampled_from(PROFILES[profile].framings))
    body, request = b"".join(framed(envelope, framing)), request_body_of(envelope)
    tap = streamed(body, request, profile, None, framing, enforce=data.draw(st.booleans()))
    assert_live_is_recorded(tap, exchange_of(body, request, framing), profile, None)


def test_the_proof_fails_when_the_live_report_is_altered() -> None:
    """A live report that differs from the recorded verdict in any way, even one the fixture
    does not show (a finding's detail), fails the proof."""
    envelope = load(CONFORMANCE / "openai" / "valid_parallel_interleaved.json")
    framing = PROFILES[envelope["profile"]].framings[0]
    body, request = b"".join(framed(envelope, framing)), request_body_of(envelope)
    profile, provider = envelope["profile"], envelope.get("provider")
    exchange = exchange_of(body, request, framing)
    tap = streamed(body, request, profile, provider, framing, enforce=False)
    assert_live_is_recorded(tap, exchange, profile, provider)
    report = tap.close()
    for altered in (
        dataclasses.replace(report, calls=report.calls[:-1]),
        dataclasses.replace(report, applicable=not report.applicable),
        dataclasses.replace(report, provider="elsewhere"),
    ):
        tap.report = altered
        with pytest.raises(AssertionError):
            assert_live_is_recorded(tap, exchange, profile, provider)


def test_an_observing_tap_reads_every_stream_whole() -> None:
    """Observing, the proxy's default, the tap reads every matrix stream whole in each framing,
    and hands on the events of every SSE one: the proof above covers the path the writer
    takes. Enforcing, it reads on after the verdict only where it can: 35 of the matrix's 375
    streams in their framings go unread in part (the proof above checks each hands on nothing)."""
    whole, unread = 0, []
    for path in body_fixtures():
        envelope = load(path)
        profile, request = envelope["profile"], request_body_of(envelope)
        for framing in PROFILES[profile].framings:
            body = b"".join(framed(envelope, framing))
            tap = streamed(body, request, profile, None, framing, enforce=False)
            assert tap.read_whole, (path, framing)
            assert (tap.read_body() is not None) is (framing == SSE), (path, framing)
            if streamed(body, request, profile, None, framing, enforce=True).read_whole:
                whole += 1
            else:
                unread.append(f"{fixture_id(path)} ({framing})")
    assert (whole, len(unread)) == (340, 35), unread


def test_the_events_go_to_the_writer_as_texts_and_unpack_as_the_engine_was_fed_them() -> None:
    """Each event of a long turn goes to the writer as its text; an event whose data a strict
    parse refused (the engine was fed the text itself) as that text written as a JSON string,
    and one whose data is a JSON string as it came. Unpacked, they are the events import
    parses from the recorded body, and the fixture is the one judged again."""
    pieces = ['{"v": [', *[f"{n}, " for n in range(200)], "0]}"]
    numbers = {
        "type": "object",
        "properties": {"v": {"type": "array", "items": {"type": "integer"}}},
    }
    envelope = {
        "profile": "openai",
        "tool_schemas": {"f": numbers},
        "chunks": [
            chat_chunk(entry(0, "", "call_1", "f")),
            *(chat_chunk(entry(0, piece)) for piece in pieces),
            chat_chunk(finish="tool_calls"),
        ],
    }
    frames = list(framed(envelope, SSE))
    refused = ["not json", '{"a": 1, "a": 2}', '"\\ud800"']
    odd = [f"data: {text}\n\n".encode() for text in [*refused, '"a string"']]
    body, request = b"".join([*frames[:101], *odd, *frames[101:]]), request_body_of(envelope)
    tap = streamed(body, request, "openai", "openai", SSE, enforce=False)
    packed = tap.packed_body()
    assert packed is not None
    texts, framing, done, incomplete = packed
    assert texts[101:105] == [*map(json.dumps, refused), '"a string"']
    assert (len(texts), framing, done, incomplete) == (1 + len(pieces) + 4 + 1, SSE, True, False)
    recorded = parse_stream_body(body, "text/event-stream", profile="openai")
    assert unpack_body(packed) == recorded
    assert recorded.events[101:105] == [*refused, "a string"]
    assert tap.read_body() == recorded
    assert_live_is_recorded(tap, exchange_of(body, request, SSE), "openai", "openai")


def test_a_fixture_is_built_with_the_collector_off_and_leaves_it_as_it_was(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The writer builds a fixture with the cyclic collector off (a long turn's containers,
    all freed by the end, would otherwise set off sweeps of the writer's heap), and leaves it
    on or off as it found it."""
    seen: list[bool] = []
    build = writer.redact_exchange

    def watched(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return build(*args, **kwargs)

    monkeypatch.setattr(writer, "redact_exchange", watched)
    envelope = load(CONFORMANCE / "openai" / "valid_parallel_interleaved.json")
    body, request = b"".join(framed(envelope, SSE)), request_body_of(envelope)
    exchange = exchange_of(body, request, SSE)
    arguments = ("openai", "openai", tmp_path, ArgumentMode.MASK, False, None)
    was = gc.isenabled()
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            path, report, _ = writer.write_fixture(exchange, *arguments)
            assert (path.exists(), report.executable, gc.isenabled()) == (True, True, enabled)
    finally:
        (gc.enable if was else gc.disable)()
    assert seen == [False, False]


def test_a_long_turns_fixture_is_freed_before_the_collector_is_back_on(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """By the time the writer turns the collector back on, the fixture it built (tens of
    thousands of containers on a long turn) is freed: the young generation then holds what the
    build left behind, not the fixture, which a collection would otherwise walk."""
    pieces = ['{"v": [', *[f"{n}, " for n in range(1998)], "0]}"]
    envelope = {
        "profile": "openai",
        "tool_schemas": {},
        "chunks": [
            chat_chunk(entry(0, "", "call_1", "f")),
            *(chat_chunk(entry(0, piece)) for piece in pieces),
            chat_chunk(finish="tool_calls"),
        ],
    }
    body, request = b"".join(framed(envelope, SSE)), request_body_of(envelope)
    young: list[int] = []

    class Collector:
        def __getattr__(self, name: str) -> Any:
            return getattr(gc, name)

        def enable(self) -> None:
            young.append(gc.get_count()[0])
            gc.enable()

    monkeypatch.setattr(writer, "gc", Collector())
    tap = streamed(body, request, "openai", None, SSE, enforce=False)
    packed = tap.packed_body()
    assert packed is not None
    was = gc.isenabled()
    gc.enable()
    try:
        writer.write_fixture(
            exchange_of(body, request, SSE),
            "openai",
            None,
            tmp_path,
            ArgumentMode.MASK,
            False,
            None,
            tap.close(),
            packed,
        )
    finally:
        (gc.enable if was else gc.disable)()
    # 2,002 events of seven containers each: the fixture alone would be over 14,000.
    assert len(young) == 1 and young[0] < 4_000, young
