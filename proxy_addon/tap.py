"""The per-flow pipeline behind ``flow.response.stream``: bytes in, the same bytes out.

How this works: each body chunk is decompressed incrementally, split into events (SSE by the
shared decoder; Gemini's streamed JSON array, without ``alt=sse``, into its elements;
newline-delimited JSON into its lines; Bedrock's event stream into its messages, each read by the
profile), parsed as JSON and fed to the engine, whose findings are reported as they happen. In
observe mode the tap returns every chunk unchanged the moment it comes and reads it then, or,
given ``defer`` (as the addon gives it), once the stream pauses (``_look``), together with
the chunks before it, each event timed when its chunk came. In enforce mode it works on whole
events instead: everything streams as before except the provider's
terminal evidence (a chunk with ``finish_reason`` and what follows it; Anthropic's
``message_delta`` and ``message_stop``; Ollama's ``done`` line; Bedrock's ``messageStop`` and
``metadata``) and the end marker (``[DONE]``, ``message_stop``, the array's closing bracket),
which are held until the verdict is known at the end marker or the end of the body, then released
unchanged on a pass or replaced by a provider-shaped error event on a fail. JSON lines and event
streams are decided at the end of the body only: their clients read on past the end marker. Given
``defer``, an SSE event whose bytes show it cannot decide the turn (``may_decide``) goes at once
and is read later, before any event that can. Per chunk the work is proportional to the
chunk.

A body that stops being UTF-8 is the provider's fault, not the pipeline's: the events before the
bad byte were read, the rest of the body is handed to the engine as one text event (which no
profile reads: ``unsupported_event``, so the turn fails), and enforce mode holds everything from
that block on, as a terminal carried in undecodable bytes must not reach the client.

A body longer than ``max_body`` (decoded) is not kept: a stream that never ends must not cost
the proxy unbounded memory. From that chunk on the tap keeps nothing and reads nothing; observe
mode passes every byte on, enforce mode sends the error event once and drops the rest. The turn
is not judged and no fixture is written (``over_limit``).

mitmproxy drops a chunk whose stream callable raises, so nothing here may raise: a failure inside
the pipeline is reported once, the tap stops inspecting, and every byte still goes through.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable
from typing import cast

from callgate.reassemble import Code, Finding, Reassembler, Report
from callgate.reassemble.eventstream import MessageFramer, message_event
from callgate.reassemble.framing import (
    EVENTSTREAM,
    JSON_ARRAY,
    NDJSON,
    SSE,
    ArrayFramer,
    Blocks,
    EventFramer,
    LineFramer,
    element_text,
)
from callgate.reassemble.profiles import PROFILES
from callgate.reassemble.profiles.base import Profile
from callgate.reassemble.sse import SSEDecoder, SSEError, split_at_bad_byte
from callgate.redact.body import event_reader, event_value
from callgate.redact.encoding import Decompressor

_DONE = "[DONE]"
#: Given ``defer``, reading waits for the stream to pause for at most this many looks.
MAX_LOOKS = 50
#: Seconds within which chunks read later count as having come at once (``_read_unread``).
SAME_MOMENT = 0.001


def blocked_event(
    profile: str, codes: list[str], framing: str = SSE, opens_array: bool = False
) -> bytes:
    """The profile's own error event, which makes the provider's SDK raise. In a JSON array it
    is the last element and closes the array (``opens_array``: nothing of it was sent yet)."""
    message = f"callgate blocked this turn: {', '.join(codes) or 'conformance failure'}"
    body = PROFILES[profile].error_body(message, codes)
    if framing == JSON_ARRAY:
        return f"{'[' if opens_array else ','}{json.dumps(body)}\n]".encode()
    if framing == NDJSON:
        return json.dumps(body).encode() + b"\n"
    if framing == EVENTSTREAM:
        return PROFILES[profile].message_frame(body)
    return PROFILES[profile].sse_frame(body)


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


class StreamTap:
    """The stream callable for one flow. ``on_finding`` is told every finding as it happens;
    ``on_failure`` once, if the pipeline itself breaks (with the exception's type name only)."""

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
        max_body: int = 64 << 20,
        defer: Callable[[Callable[[], None]], object] | None = None,
    ) -> None:
        self.engine = engine
        self.max_body = max_body
        #: The decoded body grew past ``max_body``: it was let go, and the turn is not judged.
        self.over_limit = False
        self._kept = 0
        self.profile = profile
        self._profile = PROFILES[profile]
        self.enforce = enforce
        self.decompressor = Decompressor(encoding)
        self.body: list[bytes] = []
        #: Seconds from the first body byte to each stream event (for replay with real timing).
        self.event_times: list[float] = []
        self._started: float | None = None
        self.end_marker_seen = False
        self.report: Report | None = None
        self.framing = framing
        self._sse = SSEDecoder()
        self._sse_value = event_reader(self._profile.names_proof)
        self._sse_read = 0  # SSE events the decoder gave so far, [DONE] among them
        # Enforce mode cuts the body into blocks with the framer and reads each block; observe
        # mode reads chunks as they come (a JSON array through the same framer).
        framers: dict[str, type[Blocks]] = {
            SSE: EventFramer,
            NDJSON: LineFramer,
            EVENTSTREAM: MessageFramer,
        }
        self._framer = framers.get(framing, ArrayFramer)()
        self._element_seen = False  # JSON array, JSON lines: the first block was read
        self._sent = 0  # enforce: bytes of the body released so far (all of it is a prefix)
        self._held: list[bytes] = []
        self._verdict: bool | None = None  # enforce: None until decided, then pass/fail
        self._broken = False
        #: The SSE body stopped being UTF-8: nothing after that is read.
        self._undecodable = False
        self._on_finding, self._on_failure = on_finding, on_failure
        # Given ``defer`` (the addon's runs the callable it is given a few milliseconds later),
        # chunks pass at once and are read once the stream pauses (``_look``), so the client
        # does not wait for the reading and one pass reads many: all chunks observing; in
        # enforce mode, the SSE events that cannot decide the turn (``may_decide``).
        self._defer = defer
        self._unread: list[bytes] = []
        self._arrived: list[float] = []  # when each unread chunk came (time.monotonic())
        #: Observe mode, given ``defer``: when the body's end came, until it is read.
        self._end_unread: float | None = None
        self._looking = False  # a look is waiting to be run
        self._fresh = False  # something came since the last look
        self._looks = 0
        #: Enforce mode, given ``defer``: what an SSE event that may go before it is read must
        #: not hold (None: every event is read before it goes).
        self._deciding = (
            deciding_pattern(self._profile)
            if (enforce and defer is not None and framing == SSE and self._profile.terminal_pattern)
            else None
        )

    def __call__(self, chunk: bytes) -> bytes | list[bytes]:
        try:
            decoded = self.decompressor(chunk)
        except Exception as error:  # a bug of ours, or corrupt upstream data: pass it on
            self.catch_up()
            self._break(error)
            return chunk
        if self._broken:
            if not self.enforce:
                return chunk
            # Broken between calls (reading released events later): what was kept goes now.
            return [piece for piece in (self._unsent(), decoded) if piece]
        if self.over_limit or self._kept + len(decoded) > self.max_body:
            return self._over_limit(chunk, decoded)
        self._kept += len(decoded)
        self.body.append(decoded)
        if not self.enforce:
            if self._defer is not None:
                if decoded:
                    self._read_later(decoded)
                elif not chunk:
                    self._end_unread = time.monotonic()  # read with the rest, later
            elif decoded or not chunk:
                # Only the empty chunk ends the body: a compressed chunk may decode to nothing yet.
                self.catch_up()
                self._observe(decoded)
            return chunk
        # A chunk of whole events none of which may decide the turn goes as its events would,
        # one by one, without being cut into them.
        if (
            self._verdict is None
            and self._may_go_unread(decoded)
            and cast(EventFramer, self._framer).takes_whole(decoded)
        ):
            self._release_unread(decoded)
            return [decoded]
        return self._enforce(decoded, end=not chunk)

    def _may_go_unread(self, data: bytes) -> bool:
        """Enforce mode, before the verdict: whether SSE events may go before they are read,
        told from their bytes (``may_decide``), with nothing held before them."""
        return self._deciding is not None and not (
            self._held or self._undecodable or may_decide(data, self._deciding)
        )

    def _release_unread(self, data: bytes) -> None:
        self._sent += len(data)
        self._read_later(data)

    def _read_later(self, data: bytes) -> None:
        self._unread.append(data)
        self._arrived.append(time.monotonic())
        self._fresh = True
        if not self._looking:
            self._looking, self._looks = True, 0
            assert self._defer is not None  # only given ``defer`` is anything left unread
            self._defer(self._look)

    def _look(self) -> None:
        """Given to ``defer``: read what waits once the stream has paused, that is once a look
        finds that nothing came since the look before, or at the ``MAX_LOOKS``-th look."""
        self._looks += 1
        if self._fresh and self._looks < MAX_LOOKS:
            self._fresh = False
            assert self._defer is not None
            self._defer(self._look)
            return
        self._looking = False
        self.catch_up()

    def _over_limit(self, chunk: bytes, decoded: bytes) -> bytes | list[bytes]:
        first = not self.over_limit
        self.over_limit, self.body, self._unread, self._arrived = True, [], [], []
        if not self.enforce:
            return chunk
        if self._verdict is not None:  # judged already: the rest goes as the verdict says
            return [decoded] if self._verdict and decoded else []
        self._verdict, self._held = False, []
        # Whatever was released stays released; what was held and what follows never goes.
        return (
            [
                blocked_event(
                    self.profile,
                    [Code.LIMIT_EXCEEDED.value],
                    self.framing,
                    opens_array=self._sent == 0,
                )
            ]
            if first
            else []
        )

    @property
    def broken(self) -> bool:
        """The pipeline failed and stopped reading: the report covers what came before."""
        return self._broken

    def catch_up(self) -> None:
        """Read what passed and was not read yet (given ``defer``); never raises."""
        try:
            self._read_unread()
        except Exception as error:  # into mitmproxy or the event loop: stop reading instead
            self._break(error)

    def _read_unread(self) -> None:
        if self.report is not None or self._broken:
            return
        if self._unread:
            chunks, arrived = self._unread, self._arrived
            self._unread, self._arrived = [], []
            # The chunks that came within SAME_MOMENT of the first of them (those of one network
            # read, in practice) are read in one pass, their events timed when the last came.
            first = 0
            for i, at in enumerate(arrived):
                if at - arrived[first] > SAME_MOMENT:
                    self._read(self._chunk_events(b"".join(chunks[first:i])), arrived[i - 1])
                    first = i
            self._read(self._chunk_events(b"".join(chunks[first:])), arrived[-1])
        if self._end_unread is not None:
            ended, self._end_unread = self._end_unread, None
            self._read(self._chunk_events(b""), ended)

    def close(self) -> Report:
        """The verdict; call once the flow has ended (cleanly or not)."""
        if self.report is None:
            self.catch_up()
            self.report = self.engine.close()
        return self.report

    def _observe(self, decoded: bytes) -> None:
        try:
            self._read(self._chunk_events(decoded))
        except Exception as error:  # never raise into mitmproxy
            self._break(error)

    def _enforce(self, decoded: bytes, *, end: bool) -> list[bytes]:
        blocks = self._framer.feed(decoded)
        out: list[bytes] = []
        try:
            for block in blocks:
                out += self._route(block)
            # The tail: what follows the last whole event once the body is over (a cut line or
            # element) or once a JSON array has closed (its closing bracket, which decides now).
            if end or self._array_closed:
                out += self._route(self._framer.rest(), tail=True)
            if end and self._verdict is None:
                out += self._decide()
        except Exception as error:  # release every byte not yet sent, unchanged
            self._break(error)
            out.append(self._unsent())
        # mitmproxy writes every piece of a list as a chunk of its own, an empty one too: on a
        # chunked response that is a second terminating chunk, which a kept-alive connection
        # then reads where the next response should start.
        return [piece for piece in out if piece]

    def _unsent(self) -> bytes:
        """Enforce mode, once broken: every byte received and not sent yet, held or cut."""
        unsent = b"".join(self.body)[self._sent :]
        self._sent, self._held = self._kept, []
        return unsent

    def _break(self, error: Exception) -> None:
        if not self._broken:
            self._broken = True
            self._on_failure(type(error).__name__)

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
        try:
            for event in events:
                read += 1
                if ends_stream is not None and ends_stream(event):
                    self.end_marker_seen = True
                for finding in feed(event):
                    self._on_finding(finding)
        finally:
            self.event_times += [since] * read

    def _chunk_events(self, data: bytes) -> Iterable[object]:
        """Each event a chunk completes (empty: the body's end): observing, and the events
        enforce mode released before reading them."""
        if self.framing == SSE:
            return self._sse_events(data)
        if self.framing == EVENTSTREAM:
            return self._messages(self._framer.feed(data) if data else [self._framer.rest()])
        if self.framing == JSON_ARRAY:
            texts = self._elements(self._framer.feed(data))
        else:
            texts = self._lines(self._framer.feed(data) if data else [self._framer.rest()])
        return map(event_value, texts)

    def _block_events(self, block: bytes, *, tail: bool) -> Iterable[object]:
        """Enforce mode: the event in a whole block (a tail holds none, but for JSON lines the
        last line may lack its newline, and a cut message is read to say so)."""
        if self.framing == SSE:
            return self._sse_events(block)
        if self.framing == EVENTSTREAM:
            return self._messages([block])
        if self.framing == JSON_ARRAY:
            texts = self._elements([] if tail else [block])
        else:
            texts = self._lines([block])
        return map(event_value, texts)

    def _messages(self, blocks: list[bytes]) -> Iterable[object]:
        from_message = self._profile.from_message
        assert from_message is not None, f"{self.profile} has no event-stream messages"
        return (message_event(block, from_message) for block in blocks if block)

    def _elements(self, blocks: list[bytes]) -> list[str | bytes]:
        texts: list[str | bytes] = [
            element_text(block, not self._element_seen and i == 0) for i, block in enumerate(blocks)
        ]
        self._element_seen = self._element_seen or bool(blocks)
        self.end_marker_seen = self._array_closed
        return texts

    def _lines(self, blocks: list[bytes]) -> list[str | bytes]:
        """The JSON text of each line, blank lines left out (they hold no event), and a byte
        order mark before the first line, as import reads the body."""
        if blocks and not self._element_seen:
            self._element_seen = True
            blocks = [blocks[0].removeprefix(b"\xef\xbb\xbf"), *blocks[1:]]
        return [line for block in blocks if (line := block.strip())]

    @property
    def _array_closed(self) -> bool:
        return self.framing == JSON_ARRAY and cast(ArrayFramer, self._framer).closed

    def _sse_events(self, data: bytes) -> Iterable[object]:
        if self._undecodable:
            return ()
        rest: str | None = None
        try:
            decoded = self._sse.feed(data) if data else self._sse.close()
        except SSEError as error:
            # Read as the recorded body is; of the events before the bad byte, those this read
            # completed were lost with the error.
            self._undecodable = True
            decoded, rest = split_at_bad_byte(b"".join(self.body), error.offset)
            decoded = decoded[self._sse_read :]
        self._sse_read += len(decoded)
        texts: list[str] = []
        for sse in decoded:
            if sse.data == _DONE:
                self.end_marker_seen = True
            else:
                texts.append(sse.data)
        if rest is not None:
            texts.append(rest)
        return map(self._sse_value, texts)

    def _route(self, block: bytes, *, tail: bool = False) -> list[bytes]:
        """Enforce mode: where one block goes now. A tail is held and goes out only on a pass,
        so an error event never lands after a cut line or element, or after a closed array."""
        if self._verdict is not None:
            self._sent += len(block) if self._verdict else 0
            return [block] if self._verdict else []
        if not tail and self._may_go_unread(block):
            self._release_unread(block)
            return [block]
        self._read_unread()  # the events before this one first
        ended_before = self.end_marker_seen
        events = list(self._block_events(block, tail=tail))
        self._read(events)
        # The block with the end marker is held too: a stream that ends without the terminal
        # evidence must not tell the client it ended well (openai-python hands on its calls at
        # [DONE]). An array's end marker is its closing bracket, a tail, held already.
        marks_end = self.end_marker_seen and not ended_before and self.framing != JSON_ARRAY
        if (
            tail
            or self._held
            or self._undecodable
            or marks_end
            or any(map(self._profile.carries_terminal, events))
        ):
            self._held.append(block)
            # ollama-python reads lines past the done line, boto3 messages past metadata: there
            # only the body's end decides.
            decides = self.end_marker_seen and self.framing not in (NDJSON, EVENTSTREAM)
            return self._decide() if decides else []
        self._sent += len(block)
        return [block]

    def _decide(self) -> list[bytes]:
        report = self.close()
        self._verdict = report.exit_code != 1
        held, self._held = self._held, []
        if self._verdict:
            self._sent += sum(map(len, held))
            return held
        return [
            blocked_event(
                self.profile, report.blocking_codes, self.framing, opens_array=self._sent == 0
            )
        ]
