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
import gc
import multiprocessing
import operator
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from multiprocessing import connection
from pathlib import Path
from typing import Any, TextIO

from rich.progress import Progress

from callgate.cli.choices import ReplayFormat
from callgate.cli.files import find_fixtures, load_envelope
from callgate.cli.output import console, error_line, line
from callgate.cli.replay.outcome import (
    Outcome,
    expectation_now,
    judge,
    pinned_blocked,
    summarize,
)
from callgate.cli.replay.reports import render
from callgate.proxy_addon.storage import write_atomic
from callgate.reassemble.envelope import fixture_bytes

#: Above this many fixtures a terminal gets a progress bar; below it the bar would only flicker.
PROGRESS_THRESHOLD = 20


def replay(
    paths: Sequence[Path],
    jobs: int = 1,
    *,
    on_outcome: Callable[[Outcome], None] | None = None,
    on_listed: Callable[[int], None] | None = None,
) -> list[Outcome]:
    """Judge every fixture under ``paths`` (see ``find_fixtures``), in sorted order. ``jobs > 1``
    spreads the work over that many processes and gives the same outcomes in the same order.
    ``on_listed`` is called with the number of files once they are listed, before any outcome;
    ``on_outcome`` with each outcome as it is ready, in order (for progress bars)."""
    outcomes: list[Outcome] = []
    for outcome in _judged(paths, jobs, on_listed or _ignore):
        outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)
    return outcomes


def _ignore(count: int) -> None:
    pass


def _judged(
    paths: Sequence[Path], jobs: int, on_listed: Callable[[int], None]
) -> Iterator[Outcome]:
    with _collector_quiet():
        if jobs < 2:
            files = find_fixtures(paths)
            on_listed(len(files))
            yield from map(judge, files)
        else:
            yield from _shared(paths, jobs - 1, on_listed)


#: Files per chunk: enough judging to outweigh taking a chunk, and few enough that its outcomes,
#: pickled, fit in a pipe's 64 KiB buffer, so a worker seldom waits for this process to read.
_CHUNK = 32


def _shared(
    paths: Sequence[Path], workers: int, on_listed: Callable[[int], None]
) -> Iterator[Outcome]:
    """This process and ``workers`` worker processes take chunks of the files in turn, each the
    next one not yet taken, until none is left: whoever is faster (this process also unpickles
    the workers' outcomes; a core may be busy with something else) judges more. The outcomes
    are yielded in order as soon as every chunk before them is in.

    The workers start once the files are listed, and are handed the list: forked, they share
    it with this process and start judging at once (had each listed the files itself, beside
    this process, each would then have had to prove its list the same). No more start than
    there are chunks after this process's first."""
    files = find_fixtures(paths)
    chunks = _chunks(files)
    context = multiprocessing.get_context()
    counter = context.Value("i", 0)
    judges: list[_Worker] = []
    judged: dict[int, list[Outcome]] = {}
    given = 0  # chunks yielded so far
    try:
        judges += (_Worker(chunks, counter, context) for _ in range(min(workers, len(chunks) - 1)))
        on_listed(len(files))  # once forked: a thread the caller starts there is not forked
        while (index := _next_chunk(counter)) < len(chunks):
            judged[index] = [judge(path) for path in chunks[index]]
            for worker in judges:
                judged.update(worker.collect(chunks, wait=False))
            while given in judged:
                yield from judged.pop(given)
                given += 1
        for worker in judges:
            judged.update(worker.collect(chunks, wait=True))
        for index in range(given, len(chunks)):
            # A chunk a worker took and never sent (it died) is judged here.
            yield from judged.pop(index, None) or map(judge, chunks[index])
    finally:  # the caller stopped early, or judging raised
        for worker in judges:
            worker.stop()


def _chunks(files: list[Path]) -> list[list[Path]]:
    return [files[start : start + _CHUNK] for start in range(0, len(files), _CHUNK)]


def _next_chunk(counter: Any) -> int:
    with counter.get_lock():
        index: int = counter.value
        counter.value = index + 1
    return index


@contextlib.contextmanager
def _collector_quiet() -> Iterator[None]:
    """The cyclic garbage collector off while fixtures are judged, and what this process held
    before frozen (``gc.freeze()``) where no collection walks it: the outcomes kept grow the
    heap fixture by fixture, and collections set off by the objects each judgment makes and
    drops walked them again and again (5% to 11% of a one-process replay of 4,820 fixtures).
    Judging makes no cycle (a pass over the conformance fixtures with the collector off leaves
    none to collect), and any a fixture did make is collected once the collector is back on.
    A forked worker inherits both and, frozen, copies no page of what it shares. Each is left
    as the caller had it: a freeze already made is not undone, a collector off stays off.

    What judging made and kept (the outcomes) joins the oldest generation at the end, with
    what was frozen: left young, it was walked whole by the first young collection after, 35 to
    40 ms of a 0.55 s replay of 4,820 fixtures, in one process or shared."""
    enabled, frozen = gc.isenabled(), gc.get_freeze_count() == 0
    if frozen:
        gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        if frozen:
            gc.freeze()  # the young objects too: unfrozen, all go to the oldest generation
            gc.unfreeze()
        if enabled:
            gc.enable()


class _Worker:
    """A process taking chunks and sending each one's outcomes down a pipe, which this process
    reads between its own chunks: no thread of this process competes with its judging for the
    GIL (``ProcessPoolExecutor``'s did, and its workers stalled on full pipes meanwhile)."""

    def __init__(self, chunks: list[list[Path]], counter: Any, context: Any) -> None:
        self._done = False
        self._reader, writer = context.Pipe(duplex=False)
        self._process = context.Process(
            target=_judge_and_send, args=(chunks, counter, writer), daemon=True
        )
        self._process.start()
        writer.close()

    def collect(self, chunks: list[list[Path]], *, wait: bool) -> dict[int, list[Outcome]]:
        """The chunks judged and arrived (``wait``: until the worker is done), by index."""
        judged: dict[int, list[Outcome]] = {}
        while not self._done:
            if wait:
                ready = connection.wait([self._reader, self._process.sentinel])
                if self._reader not in ready:  # ended without its end mark, every message read
                    self._done = True
                    break
            elif not self._reader.poll():  # one system call, where a wait builds a selector
                break
            try:
                message = self._reader.recv()
            except EOFError:  # the worker died
                message = None
            if message is None:
                self._done = True
            else:
                index, judgments = message
                judged[index] = [
                    Outcome(
                        fixture=path,
                        facts=facts,
                        report=report,
                        problems=problems,
                        error=error,
                        seconds=seconds,
                    )
                    for path, (facts, report, problems, error, seconds) in zip(
                        chunks[index], judgments, strict=True
                    )
                ]
        return judged

    def stop(self) -> None:
        """A worker that sent its end mark is left to exit on its own (multiprocessing reaps it
        at the next start or at exit): waiting for it took 2 to 4 ms, as long as the system
        takes to tear a forked process down. One stopped early is ended and waited for."""
        if not self._done:
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


#: What a worker sends of an outcome: every field but ``fixture``, in the order ``collect``
#: unpacks them (by name there: 0.5 µs an outcome, against 1.2 through a dictionary).
SENT_FIELDS = ("facts", "report", "problems", "error", "seconds")
_without_path = operator.attrgetter(*SENT_FIELDS)


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
    require_pass: bool = False,
) -> int:
    """Replay the fixtures under ``paths``, write the report (to ``output``, atomically, or to
    ``out``) and return the exit code: 0 all held, 1 some did not, 2 some file was unreadable
    (each named on ``err``). With ``update``, rewrite the expectations instead of reporting.
    With ``require_pass``, a fixture that holds as blocked (its pinned verdict blocks the turn)
    fails the run too, each named on ``err``: recording pins what each turn did, so for a CI
    that must flag bad streams a held verdict is not enough."""
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
    code = exit_code(outcomes)
    if require_pass:
        for outcome in pinned_blocked(outcomes):
            assert outcome.report is not None  # a held outcome has its report
            codes = ", ".join(outcome.report.blocking_codes) or outcome.report.status.value
            error_line(f"{outcome.fixture}: pinned as blocked ({codes}); --require-pass", err)
            code = max(code, 1)
    return code


def _usage_problem(report_format: str, jobs: int) -> str | None:
    if report_format not in ReplayFormat.__members__:
        return f"unknown report format {report_format!r} (one of {', '.join(ReplayFormat)})"
    return "--jobs must be at least 1" if jobs < 1 else None


def _replay_with_progress(paths: Sequence[Path], jobs: int, err: TextIO) -> list[Outcome]:
    if not err.isatty():
        return replay(paths, jobs)
    # Refreshed by hand: an auto-refresh thread alive while the workers fork could deadlock.
    progress = Progress(console=console(err, soft_wrap=False), transient=True, auto_refresh=False)
    task = progress.add_task("replaying", total=None)
    shown = 0.0

    def listed(count: int) -> None:
        if count > PROGRESS_THRESHOLD:  # below it the bar would only flicker
            progress.update(task, total=count)
            progress.start()

    def advance(_: Outcome) -> None:
        nonlocal shown
        progress.advance(task)
        if progress.live.is_started and time.monotonic() - shown >= 0.1:
            progress.refresh()  # ten frames a second is plenty
            shown = time.monotonic()

    try:
        return replay(paths, jobs, on_outcome=advance, on_listed=listed)
    finally:
        progress.stop()


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
