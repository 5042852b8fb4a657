"""What the tap let through before reading it, read once the stream pauses.

How this works: given ``defer`` (the addon's runs the callable it is given a few milliseconds
later), the tap passes a chunk on at once and keeps it here with the moment it came (``add``),
so the client does not wait for the reading and one pass reads many chunks. The first chunk
asks ``defer`` for a look; a look asks for another while chunks keep coming, and reads (the
tap's ``catch_up``) once it finds that nothing came since the look before, or at the
``MAX_LOOKS``-th look. ``take`` hands what waits over to be read: the chunks that came within
``SAME_MOMENT`` of the first of them at once (those of one network read, in practice, their
events timed when the last came), then the body's end, once it came (``end``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

#: Reading waits for the stream to pause for at most this many looks.
MAX_LOOKS = 50
#: Seconds within which chunks read later count as having come at once.
SAME_MOMENT = 0.001


class Backlog:
    """The chunks that went on unread; ``read`` is called at a look that finds the stream
    paused."""

    def __init__(
        self, defer: Callable[[Callable[[], None]], object], read: Callable[[], None]
    ) -> None:
        self._defer, self._read = defer, read
        self._chunks: list[bytes] = []
        self._arrived: list[float] = []  # when each chunk came (time.monotonic())
        self._ended: float | None = None  # when the body's end came, until it is taken
        #: Looks run since one was asked for, while one is waiting to be run.
        self._looks: int | None = None
        self._fresh = False  # a chunk came since the last look

    def add(self, data: bytes) -> None:
        """Keep a chunk that went on unread, and ask for a look unless one is waiting."""
        self._chunks.append(data)
        self._arrived.append(time.monotonic())
        self._fresh = True
        if self._looks is None:
            self._looks = 0
            self._defer(self._look)

    def end(self) -> None:
        """The body's end came: it is read with the rest, later."""
        self._ended = time.monotonic()

    def drop(self) -> None:
        """Forget the chunks: they will not be read."""
        self._chunks, self._arrived = [], []

    def take(self) -> Iterator[tuple[bytes, float]]:
        """What waits, handed over once: the chunks that came together joined, with when the
        last of them came; then ``b""`` and when the body's end came, if it did."""
        if self._chunks:
            chunks, arrived = self._chunks, self._arrived
            self._chunks, self._arrived = [], []
            first = 0
            for i, at in enumerate(arrived):
                if at - arrived[first] > SAME_MOMENT:
                    yield b"".join(chunks[first:i]), arrived[i - 1]
                    first = i
            yield b"".join(chunks[first:]), arrived[-1]
        if self._ended is not None:
            ended, self._ended = self._ended, None
            yield b"", ended

    def _look(self) -> None:
        """Given to ``defer``: read what waits once the stream has paused, that is once a look
        finds that nothing came since the look before, or at the ``MAX_LOOKS``-th look."""
        assert self._looks is not None  # a look runs only when asked for
        self._looks += 1
        if self._fresh and self._looks < MAX_LOOKS:
            self._fresh = False
            self._defer(self._look)
            return
        self._looks = None
        self._read()
