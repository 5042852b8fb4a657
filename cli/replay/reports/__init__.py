"""The reports of ``callgate replay``: pure functions from outcomes to text for people and CI.

How this works: every report reads the same ``Outcome`` list in its order and touches nothing
else, so a report is a function of the run. One module per format: ``text`` (a rich table for
terminals and logs), ``json_report`` (the whole run as data), ``junit`` (the JUnit XML that CI
test reporters read), ``sarif`` (SARIF 2.1.0 for code-scanning UIs) and ``html_report`` (a page
with a timeline per fixture). Each is imported only when asked for. Fixture content is
untrusted: rich text is never parsed as markup, and XML and HTML get only what they can carry,
escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from callgate.cli.choices import ReplayFormat
from callgate.cli.replay.outcome import Outcome


def render(
    report_format: ReplayFormat,
    outcomes: Sequence[Outcome],
    *,
    terminal: bool = False,
    root: Path | None = None,
) -> str:
    """The report in ``report_format``. Paths under ``root`` (default: the working folder) are
    shown relative to it in JUnit and SARIF; ``terminal`` keeps the text report's colours."""
    root = Path.cwd() if root is None else root
    if report_format is ReplayFormat.json:
        from callgate.cli.replay.reports.json_report import json_report

        return json_report(outcomes)
    if report_format is ReplayFormat.junit:
        from callgate.cli.replay.reports.junit import junit_report

        return junit_report(outcomes, root=root)
    if report_format is ReplayFormat.sarif:
        from callgate.cli.replay.reports.sarif import sarif_report

        return sarif_report(outcomes, root=root)
    if report_format is ReplayFormat.html:
        from callgate.cli.replay.reports.html_report import render_html

        return render_html(outcomes)
    from callgate.cli.replay.reports.text import render_text

    return render_text(outcomes, terminal)
