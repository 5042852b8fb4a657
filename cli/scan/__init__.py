"""``callgate scan``: the recordings of a repository searched for credentials, prompts and
unmasked output (``callgate.redact.scanning``), read from files here (``sources``), reported
one line per finding or as SARIF (``command``, ``sarif``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from callgate.redact.scanning import ScanFinding


@dataclass
class ScanResult:
    """What a scan of one file gave: findings, no recording, or an error."""

    path: Path
    findings: list[ScanFinding] = field(default_factory=list)
    skipped: bool = False
    error: str | None = None
