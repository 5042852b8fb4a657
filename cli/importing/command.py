"""``callgate import``: recordings users already have, turned into redacted fixtures.

Each source file is read into exchanges (``callgate.cli.importing.read``), each exchange is redacted
(``redact``), and each fixture is written atomically, mode 0600, under a name made only of the
provider, the profile and a hash of the fixture: nothing from inside the recording names a file.
One bad exchange never stops the rest; every exchange gets one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from callgate.cli.importing.read import Skipped, read_source
from callgate.cli.output import error_line, line
from callgate.proxy_addon.storage import write_atomic
from callgate.reassemble.errors import InputError
from callgate.reassemble.profiles import PROFILES
from callgate.redact import (
    ArgumentMode,
    NotApplicable,
    Redacted,
    RedactionRefused,
    fixture_name,
    redact_exchange,
)
from callgate.redact.exchange import Exchange


@dataclass(frozen=True, kw_only=True)
class ImportOptions:
    out: Path | None = None
    out_dir: Path = Path(".")
    request: Path | None = None
    profile: str | None = None
    provider: str | None = None
    url: str | None = None
    arguments: ArgumentMode = ArgumentMode.MASK
    allow_verdict_change: bool = False


@dataclass
class _Tally:
    written: int = 0
    refused: int = 0
    unreadable: int = 0


def run_import(sources: Sequence[Path], options: ImportOptions, out: TextIO, err: TextIO) -> int:
    """Import every source. Exit 0: every streamed exchange found was written (at least one);
    1: one was refused or nothing was found to import; 2: a source file could not be used."""
    if options.profile is not None and options.profile not in PROFILES:
        return error_line(
            f"unknown profile {options.profile!r}; known: {', '.join(sorted(PROFILES))}", err
        )
    request_body = _request_body(options, err)
    if request_body is None:
        return 2
    tally = _Tally()
    planned: list[tuple[str, Redacted]] = []
    for source in sources:
        try:
            items = read_source(source, request_body=request_body, url=options.url)
        except InputError as error:
            error_line(f"{source}: {error}", err)
            tally.unreadable += 1
            continue
        for number, item in enumerate(items, 1):
            label = f"{source} #{number}"
            redacted = _redact_one(label, item, options, out, err, tally)
            if redacted is not None:
                planned.append((label, redacted))
    _write_all(planned, options, out, err, tally)
    return _exit_code(tally, err)


def _request_body(options: ImportOptions, err: TextIO) -> bytes | None:
    if options.request is None:
        return b"{}"
    try:
        return options.request.read_bytes()
    except OSError as error:
        error_line(f"{options.request}: cannot read: {error.strerror or error}", err)
        return None


def _redact_one(
    label: str,
    item: Exchange | Skipped,
    options: ImportOptions,
    out: TextIO,
    err: TextIO,
    tally: _Tally,
) -> Redacted | None:
    if isinstance(item, Skipped):
        line(f"skipped {label} ({item.label}): {item.reason}", out)
        return None
    try:
        redacted = redact_exchange(
            item,
            profile=options.profile,
            provider=options.provider,
            arguments=options.arguments,
            allow_verdict_change=options.allow_verdict_change,
        )
    except NotApplicable as reason:
        line(f"skipped {label}: {reason}", out)
        return None
    except RedactionRefused as reason:
        error_line(f"refused {label}: {reason}", err)
        tally.refused += 1
        return None
    return redacted


def _write_all(
    planned: list[tuple[str, Redacted]],
    options: ImportOptions,
    out: TextIO,
    err: TextIO,
    tally: _Tally,
) -> None:
    if options.out is not None and len(planned) > 1:
        error_line(
            f"--output names one file but {len(planned)} fixtures were found; use --output-dir", err
        )
        tally.refused += len(planned)
        return
    for label, redacted in planned:
        path = options.out or options.out_dir / fixture_name(redacted.envelope, redacted.data)
        write_atomic(path, redacted.data)
        tally.written += 1
        expect = redacted.envelope["expect"]
        codes = ", ".join(expect["codes"]) or "-"
        line(f"imported {label} -> {path} ({expect['status']}: {codes})", out)


def _exit_code(tally: _Tally, err: TextIO) -> int:
    if tally.unreadable:
        return 2
    if tally.refused:
        return 1
    if not tally.written:
        error_line("nothing to import: no streamed tool-call exchange was found", err)
        return 1
    return 0
