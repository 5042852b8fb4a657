"""What mitmweb (and the mitmproxy console) show of a judged flow: its body and the callgate view.

mitmproxy keeps no body it streamed, so a judged flow's Response tab would say "content
missing". The addon sets the body afterwards, from memory only: by default the redacted stream
the fixture holds (what the user may share), the raw stream on request, or nothing; a body over
the limit keeps its head and tail and says what it left out. mitmproxy's own writers stay
refused, so nothing unredacted reaches disk this way.

The ``callgate`` content view renders the verdict, each call, each finding (with the ``callgate
explain`` hint), then the stream one event per line, the events where a finding struck marked.
It is the default view for flows callgate judged. mitmproxy 11 takes a ``View`` whose lines
carry styles (``error``, ``warn``); mitmproxy 12 takes a ``Contentview`` that returns text, where
the marks (``✗`` blocking, ``!`` tolerated) stand in for the styles.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from enum import StrEnum
from typing import Any

from callgate.reassemble.eventstream import body_events
from callgate.reassemble.framing import (
    EVENTSTREAM,
    JSON_ARRAY,
    NDJSON,
    SSE,
    ArrayFramer,
    element_text,
)
from callgate.reassemble.profiles import PROFILES, framing_for
from callgate.reassemble.sse import decode_all

#: Where the flow keeps the report its view renders (the redacted one, unless the body is raw).
SHOWN = "callgate_shown"
Line = list[tuple[str, str]]


class WebBody(StrEnum):
    #: The redacted stream, exactly what the fixture holds.
    redacted = "redacted"
    #: The stream as it passed, for a developer on their own machine.
    raw = "raw"
    #: No body.
    none = "none"


def bounded(body: bytes, limit: int) -> bytes:
    """``body``, or its head and tail with an SSE comment line saying how much is left out."""
    if len(body) <= limit:
        return body
    half = limit // 2
    left = len(body) - 2 * half
    note = f"\n: callgate left out {left} bytes of this stream here (limit {limit})\n\n"
    return body[:half] + note.encode() + body[len(body) - half :]


def event_texts(body: bytes, framing: str, profile: str | None = None) -> list[str]:
    """The stream's events as text, one per entry, read as the proxy read them (an event stream's
    messages as ``profile`` reads them, each shown as JSON)."""
    from_message = (
        PROFILES[profile].from_message if profile is not None and profile in PROFILES else None
    )
    if framing == EVENTSTREAM and from_message is not None:
        messages, _ = body_events(body, from_message)
        return [json.dumps(message, ensure_ascii=False) for message in messages]
    if framing == JSON_ARRAY:
        framer = ArrayFramer()
        blocks = framer.feed(body)
        return [_text(element_text(block, i == 0)) for i, block in enumerate(blocks)]
    if framing == NDJSON:
        return [_text(line) for line in body.split(b"\n") if line.strip()]
    events, _ = decode_all(body)
    return [event.data for event in events]


def _text(value: str | bytes) -> str:
    return value if isinstance(value, str) else value.decode("utf-8", "replace")


def render(report: Mapping[str, Any], body: bytes, framing: str) -> Iterator[Line]:
    """The view's lines, each a list of ``(style, text)``; styles as mitmproxy names them."""
    status = report.get("status", "?")
    # A turn without a tool call blocked nothing (the same words as ``callgate check``).
    verdict = (
        "EXECUTABLE"
        if report.get("executable")
        else "no tool call"
        if status == "not_applicable"
        else "BLOCKED"
    )
    codes = sorted({f["code"] for f in report.get("findings", []) if f["severity"] == "blocking"})
    yield [
        ("header", f"callgate: {status} ({verdict})"),
        ("text", f"  {report.get('profile')}/{report.get('provider') or '-'}"),
        ("error" if codes else "text", f"  {', '.join(codes) or 'no blocking finding'}"),
    ]
    yield from _calls(report.get("calls", []))
    yield from _findings(report.get("findings", []))
    yield [("header", "events")]
    struck = {
        f["event"]: f["severity"] for f in report.get("findings", []) if f.get("event") is not None
    }
    for number, text in enumerate(event_texts(body, framing, report.get("profile"))):
        severity = struck.get(number)
        style = "error" if severity == "blocking" else "warn" if severity else "text"
        mark = "\u2717" if severity == "blocking" else "!" if severity else " "
        yield [(style, f"{mark} {number:>4}  {text}")]


def _calls(calls: list[Mapping[str, Any]]) -> Iterator[Line]:
    yield [("header", f"calls ({len(calls)})")]
    for call in calls:
        arguments = call.get("arguments")
        yield [
            (
                "text",
                f"  slot {call.get('slot')}  {call.get('id') or '-'}  "
                f"{call.get('name') or '-'}  {call.get('state')}  ",
            ),
            ("text", arguments if isinstance(arguments, str) else "-"),
        ]


def _findings(findings: list[Mapping[str, Any]]) -> Iterator[Line]:
    yield [("header", f"findings ({len(findings)})")]
    for finding in findings:
        where = "turn" if finding.get("slot") is None else f"slot {finding['slot']}"
        style = "error" if finding.get("severity") == "blocking" else "warn"
        yield [
            (style, f"  {finding['code']}"),
            (
                "text",
                f"  {where}, event {finding.get('event')}: {finding.get('message')}"
                f"  (callgate explain {finding['code']})",
            ),
        ]


def _plain(lines: Iterator[Line]) -> str:
    return "\n".join("".join(text for _, text in line) for line in lines)


def _judged(flow: Any) -> Mapping[str, Any] | None:
    metadata = getattr(flow, "metadata", None)
    report = metadata.get(SHOWN) if isinstance(metadata, dict) else None
    return report if isinstance(report, dict) else None


def _framing(flow: Any, report: Mapping[str, Any]) -> str:
    """The framing the flow's body streamed in, by its profile and media type."""
    response = getattr(flow, "response", None)
    kind = response.headers.get("content-type", "") if response is not None else ""
    profile = report.get("profile")
    framing = (
        framing_for(profile, kind.split(";")[0].strip().lower())
        if isinstance(profile, str) and profile in PROFILES
        else None
    )
    return framing or SSE


def register() -> None:
    """Add the view to mitmproxy's registry, once per process, in the API the running
    mitmproxy has."""
    from mitmproxy import contentviews

    if getattr(contentviews, "Contentview", None) is not None:  # mitmproxy 12 and later
        contentviews.add(_modern_view())
    elif not any(view.name == "callgate" for view in contentviews.views):
        contentviews.add(_legacy_view())


def _modern_view() -> Any:
    from mitmproxy import contentviews

    contentview: Any = contentviews.Contentview  # type: ignore[attr-defined]  # mitmproxy 12

    class CallgateContentview(contentview):  # type: ignore[misc]
        name = "callgate"

        def prettify(self, data: bytes, metadata: Any) -> str:
            report = _judged(metadata.flow)
            if report is None:
                raise ValueError("callgate did not judge this flow")
            return _plain(render(report, data, _framing(metadata.flow, report)))

        def render_priority(self, data: bytes, metadata: Any) -> float:
            return 2.0 if _judged(metadata.flow) is not None else -1.0

    return CallgateContentview()


def _legacy_view() -> Any:
    from mitmproxy.contentviews.base import View

    class CallgateView(View):
        name = "callgate"

        def __call__(self, data: bytes, *, flow: Any = None, **metadata: Any) -> Any:
            report = _judged(flow)
            if report is None:
                return "callgate: not judged", iter(
                    [[("text", "callgate did not judge this flow")]]
                )
            return "callgate", render(report, data, _framing(flow, report))

        def render_priority(self, data: bytes, *, flow: Any = None, **metadata: Any) -> float:
            return 2.0 if _judged(flow) is not None else 0.0

    return CallgateView()
