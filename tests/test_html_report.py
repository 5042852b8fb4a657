"""The HTML replay report: its structure, its escaping, and what a real browser draws of it."""

from __future__ import annotations

import html
import re
import shutil
import struct
import subprocess
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from callgate.cli.files import load_envelope
from callgate.cli.replay.outcome import Outcome, judge
from callgate.cli.replay.reports.html_report import LABEL_W, PAD, PLOT_MAX, render_html
from callgate.reassemble import check
from tests.conftest import CONFORMANCE, conformance_fixtures

MARKER = re.compile(
    r'<path class="finding (blocking|tolerated)" data-code="([a-z_]+)" '
    r'fill="(#[0-9a-f]{6})"[^>]*><title>([^<]*)</title>'
)
LANE = re.compile(r'<g class="lane" data-lane="([^"]*)">')
RED, AMBER = (0xF0, 0x3E, 0x3E), (0xF5, 0x9F, 0x00)


def judged(path: Path, problems: list[str] | None = None) -> Outcome:
    """The real replay outcome of ``path``, optionally with stand-in expectation problems."""
    result = judge(path)
    return result if problems is None else replace(result, problems=problems)


def synthetic(envelope: dict[str, Any], name: str = "synthetic.json") -> Outcome:
    report = check(envelope)
    return Outcome.judged(Path(name), envelope, report)


def page(*names: str) -> str:
    return render_html([judged(CONFORMANCE / name) for name in names])


def timeline(html: str) -> str:
    """The first timeline SVG on the page (the legend's swatches are not part of it)."""
    match = re.search(r'<svg class="timeline".*?</svg>', html, re.S)
    assert match, "no timeline on the page"
    return match.group(0)


def openai_envelope(name: str, description: str, events: int = 3) -> dict[str, Any]:
    """One call of tool ``name`` whose arguments grow over ``events`` chunks, then the finish."""

    def chunk(entry: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "choices": [{"index": 0, "delta": {"tool_calls": [entry]}, "finish_reason": finish}]
        }

    first = chunk(
        {
            "index": 0,
            "id": "call_1",
            "type": "function",
            "function": {"name": name, "arguments": '{"q":"'},
        }
    )
    middle = [chunk({"index": 0, "function": {"arguments": "x"}}) for _ in range(events - 2)]
    last = chunk({"index": 0, "function": {"arguments": '"}'}}, "tool_calls")
    return {
        "description": description,
        "profile": "openai",
        "tool_schemas": {"search": {"type": "object"}},
        "chunks": [first, *middle, last],
    }


def test_the_summary_counts_held_not_held_and_unreadable(tmp_path: Path) -> None:
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text('{"profile": ', encoding="utf-8")
    html = render_html(
        [
            judged(CONFORMANCE / "openai" / "valid_fragmented.json"),
            judged(CONFORMANCE / "openai" / "truncated.json", ["status: x != y"]),
            judged(corrupt),
        ]
    )
    assert re.findall(r'<div class="count ([a-z-]+)"><b>(\d+)</b>', html) == [
        ("held", "1"),
        ("not-held", "1"),
        ("unreadable", "1"),
    ]
    assert "status: x != y" in html
    assert "not strict JSON (invalid_arguments_json)" in html and f"<code>{corrupt}</code>" in html


@pytest.mark.parametrize(
    ("name", "lanes"),
    [
        ("openai/reused_index_new_id.json", ["choice 0 slot 0"]),
        ("anthropic/stream_error.json", ["choice 0 slot 0", "turn"]),
        ("anthropic/valid_interleaved_blocks.json", ["choice 0 slot 0", "choice 0 slot 1"]),
        ("anthropic/unknown_block_type.json", ["choice 0 slot 0", "choice 0 slot 1"]),
        ("openai/valid_two_choices.json", ["choice 0 slot 0", "choice 1 slot 0"]),
        ("openai/invalid_slot_string_index.json", ["turn"]),
    ],
)
def test_each_slot_gets_a_lane_and_slotless_findings_share_a_turn_lane(
    name: str, lanes: list[str]
) -> None:
    assert LANE.findall(page(name)) == lanes


def test_a_lane_is_labelled_with_choice_slot_and_tool_name() -> None:
    svg = timeline(page("anthropic/valid_interleaved_blocks.json"))
    labels = re.findall(r'<text class="label"[^>]*><title>([^<]*)</title>', svg)
    assert labels == ["choice 0 slot 0: get_weather", "choice 0 slot 1: search"]


@pytest.mark.parametrize(
    "path", conformance_fixtures(), ids=lambda p: str(p.relative_to(CONFORMANCE))
)
def test_every_finding_has_a_marker_with_its_code_and_message_as_tooltip(path: Path) -> None:
    result = judge(path)
    assert result.report is not None and result.held
    markers = MARKER.findall(render_html([result]))
    assert len(markers) == len(result.report.findings)
    for (severity, code, _, tip), finding in zip(
        markers,
        sorted(result.report.findings, key=lambda f: (f.slot is None, f.choice or 0, f.slot or 0)),
        strict=True,
    ):
        assert (severity, code) == (finding.severity.value, finding.code.value)
        at = "the end of the stream" if finding.event is None else f"event {finding.event}"
        assert tip == html.escape(
            f"{finding.code.value} ({finding.severity.value}) at {at}: {finding.message}"
        )


def test_blocking_markers_are_red_and_tolerated_ones_amber() -> None:
    blocking = MARKER.findall(page("anthropic/stream_error.json"))
    tolerated = MARKER.findall(page("openai/quirk_ollama_missing_index_and_stop.json"))
    assert {(m[0], m[2]) for m in blocking} == {("blocking", "#f03e3e")}
    assert {(m[0], m[2]) for m in tolerated} == {("tolerated", "#f59f00")}


def test_a_slot_that_never_ended_runs_dashed_to_the_end_of_the_stream() -> None:
    svg = timeline(page("anthropic/stream_error.json"))
    bar = re.search(r'<rect class="bar open" x="([\d.]+)"[^>]*\swidth="([\d.]+)"[^>]*>', svg)
    assert bar and "stroke-dasharray" in bar.group(0)
    last_tick = max(float(x) for x in re.findall(r'<text class="tick" x="([\d.]+)"', svg))
    assert float(bar.group(1)) + float(bar.group(2)) == last_tick + PAD
    assert "never ended" in svg


def test_a_slot_that_ended_is_a_solid_bar_with_a_tick_where_it_grew() -> None:
    svg = timeline(page("openai/valid_fragmented.json"))
    assert svg.count('class="bar"') == 1 and 'class="bar open"' not in svg
    assert svg.count('class="grew"') == 6  # fragments in events 0..5, ended by event 6


def test_the_x_axis_runs_over_every_event_of_the_stream() -> None:
    envelope = load_envelope(CONFORMANCE / "anthropic" / "valid_interleaved_blocks.json")
    ticks = re.findall(
        r'<text class="tick"[^>]*>(\d+)</text>',
        timeline(page("anthropic/valid_interleaved_blocks.json")),
    )
    assert [int(t) for t in ticks] == list(range(len(envelope["events"])))


def test_a_long_stream_is_scaled_to_the_maximum_width() -> None:
    envelope = openai_envelope("search", "long", events=600)
    html = render_html([synthetic(envelope)])
    width = int(re.search(r'<svg class="timeline"[^>]*width="(\d+)"', html).group(1))  # type: ignore[union-attr]
    assert width == LABEL_W + PLOT_MAX + 3 * PAD  # a pad left of event 0, two right of the last
    ticks = [int(t) for t in re.findall(r'<text class="tick"[^>]*>(\d+)</text>', html)]
    assert ticks == [*range(0, 600, 50), 599]


def test_hostile_fixture_text_is_escaped_everywhere() -> None:
    script = "<script>alert(1)</script>"
    envelope = openai_envelope(script, f"</dd>{script}<img src=x onerror=alert(2)>")
    hostile = synthetic(envelope, f"fixtures/{script}.json")
    assert hostile.report and any(script in f.message for f in hostile.report.findings)
    html = render_html([replace(hostile, problems=[f"name: expected search, got {script}"])])
    assert "<script" not in html.lower() and "<img" not in html.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in timeline(html)
    assert "choice 0 slot 0: &lt;script&gt;" in html


def test_the_page_loads_nothing_from_elsewhere() -> None:
    html = page("openai/reused_index_new_id.json", "anthropic/stream_error.json")
    assert not re.search(r"<script|<link|<img|<iframe|@import|url\(|src=", html, re.I)
    assert set(re.findall(r'href="([^"]*)"', html)) <= {f"#f{i}" for i in range(2)}
    assert set(re.findall(r"https?://[^\s\"']+", html)) == {"http://www.w3.org/2000/svg"}
    assert "Content-Security-Policy" in html and "default-src 'none'" in html


def test_a_stream_without_slots_or_findings_draws_no_timeline() -> None:
    html = page("openai/text_only.json")
    assert '<svg class="timeline"' not in html
    assert "no tool-call slots and no findings to draw" in html


# -- in a real browser ---------------------------------------------------------------------------

CHROMIUM = shutil.which("chromium")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed (make test installs Debian's chromium package)",
)


def chromium(tmp_path: Path, html: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    report = tmp_path / "report.html"
    report.write_text(html, encoding="utf-8")
    command = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=1200,900",
        *args,
        report.as_uri(),
    ]
    return subprocess.run(command, capture_output=True, timeout=120, check=True)


def png_rows(data: bytes) -> tuple[int, int, int, list[bytes]]:
    """Width, height, bytes per pixel and unfiltered rows of an 8-bit non-interlaced PNG."""
    pos, chunks = 8, dict[bytes, bytes]()
    while pos < len(data):
        (size,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        chunks[kind] = chunks.get(kind, b"") + data[pos + 8 : pos + 8 + size]
        pos += 12 + size
    header, idat = chunks[b"IHDR"], chunks[b"IDAT"]
    width, height, depth, colour = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and header[12] == 0, "only 8-bit non-interlaced screenshots are read"
    bpp = {2: 3, 6: 4}[colour]
    raw, stride, rows = zlib.decompress(idat), width * bpp, [bytearray(width * bpp)]
    for y in range(height):
        start = y * (stride + 1)
        rows.append(
            unfilter(raw[start], bytearray(raw[start + 1 : start + 1 + stride]), rows[-1], bpp)
        )
    return width, height, bpp, [bytes(row) for row in rows[1:]]


def unfilter(kind: int, row: bytearray, prev: bytearray, bpp: int) -> bytearray:
    for i in range(len(row)):
        a, b = row[i - bpp] if i >= bpp else 0, prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        p = a + b - c
        paeth = (
            a if abs(p - a) <= min(abs(p - b), abs(p - c)) else b if abs(p - b) <= abs(p - c) else c
        )
        row[i] = (row[i] + (0, a, b, (a + b) // 2, paeth)[kind]) & 255
    return row


def count_colour(rows: list[bytes], bpp: int, rgb: tuple[int, int, int]) -> int:
    return sum(row[i : i + 3] == bytes(rgb) for row in rows for i in range(0, len(row), bpp))


@pytest.mark.browser
@needs_chromium
def test_chromium_has_the_lanes_and_markers_in_its_rendered_dom(tmp_path: Path) -> None:
    html = page("anthropic/stream_error.json", "anthropic/valid_interleaved_blocks.json")
    dom = chromium(tmp_path, html, "--dump-dom").stdout.decode("utf-8")
    assert dom.count('<svg class="timeline"') == 2
    assert LANE.findall(dom) == ["choice 0 slot 0", "turn", "choice 0 slot 0", "choice 0 slot 1"]
    assert len(MARKER.findall(dom)) == 3


@pytest.mark.browser
@needs_chromium
@pytest.mark.parametrize(
    ("name", "colour", "markers"),
    [
        ("anthropic/stream_error.json", RED, 3),
        ("openai/quirk_ollama_missing_index_and_stop.json", AMBER, 2),
    ],
    ids=["blocking-red", "tolerated-amber"],
)
def test_chromium_screenshot_shows_each_marker_in_its_colour(
    tmp_path: Path, name: str, colour: tuple[int, int, int], markers: int
) -> None:
    chromium(tmp_path, page(name), f"--screenshot={tmp_path / 'report.png'}")
    width, height, bpp, rows = png_rows((tmp_path / "report.png").read_bytes())
    assert (width, height) == (1200, 900)
    # Each diamond (the legend's swatch and every marker) fills 90-150 px of exactly its colour;
    # markers struck at one event overlap a little.
    assert (1 + markers) * 90 <= count_colour(rows, bpp, colour) <= (1 + markers) * 150
