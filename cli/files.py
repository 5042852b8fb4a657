"""Reading fixture files: strict, and failing with one line that names the file and the problem."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from reassemble import EnvelopeError, strict_json, validate_envelope
from reassemble.limits import Limits

#: Fixture files may hold long streams; nesting and number limits stay those of arguments.
FILE_LIMITS = Limits(max_argument_bytes=256 << 20)


class InputError(Exception):
    """A file callgate was given cannot be used. ``str()`` is the one line to show."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"{path}: {problem}")


def load_json(path: Path) -> Any:
    """The strictly parsed JSON document in ``path`` (UTF-8, RFC 8259, no duplicate keys)."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise InputError(path, f"cannot read: {error.strerror or error}") from None
    try:
        return strict_json.loads_bytes(data, FILE_LIMITS)
    except strict_json.StrictJSONError as error:
        raise InputError(path, f"not strict JSON ({error.code.value}): {error.message}") from None


def load_envelope(path: Path) -> dict[str, Any]:
    """The envelope in ``path``; ``InputError`` if it is unreadable, not JSON or not an envelope."""
    document = load_json(path)
    try:
        validate_envelope(document)
    except EnvelopeError as error:
        raise InputError(path, str(error)) from None
    assert isinstance(document, dict)
    return document


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the whole new one, never a
    part; the file is created with mode 0600 (fixtures may be private even when redacted)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".callgate-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
