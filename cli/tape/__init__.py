"""Tapes: an app's provider traffic recorded once and replayed to the app in its own tests.

``callgate_tape`` (the pytest fixture, ``callgate.cli.pytest_plugin``) opens a ``Tape``
(``session``) on one test's folder and serves it on loopback (``server``); each provider SDK is
pointed there by its base URL variable (``callgate.reassemble.providers.SDK_ROUTES``). Requests
are matched in order on their shape (``shape``); the folder's files are read and written by
``store``. Streamed turns a profile reads are stored as ordinary envelopes; every other exchange
as a record (``callgate.redact.record``) in a file named ``NNN.exchange.json``, which ``callgate
replay`` and ``--callgate`` pass over.

This module stays light: the pytest plugin imports it in every run.
"""

from __future__ import annotations

from enum import StrEnum

#: How a tape's other exchanges are named; fixture finders pass over them.
EXCHANGE_SUFFIX = ".exchange.json"


class RecordMode(StrEnum):
    """VCR's record modes."""

    #: Replay only; a request the tape does not hold fails the test. Never a network connection.
    NONE = "none"
    #: Record when the test has no tape yet, else replay as ``none``.
    ONCE = "once"
    #: Replay what matches, in order; record (and append) what does not.
    NEW_EPISODES = "new_episodes"
    #: Record everything anew.
    ALL = "all"
