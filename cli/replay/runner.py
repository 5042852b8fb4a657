"""``callgate replay``: judge every fixture under some folders against its pinned ``expect``.

How this works: the fixture files are found and sorted first, then each one is judged on its own
(``callgate.cli.replay.outcome.judge``), in this process or spread over it and ``jobs - 1``
worker processes, each with a contiguous slice; the workers' outcomes follow this process's own
share, slice by slice, so the outcomes are the same either way. A file that cannot be used
is an outcome with an ``error`` and never stops the others. The reports
(``callgate.cli.replay.reports``) are pure functions of the outcomes; ``update`` rewrites
``expect`` blocks to what the engine says now.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from multiprocessing import connection
from pathlib import Path
from typing import Any, TextIO

from rich.progress import Progress

from callgate.cli.files import find_fixtures, load_envelope
from callgate.cli.output import console, error_line, line
from callgate.cli.replay.outcome import Outcome, expectation_now, judge, summarize
from callgate.cli.replay.reports import ReplayFormat, render
from callgate.proxy_addon.storage import write_atomic
from callgate.redact import fixture_bytes

#: Above this many fixtures a terminal gets a progress bar; below it the bar would only flicker.
PROGRESS_THRESHOLD = 20


def replay(paths: Sequence[Path], jobs: int = 1, *,
           on_outcome: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Judge every fixture under ``paths`` (see ``find_fixtures``), in sorted order. ``jobs > 1``
    spreads the work over that many processes and gives the same outcomes in the same order.
    ``on_outcome`` is called with each outcome as it is ready, in order (for progress bars)."""
    return _replay_files(find_fixtures(paths), jobs, on_outcome)


def _replay_files(files: list[Path], jobs: int,
                  on_outcome: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    outcomes: list[Outcome] = []
    for outcome in _judged(files, jobs):
        outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)
    return outcomes


def _judged(files: list[Path], jobs: int) -> Iterator[Outcome]:
    workers = min(jobs, len(files)) - 1
    with _frozen_heap():
        if workers < 1:
            yield from map(judge, files)
            return
        own = _own_share(len(files), workers)
        step = -(-(len(files) - own) // workers)
        judges = [_Worker(files[start:start + step]) for start in range(own, len(files), step)]
        yield from _with_workers(files[:own], judges)


def _with_workers(own: list[Path], judges: list[_Worker]) -> Iterator[Outcome]:
    """This process's outcomes, then each worker's, in order."""
    try:
        for n, path in enumerate(own):
            yield judge(path)
            if n % _POLL_EVERY == 0:
                for worker in judges:
                    worker.collect(wait=False)
        for worker in judges:
            yield from worker.outcomes()
    finally:  # the caller stopped early, or judging raised
        for worker in judges:
            worker.stop()


#: A worker's cost per file relative to this process's (judging, then pickling the outcome),
#: and this process's cost of unpickling an outcome relative to judging one (measured: about
#: 155, 135 and 27 µs per conformance fixture).
_WORKER_COST, _UNPICKLE_COST = 1.15, 0.2
#: Outcomes per message from a worker: about 35 KB pickled, inside a pipe's 64 KiB buffer, so a
#: worker seldom waits for this process to read.
_BATCH = 64
#: This process looks for workers' outcomes after every this many of its own files.
_POLL_EVERY = 8


@contextlib.contextmanager
def _frozen_heap() -> Iterator[None]:
    """``gc.freeze()`` while fixtures are judged: what this process held before moves where no
    collection walks it, so collections neither spend time on it nor, in a forked worker, copy
    its pages (Python's advice for ``fork`` without ``exec``). Not when the caller froze objects
    already: unfreezing would undo that."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _own_share(files: int, workers: int) -> int:
    """How many files this process judges itself, so that it finishes its share and the
    unpickling of the workers' outcomes when they finish theirs."""
    per_worker = _WORKER_COST / workers
    share = (per_worker - _UNPICKLE_COST) / (1 - _UNPICKLE_COST + per_worker)
    return min(files - workers, max(1, int(files * share)))


class _Worker:
    """A process judging a slice of the files. It sends its outcomes in batches down a pipe,
    which this process reads between its own files: no thread of this process competes with its
    judging for the GIL (``ProcessPoolExecutor``'s did, and its workers stalled on full pipes
    while this process judged), and a worker starts judging at once. A worker that dies leaves
    its unjudged files to this process."""

    def __init__(self, files: list[Path]) -> None:
        self._files = files
        self._judged: list[Outcome] = []
        self._done = False
        context = multiprocessing.get_context()
        self._reader, writer = context.Pipe(duplex=False)
        self._process = context.Process(target=_judge_and_send, args=(files, writer),
                                        daemon=True)
        self._process.start()
        writer.close()

    def collect(self, *, wait: bool) -> None:
        """Read the batches that have arrived (``wait``: until the worker is done)."""
        while not self._done:
            ready = connection.wait([self._reader, self._process.sentinel],
                                    None if wait else 0)
            if self._reader in ready:
                try:
                    batch = self._reader.recv()
                except EOFError:  # the worker died
                    batch = None
                self._done = batch is None
                self._judged += batch or []
            elif ready:  # ended without its end mark, every batch read
                self._done = True
            else:
                return

    def outcomes(self) -> list[Outcome]:
        self.collect(wait=True)
        self._process.join()
        return self._judged + [judge(path) for path in self._files[len(self._judged):]]

    def stop(self) -> None:
        if self._process.is_alive():
            self._process.terminate()
        self._process.join()
        self._reader.close()


def _judge_and_send(files: list[Path], writer: connection.Connection) -> None:
    batch: list[Outcome] = []
    for path in files:
        batch.append(judge(path))
        if len(batch) == _BATCH:
            writer.send(batch)
            batch = []
    writer.send(batch)
    writer.send(None)
    writer.close()


def update_expectations(outcomes: Iterable[Outcome]) -> list[Path]:
    """Rewrite the ``expect`` block of every readable fixture whose expectation does not hold to
    ``expectation_now``; every other key keeps its value and place. Written atomically as
    ``callgate.redact.fixture_bytes`` lays fixtures out, keeping the file's mode. Returns the files
    written, in order."""
    written = []
    for outcome in outcomes:
        if outcome.facts is None or outcome.report is None or outcome.held:
            continue
        envelope = load_envelope(outcome.fixture)  # read again: outcomes keep no streams
        expect = expectation_now(envelope.get("expect"), outcome.report)
        updated = {key: expect if key == "expect" else value for key, value in envelope.items()}
        updated.setdefault("expect", expect)
        mode = outcome.fixture.stat().st_mode & 0o777  # rewritten in place: it keeps its mode
        write_atomic(outcome.fixture, fixture_bytes(updated), mode)
        written.append(outcome.fixture)
    return written


def exit_code(outcomes: Sequence[Outcome]) -> int:
    """2 when a file was unreadable, else 1 when an expectation did not hold, else 0."""
    return summarize(outcomes).exit_code


def run_replay(paths: Sequence[Path], report_format: str, output: Path | None, jobs: int,
               update: bool, out: TextIO, err: TextIO) -> int:
    """Replay the fixtures under ``paths``, write the report (to ``output``, atomically, or to
    ``out``) and return the exit code: 0 all held, 1 some did not, 2 some file was unreadable
    (each named on ``err``). With ``update``, rewrite the expectations instead of reporting."""
    if (problem := _usage_problem(report_format, jobs)) is not None:
        return error_line(problem, err)
    outcomes = _replay_with_progress(paths, jobs, err)
    for outcome in outcomes:
        if outcome.error is not None:
            error_line(f"{outcome.fixture}: {outcome.error}", err)
    if update:
        _print_updates(outcomes, update_expectations(outcomes), out)
        return 2 if any(o.unreadable for o in outcomes) else 0
    text = render(ReplayFormat(report_format), outcomes, terminal=output is None and out.isatty())
    if output is not None:
        write_atomic(output, text.encode())
    else:
        out.write(text)
    return exit_code(outcomes)


def _usage_problem(report_format: str, jobs: int) -> str | None:
    if report_format not in ReplayFormat.__members__:
        return f"unknown report format {report_format!r} (one of {', '.join(ReplayFormat)})"
    return "--jobs must be at least 1" if jobs < 1 else None


def _replay_with_progress(paths: Sequence[Path], jobs: int, err: TextIO) -> list[Outcome]:
    files = find_fixtures(paths)
    if not (err.isatty() and len(files) > PROGRESS_THRESHOLD):
        return _replay_files(files, jobs)
    # Refreshed by hand: an auto-refresh thread alive while the worker pool forks could deadlock.
    with Progress(console=console(err, soft_wrap=False), transient=True,
                  auto_refresh=False) as progress:
        task = progress.add_task("replaying", total=len(files))
        shown = 0.0

        def advance(_: Outcome) -> None:
            nonlocal shown
            progress.advance(task)
            if time.monotonic() - shown >= 0.1:  # ten frames a second is plenty
                progress.refresh()
                shown = time.monotonic()

        return _replay_files(files, jobs, advance)


def _print_updates(outcomes: Sequence[Outcome], written: Sequence[Path], out: TextIO) -> None:
    by_path = {o.fixture: o for o in outcomes}
    for path in written:
        outcome = by_path[path]
        assert outcome.facts is not None and outcome.report is not None
        old = outcome.facts.expect
        new = expectation_now(old, outcome.report)
        line(f"updated {path}: {_describe(old)} -> {_describe(new, old)}", out)


def _describe(expect: Mapping[str, Any] | None, before: Mapping[str, Any] | None = None) -> str:
    if expect is None:
        return "(no expect)"
    codes = expect.get("codes")
    text = f"{expect['status']} [{', '.join(codes)}]" if codes is not None else expect["status"]
    calls_changed = before is not None and expect.get("calls") != before.get("calls")
    return text + (" (calls)" if calls_changed else "")
