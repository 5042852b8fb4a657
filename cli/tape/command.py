"""``callgate tape serve`` and ``callgate tape run``: tapes for any test runner.

``serve`` serves a folder of tapes (``shelf``) until SIGINT or SIGTERM, then prints one line per
tape requested (served, unused, mismatched, blocking), each problem after it on stderr, and exits
1 when a tape failed. ``run`` serves them on a free loopback port while it runs a command with
``CALLGATE_TAPE_URL`` and the SDK variables pointing there (as ``callgate_tape`` sets them), then
exits with the command's code, or 1 when the command passed but a tape failed. ``run`` writes
nothing on stdout: the command's output (TAP, JUnit, JSON) is read by machines, so the summary
goes to stderr with the problems.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from callgate.cli.loopback import split_listen
from callgate.cli.output import line
from callgate.cli.tape import DUMMY_KEY, RecordMode, tape_options
from callgate.cli.tape.server import ROUTES, TapeServer
from callgate.cli.tape.session import Redaction
from callgate.cli.tape.shelf import PREFIX, Shelf
from callgate.reassemble.errors import UsageError
from callgate.reassemble.mutations import KINDS

#: Where a test that names no tape is served: the folder ``DIR/default/``.
DEFAULT_TAPE = "default"
#: The variable a test builds its tape's base URL from: ``$CALLGATE_TAPE_URL/t/<tape>/v1``.
TAPE_URL = "CALLGATE_TAPE_URL"


@dataclass(frozen=True)
class TapeOptions:
    """What both commands take: the tapes' folder and how to record, redact and judge them."""

    folder: Path
    mode: RecordMode
    upstreams: dict[str, str]
    redaction: str = Redaction.REPLAY
    allow: tuple[str, ...] = ()
    allow_unused: bool = False
    mutate: str | None = None

    @classmethod
    def parse(
        cls,
        folder: Path,
        record_mode: str | None,
        upstream: Sequence[str],
        environ: Mapping[str, str],
        **settings: object,
    ) -> TapeOptions:
        """The options as given, ``--record-mode`` winning over ``CALLGATE_RECORD_MODE``.
        Raises ``UsageError``."""
        try:
            mode, upstreams = tape_options(
                record_mode,
                upstream,
                environ,
                mode_option="--record-mode",
                upstream_option="--upstream",
            )
        except ValueError as error:
            raise UsageError(str(error)) from None
        options = cls(folder, mode, upstreams, **settings)  # type: ignore[arg-type]
        if options.mutate is not None and options.mutate not in KINDS:
            raise UsageError(
                f"--mutate: no mutation {options.mutate!r} (one of {', '.join(KINDS)})"
            )
        if options.redaction not in Redaction.ALL:
            raise UsageError(f"--redaction is replay or strict, not {options.redaction!r}")
        return options

    def shelf(self) -> Shelf:
        return Shelf(
            self.folder,
            self.mode,
            mutation=self.mutate,
            redaction=self.redaction,
            allow=self.allow,
            allow_unused=self.allow_unused,
        )


def run_tape_serve(options: TapeOptions, listen: str, out: TextIO, err: TextIO) -> int:
    """Serve until SIGINT or SIGTERM; 0, or 1 when a tape failed."""
    host, port = split_listen(listen)
    shelf = options.shelf()
    server = TapeServer(shelf, options.upstreams, host, port).start()
    line(
        f"callgate tape serve: {options.folder} ({options.mode.value}) on {server.url}{PREFIX}"
        f"<tape>/ then the API's path, e.g. OPENAI_BASE_URL={server.url}{PREFIX}<tape>/v1",
        out,
    )
    out.flush()
    stop = threading.Event()
    with _on_stop(lambda _: stop.set()):
        while not stop.wait(0.5):
            pass
    server.close()
    return summarize(shelf, out, err)


def run_tape_run(
    options: TapeOptions, command: Sequence[str], tape: str, out: TextIO, err: TextIO
) -> int:
    """Run ``command`` against the tapes; its exit code, or 1 when it passed and a tape failed.
    The command keeps stdout to itself: the summary goes to ``err`` (``out`` is the command's).
    Raises ``UsageError`` when there is no command or it cannot be started."""
    if not command:
        raise UsageError("tape run needs a command after --: callgate tape run DIR -- npm test")
    shelf = options.shelf()
    server = TapeServer(shelf, options.upstreams).start()
    try:
        environment = tape_environment(server.url, tape, os.environ)
        try:
            child = subprocess.Popen(list(command), env=environment)
        except OSError as error:
            raise UsageError(f"cannot run {command[0]!r}: {error.strerror}") from None
        with _on_stop(child.send_signal):
            code = child.wait()
    finally:
        server.close()
    failed = summarize(shelf, err, err)
    if code < 0:  # ended by a signal, reported as shells do
        return 128 - code
    return code or failed


def tape_environment(url: str, tape: str, environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` with ``CALLGATE_TAPE_URL`` and each route's base URL variables pointing at
    tape ``tape``, and a dummy key where a route's key variables are all unset (the server
    never sends a request that carries it upstream)."""
    environment = dict(environ)
    environment[TAPE_URL] = url
    for route in ROUTES.values():
        for variable in route.base_url_variables:
            environment[variable] = f"{url}{PREFIX}{tape}/{route.name}{route.sdk_path}"
        keys = route.key_variables
        if keys and not any(environment.get(variable) for variable in keys):
            environment[keys[0]] = DUMMY_KEY
    return environment


def summarize(shelf: Shelf, out: TextIO, err: TextIO) -> int:
    """One line per tape on ``out``, its problems on ``err``; 1 when a tape failed."""
    failed = 0
    for outcome in shelf.outcomes():
        line(outcome.line, out)
        for problem in outcome.problems:
            line(problem, err)
        failed |= bool(outcome.problems)
    return failed


@contextmanager
def _on_stop(handle: Callable[[int], object]) -> Iterator[None]:
    """Call ``handle`` with SIGINT or SIGTERM instead of dying of it, until the block ends."""
    stops = (signal.SIGINT, signal.SIGTERM)
    previous = {stop: signal.signal(stop, lambda number, _: handle(number)) for stop in stops}
    try:
        yield
    finally:
        for stop, handler in previous.items():
            signal.signal(stop, handler)
