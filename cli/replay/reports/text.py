"""The text report: one row per fixture, and a summary line, for terminals and CI logs."""

from __future__ import annotations

import io
from collections.abc import Sequence

from rich.table import Column, Table
from rich.text import Text

from callgate.cli.output import console, safe
from callgate.cli.replay.outcome import Outcome, summary_line

#: How wide the text table is when it goes to a file or a pipe (CI logs), not a terminal.
PLAIN_WIDTH = 200
_STYLES = {"pass": "green", "fail": "red"}


def text_table(outcomes: Sequence[Outcome]) -> Table:
    """One row per fixture: fixture, profile, provider, verdict, codes, expectation."""
    table = Table("profile", "provider", "verdict", "codes")
    # A fixture's path and its problems are what a reader acts on: wrap them, never cut them.
    table.columns.insert(0, Column("fixture", overflow="fold"))
    table.add_column("expectation", overflow="fold")
    for outcome in outcomes:
        table.add_row(*_text_row(outcome))
    return table


def _text_row(outcome: Outcome) -> list[Text]:
    report = outcome.report
    if report is None:
        return [
            Text(safe(outcome.fixture)),
            Text("-"),
            Text("-"),
            Text("unreadable", "red"),
            Text(""),
            Text(safe(outcome.error or ""), "red"),
        ]
    status = report.status.value
    tolerated = sorted({f.code.value for f in report.findings if not f.blocking})
    codes = "\n".join([*report.blocking_codes, *(f"{code} (tolerated)" for code in tolerated)])
    expectation = (
        Text("held", "green")
        if outcome.held
        else Text("\n".join(safe(p, one_line=True) for p in outcome.problems), "red")
    )
    return [
        Text(safe(outcome.fixture)),
        Text(report.profile),
        Text(safe(report.provider or "-")),
        Text(status, _STYLES.get(status, "yellow")),
        Text(codes),
        expectation,
    ]


def render_text(outcomes: Sequence[Outcome], terminal: bool) -> str:
    buffer = io.StringIO()
    shown = console(
        buffer, width=None if terminal else PLAIN_WIDTH, terminal=terminal, soft_wrap=False
    )
    shown.print(text_table(outcomes))
    shown.print(summary_line(outcomes))
    return buffer.getvalue()
