"""``callgate check``: judge fixture files, print reports, exit 0 / 1 / 2."""

from __future__ import annotations

import json
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import TextIO

from rich.console import Console
from rich.table import Table

from callgate.cli.files import load_envelope
from callgate.cli.output import console, error_line, safe, styled
from callgate.reassemble import Report, check
from callgate.reassemble.errors import InputError, UsageError


class ReportFormat(StrEnum):
    json = "json"
    text = "text"


def run_check(
    paths: Sequence[Path],
    report: ReportFormat,
    allow_quirks: Sequence[str],
    out: TextIO,
    err: TextIO,
) -> int:
    """Check each fixture; return the worst exit code (2 beats 1 beats 0)."""
    worst = 0
    shown = console(out)
    for path in paths:
        try:
            result = check(load_envelope(path), allow_quirks=allow_quirks)
        except InputError as error:  # this file; the others are still checked
            worst = error_line(error, err)
            continue
        except UsageError as error:  # an unknown --allow-quirk name: no file can be checked
            return error_line(error, err)
        if report is ReportFormat.json:
            out.write(
                json.dumps({"fixture": str(path), **result.to_dict()}, ensure_ascii=False) + "\n"
            )
        else:
            print_text_report(shown, path, result)
        worst = max(worst, result.exit_code)
    return worst


def print_text_report(console: Console, path: Path, report: Report) -> None:
    verdict = "EXECUTABLE" if report.executable else "BLOCKED"
    style = "green" if report.executable else "red"
    provider = "/" + report.provider if report.provider else ""
    console.print(
        styled(
            (str(path), "bold"),
            f"  {report.profile}{provider}  ",
            (f"{report.status.value} ({verdict})", style),
        )
    )
    if report.calls:
        table = Table("choice", "slot", "id", "name", "state", "arguments", show_lines=False)
        for call in report.calls:
            arguments = call.arguments if call.arguments is not None else "-"
            table.add_row(
                str(call.choice),
                str(call.slot),
                safe(call.id or "-"),
                safe(call.name or "-"),
                call.state.value,
                safe(arguments if len(arguments) <= 80 else arguments[:77] + "..."),
            )
        console.print(table)
    for finding in report.findings:
        where = f"slot {finding.slot}" if finding.slot is not None else "turn"
        mark = "tolerated" if not finding.blocking else "BLOCK"
        quirk = f" [{finding.quirk}]" if finding.quirk else ""
        console.print(
            safe(
                f"  {mark} {finding.code.value}{quirk} ({where}, event "
                f"{finding.event}, {finding.path}): {finding.message}",
                one_line=True,
            )
        )
