"""``callgate diff --mutations``: every fault and variation of one passing turn, through each
real accumulator, beside callgate's verdict: one table, fault by library.

How this works: ``callgate.reassemble.mutations`` makes each variant (checked by the engine as
it is made); each goes to every adapter's runner as ``callgate diff`` sends a fixture, and the
row says what the library would hand its tool runner, or what it raised. A cell where that is
not what callgate hands on (calls of a turn callgate blocks, other calls than callgate's) is
bold. ``--report markdown`` writes the same table as Markdown, as docs/bad-streams.md shows it, and
``--report html`` as a page of its own.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from rich.table import Table
from rich.text import Text

from callgate.cli.choices import DiffReport
from callgate.cli.diff.command import (
    ADAPTERS,
    Adapter,
    AdapterResult,
    check_profile,
    compare,
    count,
    error_type,
    pick_runtimes,
    run_adapter_many,
)
from callgate.cli.files import load_envelope
from callgate.cli.output import console, error_line, safe
from callgate.reassemble import Report, check
from callgate.reassemble.errors import CallgateError, NotApplicable, UsageError
from callgate.reassemble.mutations import mutate, mutations

#: Argument texts longer than this are cut in a cell.
SHOWN = 24


def run_diff_mutations(
    path: Path,
    adapters: Sequence[str],
    python: str | None,
    report: str,
    out: TextIO,
    err: TextIO,
    node_modules: Sequence[Path] = (),
) -> int:
    """0 when every library agrees with callgate on every variant, 1 when one does not, 2 for
    invalid input or a library that cannot run. A Node adapter has a column per
    ``node_modules`` folder (one per release of its packages)."""
    try:
        return _diff(path, adapters, python, node_modules, report, out)
    except CallgateError as error:
        return error_line(error if error.source is not None else f"{path}: {error}", err)


def _diff(
    path: Path,
    adapters: Sequence[str],
    python: str | None,
    node_modules: Sequence[Path],
    report: str,
    out: TextIO,
) -> int:
    envelope = load_envelope(path)
    for adapter in adapters:
        check_profile(envelope["profile"], adapter)
    if check(envelope).status.value != "pass":
        raise UsageError("--mutations needs a passing turn to make its variants from")
    columns = [
        (adapter, runtime)
        for adapter in adapters
        for runtime in pick_runtimes(adapter, python, node_modules)
    ]
    variants: dict[str, dict[str, Any]] = {}
    skipped: list[str] = []
    for kind in mutations(profile=envelope["profile"]):
        try:
            variants[kind] = mutate(envelope, kind, path.name)
        except NotApplicable as not_applicable:
            skipped.append(str(not_applicable))
    results = [
        run_adapter_many(runtime, adapter, list(variants.values())) for adapter, runtime in columns
    ]
    rows: list[tuple[str, Report, list[AdapterResult]]] = [
        (kind, check(variant), [column[n] for column in results])
        for n, (kind, variant) in enumerate(variants.items())
    ]
    heads = (
        ["kind", "callgate", *(f"{r.adapter} {r.version}" for r in rows[0][2])]
        if rows
        else ["kind", "callgate", *(adapter for adapter, _ in columns)]
    )
    cells = [
        [
            (kind, False),
            (_callgate(report), False),
            *(_library(r, report, ADAPTERS[r.adapter]) for r in results),
        ]
        for kind, report, results in rows
    ]
    # A library cell differs exactly where the library and callgate disagree.
    worst = int(any(differs for row in cells for _, differs in row[2:]))
    if report == DiffReport.markdown:
        out.write(_markdown(heads, cells))
    elif report == DiffReport.html:
        out.write(_html(f"{path}  {envelope['profile']}", heads, cells, skipped))
        return worst
    else:
        shown = console(out)
        table = Table(title=safe(f"{path}  {envelope['profile']}"))
        for head in heads:
            table.add_column(head, overflow="fold")
        for row in cells:
            table.add_row(
                *(Text(safe(text), style="bold red" if differs else "") for text, differs in row)
            )
        shown.print(table)
    for reason in skipped:
        out.write(f"skipped {reason}\n")
    return worst


def _callgate(report: Report) -> str:
    if report.executable:
        return f"passes, runs {count(len(report.calls), 'call')}"
    return "blocks: " + ", ".join(report.blocking_codes or [report.status.value])


def _library(result: AdapterResult, report: Report, adapter: Adapter) -> tuple[str, bool]:
    """What the library does with the variant, and whether that differs from callgate."""
    if result.error:
        said = f"raises {error_type(result)}"
    elif result.calls:
        said = "runs " + ", ".join(f"{call.name}({_cut(call.arguments)})" for call in result.calls)
    else:
        said = "runs nothing"
    return said, not compare(result, report, adapter).agree


def _cut(arguments: str | None) -> str:
    text = "-" if arguments is None else arguments
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


def _markdown(heads: list[str], rows: list[list[tuple[str, bool]]]) -> str:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |\n"

    def cell(text: str, differs: bool) -> str:
        text = text.replace("*", "\\*")
        return f"**{text}**" if differs else text

    return (
        line(heads)
        + line(["---"] * len(heads))
        + "".join(line([f"`{row[0][0]}`", *(cell(*c) for c in row[1:])]) for row in rows)
    )


def _html(
    title: str, heads: list[str], rows: list[list[tuple[str, bool]]], skipped: list[str]
) -> str:
    def cell(text: str, differs: bool) -> str:
        return (
            f'<td class="differs"><strong>{html.escape(text)}</strong></td>'
            if differs
            else f"<td>{html.escape(text)}</td>"
        )

    body = "".join(
        f'<tr data-kind="{html.escape(row[0][0])}"><td><code>{html.escape(row[0][0])}</code></td>'
        + "".join(cell(*c) for c in row[1:])
        + "</tr>\n"
        for row in rows
    )
    notes = "".join(f"<li>{html.escape(reason)}</li>" for reason in skipped)
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>callgate diff --mutations: {html.escape(title)}</title><style>"
        "body{font:14px system-ui,sans-serif;margin:2em}table{border-collapse:collapse}"
        "th,td{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}"
        "td.differs{background:#fde8e8;color:#8a1c1c}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><p>Each fault and variation of the turn, through each "
        "library: what it hands its tool runner, beside callgate. Red: not what callgate hands "
        "on.</p><table><thead><tr>"
        + "".join(f"<th>{html.escape(h)}</th>" for h in heads)
        + f"</tr></thead><tbody>\n{body}</tbody></table>"
        + (f"<h2>Not applicable</h2><ul>{notes}</ul>" if notes else "")
        + "</body></html>\n"
    )
