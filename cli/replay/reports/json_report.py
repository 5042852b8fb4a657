"""The JSON report: the whole run as data."""

from __future__ import annotations

import json
from collections.abc import Sequence

from callgate.cli.replay.outcome import Outcome, summarize

REPORT_VERSION = 1


def json_report(outcomes: Sequence[Outcome]) -> str:
    """``{"report_version", "fixtures": [{"fixture", "held", "problems", "error", "report"}],
    "summary"}``; ``report`` is the engine's report (``null`` for an unreadable file)."""
    s = summarize(outcomes)
    document = {
        "report_version": REPORT_VERSION,
        "fixtures": [
            {
                "fixture": str(o.fixture),
                "held": o.held,
                "problems": o.problems,
                "error": o.error,
                "report": o.report.to_dict() if o.report else None,
            }
            for o in outcomes
        ],
        "summary": {**s._asdict(), "exit_code": s.exit_code},
    }
    return json.dumps(document, indent=2) + "\n"
