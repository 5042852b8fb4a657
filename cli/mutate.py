"""``callgate mutate``: the faults and variations of one passing fixture, written beside it.

Each variant is made and judged by ``callgate.reassemble.mutations`` and written as
``<stem>.<kind>.json`` (atomically, as fixtures are) with its verdict pinned; a kind that cannot
apply to this turn is one line saying why, and nothing is written for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from callgate.cli.files import load_envelope
from callgate.cli.output import line
from callgate.proxy_addon.storage import write_atomic
from callgate.reassemble import Status, check
from callgate.reassemble.envelope import fixture_bytes
from callgate.reassemble.errors import NotApplicable, UsageError
from callgate.reassemble.mutations import KINDS, mutate, mutations


def run_mutate(
    fixture: Path, kinds: Sequence[str], out_dir: Path | None, out: TextIO, err: TextIO
) -> int:
    """Write each kind's variant of ``fixture``; 0, or 1 when a kind named in ``kinds`` could
    not apply (without ``kinds``, every kind the fixture's API can take: those that cannot
    apply to this turn are only reported)."""
    if unknown := [k for k in kinds if k not in KINDS]:
        raise UsageError(f"unknown kind {unknown[0]!r} (one of {', '.join(KINDS)})")
    envelope = load_envelope(fixture)
    verdict = check(envelope)
    if verdict.status is not Status.PASS:
        raise NotApplicable(
            f"{fixture}: the turn does not pass ({verdict.status.value} "
            f"[{', '.join(verdict.blocking_codes)}]); mutate a passing turn"
        )
    folder = out_dir or fixture.parent
    missed = False
    for name in kinds or mutations(profile=envelope["profile"]):
        try:
            variant = mutate(envelope, name, fixture.name)
        except NotApplicable as skipped:
            line(f"skipped {skipped}", err if kinds else out)
            missed = True
            continue
        path = folder / f"{fixture.stem}.{name}.json"
        write_atomic(path, fixture_bytes(variant), 0o644)
        expect = variant["expect"]
        line(f"wrote {path}: {expect['status']} [{', '.join(expect['codes'])}]", out)
    return 1 if missed and kinds else 0
