"""The per-flow pipeline behind ``flow.response.stream``: bytes in, the same bytes out.

How this works: each body chunk is decompressed incrementally, and the reader of the response's
framing (``reassemble.readers``: SSE, Gemini's streamed JSON array without ``alt=sse``, JSON
lines, Bedrock's event stream) cuts it into events, parsed as JSON (or, in an event stream, read
by the profile) and fed to the engine, whose findings are reported as they happen. In observe
mode the tap returns every chunk unchanged the moment it comes and reads it then, or, given
``defer`` (as the addon gives it), once the stream pauses (``backlog``), together with the
chunks before it, each event timed when its chunk came. In enforce mode it works on whole events
instead: everything streams as before except the provider's terminal evidence (a chunk with
``finish_reason`` and what follows it; Anthropic's ``message_delta`` and ``message_stop``;
Ollama's ``done`` line; Bedrock's ``messageStop`` and ``metadata``) and the end marker
(``[DONE]``, ``message_stop``, the array's closing bracket), which are held until the verdict is
known at the end marker or the end of the body, then released unchanged on a pass or replaced by
a provider-shaped error event on a fail. An SSE body that ends inside an event (bytes after its
last blank line that a blank line would make an event other than ``[DONE]``) is a fail however
the turn was judged: the engine never read that event, and some clients do. JSON lines and event
streams are decided at the end of the body only: their clients read on past the end marker.
Given ``defer``, an SSE event whose bytes show it cannot decide the turn (``may_decide``) goes at
once and is read later, before any event that can. Per chunk the work is proportional to the
chunk. What the tap does with the next bytes is its state, moved only through the table in
``tap_state``.

A body that stops being UTF-8 is the provider's fault, not the pipeline's: the events before the
bad byte were read, the rest of the body is handed to the engine as one text event (which no
profile reads: ``unsupported_event``, so the turn fails), and enforce mode holds everything from
that block on, as a terminal carried in undecodable bytes must not reach the client.

A body longer than ``max_body`` (decoded) is not kept: a stream that never ends must not cost
the proxy unbounded memory. From that chunk on the tap keeps nothing and reads nothing; observe
mode passes every byte on, enforce mode sends the error event once and drops the rest (or, the
turn passed already, passes the rest on). The turn is not judged and no fixture is written
(``over_limit``).

mitmproxy drops a chunk whose stream callable raises, so nothing here may raise: a failure inside
the pipeline is reported once and the tap stops inspecting. Enforcing, a turn it can no longer
judge fails closed by default: the error event goes out (once) instead of what was held and of
anything after it, unless the verdict was given already; with ``on_error="pass"`` every byte
still goes through instead (availability first). Observing, every byte always goes through.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from callgate.integrations.enforce.backlog import Backlog
from callgate.integrations.enforce.tap_state import TapInput, TapState, step
from callgate.reassemble import Code, Finding, Reassembler, Report
from callgate.reassemble.body import StreamBody
from callgate.reassemble.framing import SSE
from callgate.reassemble.profiles import PROFILES, framing_for, profile_for
from callgate.reassemble.profiles.base import Profile
from callgate.reassemble.providers import provider_from_url
from callgate.reassemble.readers import READERS, Reader, SSEReader
from callgate.redact.encoding import Decompressor
from callgate.redact.fragment_lines import FragmentLines, parse_texts

#: The decoded body a tap keeps by default (64 MiB): past it, a stream that never ends is let go
#: unjudged, so that it costs bounded memory.
MAX_BODY = 64 << 20

# The states by name, looked up once: the tap asks for its state at every chunk, and in Python
# 3.11 an Enum member looked up through its class costs ten times an attribute.
READING, HOLDING, PASSED, BLOCKED, BROKEN = (
    TapState.READING,
    TapState.HOLDING,
    TapState.PASSED,
    TapState.BLOCKED,
    TapState.BROKEN,
)


def _error_body(profile: Profile, codes: list[str]) -> Mapping[str, object]:
    message = f"callgate blocked this turn: {', '.join(codes) or 'conformance failure'}"
    return profile.error_body(message, codes)


def unjudged_frame(profile: Profile, reader: Reader[Any], fault: str, *, first: bool) -> bytes:
    """The provider's error event for a turn callgate could not judge after ``fault`` (an
    exception's type name): what enforce mode sends when it fails closed."""
    message = f"callgate could not judge this turn ({fault}), so it may not run"
    body = profile.error_body(message, ["callgate_unjudged"])
    return reader.error_frame(profile, body, first=first)


def refusing(profile: str, framing: str, fault: str) -> Callable[[bytes], list[bytes]]:
    """Enforce mode, failing closed, for a flow whose inspection could not start after
    ``fault``: a stream callable that sends the error event once in place of the whole body."""
    spec = PROFILES[profile]
    owed = [unjudged_frame(spec, READERS[framing](spec, lambda: b""), fault, first=True)]

    def stream(chunk: bytes) -> list[bytes]:
        out, owed[:] = owed[:], []
        return out

    return stream


def route(
    method: str, status: int, url: str, content_type: str, provider: str | None
) -> tuple[str, str | None, str] | None:
    """(profile, provider, framing) of a response enforce mode reads: a successful POST to an
    endpoint a profile serves, answered in a framing that profile streams in; else None.
    ``provider`` is the one named, or the URL's host tells."""
    if method != "POST" or not 200 <= status < 300:
        return None
    provider = provider or provider_from_url(url)
    profile = profile_for(url, provider)
    if profile is None:
        return None
    framing = framing_for(profile, content_type.split(";")[0].strip().lower())
    return None if framing is None else (profile, provider, framing)


def deciding_pattern(profile: Profile) -> re.Pattern[bytes]:
    """The profile's ``terminal_pattern``, compiled for ``may_decide``."""
    return re.compile(profile.terminal_pattern)


def may_decide(block: bytes, terminal: re.Pattern[bytes]) -> bool:
    """Whether an SSE event block could carry the terminal evidence or end the stream, told from
    its bytes: it holds ``[DONE]``, a match of ``terminal`` (``deciding_pattern``), or a ``\\u``
    escape (the only other way JSON text can spell the pattern's letters), or it is not UTF-8
    (enforce mode holds such bytes). Two substring tests and a pattern that starts with a
    literal take half the time of one pattern with three branches."""
    if b"[DONE]" in block or b"\\u" in block or terminal.search(block) is not None:
        return True
    if not block.isascii():
        try:
            block.decode("utf-8")
        except UnicodeDecodeError:
            return True
    return False


#: A ``StreamBody`` on its way to the fixture writer's process: each event as the engine was fed
#: it, as JSON text (``StreamTap._keep``), in order; its framing, ``done`` and ``incomplete``.
PackedBody = tuple[list[str], str, bool, bool]


def unpack_body(packed: PackedBody, lines: FragmentLines | None = None) -> StreamBody:
    """The ``StreamBody`` that ``StreamTap.packed_body`` packed; the events are the caller's.
    The texts are parsed as one array: each was read strictly already, or is a JSON string,
    and member names repeated across events are then one string each (the parser's memo lasts
    a document), which the writer's look-ups and hashing gain from. With ``lines``, the events
    it will write from a template are not parsed (None stands for each; see
    ``FragmentLines.parse``)."""
    texts, framing, done, incomplete = packed
    if lines is not None:
        return StreamBody(lines.parse(texts), framing, done, incomplete)
    return StreamBody(parse_texts(texts), framing, done, incomplete)


class StreamTap:
    """The stream callable for one flow. ``on_finding`` is told every finding as it happens;
    ``on_failure`` once, if the pipeline itself breaks (with the exception's type name only).
    ``on_error``: what enforce mode does then, ``"block"`` (the error event) or ``"pass"``."""

    def __init__(
        self,
        engine: Reassembler,
        profile: str,
        encoding: str,
        *,
        enforce: bool,
        on_finding: Callable[[Finding], None],
        on_failure: Callable[[str], None],
        framing: str = SSE,
        max_body: int = MAX_BODY,
        defer: Callable[[Callable[[], None]], object] | None = None,
        on_error: str = "block",
    ) -> None:
        self.engine = engine
        #: Enforcing, a failure of the pipeline blocks the turn it could not judge.
        self._fails_closed = enforce and on_error == "block"
        #: The pipeline failed: nothing more is read, and the report covers what came before.
        self._faulted = False
        #: Failing closed: the error event, until it goes out.
        self._owed: bytes | None = None
        self.profile, self._profile = profile, PROFILES[profile]
        self.enforce = enforce
        self.framing = framing
        self.max_body = max_body
        self.decompressor = Decompressor(encoding)
        #: No content coding: each chunk is its own decoded bytes, without two calls per chunk.
        self._identity = self.decompressor.encoding in ("", "identity")
        self.body: list[bytes] = []
        self._kept = 0  # bytes of the decoded body so far
        #: The decoded body grew past ``max_body``: it was let go, and the turn is not judged.
        self.over_limit = False
        #: Seconds from the first body byte to each stream event (for replay with real timing).
        self.event_times: list[float] = []
        #: Each stream event as the engine was fed it, in order, as JSON text (``_keep``).
        self._texts: list[str] = []
        self._started: float | None = None
        self.report: Report | None = None
        self._state = READING
        self._stream_ended = False  # an event the profile ends the stream with was read
        self._body_ended = False  # the end-of-body call came (an empty chunk)
        self._read_whole = True  # no byte went unread after an enforced verdict
        self._reader: Reader[Any] = READERS[framing](self._profile, self._received)
        #: The reader whose events are kept for ``read_body``: only an SSE body's are handed on.
        self._kept_from = self._reader if isinstance(self._reader, SSEReader) else None
        if self._kept_from is not None:  # the engine only reads the values: build fragments
            self._kept_from.read_fragments_by_template()
        self._sent = 0  # enforce: bytes of the body released so far (all of it is a prefix)
        self._held: list[bytes] = []  # enforce: the blocks held, until the verdict
        #: Enforce mode: the body ended inside an event the engine did not read (``_decide``).
        self._unread_tail = False
        self._on_finding, self._on_failure = on_finding, on_failure
        self._backlog = Backlog(defer, self.catch_up) if defer is not None else None
        #: Enforce mode, given ``defer``: what an SSE event that may go before it is read must
        #: not hold (None: every event is read before it goes).
        self._deciding = (
            deciding_pattern(self._profile)
            if enforce
            and defer is not None
            and self._reader.releases_unread
            and self._profile.terminal_pattern
            else None
        )

    @property
    def state(self) -> TapState:
        """What the tap does with the bytes that come next (``tap_state``)."""
        return self._state

    @property
    def judged(self) -> bool:
        """Enforcing, the verdict was given: the turn passed, or was blocked."""
        return self._state is PASSED or self._state is BLOCKED

    @property
    def broken(self) -> bool:
        """The pipeline failed and stopped reading: the report covers what came before."""
        return self._faulted

    @property
    def end_marker_seen(self) -> bool:
        """The stream's end was read: the framing's end marker (``[DONE]``, the array's closing
        bracket) or the event the profile ends the stream with."""
        return self._stream_ended or self._reader.ended

    def __call__(self, chunk: bytes) -> bytes | list[bytes]:
        self._body_ended = self._body_ended or not chunk
        try:
            decoded = chunk if self._identity else self.decompressor(chunk)
        except Exception as error:  # a bug of ours, or corrupt upstream data
            self.catch_up()
            self._break(error)
            if self._state is BLOCKED:
                return self._settle()
            if not self.enforce:
                return chunk
            # Passed on from here: what enforce mode held (a cut line) goes first, in order.
            return [*self._settle(), chunk]
        if self._faulted and self._state is BLOCKED:
            # Failed closed (maybe between calls, reading released events), or failed after a
            # blocking verdict: the error event once if owed, then nothing; the body is still
            # kept, unread, for its fixture.
            if self._kept + len(decoded) <= self.max_body:
                self._kept += len(decoded)
                self.body.append(decoded)
            return self._settle()
        if self._state is BROKEN:
            if not self.enforce:
                return chunk
            # Broken between calls (reading released events later): what was kept goes now.
            return [piece for piece in (self._unsent(), decoded) if piece]
        if self.over_limit or self._kept + len(decoded) > self.max_body:
            return self._over_limit(chunk, decoded)
        self._kept += len(decoded)
        self.body.append(decoded)
        if not self.enforce:
            self._observe(chunk, decoded)
            return chunk
        # A chunk of whole events none of which may decide the turn goes as its events would,
        # one by one, without being cut into them.
        if self._may_go_unread(decoded) and self._reader.takes_whole(decoded):
            self._release_unread(decoded)
            return [decoded]
        return self._enforce(decoded, end=not chunk)

    def catch_up(self) -> None:
        """Read what passed and was not read yet (given ``defer``); never raises."""
        try:
            self._read_unread()
        except Exception as error:  # into mitmproxy or the event loop: stop reading instead
            self._break(error)

    def close(self) -> Report:
        """The verdict; call once the flow has ended (cleanly or not)."""
        if self.report is None:
            self.catch_up()
            self.report = self.engine.close()
        return self.report

    @property
    def read_whole(self) -> bool:
        """Once closed: the tap read every byte of a body that ended, so its report is the
        verdict of the recorded body. Not so when it broke, let the body go, met bytes it could
        not read, passed bytes on unread after an enforced verdict, or the body never ended."""
        return (
            self.report is not None
            and self._body_ended
            and self._read_whole
            and not self.over_limit
            and not self._faulted
            and not self._reader.unreadable
        )

    def read_body(self) -> StreamBody | None:
        """The body as import reads it (``parse_stream_body``), from the events the engine was
        fed; None unless the tap ``read_whole`` an SSE body (import reads the other framings'
        bodies in a way of its own). The caller owns the events: the tap is done with them."""
        packed = self.packed_body()
        return None if packed is None else unpack_body(packed)

    def packed_body(self) -> PackedBody | None:
        """``read_body`` as it goes to the fixture writer's process: packed, not unpacked here."""
        reader = self._kept_from
        if reader is None or not self.read_whole:
            return None
        return self._texts, SSE, reader.ended, reader.incomplete

    # -- reading -----------------------------------------------------------------------------------

    def _received(self) -> bytes:
        return b"".join(self.body)

    def _observe(self, chunk: bytes, decoded: bytes) -> None:
        if self._backlog is not None:
            if decoded:
                self._backlog.add(decoded)
            elif not chunk:
                self._backlog.end()
        elif decoded or not chunk:
            # Only the empty chunk ends the body: a compressed chunk may decode to nothing yet.
            try:
                self._read(self._reader.read(decoded))
            except Exception as error:  # never raise into mitmproxy
                self._break(error)

    def _read_unread(self) -> None:
        if self.report is not None or self._faulted or self._backlog is None:
            return
        for data, at in self._backlog.take():
            self._read(self._reader.read(data), at)

    def _read(self, events: Iterable[object], at: float | None = None) -> None:
        """Each event fed to the engine; its findings reported as they happen. ``at``: when the
        chunks that completed them came (default: now). ``events`` parses each as it is taken:
        the parsed events of a whole read, held at once, would outlive the garbage collector's
        youngest generation and, promoted, make it sweep all of mitmproxy's objects."""
        now = time.monotonic() if at is None else at
        if self._started is None:
            self._started = now
        since, read = now - self._started, 0
        ends_stream, feed = self._profile.ends_stream, self.engine.feed
        refused: list[tuple[int, str]] = []  # the events that are strings, by position
        try:
            for event in events:
                if type(event) is str:
                    refused.append((read, event))
                read += 1
                if ends_stream is not None and ends_stream(event):
                    self._stream_ended = True
                for finding in feed(event):
                    self._on_finding(finding)
        finally:
            self.event_times += [since] * read
            if self._kept_from is not None:
                self._keep(self._kept_from, read, refused)

    def _keep(self, reader: SSEReader, read: int, refused: list[tuple[int, str]]) -> None:
        """The texts of the ``read`` events just read, kept for the fixture writer: a string
        each, which the collector never walks, where the parsed values of a long turn kept to
        its end would outlive its young generations and be walked again and again. An event
        whose data a strict parse refused was fed to the engine as the text itself: it is kept
        as that text written as a JSON string, which ``unpack_body`` reads back as the text."""
        texts = reader.texts[:read]
        for position, event in refused:
            if event is texts[position]:
                texts[position] = json.dumps(event)
        self._texts += texts

    # -- enforce mode ------------------------------------------------------------------------------

    def _may_go_unread(self, data: bytes) -> bool:
        """Enforce mode: whether SSE events may go before they are read, told from their bytes
        (``may_decide``), with nothing held before them."""
        return (
            self._deciding is not None
            and self._state is READING
            and not self._reader.unreadable
            and not may_decide(data, self._deciding)
        )

    def _release_unread(self, data: bytes) -> None:
        assert self._backlog is not None  # only given ``defer`` does anything go unread
        self._sent += len(data)
        self._backlog.add(data)

    def _enforce(self, decoded: bytes, *, end: bool) -> list[bytes]:
        blocks = self._reader.feed(decoded)
        out: list[bytes] = []
        try:
            for block in blocks:
                out += self._route(block)
            # The tail: what follows the last whole event once the body is over (a cut line or
            # element) or once a JSON array has closed (its closing bracket, which decides now).
            if end or self._reader.closed:
                out += self._route(self._reader.rest(), tail=True)
            if end and self._state is HOLDING:
                out += self._decide()
        except Exception as error:  # the error event, or (passing) every byte not yet sent
            self._break(error)
            out += self._settle()
        # mitmproxy writes every piece of a list as a chunk of its own, an empty one too: on a
        # chunked response that is a second terminating chunk, which a kept-alive connection
        # then reads where the next response should start.
        return [piece for piece in out if piece]

    def _route(self, block: bytes, *, tail: bool = False) -> list[bytes]:
        """Enforce mode: where one block goes now. A tail is held and goes out only on a pass,
        so an error event never lands after a cut line or element, or after a closed array."""
        if self._state is PASSED or self._state is BLOCKED:
            # After the verdict nothing is read: the tap no longer has the body whole.
            self._read_whole = self._read_whole and not block
            if self._state is BLOCKED:
                return []
            self._sent += len(block)
            return [block]
        if not tail and self._may_go_unread(block):
            self._release_unread(block)
            return [block]
        self._read_unread()  # the events before this one first
        if tail:
            self._unread_tail = self._reader.leaves_unread(block)
        ended_before = self.end_marker_seen
        events = list(self._reader.read_block(block, tail=tail))
        self._read(events)
        # The block with the end marker is held too: a stream that ends without the terminal
        # evidence must not tell the client it ended well (openai-python hands on its calls at
        # [DONE]). An array's end marker, its closing bracket, is seen as its bytes come, before
        # the blocks ahead of it are read: it is in the tail, held anyway.
        if (
            tail
            or self._state is HOLDING
            or self._reader.unreadable
            or (self.end_marker_seen and not ended_before)
            or any(map(self._profile.carries_terminal, events))
        ):
            self._state = step(self._state, TapInput.HOLD)
            self._held.append(block)
            decides = self.end_marker_seen and not self._reader.reads_past_end
            return self._decide() if decides else []
        self._sent += len(block)
        return [block]

    def _decide(self) -> list[bytes]:
        """The held blocks on a pass, else the error event. A body that ended inside an event
        fails whatever its report says: the reader drops that event (the SSE spec's rule), and
        mistralai's decoder hands it out, with any calls or terminal evidence in it."""
        report = self.close()
        passed = report.exit_code != 1 and not self._unread_tail
        self._state = step(self._state, TapInput.PASS if passed else TapInput.FAIL)
        held, self._held = self._held, []
        if passed:
            self._sent += sum(map(len, held))
            return held
        return [self._blocked(report.blocking_codes)]

    def _blocked(self, codes: list[str]) -> bytes:
        body = _error_body(self._profile, codes)
        return self._reader.error_frame(self._profile, body, first=self._sent == 0)

    def _over_limit(self, chunk: bytes, decoded: bytes) -> bytes | list[bytes]:
        # Nothing of the body is kept past the limit: its bytes, nor the events read from it.
        self.over_limit, self.body, self._texts, self._kept_from = True, [], [], None
        if self._backlog is not None:
            self._backlog.drop()
        if not self.enforce:
            return chunk
        if self._state is PASSED:  # judged already: the rest goes as the verdict says
            return [decoded] if decoded else []
        if self._state is BLOCKED:
            return []
        # Whatever was released stays released; what was held and what follows never goes.
        self._state, self._held = step(self._state, TapInput.FAIL), []
        return [self._blocked([Code.LIMIT_EXCEEDED.value])]

    # -- failure -----------------------------------------------------------------------------------

    def _break(self, error: Exception) -> None:
        if self._faulted:
            return
        self._faulted = True
        self._on_failure(type(error).__name__)
        if self._state is BLOCKED:
            return  # the verdict stands: the error event went out, and nothing more goes
        if self._fails_closed and self._state in (READING, HOLDING):
            # No verdict yet, and none can come: what was held, and what follows, never goes.
            self._state, self._held = step(self._state, TapInput.FAIL), []
            fault, first = type(error).__name__, self._sent == 0
            self._owed = unjudged_frame(self._profile, self._reader, fault, first=first)
        else:
            self._state = step(self._state, TapInput.FAULT)

    def _settle(self) -> list[bytes]:
        """After a failure: the error event once (failing closed), or every byte received and
        not sent (passing it on, or the verdict given already)."""
        if self._state is BLOCKED:
            owed, self._owed = self._owed, None
            return [owed] if owed is not None else []
        unsent = self._unsent()
        return [unsent] if unsent else []

    def _unsent(self) -> bytes:
        """Enforce mode, once broken: every byte received and not sent yet, held or cut."""
        if self._sent == self._kept:  # all of it went already: no need to join the body again
            return b""
        unsent = b"".join(self.body)[self._sent :]
        self._sent, self._held = self._kept, []
        return unsent
