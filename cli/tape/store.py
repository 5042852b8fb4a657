"""A tape's folder: one file per exchange, numbered in the order the app made them.

``001.json`` is a streamed turn, an ordinary callgate envelope whose ``meta.tape.request`` holds
the request's shape; ``002.exchange.json`` is any other exchange (``callgate.redact.record``).
Files are written atomically and privately, and only after the leak gate passed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from callgate.cli.files import load_envelope, load_json
from callgate.cli.tape import EXCHANGE_SUFFIX
from callgate.proxy_addon.storage import write_atomic
from callgate.reassemble import Report, check
from callgate.reassemble.envelope import fixture_bytes
from callgate.reassemble.errors import InputError

_ENTRY = re.compile(r"(\d{3,})(\.json|" + re.escape(EXCHANGE_SUFFIX) + ")")


@dataclass(frozen=True, kw_only=True)
class Entry:
    """One exchange on a tape."""

    path: Path
    number: int
    #: What the request looked like (``callgate.cli.tape.shape``).
    shape: Mapping[str, Any]
    #: A streamed turn; None for any other exchange.
    envelope: Mapping[str, Any] | None = None
    #: Any other exchange; None for a streamed turn.
    record: Mapping[str, Any] | None = None
    #: callgate's verdict on a streamed turn.
    report: Report | None = None


def entry_files(folder: Path) -> list[tuple[int, Path]]:
    """The tape's files in order, with their numbers."""
    if not folder.is_dir():
        return []
    found = [
        (int(match[1]), path) for path in folder.iterdir() if (match := _ENTRY.fullmatch(path.name))
    ]
    return sorted(found)


def load(folder: Path) -> list[Entry]:
    """Every entry of the tape in ``folder`` (none when there is no folder). Raises
    ``InputError`` naming a file that cannot be used."""
    return [_entry(number, path) for number, path in entry_files(folder)]


def _entry(number: int, path: Path) -> Entry:
    if path.name.endswith(EXCHANGE_SUFFIX):
        record = load_json(path)
        if not (
            isinstance(record, dict)
            and record.get("tape_record") == 1
            and isinstance(record.get("request"), dict)
            and isinstance(record.get("response"), dict)
            and isinstance(record["response"].get("status"), int)
        ):
            raise InputError("not a tape record (tape_record 1 with request and response)", path)
        return Entry(path=path, number=number, shape=record["request"], record=record)
    envelope = load_envelope(path)
    shape = envelope.get("meta", {}).get("tape", {}).get("request")
    if not isinstance(shape, dict):
        raise InputError("a tape's envelope needs meta.tape.request (the request's shape)", path)
    return Entry(path=path, number=number, shape=shape, envelope=envelope, report=check(envelope))


def write(
    folder: Path,
    number: int,
    shape: Mapping[str, Any],
    *,
    envelope: dict[str, Any] | None = None,
    report: Report | None = None,
    record: dict[str, Any] | None = None,
) -> Entry:
    """Write one redacted exchange as entry ``number``: a streamed turn with the ``report`` its
    redaction gave, or a record. The caller ran the leak gate."""
    if envelope is not None:
        envelope.setdefault("meta", {})["tape"] = {"request": dict(shape)}
        path = folder / f"{number:03d}.json"
        write_atomic(path, fixture_bytes(envelope))
    else:
        assert record is not None
        path = folder / f"{number:03d}{EXCHANGE_SUFFIX}"
        write_atomic(path, fixture_bytes(record))
    return Entry(
        path=path, number=number, shape=shape, envelope=envelope, record=record, report=report
    )


def clear(folder: Path) -> None:
    """Remove the tape's files (``record_mode=all`` records anew); other files stay."""
    for _, path in entry_files(folder):
        path.unlink()
