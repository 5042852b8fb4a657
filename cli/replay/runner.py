"""``callgate replay``: judge every fixture under some folders against its pinned ``expect``.

How this works: the fixture files are found and sorted first, then each one is judged on its own
(``callgate.cli.replay.outcome.judge``), in this process or shared, chunk by chunk, between it
and ``jobs - 1`` worker processes; the outcomes come out in file order either way. A file that
cannot be used is an outcome with an ``error`` and never stops the others. The reports
(``callgate.cli.replay.reports``) are pure functions of the outcomes; ``update`` rewrites
``expect`` blocks to what the engine says now.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import multiprocessing
import operator
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
from callgate.reassemble.envelope import fixture_bytes

#: Above this many fixtures a terminal gets a progress bar; below it the bar would only flicker.
PROGRESS_THRESHOLD = 20


def replay(
    paths: Sequence[Path], jobs: int = 1, *, on_outcome: Callable[[Outcome], None] | None = None
) -> list[Outcome]:
    """Judge every fixture under ``paths`` (see ``find_fixtures``), in sorted order. ``jobs > 1``
    spreads the work over that many processes and gives the same outcomes in the same order.
    ``on_outcome`` is called with each outcome as it is ready, in order (for progress bars)."""
    return _replay_files(find_fixtures(paths), jobs, on_outcome)


def _replay_files(
    files: list[Path], jobs: int, on_outcome: Callable[[Outcome], None] | None = None
) -> list[Outcome]:
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
        else:
            yield from _shared(files, workers)


#: Files per chunk: enough judging to outweigh taking a chunk, and few enough that its outcomes,
#: pickled, fit in a pipe's 64 KiB buffer, so a worker seldom waits for this process to read.
_CHUNK = 32


def _shared(files: list[Path], workers: int) -> Iterator[Outcome]:
    """This process and ``workers`` worker processes take chunks of the files in turn, each the
    next one not yet taken, until none is left: whoever is faster (this process also unpickles
    the workers' outcomes; a core may be busy with something else) judges more. The outcomes
    are yielded in order as soon as every chunk before them is in."""
    chunks = [files[start : start + _CHUNK] for start in range(0, len(files), _CHUNK)]
    context = multiprocessing.get_context()
    counter = context.Value("i", 0)
    judges = [_Worker(chunks, counter, context) for _ in range(workers)]
    judged: dict[int, list[Outcome]] = {}
    given = 0  # chunks yielded so far
    try:
        while (index := _next_chunk(counter)) < len(chunks):
            judged[index] = [judge(path) for path in chunks[index]]
            for worker in judges:
                judged.update(worker.collect(wait=False))
            while given in judged:
                yield from judged.pop(given)
                given += 1
        for worker in judges:
            judged.update(worker.collect(wait=True))
        for index in range(given, len(chunks)):
            # A chunk a worker took and never sent (it died) is judged here.
            yield from judged.pop(index, None) or map(judge, chunks[index])
    finally:  # the caller stopped early, or judging raised
        for worker in judges:
            worker.stop()


def _next_chunk(counter: Any) -> int:
    with counter.get_lock():
        index: int = counter.value
        counter.value = index + 1
    return index


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


class _Worker:
    """A process taking chunks and sending each one's outcomes down a pipe, which this process
    reads between its own chunks: no thread of this process competes with its judging for the
    GIL (``ProcessPoolExecutor``'s did, and its workers stalled on full pipes meanwhile)."""

    def __init__(self, chunks: list[list[Path]], counter: Any, context: Any) -> None:
        self._done = False
        self._chunks = chunks
        self._reader, writer = context.Pipe(duplex=False)
        self._process = context.Process(
            target=_judge_and_send, args=(chunks, counter, writer), daemon=True
        )
        self._process.start()
        writer.close()

    def collect(self, *, wait: bool) -> dict[int, list[Outcome]]:
        """The chunks judged and arrived (``wait``: until the worker is done), by index."""
        judged: dict[int, list[Outcome]] = {}
        while not self._done:
            ready = connection.wait([self._reader, self._process.sentinel], None if wait else 0)
            if self._reader in ready:
                try:
                    message = self._reader.recv()
                except EOFError:  # the worker died
                    message = None
                if message is None:
                    self._done = True
                else:
                    index, judgments = message
                    judged[index] = [
                        Outcome(fixture=path, **dict(zip(_AFTER_PATH, judgment, strict=True)))
                        for path, judgment in zip(self._chunks[index], judgments, strict=True)
                    ]
            elif ready:  # ended without its end mark, every message read
                self._done = True
            else:
                break
        return judged

    def stop(self) -> None:
        if self._process.is_alive():
            self._process.terminate()
        self._process.join()
        self._reader.close()


def _judge_and_send(chunks: list[list[Path]], counter: Any, writer: connection.Connection) -> None:
    # Each outcome goes without its path, which this process has: a path costs more to unpickle
    # (pathlib parses it again) than the rest of an outcome.
    while (index := _next_chunk(counter)) < len(chunks):
        writer.send((index, [_without_path(judge(path)) for path in chunks[index]]))
    writer.send(None)
    writer.close()


#: An outcome's fields after ``fixture`` (its first), in order: what a worker sends of one.
_AFTER_PATH = tuple(field.name for field in dataclasses.fields(Outcome)[1:])
_without_path = operator.attrgetter(*_AFTER_PATH)


def update_expectations(outcomes: Iterable[Outcome]) -> list[Path]:
    """Rewrite the ``expect`` block of every readable fixture whose expectation does not hold to
    ``expectation_now``; every other key keeps its value and place. Written atomically as
    ``fixture_bytes`` lays fixtures out, keeping the file's mode. Returns the files written, in
    order."""
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


def run_replay(
    paths: Sequence[Path],
    report_format: str,
    output: Path | None,
    jobs: int,
    update: bool,
    out: TextIO,
    err: TextIO,
) -> int:
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
    with Progress(
        console=console(err, soft_wrap=False), transient=True, auto_refresh=False
    ) as progress:
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
