"""One test's tape: what to do with each request, and what the test is told at the end.

How this works: in replay a request is served the first entry not served yet that has its shape,
and judged; so entries of one shape are served in the order they were recorded, while requests of
different shapes may arrive in another order than they were recorded in (an async app's parallel
requests race; ``new_episodes`` appends what it records at the end). In recording the exchange
goes upstream, and what came back is redacted (``callgate.redact``) and written as the next
entry. At the end, ``problems`` lists every reason the test must fail: a request the tape did
not hold, entries left unused, a turn whose verdict blocks (unless allowed), an exchange that
could not be kept.

A mutated tape is a script that ends at its fault: once a turn is served as its variant, the app
may go on as it would in production (run other tools, stop, ask something else), so a request
after it that the tape does not hold gets the provider's error and is no failure, nor are the
entries after the fault that went unrequested. ``Faulted`` tells the test what happened; its own
assertions decide.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from callgate.cli.tape import RecordMode, store
from callgate.cli.tape.shape import describe
from callgate.cli.tape.store import Entry
from callgate.reassemble import Report, check
from callgate.reassemble.errors import InputError, NotApplicable, RedactionRefused
from callgate.reassemble.mutations import mutate
from callgate.reassemble.providers import provider_from_url
from callgate.redact import ArgumentMode, Exchange, redact_exchange, refuse_leaks
from callgate.redact.leaks import secrets_of
from callgate.redact.record import exchange_record


class Redaction:
    """``replay`` keeps the model's text and the tool-call arguments, so the app behaves as it
    did; ``strict`` masks them as fixtures are masked. Prompts and credentials go in both."""

    REPLAY = "replay"
    STRICT = "strict"
    ALL = (REPLAY, STRICT)


@dataclass(frozen=True)
class TapeTurn:
    """A streamed turn the test replayed or recorded, with callgate's verdict on it."""

    path: Path
    report: Report
    recorded: bool


@dataclass(frozen=True)
class Faulted:
    """What a mutated tape served, and what the app asked after its fault."""

    #: The mutation the test asked for.
    kind: str
    #: Whether a turn was served as its variant: False when the app never asked for one.
    served: bool = False
    #: The first faulted turn's index in ``turns`` and its file; None until it is served.
    turn: int | None = None
    file: str | None = None
    #: Requests the app made after the fault was served.
    requests_after: int = 0
    #: Of those, the ones the tape did not hold: each got the provider's error.
    refused_after: int = 0

    @property
    def matched_after(self) -> bool:
        """Whether every request after the fault was one the tape holds."""
        return self.refused_after == 0


@dataclass(frozen=True)
class Advice:
    """How the tape's user does what a problem line advises: the pytest fixture's options by
    default, ``callgate tape``'s for the command."""

    #: How to record a request the tape does not hold.
    record: str = (
        "--callgate-record-mode=new_episodes, or delete the folder and run with "
        "--callgate-record-mode=once"
    )
    #: How to record a tape anew that a fault was asked of.
    rerecord: str = (
        "re-record the tape from the test that makes it, without mutate (delete the folder and "
        "run it with --callgate-record-mode=once)"
    )
    #: How to accept recorded exchanges the app did not request.
    allow_unused: str = "allow_unused=True in @pytest.mark.callgate_tape accepts that"
    #: How to accept a turn's blocking codes (``{codes}``: their list; ``{flags}``: an
    #: ``--allow CODE`` each).
    allow: str = "@pytest.mark.callgate_tape(allow={codes})"


@dataclass(frozen=True)
class Tally:
    """One tape's counts at the end: exchanges served (replayed or recorded), recorded exchanges
    left unrequested, requests the tape did not hold, turns whose verdict blocks."""

    served: int
    unused: int
    mismatched: int
    blocking: int


@dataclass(frozen=True)
class Decision:
    """What the server does with one request: serve ``entry``, go upstream (``record``), or
    answer ``refusal`` as the provider's error."""

    entry: Entry | None = None
    record: bool = False
    refusal: str | None = None


@dataclass
class Tape:
    """One test's tape in ``folder``, read when it is made (``InputError`` for a bad file).
    ``turns`` fills in as the test runs. ``Tape.open`` makes the tape of a run, clearing the
    folder when ``mode`` records everything anew (at its first request that goes upstream)."""

    folder: Path
    mode: RecordMode
    test: str
    redaction: str = Redaction.REPLAY
    allow: Collection[str] = ()
    allow_unused: bool = False
    advice: Advice = Advice()
    turns: list[TapeTurn] = field(default_factory=list, init=False)
    #: Every exchange served or recorded, in order (streamed turns and the rest).
    exchanges: list[Entry] = field(default_factory=list, init=False)
    #: Entries served as a mutation's variant (their file name -> the kind): their verdict is
    #: the fault the test asked for, not a problem.
    mutated: dict[str, str] = field(default_factory=dict, init=False)
    #: What the mutated tape served so far; None while the tape is not mutated.
    faulted: Faulted | None = field(default=None, init=False)
    #: The entry the fault was first served from: unused entries after it are no failure.
    _fault: Entry | None = field(default=None, init=False, repr=False, compare=False)
    # The tape's own state: set here, never given, never compared or shown.
    _entries: list[Entry] = field(default_factory=list, init=False, repr=False, compare=False)
    #: Entries not served yet, in tape order.
    _unused: list[Entry] = field(default_factory=list, init=False, repr=False, compare=False)
    _requests: int = field(default=0, init=False, repr=False, compare=False)
    _number: int = field(default=1, init=False, repr=False, compare=False)
    _recording: bool = field(default=False, init=False, repr=False, compare=False)
    _problems: list[str] = field(default_factory=list, init=False, repr=False, compare=False)
    _mismatched: int = field(default=0, init=False, repr=False, compare=False)
    _lock: threading.Condition = field(
        default_factory=threading.Condition, init=False, repr=False, compare=False
    )
    #: Requests gone upstream whose exchange is not on the tape yet.
    _pending: int = field(default=0, init=False, repr=False, compare=False)
    #: Whether the folder's tape files are still to be removed before the first recording.
    _clear: bool = field(default=False, init=False, repr=False, compare=False)

    @classmethod
    def open(cls, folder: Path, mode: RecordMode, test: str, **settings: Any) -> Tape:
        """The tape of one run of ``test`` in ``mode``: with ``all``, the folder's tape files
        are removed (other files stay) when the first request goes upstream, so everything is
        recorded anew, while a test that mutates the tape before its first request replays it."""
        tape = cls(folder, mode, test, **settings)
        tape._clear = mode is RecordMode.ALL
        return tape

    def __post_init__(self) -> None:
        """Read the tape and settle whether this run records. With ``all`` a file that cannot
        be read is no error: the tape is recorded anew unless the test mutates it, and then
        there is no recorded tape to mutate."""
        try:
            self._entries = store.load(self.folder)
        except InputError:
            if self.mode is not RecordMode.ALL:
                raise
        self._unused = list(self._entries)
        self._number = max((e.number for e in self._entries), default=0) + 1
        self._recording = self.mode is RecordMode.ALL or (
            self.mode is RecordMode.ONCE and not self._entries
        )

    @property
    def recording(self) -> bool:
        """Whether requests go upstream: ``all``, ``once`` on an empty tape, or ``new_episodes``
        (for the requests the tape does not hold); never once the tape is mutated."""
        if self.mutated:
            return False
        return self._recording or self.mode is RecordMode.NEW_EPISODES

    @property
    def held(self) -> bool:
        """Whether the folder held a recorded tape when it was opened."""
        return bool(self._entries)

    def records_session(self, method: str, path: str) -> bool:
        """Whether a WebSocket session at ``path`` goes upstream to be recorded whole (``all``,
        ``once`` on an empty tape, ``new_episodes`` when the tape holds no response of a session
        there), rather than replayed: a session is recorded or replayed as one."""
        with self._lock:
            if self.mutated or not self.recording:
                return False
            return self._recording or not any(
                e.shape.get("method") == method and e.shape.get("path") == path
                for e in self._unused
            )

    def decide(self, shape: Mapping[str, Any]) -> Decision:
        with self._lock:
            self._requests += 1
            if self._recording:
                if self._clear:
                    store.clear(self.folder)
                    self._clear, self._number = False, 1
                self._pending += 1
                return Decision(record=True)
            wanted = dict(shape)
            entry = next((e for e in self._unused if dict(e.shape) == wanted), None)
            if entry is not None:
                self._unused.remove(entry)
                self._served(entry, recorded=False)
                self._count_after_fault(entry, refused=False)
                return Decision(entry=entry)
            if self.recording:  # new_episodes, on a tape that is not mutated
                self._pending += 1
                return Decision(record=True)
            if self._fault is not None:
                self._count_after_fault(None, refused=True)
                return Decision(refusal=self._after_fault(shape))
            refusal = self._mismatch(shape, self._unused[0] if self._unused else None)
            self._problems.append(refusal)
            self._mismatched += 1
            return Decision(refusal=refusal)

    def _count_after_fault(self, entry: Entry | None, *, refused: bool) -> None:
        """Note the fault when ``entry`` is its first variant served, else one request more
        after it."""
        if self.faulted is None:
            return
        if self._fault is None:
            if entry is not None and entry.path.name in self.mutated:
                self._fault = entry
                self.faulted = dataclasses.replace(
                    self.faulted, served=True, turn=len(self.turns) - 1, file=entry.path.name
                )
            return
        self.faulted = dataclasses.replace(
            self.faulted,
            requests_after=self.faulted.requests_after + 1,
            refused_after=self.faulted.refused_after + refused,
        )

    def mutate(self, kind: str) -> list[str]:
        """Serve every streamed turn not served yet as its ``kind`` variant; why the kind does
        not apply, for each turn served as recorded instead. Once a variant is served, the tape
        records nothing in any mode: a request it does not hold is refused."""
        with self._lock:
            reasons = []
            for n, entry in enumerate(self._unused):
                if entry.envelope is None:
                    continue
                try:
                    variant = mutate(entry.envelope, kind, entry.path.name)
                except NotApplicable as why:
                    reasons.append(f"{entry.path.name}: {why}")
                    continue
                self._unused[n] = dataclasses.replace(
                    entry, envelope=variant, report=check(variant)
                )
                self.mutated[entry.path.name] = kind
            if self.mutated:
                self._recording = self._clear = False
                self.faulted = Faulted(kind)
            return reasons

    def fault(self, kind: str) -> str | None:
        """Serve the tape as its ``kind`` variants (``mutate``); why not, when there is no
        recorded tape or the kind applies to none of its turns (a fault test that tests nothing
        must not pass). The caller makes that its one failure."""
        if not self.held:
            return f"no recorded tape at {self.folder} to mutate (mutate never records)"
        reasons = self.mutate(kind)
        if self.mutated:
            return None
        why = reasons[0] if reasons else "it holds no streamed turn"
        return f"{kind} applies to no turn of tape {self.folder}: {why}"

    def settled(self, timeout: float = 30.0) -> None:
        """Wait until every request that went upstream is on the tape (or failed): a client has
        its answer before the server has written it down."""
        with self._lock:
            self._lock.wait_for(lambda: self._pending == 0, timeout)

    def recorded(
        self, exchange: Exchange | None, shape: Mapping[str, Any], failure: str | None = None
    ) -> None:
        """Redact and write what came back from upstream; a refusal is a problem, not a file.
        Every request ``decide`` sent upstream ends here, with its ``exchange`` or, when there is
        none to keep, the ``failure``."""
        try:
            if exchange is None:
                self.failed(f"{describe(shape)}: {failure}")
            else:
                self._record(exchange, shape)
        finally:
            with self._lock:
                self._pending -= 1
                self._lock.notify_all()

    def _record(self, exchange: Exchange, shape: Mapping[str, Any]) -> None:
        keep = self.redaction == Redaction.REPLAY
        arguments = ArgumentMode.KEEP if keep else ArgumentMode.MASK
        envelope = record = report = None
        try:
            try:
                # The provider is read from the upstream's host, as for captures (an SDK may be
                # pointed at any gateway that speaks its API); the route's own where the host
                # names none (a gateway on loopback, a fake provider in tests).
                provider = provider_from_url(exchange.url) or str(shape.get("route"))
                redacted = redact_exchange(
                    exchange, provider=provider, arguments=arguments, keep_text=keep
                )
                # redact_exchange ran the leak gate over the rest: only the shape is new.
                refuse_leaks({"meta": {"tape": {"request": shape}}}, secrets_of(exchange))
                envelope, report = redacted.envelope, redacted.report
            except NotApplicable:
                record = exchange_record(exchange, shape, keep_text=keep)
        except RedactionRefused as refused:
            with self._lock:
                self._problems.append(
                    f"tape {self._where()}: {describe(shape)}: not recorded: {refused}"
                )
            return
        with self._lock:
            entry = store.write(
                self.folder, self._number, shape, envelope=envelope, report=report, record=record
            )
            self._number += 1
            self._served(entry, recorded=True)

    def failed(self, message: str) -> None:
        with self._lock:
            self._problems.append(f"tape {self._where()}: {message}")

    def problems(self) -> list[str]:
        """Why the test must fail, one line each; empty when the tape was used as recorded."""
        self.settled()
        with self._lock:
            problems = list(self._problems)
            unused = self._unrequested()
            if unused and not self.allow_unused:
                problems.append(
                    f"tape {self._where()}: {len(unused)} recorded exchange(s) were not requested, "
                    f"from {unused[0].path.name} ({describe(unused[0].shape)}); the app made "
                    f"fewer requests than when it was recorded ({self.advice.allow_unused})"
                )
            for turn, blocking in self._blocking():
                flags = " ".join(f"--allow {code}" for code in blocking)
                allow = self.advice.allow.format(codes=repr(blocking), flags=flags)
                problems.append(
                    f"tape {self._where()}: {turn.path.name}: the turn does not pass: "
                    f"{turn.report.status.value} [{', '.join(blocking)}] (allow it with {allow})"
                )
            return problems

    def tally(self) -> Tally:
        """The tape's counts once every request is on it (``Tally``)."""
        self.settled()
        with self._lock:
            return Tally(
                served=len(self.exchanges),
                unused=len(self._unrequested()),
                mismatched=self._mismatched,
                blocking=len(self._blocking()),
            )

    def _unrequested(self) -> list[Entry]:
        """Recorded entries the app did not request: none while recording, and none after a
        served fault (the script ended there)."""
        unused = self._unused if not self._recording else []
        if self._fault is not None:
            unused = [e for e in unused if e.number < self._fault.number]
        return unused

    def _blocking(self) -> list[tuple[TapeTurn, list[str]]]:
        """The turns whose verdict blocks with codes not allowed (a variant's is what the test
        asked for), each with those codes."""
        found = []
        for turn in self.turns:
            if turn.path.name in self.mutated:
                continue
            if blocking := [c for c in turn.report.blocking_codes if c not in self.allow]:
                found.append((turn, blocking))
        return found

    def _served(self, entry: Entry, *, recorded: bool) -> None:
        self.exchanges.append(entry)
        if entry.report is not None:
            self.turns.append(TapeTurn(entry.path, entry.report, recorded))

    def _mismatch(self, shape: Mapping[str, Any], entry: Entry | None) -> str:
        held = f"{entry.path.name} ({describe(entry.shape)})" if entry else "nothing more"
        if self.mutated:  # a mutated tape records nothing, in any mode
            advice = (
                "The tape is mutated before its fault was served, so the app asks otherwise "
                f"than when it was recorded: {self.advice.rerecord}"
            )
        else:
            advice = f"To record it: {self.advice.record}"
        return (
            f"tape {self._where()}: request {self._requests} is not on the tape: "
            f"{describe(shape)}; the tape holds next: {held}. {advice}"
        )

    def _after_fault(self, shape: Mapping[str, Any]) -> str:
        """What the app is answered, as its provider's error, for a request after the fault
        the tape does not hold: no failure, the recorded script ended at the fault."""
        assert self._fault is not None and self.faulted is not None
        return (
            f"callgate tape: request {self._requests} came after the fault "
            f"{self.faulted.kind} served at {self._fault.path.name} and is not on the tape: "
            f"{describe(shape)}; the recorded script ends at the fault"
        )

    def _where(self) -> str:
        return f"{self.test} ({self.folder})"
