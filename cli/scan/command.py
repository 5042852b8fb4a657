"""``callgate scan PATH ...``: every file under the paths, one line per finding
(``FILE:LOCATION: KIND (pattern)``), one ``skipped FILE: not a recording`` line per file that
holds none, and the exit code: 0 nothing found, 1 a finding, 2 a file could not be read.

Nothing a finding points at is printed: not the credential, not the prompt, not the output.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TextIO

from callgate.cli.choices import ScanFormat
from callgate.cli.output import error_line, line
from callgate.cli.scan import ScanResult
from callgate.cli.scan.sources import scan_file
from callgate.reassemble.errors import InputError
from callgate.redact.scanning import Kind


def run_scan(
    paths: Sequence[Path],
    kinds: Collection[Kind],
    report_format: ScanFormat,
    output: Path | None,
    out: TextIO,
    err: TextIO,
) -> int:
    """Scan every file under ``paths`` for findings of ``kinds`` (all when empty) and report
    them. Exit 0: nothing found; 1: a finding; 2: a path or file could not be read."""
    wanted = frozenset(kinds) or frozenset(Kind)
    results = [_scan_one(path, wanted) for path in files_under(paths)]
    sarif_to_stdout = report_format is ScanFormat.sarif and output is None
    for result in results:
        if result.error is not None:
            error_line(f"{result.path}: {result.error}", err)
        elif not sarif_to_stdout:
            _print_result(result, out)
    if report_format is ScanFormat.sarif:
        from callgate.cli.scan.sarif import sarif_log

        log = sarif_log(results, root=Path.cwd())
        if output is None:
            out.write(log)
        else:
            output.write_text(log, encoding="utf-8")
    if any(result.error is not None for result in results):
        return 2
    return 1 if any(result.findings for result in results) else 0


def files_under(paths: Sequence[Path]) -> list[Path]:
    """Each path that is a file, and every file below each folder (hidden entries and links to
    folders left out), folders in sorted order. A path that is neither stays, to be reported."""
    found: list[Path] = []
    for path in paths:
        if not path.is_dir():
            found.append(path)
            continue
        for folder, folders, files in os.walk(path):
            folders[:] = sorted(name for name in folders if not name.startswith("."))
            top = Path(folder)
            found += [top / name for name in sorted(files) if not name.startswith(".")]
    return list(dict.fromkeys(found))


def _scan_one(path: Path, kinds: frozenset[Kind]) -> ScanResult:
    try:
        findings = scan_file(path)
    except InputError as error:
        return ScanResult(path, error=str(error))
    if findings is None:
        return ScanResult(path, skipped=True)
    unique = dict.fromkeys(finding for finding in findings if finding.kind in kinds)
    return ScanResult(path, list(unique))


def _print_result(result: ScanResult, out: TextIO) -> None:
    if result.skipped:
        line(f"skipped {result.path}: not a recording", out)
    for finding in result.findings:
        line(finding.line(str(result.path)), out)
