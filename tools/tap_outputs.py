"""Everything the proxy's stream tap does, one line per run: two versions of the tap that print
the same lines behave alike.

    python -m tools.tap_outputs > outputs.txt

How this works: ``StreamTap`` is driven directly, without mitmproxy, over the body of every
conformance fixture (built from its events in each framing its profile streams in) and of every
stream in the shared corpus (``../shared/corpus/real``, when it is there). Each body goes through
observing and enforcing, cut whole, an event a chunk, and into 1, 7 and 64 bytes, then the
empty chunk that ends it; without ``defer``, and with a ``defer`` whose callables are run after
each chunk (``step``: a stream that never pauses reaches the last look) or only once the tap is
closed (``late``). Each fixture's body, in its profile's first framing, also goes through
gzip-encoded (and corrupt midway), with ``max_body`` half its length or reached after the turn
was judged, and with an engine that raises at its third event or at its verdict; each fixture's
SSE body also goes through with a byte that is not UTF-8, and ending inside a character. It
runs under one hash seed (it starts itself again with ``PYTHONHASHSEED=0`` when not).

Each line: the case, mode, schedule and chunking; the sha256 of what each call returned (the
pieces of a list kept apart, a list told from bytes); the decoded body kept; the events fed to
the engine; the report's status, exit code, blocking codes and calls, and the whole report; the
codes reported through ``on_finding`` in order; the failures reported; ``end_marker_seen``,
``over_limit``, ``broken`` and how many events were timed. The tap's clock is the script's
(``TICK``), so two runs read the same chunks together.
"""

from __future__ import annotations

import base64
import csv
import gzip
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from callgate.integrations.enforce.tap import StreamTap
from callgate.reassemble import Finding, Reassembler, Report
from callgate.reassemble.eventstream import MessageFramer
from callgate.reassemble.framing import (
    EVENTSTREAM,
    JSON_ARRAY,
    NDJSON,
    SSE,
    ArrayFramer,
    Blocks,
    EventFramer,
    LineFramer,
)
from callgate.reassemble.profiles import PROFILES, framed
from callgate.redact import request_context

ROOT = Path(__file__).resolve().parents[1]
CONFORMANCE = ROOT / "fixtures" / "conformance"
CORPUS = ROOT.parent / "shared" / "corpus" / "real"
#: The framing a corpus body is read in, by its file's suffix (``.jsonl``: a recorder's JSON lines).
CORPUS_FRAMINGS = {
    ".sse": SSE,
    ".ndjson": NDJSON,
    ".jsonl": NDJSON,
    ".json": JSON_ARRAY,
    ".b64": EVENTSTREAM,
}
#: The corpus index names an API; the profile that reads it (else by provider, else Chat
#: Completions), as ``tests/test_corpus_real.py`` chooses it.
PROFILE_BY_API = {
    "responses": "openai-responses",
    "generateContent": "gemini",
    "v2/chat": "cohere",
    "api/chat": "ollama",
    "converse-stream": "bedrock-converse",
    "invoke-with-response-stream": "anthropic",
}
PROFILE_BY_PROVIDER = {
    "anthropic": "anthropic",
    "anthropic-vertex": "anthropic",
    "mistral": "mistral",
    "gemini": "gemini",
    "gemini-vertex": "gemini",
}
FRAMERS: dict[str, Callable[[], Blocks]] = {
    SSE: EventFramer,
    NDJSON: LineFramer,
    JSON_ARRAY: ArrayFramer,
    EVENTSTREAM: MessageFramer,
}
SIZES = (1, 7, 64)
#: Bytes after the end of a stream, as a usage chunk.
AFTER = b'data: {"choices":[],"usage":{"total_tokens":1}}\n\n'
#: The clock the tap reads, set before each chunk: chunk n comes at n times this many seconds,
#: so that what the tap reads together (chunks within its ``SAME_MOMENT``) is the same on
#: every run.
TICK = 0.0006


class Clock:
    """What ``time.monotonic`` returns while the script runs."""

    now = 0.0

    def __call__(self) -> float:
        return self.now


CLOCK = Clock()
SCHEDULES = ("direct", "step", "late")


@dataclass(frozen=True)
class Case:
    name: str
    profile: str
    framing: str
    body: bytes
    #: The body cut where its events end.
    events: list[bytes]
    engine: Callable[[], Reassembler]


def pieces(body: bytes, size: int) -> list[bytes]:
    return [body[i : i + size] for i in range(0, len(body), size)]


def chunkings(case: Case) -> Iterator[tuple[str, list[bytes]]]:
    yield "whole", [case.body]
    yield "events", case.events
    for size in SIZES:
        yield f"bytes{size}", pieces(case.body, size)


def fixture_cases() -> Iterator[tuple[Case, bool]]:
    """Each fixture of an HTTP body in each framing its profile streams in, and whether it is
    the first."""
    for path in sorted(CONFORMANCE.rglob("*.json")):
        envelope = json.loads(path.read_text(encoding="utf-8"))
        profile = PROFILES[envelope["profile"]]
        if profile.over_websocket:
            continue  # a session's messages: no body for the tap
        framings = dict.fromkeys([*profile.framings, *(f for _, f in profile.path_framings)])
        for number, framing in enumerate(framings):
            events = list(framed(envelope, framing))

            def engine(envelope: dict[str, Any] = envelope) -> Reassembler:
                return Reassembler(
                    envelope["profile"],
                    envelope.get("tool_schemas", {}),
                    request=envelope.get("request"),
                    provider=envelope.get("provider"),
                )

            name = f"conformance/{path.relative_to(CONFORMANCE).with_suffix('')}@{framing}"
            yield Case(name, profile.name, framing, b"".join(events), events, engine), number == 0


def corpus_cases() -> Iterator[Case]:
    with (CORPUS / "INDEX.tsv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    for row in rows:
        path = CORPUS / row["file"]
        framing = CORPUS_FRAMINGS[path.suffix]
        body = path.read_bytes()
        if path.suffix == ".b64":
            body = base64.b64decode(body)
        profile = PROFILE_BY_API.get(row["api"]) or PROFILE_BY_PROVIDER.get(
            row["provider"], "openai"
        )
        request = path.with_name(path.name.split(".")[0] + ".request.json")
        schemas, parameters = request_context(
            request.read_bytes() if request.is_file() else b"", profile
        )
        framer = FRAMERS[framing]()
        events = [*framer.feed(body), framer.rest()]

        def engine(
            profile: str = profile,
            schemas: dict[str, Any] = schemas,
            request: Any = parameters,
            provider: str = row["provider"],
        ) -> Reassembler:
            return Reassembler(profile, schemas, request=request, provider=provider)

        yield Case(f"corpus/{row['file']}@{framing}", profile, framing, body, events, engine)


@dataclass(frozen=True)
class Run:
    """How one pass drives the tap."""

    enforce: bool
    schedule: str
    #: Names how the body was cut (and encoded).
    label: str
    chunks: list[bytes]
    encoding: str = ""
    max_body: int = 64 << 20
    #: "feed3": the engine raises at its third event; "close": at its verdict.
    fault: str = ""


def run(case: Case, how: Run) -> str:
    """One pass of a body through a tap, as the line that says what it did."""
    findings: list[str] = []
    failures: list[str] = []
    deferred: list[Callable[[], None]] = []

    def on_finding(finding: Finding) -> None:
        findings.append(finding.code.value)

    fed = hashlib.sha256()
    tap = StreamTap(
        watched(case.engine(), how.fault, fed),
        case.profile,
        how.encoding,
        enforce=how.enforce,
        on_finding=on_finding,
        on_failure=failures.append,
        framing=case.framing,
        max_body=how.max_body,
        defer=None if how.schedule == "direct" else deferred.append,
    )
    out = hashlib.sha256()
    for n, chunk in enumerate([*how.chunks, b""]):
        CLOCK.now = n * TICK
        sent = tap(chunk)
        if isinstance(sent, list):
            out.update(b"L%d:" % len(sent))
            for piece in sent:
                out.update(b"%d:" % len(piece) + piece)
        else:
            out.update(b"B%d:" % len(sent) + sent)
        if how.schedule == "step":
            now, deferred[:] = list(deferred), []
            for look in now:
                look()
    if how.schedule == "step":
        drain(deferred)
    try:
        verdict = verdict_of(tap.close())
    except RuntimeError as error:  # the engine's fault, raised by close() when observing
        verdict = f"close raised {error}"
    drain(deferred)
    return " ".join(
        [
            case.name,
            "enforce" if how.enforce else "observe",
            how.schedule,
            how.label,
            out.hexdigest()[:16],
            f"body={short(b''.join(tap.body))}",
            f"fed={fed.hexdigest()[:12]}",
            verdict,
            f"findings={','.join(findings)}",
            f"failures={','.join(failures)}",
            f"end={int(tap.end_marker_seen)}",
            f"over={int(tap.over_limit)}",
            f"broken={int(tap.broken)}",
            f"times={len(tap.event_times)}",
        ]
    )


def verdict_of(report: Report) -> str:
    calls = json.dumps([call.to_dict() for call in report.calls], sort_keys=True)
    whole = json.dumps(report.to_dict(), sort_keys=True, default=str)
    return " ".join(
        [
            f"status={report.status.value}",
            f"exit={report.exit_code}",
            f"codes={','.join(report.blocking_codes)}",
            f"calls={len(report.calls)}:{short(calls.encode())}",
            f"report={short(whole.encode())}",
        ]
    )


def short(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:12]


def watched(engine: Reassembler, fault: str, fed: Any) -> Reassembler:
    """The engine, each event it is fed added to ``fed`` (a hash), and made to raise where
    ``fault`` says (``Run.fault``)."""
    feed, count = engine.feed, 0

    def watched_feed(raw: object) -> list[Finding]:
        nonlocal count
        count += 1
        if fault == "feed3" and count == 3:
            raise RuntimeError("engine fault")
        fed.update(repr(raw).encode("utf-8", "surrogatepass") + b"\0")
        return feed(raw)

    def failing_close() -> Report:
        raise RuntimeError("engine fault")

    engine.feed = watched_feed  # type: ignore[method-assign]
    if fault == "close":
        engine.close = failing_close  # type: ignore[method-assign]
    return engine


def drain(deferred: list[Callable[[], None]]) -> None:
    while deferred:
        deferred.pop(0)()


def runs(case: Case, extra: bool) -> Iterator[Run]:
    """Every pass of one case; ``extra``: also gzip-encoded (whole, cut, and corrupt midway),
    over a small ``max_body``, and with the engine failing."""
    squeezed = gzip.compress(case.body, mtime=0)
    half = len(squeezed) // 2
    for enforce in (False, True):
        for schedule in SCHEDULES:
            for label, chunks in chunkings(case):
                yield Run(enforce, schedule, label, chunks)
            if not extra:
                continue
            for label, chunks in [
                ("whole", [squeezed]),
                ("bytes7", pieces(squeezed, 7)),
                ("bytes64", pieces(squeezed, 64)),
                ("corrupt", [squeezed[:half], b"\xff" * 64, squeezed[half:]]),
            ]:
                yield Run(enforce, schedule, f"gzip-{label}", chunks, encoding="gzip")
            for label, chunks in chunkings(case):
                small = len(case.body) // 2
                yield Run(enforce, schedule, f"max_body-{label}", chunks, max_body=small)
            for fault in ("feed3", "close"):
                for label, chunks in [("events", case.events), ("bytes7", pieces(case.body, 7))]:
                    yield Run(enforce, schedule, f"{fault}-{label}", chunks, fault=fault)
            # Judged, then too long: what follows goes as the verdict says, unkept.
            longer = len(case.body) + len(AFTER)
            chunks = [*case.events, AFTER, AFTER, AFTER]
            yield Run(enforce, schedule, "after-limit", chunks, max_body=longer)


def damaged_runs(case: Case) -> Iterator[Run]:
    """An SSE body that stops being UTF-8: a byte that is not (after an event that is not
    JSON), or the body's end inside a character."""
    bad = [*case.events[:2], b"data: not json\n\n", b'data: {"bad": "\xff"}\n\n', *case.events[2:]]
    cut = [*case.events, b'data: {"x": "\xc3']
    for enforce in (False, True):
        for schedule in SCHEDULES:
            for name, events in (("bad-byte", bad), ("cut-char", cut)):
                body = b"".join(events)
                for label, chunks in [
                    ("whole", [body]),
                    ("events", events),
                    ("bytes7", pieces(body, 7)),
                    ("bytes64", pieces(body, 64)),
                ]:
                    yield Run(enforce, schedule, f"{name}-{label}", chunks)


def main() -> None:
    if os.environ.get("PYTHONHASHSEED") != "0":
        # A schema error names what it meets first in a set, whose order is the hash seed's:
        # every run under one seed, or the same tap prints another report.
        environment = {**os.environ, "PYTHONHASHSEED": "0"}
        os.execve(sys.executable, [sys.executable, "-m", "tools.tap_outputs"], environment)
    time.monotonic = CLOCK
    for case, first in fixture_cases():
        for how in runs(case, extra=first):
            print(run(case, how))
        if case.framing == SSE:
            for how in damaged_runs(case):
                print(run(case, how))
    if not (CORPUS / "INDEX.tsv").is_file():
        print(f"corpus: {CORPUS} not present, skipped")
        return
    for case in corpus_cases():
        for how in runs(case, extra=False):
            print(run(case, how))


if __name__ == "__main__":
    main()
