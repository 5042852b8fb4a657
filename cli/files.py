"""Reading fixture files: strict, and failing with one line that names the file and the problem."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from callgate.reassemble import EnvelopeError, strict_json, validate_envelope
from callgate.reassemble.errors import InputError
from callgate.reassemble.limits import DOCUMENT_LIMITS


def load_json(path: Path) -> Any:
    """The strictly parsed JSON document in ``path`` (UTF-8, RFC 8259, no duplicate keys)."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror or error}", path) from None
    try:
        return strict_json.loads_bytes(data, DOCUMENT_LIMITS)
    except strict_json.StrictJSONError as error:
        raise InputError(f"not strict JSON ({error.code.value}): {error.message}", path) from None


def load_envelope(path: Path) -> dict[str, Any]:
    """The envelope in ``path``; ``InputError`` if it is unreadable, not JSON or not an envelope."""
    document = load_json(path)
    try:
        validate_envelope(document)
    except EnvelopeError as error:
        raise InputError(str(error), path) from None
    assert isinstance(document, dict)
    return document


def find_fixtures(paths: Sequence[Path]) -> list[Path]:
    """Every ``*.json`` file under ``paths`` (folders recursively, hidden entries skipped; a path
    may also be a file), sorted and without repeats. A folder holding none stays in the list, so
    that replaying it reports the folder instead of silently judging nothing."""
    found: set[Path] = set()
    for path in paths:
        if not path.is_dir():
            found.add(path)
            continue
        files = [f for f in path.rglob("*.json") if f.is_file()
                 and not any(part.startswith(".") for part in f.relative_to(path).parts)]
        found.update(files or [path])
    return sorted(found)
