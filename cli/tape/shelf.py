"""``callgate tape serve``: a folder of tapes, each served at ``/t/<tape>/``, for any language.

How this works: the first request to ``/t/<name>/`` opens the tape in ``DIR/<name>/`` as the
pytest fixture opens one test's tape (``session.Tape``: the same files, matching, record modes,
redaction, leak gate and verdicts), and every later request to that name, from any client, goes
to the same tape. What follows the name is the provider API's own path (``/v1/chat/completions``),
its route told from that path; a route name first (``/t/<name>/mistral/v1/...``) picks one
where the path cannot (Mistral speaks OpenAI's paths). A fault (``--mutate KIND`` for every tape,
or a request's ``x-callgate-mutate: KIND`` header) is served from a tape of its own, ``<name>
[KIND]``, opened on the same folder once the tape as recorded has settled: a suite replays a tape
and its fault in one run.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

from callgate.cli.tape import RecordMode
from callgate.cli.tape.server import ROUTES, Located, Refused
from callgate.cli.tape.session import Advice, Redaction, Tally, Tape
from callgate.reassemble.errors import InputError
from callgate.reassemble.mutations import KINDS
from callgate.reassemble.providers import route_of_path

#: The URL prefix of a tape.
PREFIX = "/t/"
#: How the command's problem lines advise, with its own options.
ADVICE = Advice(
    record="--record-mode new_episodes, or delete the folder and run with --record-mode once",
    rerecord=(
        "record the tape anew without --mutate or x-callgate-mutate (delete the folder and run "
        "with --record-mode once)"
    ),
    allow_unused="--allow-unused accepts that",
    allow="{flags}",
)
_NAME = re.compile(r"[A-Za-z0-9_.+=-]+")


@dataclass
class Shelved:
    """A tape the server opened, or the one line saying why it refuses every request."""

    label: str
    tape: Tape | None = None
    refusal: str | None = None
    refused: int = 0


@dataclass(frozen=True)
class Outcome:
    """One tape at the end: its counts and why it failed (no line when it did not)."""

    label: str
    tally: Tally
    problems: list[str]

    @property
    def line(self) -> str:
        t = self.tally
        return (
            f"tape {self.label}: served {t.served}, unused {t.unused}, mismatched "
            f"{t.mismatched}, blocking {t.blocking}: {'FAILED' if self.problems else 'ok'}"
        )


@dataclass
class Shelf:
    """The tapes under ``folder``, opened by name as requests arrive (``Tapes``)."""

    folder: Path
    mode: RecordMode
    mutation: str | None = None
    redaction: str = Redaction.REPLAY
    allow: tuple[str, ...] = ()
    allow_unused: bool = False
    _shelved: dict[tuple[str, str | None], Shelved] = field(default_factory=dict, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def locate(self, path: str, mutation: str | None) -> Located | Refused:
        if not path.startswith(PREFIX):
            return Refused(
                404, f"callgate tape: {path} names no tape: /t/<tape>/ then the API path"
            )
        name, _, below = path.removeprefix(PREFIX).partition("/")
        first, _, rest = below.partition("/")
        route, rest = (
            (first, "/" + rest)
            if first in ROUTES
            else (route_of_path("/" + below).name, "/" + below)
        )
        if not _NAME.fullmatch(name) or name in (".", ".."):
            return Refused(
                404, f"callgate tape: {name!r} is no tape name ([A-Za-z0-9_.+=-])", route
            )
        kind = mutation or self.mutation
        if kind is not None and kind not in KINDS:
            return Refused(400, f"callgate tape: no mutation {kind!r} (one of {', '.join(KINDS)})")
        shelved = self._open(name, kind)
        if shelved.tape is None or shelved.refusal is not None:
            with self._lock:
                shelved.refused += 1
            return Refused(400, shelved.refusal or "", route)
        return Located(shelved.tape, route, rest)

    def base_path(self, route: str) -> str:
        """The base URL path of the tape named ``default``, for SDK variables."""
        return f"{PREFIX}default/{route}{ROUTES[route].sdk_path}"

    def outcomes(self) -> list[Outcome]:
        """Every tape requested, in name order, once its requests are on it."""
        with self._lock:
            shelved = sorted(self._shelved.items(), key=lambda item: (item[0][0], item[0][1] or ""))
        return [_outcome(entry) for _, entry in shelved]

    def _open(self, name: str, kind: str | None) -> Shelved:
        with self._lock:
            if (found := self._shelved.get((name, kind))) is not None:
                return found
            recorded = self._shelved.get((name, None))
        if kind is not None and recorded is not None and recorded.tape is not None:
            recorded.tape.settled()  # its last exchange may not be written down yet
        label = name if kind is None else f"{name} [{kind}]"
        opened = self._tape(name, label, kind)
        with self._lock:
            return self._shelved.setdefault((name, kind), opened)

    def _tape(self, name: str, label: str, kind: str | None) -> Shelved:
        try:
            tape = Tape.open(
                self.folder / name,
                self.mode,
                label,
                redaction=self.redaction,
                allow=self.allow,
                allow_unused=self.allow_unused,
                advice=ADVICE,
            )
        except InputError as error:
            return Shelved(label, refusal=f"tape {label}: {error}")
        if kind is not None and (why := tape.fault(kind)):
            advice = "" if tape.held else ": record it first, with --record-mode once"
            return Shelved(label, tape, refusal=f"tape {label}: {why}{advice}")
        return Shelved(label, tape)


def _outcome(shelved: Shelved) -> Outcome:
    if shelved.tape is None or shelved.refusal is not None:
        tally = Tally(served=0, unused=0, mismatched=shelved.refused, blocking=0)
        return Outcome(shelved.label, tally, [shelved.refusal or ""])
    return Outcome(shelved.label, shelved.tape.tally(), shelved.tape.problems())
