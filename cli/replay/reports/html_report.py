"""One self-contained HTML page for a replay run: a summary, then every fixture with its picture.

How this works: ``render_html`` turns replay outcomes into a string. Each fixture gets its
verdict, its expectation problems, a table of calls and findings, and a timeline: an inline SVG
with one lane per slot (plus a "turn" lane for slot-less findings) whose x axis is the stream's
event index. A slot is a bar from the event that opened it to the one that ended it (dashed to
the end of the stream when nothing ended it), with ticks where fragments grew it; each finding is
a marker where it struck, red when blocking and amber when tolerated, its code and message in an
SVG ``<title>`` tooltip.

Fixture content is untrusted (tool names, ids, descriptions and messages come from recordings),
so every piece of text goes through ``html.escape``, and the page carries a Content-Security-
Policy that forbids scripts and any fetch: it works opened from disk and cannot phone home.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape
from math import log10

from callgate.cli.replay.outcome import Outcome
from callgate.reassemble import Call, Finding, Report, Status

#: Geometry of the timeline, in px. The plot never grows past PLOT_MAX however long the stream,
#: and a short stream is not stretched past MAX_STEP per event, so bars stay comparable.
LABEL_W, PLOT_MAX, MAX_STEP, PAD, LANE_H, AXIS_H = 240, 900, 72.0, 18, 34, 30
LABEL_CHARS = 34
RED, AMBER = "#f03e3e", "#f59f00"
BAR_COLORS = {"validated": "#40c057", "blocked": "#868e96"}
BAR_DEFAULT = "#4dabf7"


def render_html(outcomes: Sequence[Outcome]) -> str:
    """The whole report page for ``outcomes``, in their order. Pure: no I/O, never raises on
    fixture content."""
    sections = "\n".join(_fixture_section(i, o) for i, o in enumerate(outcomes))
    return (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        f"style-src 'unsafe-inline'\">"
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>callgate report</title><style>{_CSS}</style></head>\n<body>\n"
        f"{_summary(outcomes)}\n<main>\n{sections}\n</main>\n</body></html>\n"
    )


def _summary(outcomes: Sequence[Outcome]) -> str:
    kinds = [o.kind for o in outcomes]
    cards = "".join(
        f'<div class="count {k}"><b>{kinds.count(k)}</b> {k.replace("-", " ")}</div>'
        for k in ("held", "not-held", "unreadable")
    )
    # Jump links to what needs attention; a long run is mostly fixtures that held.
    links = "".join(
        f'<li><a href="#f{i}">{_e(o.fixture)}</a> <span class="tag {kinds[i]}">'
        f"{kinds[i].replace('-', ' ')}</span></li>"
        for i, o in enumerate(outcomes)
        if kinds[i] != "held"
    )
    attention = f'<ul class="attention">{links}</ul>' if links else ""
    return (
        f"<header><h1>callgate report</h1><p>{len(outcomes)} fixture(s)</p>"
        f'<div class="counts">{cards}</div>{_LEGEND}{attention}</header>'
    )


def _fixture_section(index: int, outcome: Outcome) -> str:
    state = outcome.kind
    known, report = outcome.facts, outcome.report
    head = (
        f'<h2><span class="tag {state}">{state.replace("-", " ")}</span> '
        f"<code>{_e(outcome.fixture)}</code></h2>"
    )
    facts = [
        ("description", known.description if known else None),
        ("profile", report.profile if report else None),
        ("provider", report.provider if report else None),
        ("verdict", _verdict(report)),
    ]
    body = "".join(
        f"<dt>{name}</dt><dd>{_e(value)}</dd>" for name, value in facts if value is not None
    )
    parts = [head, f"<dl>{body}</dl>", _problems(outcome)]
    if report is not None:
        events = event_count(known.events if known else 0, report)
        parts += [
            timeline_svg(report, events),
            _calls_table(report.calls),
            _findings_table(report.findings),
        ]
    return f'<section class="fixture {state}" id="f{index}">{"".join(parts)}</section>'


def _verdict(report: Report | None) -> str | None:
    if report is None:
        return None
    if report.status is Status.NOT_APPLICABLE:  # a turn without a tool call blocked nothing
        return f"{report.status.value} (no tool call)"
    return f"{report.status.value} ({'executable' if report.executable else 'blocked'})"


def _problems(outcome: Outcome) -> str:
    lines = ([outcome.error] if outcome.error is not None else []) + list(outcome.problems)
    if not lines:
        return ""
    title = "error" if outcome.error is not None else "expectation problems"
    items = "".join(f"<li>{_e(line)}</li>" for line in lines)
    return f'<div class="problems"><h3>{title}</h3><ul>{items}</ul></div>'


def _calls_table(calls: Sequence[Call]) -> str:
    rows = [
        f"<tr><td>{c.choice}</td><td>{c.slot}</td><td>{_e(c.id or '-')}</td>"
        f'<td>{_e(c.name or "-")}</td><td class="args">{_e(_shorten(c.arguments, 240))}</td>'
        f'<td class="state {c.state.value}">{c.state.value}</td></tr>'
        for c in calls
    ]
    return _table(
        "calls", ("choice", "slot", "id", "name", "arguments", "state"), rows, "no tool calls"
    )


def _findings_table(findings: Sequence[Finding]) -> str:
    rows = [
        f'<tr class="{f.severity.value}"><td><code>{f.code.value}</code></td>'
        f"<td>{_severity(f)}</td><td>{_where(f)}</td>"
        f"<td>{'-' if f.event is None else f.event}</td>"
        f"<td>{_e(f.message)}<br><small>{_e(f.path)}</small></td></tr>"
        for f in findings
    ]
    return _table("findings", ("code", "severity", "slot", "event", "message"), rows, "no findings")


def _table(name: str, headings: Sequence[str], rows: Sequence[str], empty: str) -> str:
    if not rows:
        return f'<p class="none">{empty}</p>'
    head = "".join(f"<th>{heading}</th>" for heading in headings)
    return f'<table class="{name}"><caption>{name}</caption><tr>{head}</tr>{"".join(rows)}</table>'


def _severity(finding: Finding) -> str:
    # A tolerated finding is only harmless because of its named quirk: say which one.
    return finding.severity.value + (f" ({_e(finding.quirk)})" if finding.quirk else "")


def _where(finding: Finding) -> str:
    if finding.slot is None:
        return "turn"
    return f"{'' if finding.choice is None else f'choice {finding.choice} '}slot {finding.slot}"


# -- the timeline ------------------------------------------------------------------------------

Lane = tuple[int, int] | None  # (choice, slot), or None for the turn lane


def event_count(count: int, report: Report) -> int:
    """How many events to draw: the stream's ``count``, stretched to cover any index the report
    names (a stand-in envelope must not push markers off the picture)."""
    named = [f.event for f in report.findings if f.event is not None]
    for call in report.calls:
        named += [e for e in (call.opened, call.ended, *call.grew) if e is not None]
    return max([count, *(e + 1 for e in named)])


def lanes(report: Report) -> list[Lane]:
    """Every slot a call or finding names, in (choice, slot) order, then the turn lane if any
    finding has no slot."""
    slots = {(c.choice, c.slot) for c in report.calls}
    slots.update(key for key in map(_slot_of, report.findings) if key is not None)
    ordered: list[Lane] = [*sorted(slots)]
    if any(f.slot is None for f in report.findings):
        ordered.append(None)
    return ordered


def _slot_of(finding: Finding) -> Lane:
    # Findings on a slot always name its choice in practice; -1 keeps a stray one sortable.
    return (
        None
        if finding.slot is None
        else (finding.choice if finding.choice is not None else -1, finding.slot)
    )


def timeline_svg(report: Report, events: int) -> str:
    """The timeline picture of one report over a stream of ``events`` events."""
    rows = lanes(report)
    if not rows:
        return '<p class="none">no tool-call slots and no findings to draw</p>'
    step = min(MAX_STEP, PLOT_MAX / max(events - 1, 1))
    scale = _Scale(step, events)
    width, height = scale.right + PAD, len(rows) * LANE_H + AXIS_H
    # Painter's order: stripes, then the grid over them, then bars and markers on top.
    body = [_stripe(i, width) for i in range(len(rows))] + [_axis(scale, len(rows) * LANE_H)]
    calls = {(c.choice, c.slot): c for c in report.calls}
    for i, lane in enumerate(rows):
        hits = [f for f in report.findings if _slot_of(f) == lane]
        body.append(_lane(i, lane, calls.get(lane) if lane else None, hits, scale))
    return (
        f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" '
        f'height="{height}" viewBox="0 0 {width:.0f} {height}" role="img">'
        f"<title>timeline over {events} event(s)</title>{''.join(body)}</svg>"
    )


class _Scale:
    """Maps an event index to an x coordinate in the plot area."""

    def __init__(self, step: float, events: int) -> None:
        self.step, self.events = step, events
        self.left = LABEL_W + PAD
        self.right = self.left + step * max(events - 1, 0) + PAD

    def x(self, event: int) -> float:
        return self.left + event * self.step

    @property
    def last(self) -> int:
        return max(self.events - 1, 0)


def _axis(scale: _Scale, plot_h: int) -> str:
    # A "nice" label interval (1, 2, 5, 10, ...) keeps labels >= 44 px apart on long streams.
    every = _nice(44 / scale.step)
    shown = list(range(0, scale.last + 1, every))
    if scale.last - shown[-1] >= every / 2:  # the last event is always worth a number
        shown.append(scale.last)
    marks = []
    for event in shown:
        x = scale.x(event)
        marks.append(
            f'<line class="grid" x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{plot_h}"/>'
            f'<text class="tick" x="{x:.1f}" y="{plot_h + 14}">{event}</text>'
        )
    label = f'<text class="axis" x="{LABEL_W - 8}" y="{plot_h + 14}">event</text>'
    divider = f'<line class="divider" x1="{LABEL_W}" y1="0" x2="{LABEL_W}" y2="{plot_h}"/>'
    return "".join(marks) + label + divider


def _nice(minimum: float) -> int:
    if minimum <= 1:
        return 1
    base: int = 10 ** int(log10(minimum))
    return next(m * base for m in (1, 2, 5, 10) if m * base >= minimum)


def _lane(row: int, lane: Lane, call: Call | None, hits: list[Finding], scale: _Scale) -> str:
    mid = row * LANE_H + LANE_H // 2
    label = _lane_label(lane, call)
    name = "turn" if lane is None else f"choice {lane[0]} slot {lane[1]}"
    parts = [
        f'<text class="label" x="8" y="{mid + 4}"><title>{_e(label)}</title>'
        f"{_e(_shorten(label, LABEL_CHARS))}</text>"
    ]
    if call is not None:
        parts += [_bar(call, mid, scale), *_ticks(call.grew, mid, scale)]
    parts += _markers(hits, mid, scale)
    return f'<g class="lane" data-lane="{_e(name)}">{"".join(parts)}</g>'


def _stripe(row: int, width: float) -> str:
    shade = "odd" if row % 2 else "even"
    return (
        f'<rect class="stripe {shade}" x="0" y="{row * LANE_H}" width="{width:.0f}" '
        f'height="{LANE_H}"/>'
    )


def _lane_label(lane: Lane, call: Call | None) -> str:
    if lane is None:
        return "turn"
    name = call.name if call is not None and call.name else "?"
    return f"choice {lane[0]} slot {lane[1]}: {name}"


def _bar(call: Call, mid: int, scale: _Scale) -> str:
    if call.opened is None:  # never started: only its findings have a place in the picture
        return ""
    start = scale.x(call.opened)
    closed = call.ended is not None
    end = scale.x(call.ended) if call.ended is not None else scale.right - 4
    colour = BAR_COLORS.get(call.state.value, BAR_DEFAULT)
    span = (
        f"opened at event {call.opened}, "
        + (f"ended at event {call.ended}" if closed else "never ended")
        + f"; {call.state.value}"
    )
    style = "" if closed else ' stroke-dasharray="6 3" fill-opacity="0.3" stroke-width="1.5"'
    return (
        f'<rect class="bar{"" if closed else " open"}" x="{start - 4:.1f}" y="{mid - 7}" '
        f'width="{max(end - start + 8, 8):.1f}" height="14" rx="4" fill="{colour}" '
        f'stroke="{colour}"{style}><title>{_e(span)}</title></rect>'
    )


def _ticks(grew: Iterable[int], mid: int, scale: _Scale) -> list[str]:
    # On a long stream the ticks touch; thinner ones keep the bar's colour readable under them.
    dense = ' stroke-width="0.75"' if scale.step < 4 else ""
    return [
        f'<line class="grew" x1="{scale.x(e):.1f}" y1="{mid - 10}" x2="{scale.x(e):.1f}" '
        f'y2="{mid + 10}"{dense}/>'
        for e in grew
    ]


def _markers(hits: list[Finding], mid: int, scale: _Scale) -> list[str]:
    out: list[str] = []
    seen: dict[int, int] = {}
    for finding in hits:
        event = finding.event if finding.event is not None else scale.last
        # Several findings at one event fan out a little, so each stays hoverable.
        nth = seen[event] = seen.get(event, -1) + 1
        x = scale.x(event) + nth * 9
        colour = RED if finding.blocking else AMBER
        at = f"event {finding.event}" if finding.event is not None else "the end of the stream"
        tip = f"{finding.code.value} ({finding.severity.value}) at {at}: {finding.message}"
        out.append(
            f'<path class="finding {finding.severity.value}" '
            f'data-code="{finding.code.value}" fill="{colour}" '
            f'd="M{x:.1f} {mid - 11}l10 11l-10 11l-10 -11z"><title>{_e(tip)}</title>'
            "</path>"
        )
    return out


def _shorten(text: str | None, limit: int) -> str:
    if text is None:
        return "-"
    return text if len(text) <= limit else f"{text[: limit - 1]}… ({len(text)} chars)"


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _swatch(shape: str, text: str) -> str:
    return (
        f'<span><svg xmlns="http://www.w3.org/2000/svg" width="44" height="24" '
        f'aria-hidden="true">{shape}</svg>{text}</span>'
    )


_LEGEND = (
    '<div class="legend">'
    + "".join(
        [
            _swatch(
                '<rect x="2" y="5" width="40" height="14" rx="4" '
                f'fill="{BAR_COLORS["validated"]}"/>'
                '<line class="grew" x1="22" y1="2" x2="22" y2="22"/>',
                "slot: opened → ended, a tick where a fragment grew it",
            ),
            _swatch(
                f'<rect x="2" y="5" width="40" height="14" rx="4" fill="{BAR_DEFAULT}" '
                f'fill-opacity="0.3" stroke="{BAR_DEFAULT}" stroke-width="1.5" '
                'stroke-dasharray="6 3"/>',
                "never ended",
            ),
            _swatch(
                f'<path class="finding" fill="{RED}" d="M22 1l10 11l-10 11l-10 -11z"/>',
                "blocking finding",
            ),
            _swatch(
                f'<path class="finding" fill="{AMBER}" d="M22 1l10 11l-10 11l-10 -11z"/>',
                "tolerated finding (named quirk)",
            ),
        ]
    )
    + "<span>hover a marker or bar for details</span></div>"
)

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#212529;
 background:#f1f3f5;margin:0}
header,main{max-width:1240px;margin:0 auto;padding:12px 20px}
h1{margin:8px 0 0;font-size:22px} h2{font-size:16px;margin:0 0 8px} h3{margin:0;font-size:14px}
.counts{display:flex;gap:12px;margin:10px 0}
.count{background:#fff;border-radius:8px;padding:8px 16px;border-left:6px solid #adb5bd}
.count b{font-size:22px;margin-right:4px}
.count.held{border-color:#40c057} .count.not-held{border-color:#e03131}
.count.unreadable{border-color:#f08c00}
.tag{font-size:12px;padding:1px 8px;border-radius:10px;color:#fff;background:#868e96}
.tag.held{background:#2f9e44} .tag.not-held{background:#e03131}
.tag.unreadable{background:#e8590c}
.attention{columns:2;margin:6px 0}
section.fixture{background:#fff;border-radius:8px;padding:14px 18px;margin:14px 0;
 border-left:6px solid #40c057;overflow-x:auto}
section.not-held{border-left-color:#e03131} section.unreadable{border-left-color:#f08c00}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:0 0 10px}
dt{color:#868e96} dd{margin:0}
.problems{background:#fff5f5;border:1px solid #ffc9c9;border-radius:6px;padding:8px 12px;
 margin:0 0 10px} .problems ul{margin:4px 0 0;padding-left:20px}
svg.timeline{display:block;max-width:100%;height:auto;margin:6px 0 10px;font-size:12px}
svg text{fill:#343a40} .stripe{fill:#f8f9fa} .stripe.odd{fill:#edf0f3}
.divider{stroke:#ced4da}
.label{font-family:ui-monospace,Menlo,Consolas,monospace}
.grid{stroke:#e9ecef} .tick{text-anchor:middle;fill:#868e96} .axis{text-anchor:end;fill:#868e96}
.grew{stroke:#1c3d5a;stroke-width:1.5;stroke-opacity:.75}
.finding{stroke:#fff;stroke-width:1.5}
.legend{display:flex;flex-wrap:wrap;gap:4px 18px;align-items:center;font-size:13px;
 margin:6px 0;color:#495057} .legend svg{vertical-align:middle;margin-right:4px}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px;width:100%}
caption{text-align:left;font-weight:600;padding:2px 0}
th,td{border-bottom:1px solid #e9ecef;padding:3px 8px;text-align:left;vertical-align:top}
th{color:#868e96;font-weight:500}
td.args{font-family:ui-monospace,Menlo,Consolas,monospace;word-break:break-all;max-width:480px}
td.state.blocked{color:#c92a2a} td.state.validated{color:#2b8a3e}
tr.blocking td:first-child code{color:#c92a2a} tr.tolerated td:first-child code{color:#e67700}
.none{color:#868e96;font-style:italic;margin:4px 0}
"""
