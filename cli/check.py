"""``callgate check``: judge fixture files, print reports, exit 0 / 1 / 2.

One file exits with its turn's own code (``Report.exit_code``). Several files (folders expand to
the fixtures under them) judge a set of recorded turns, where text-only turns sit beside tool
turns: 0 when some turn was applicable and every applicable turn passed, 1 when a turn blocked
(``fail``, or ``invalid``: a broken stream), 2 when no turn was applicable or a file could not
be read.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from callgate.cli.choices import ReportFormat
from callgate.cli.files import find_fixtures, load_envelope
from callgate.cli.output import console, error_line, safe, styled
from callgate.reassemble import Report, Status, check
from callgate.reassemble.errors import InputError, UsageError
from callgate.reassemble.report import EXIT_CODES

if TYPE_CHECKING:  # rich only for the text report: the JSON one never loads it
    from rich.console import Console

#: What a status means for the turn's calls, as the text report says it, and its colour. A turn
#: without a tool call blocked nothing; an invalid one is a broken stream, and blocks.
_VERDICTS = {
    Status.PASS: ("EXECUTABLE", "green"),
    Status.FAIL: ("BLOCKED", "red"),
    Status.INVALID: ("BLOCKED", "red"),
    Status.NOT_APPLICABLE: ("no tool call", "yellow"),
}


def run_check(
    paths: Sequence[Path],
    report: ReportFormat,
    allow_quirks: Sequence[str],
    out: TextIO,
    err: TextIO,
) -> int:
    """Check each fixture (a folder: each fixture under it), print its report and return the
    exit code: one file's own, or for several the rule in the module's docstring."""
    files = _expanded(paths)
    shown: Console | None = None  # made for the first text report
    statuses: list[Status] = []
    unreadable = False
    for path in files:
        try:
            result = check(load_envelope(path), allow_quirks=allow_quirks)
        except InputError as error:  # this file; the others are still checked
            # A folder is in the list only when it holds no fixture.
            empty = InputError("no *.json fixture in this folder", path) if path.is_dir() else None
            error_line(empty or error, err)
            unreadable = True
            continue
        except UsageError as error:  # an unknown --allow-quirk name: no file can be checked
            return error_line(error, err)
        if report is ReportFormat.json:
            out.write(
                json.dumps({"fixture": str(path), **result.to_dict()}, ensure_ascii=False) + "\n"
            )
        else:
            shown = shown or console(out)
            print_text_report(shown, path, result)
        statuses.append(result.status)
    return exit_code(statuses, unreadable, several=len(files) > 1)


def exit_code(statuses: Sequence[Status], unreadable: bool, *, several: bool) -> int:
    """The exit code of a check that judged turns with ``statuses`` (``unreadable``: some file
    could not be judged). One turn keeps its own code, ``not_applicable`` included."""
    if unreadable or not statuses:
        return 2
    if not several:
        return EXIT_CODES[statuses[0]]
    if Status.FAIL in statuses or Status.INVALID in statuses:
        return 1
    return 0 if Status.PASS in statuses else 2


def _expanded(paths: Sequence[Path]) -> list[Path]:
    """``paths`` in the order given, each folder replaced by the fixtures under it (see
    ``find_fixtures``)."""
    return [found for path in paths for found in find_fixtures([path])]


def print_text_report(console: Console, path: Path, report: Report) -> None:
    verdict, style = _VERDICTS[report.status]
    provider = "/" + report.provider if report.provider else ""
    console.print(
        styled(
            (str(path), "bold"),
            f"  {report.profile}{provider}  ",
            (f"{report.status.value} ({verdict})", style),
        )
    )
    if report.calls:
        from rich.table import Table

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
