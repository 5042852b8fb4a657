"""The JSON report: the whole run as data."""

from __future__ import annotations

import json
from collections.abc import Sequence

from callgate.cli.replay.outcome import Outcome, summarize

REPORT_VERSION = 1


def json_report(outcomes: Sequence[Outcome]) -> str:
    """``{"report_version", "fixtures": [{"fixture", "held", "problems", "error", "report"}],
    "summary"}``; ``report`` is the engine's report (``null`` for an unreadable file). One
    fixture a line: readable and diffable, and each line made by json's C encoder (an indented
    document goes through its Python one, which took most of a large run's report)."""
    s = summarize(outcomes)
    fixtures = ",\n".join(
        json.dumps(
            {
                "fixture": str(o.fixture),
                "held": o.held,
                "problems": o.problems,
                "error": o.error,
                "report": o.report.to_dict() if o.report else None,
            }
        )
        for o in outcomes
    )
    summary = json.dumps({**s._asdict(), "exit_code": s.exit_code})
    listed = f"\n{fixtures}\n" if fixtures else ""
    return f'{{"report_version": {REPORT_VERSION}, "fixtures": [{listed}], "summary": {summary}}}\n'
