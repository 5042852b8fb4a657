"""What several reports share: a finding as one line, and paths shown relative to a root."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from callgate.reassemble import Finding


def finding_line(finding: Finding) -> str:
    """``code: message (choice C, slot S, event E, /json/pointer)``."""
    where = "turn" if finding.slot is None else f"slot {finding.slot}"
    choice = "" if finding.choice is None else f"choice {finding.choice}, "
    return (
        f"{finding.code.value}: {finding.message} ({choice}{where}, event {finding.event}, "
        f"{finding.path or '/'})"
    )


def display_path(path: Path, root: Path | None) -> Path:
    """``path`` relative to ``root`` when it lies under it, else as given."""
    if root is not None and path.is_absolute():
        try:
            return path.relative_to(root)
        except ValueError:
            pass
    return path


def artifact_uri(path: Path, root: Path | None) -> str:
    """A URI reference for ``path``: relative with forward slashes, or ``file:`` when absolute."""
    shown = display_path(path, root)
    if shown.is_absolute():
        return shown.as_uri()
    return quote(shown.as_posix(), safe="/", errors="surrogateescape")
