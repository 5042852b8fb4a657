"""Fixtures are built and written in a process of their own, off the event loop.

A process, not a thread: building a fixture (redact, check the redacted stream, the indented JSON;
and, when the tap could not read the stream whole, parse and check the recorded body first) is
pure Python and, in a thread, held the GIL the event loop streams with. The process starts with
the first fixture, from ``forkserver`` (a clean process, not a fork of mitmproxy's threads), and
runs at a lower priority. This module imports nothing of mitmproxy: the process imports it alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import multiprocessing
import os
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

from callgate.integrations.enforce.tap import PackedBody, unpack_body
from callgate.proxy_addon.storage import write_atomic
from callgate.reassemble import Report
from callgate.reassemble.profiles import PROFILES, framed
from callgate.redact import (
    ArgumentMode,
    Exchange,
    NotApplicable,
    RedactionRefused,
    fixture_name,
    redact_exchange,
)
from callgate.redact.fragment_lines import FragmentLines

#: What ``write_fixture`` returns: the fixture's path, its report, and the body a user
#: interface shows (None unless asked for).
Written = tuple[Path, Report, bytes | None]

log = logging.getLogger("callgate")


def log_written(label: str, done: Future[Written]) -> Written | str:
    """Log a fixture write's outcome under ``label`` (a flow, or a flow's response): the
    fixture's path and verdict, or why none was written (a stream callgate does not read, a
    redaction refused, or callgate's own failure, named by its type only: its message may hold
    what the stream said). Returns what was written, or why nothing was."""
    error = done.exception()
    if isinstance(error, NotApplicable | RedactionRefused):
        log.warning("callgate: %s: no fixture written: %s", label, error)
        return str(error)
    if error is not None:
        log.error("callgate: %s: no fixture written: internal %s", label, type(error).__name__)
        return f"internal {type(error).__name__}"
    written = done.result()
    path, report, _ = written
    codes = ", ".join(report.blocking_codes) or "-"
    log.info("callgate: %s %s -> %s (%s)", label, report.status.value, path, codes)
    return written


class FixtureWriter:
    """The writer process, started with the first fixture, and the fixtures under way."""

    def __init__(self) -> None:
        self._executor: ProcessPoolExecutor | None = None
        self._pending: set[Future[Written]] = set()

    def write(
        self,
        exchange: Exchange,
        profile: str,
        provider: str | None,
        out: Path,
        mode: ArgumentMode,
        allow: bool,
        shown: str | None,
        verdict: Report | None,
        body: PackedBody | None = None,
    ) -> Future[Written]:
        """``write_fixture`` in the writer process."""
        future = self.process().submit(
            write_fixture, exchange, profile, provider, out, mode, allow, shown, verdict, body
        )
        self._pending.add(future)
        future.add_done_callback(self._pending.discard)
        return future

    def process(self) -> ProcessPoolExecutor:
        if self._executor is None:
            self._executor = ProcessPoolExecutor(
                max_workers=1,
                mp_context=multiprocessing.get_context("forkserver"),
                initializer=_yield_to_the_stream,
            )
        return self._executor

    async def close(self) -> None:
        """Let the fixtures under way be written, then stop the process."""
        pending = [asyncio.wrap_future(future) for future in self._pending]
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None


def write_fixture(
    exchange: Exchange,
    profile: str,
    provider: str | None,
    out: Path,
    mode: ArgumentMode,
    allow: bool,
    shown: str | None,
    verdict: Report | None = None,
    body: PackedBody | None = None,
) -> Written:
    """Runs in the writer process: the fixture's path, its report, and with ``shown`` (the
    response's framing) its stream framed as the provider framed it (the body mitmweb shows).
    ``verdict``: the live report, so the unredacted stream is not judged a second time;
    ``body``: the events the tap read (``StreamTap.packed_body``), so the body is not parsed a
    second time."""
    with _collector_off():
        lines = None if body is None else FragmentLines(PROFILES[profile].fragment_site)
        redacted = redact_exchange(
            exchange,
            profile=profile,
            provider=provider,
            arguments=mode,
            allow_verdict_change=allow,
            verdict=verdict,
            body=None if body is None else unpack_body(body, lines),
            lines=lines,
        )
        path = out / fixture_name(redacted.envelope, redacted.data)
        write_atomic(path, redacted.data)
        written = (
            path,
            redacted.report,
            None if shown is None else b"".join(framed(redacted.envelope, shown)),
        )
        # The fixture's containers freed while the collector is still off: left alive, the
        # first allocation once it is back on sets off a collection that walks them all.
        del redacted, lines
    return written


@contextlib.contextmanager
def _collector_off() -> Iterator[None]:
    """The cyclic garbage collector off while a fixture is built. A build makes tens of
    thousands of containers (a long turn's events unpacked, masked, encoded), every one freed
    by the time it returns; with the collector on, they set off young collections and, promoted,
    sweeps of the whole process. Any cycle a build leaves is collected once the collector is
    back on. Left as it was when the caller had turned it off."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _yield_to_the_stream() -> None:
    """The writer process runs at a lower priority: where cores are short, the proxy streaming
    and the app it serves come first, and fixtures are written a little later."""
    if hasattr(os, "nice"):
        os.nice(10)
