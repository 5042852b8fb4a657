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

import re
from collections.abc import Mapping, Sequence
from enum import StrEnum
from urllib.parse import urlsplit

#: How a tape's other exchanges are named; fixture finders pass over them.
EXCHANGE_SUFFIX = ".exchange.json"
#: What a dummy API key holds: nothing that looks like a real one. SDKs refuse to start without
#: a key, so a replay without one gets this; a request that carries it is never sent upstream.
DUMMY_KEY = "callgate-tape-replay"
#: Connection-level headers (RFC 9110 7.6.1), and what is set anew for the next hop.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "accept-encoding",
    }
)


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


#: An API version at the end of a path (``/v1``, ``/v1beta``): every API a route serves puts it
#: first in its requests' paths (``/v1/chat/completions``, ``/v1beta/models/...``), so an upstream
#: URL that ends with it would have it twice (``http://host/v1`` + ``/v1/chat/completions``).
_API_VERSION = re.compile(r"/v\d+(?:alpha|beta)?\d*$")


def upstream_problem(url: str) -> str | None:
    """Why ``url`` cannot be a route's upstream, in one line; None when it can. A request is
    forwarded to the upstream's path followed by the request's whole path, so an upstream that
    ends with an API version is refused with the URL to give, not guessed at: a gateway may
    serve its API below any path."""
    path = urlsplit(url).path.rstrip("/")
    if (version := _API_VERSION.search(path)) is None:
        return None
    prefix = version.group()
    return (
        f"requests already start with {prefix} (they would go to {path}{prefix}/...); "
        f"give the URL without it: {url.rstrip('/')[: -len(prefix)]}"
    )


def tape_options(
    record_mode: str | None,
    upstream: Sequence[str],
    environ: Mapping[str, str],
    *,
    mode_option: str,
    upstream_option: str,
) -> tuple[RecordMode, dict[str, str]]:
    """The record mode (``record_mode``, else ``CALLGATE_RECORD_MODE``, else ``none``) and the
    upstreams by route name, as ``tape serve``/``run`` and the pytest plugin take them. Raises
    ``ValueError`` with the one line that names what is wrong and where it was given."""
    from callgate.reassemble.providers import SDK_ROUTES  # only when tapes are in use

    raw = record_mode or environ.get("CALLGATE_RECORD_MODE") or RecordMode.NONE.value
    if raw not in RecordMode.__members__.values():
        source = mode_option if record_mode else "CALLGATE_RECORD_MODE"
        raise ValueError(f"{source}: {raw!r} is not one of {', '.join(RecordMode)}")
    upstreams = parse_upstreams(upstream, upstream_option)
    routes = [route.name for route in SDK_ROUTES]
    if unknown := [name for name in upstreams if name not in routes]:
        raise ValueError(f"{upstream_option}: no route {unknown[0]!r} (one of {', '.join(routes)})")
    return RecordMode(raw), upstreams


def parse_upstreams(items: Sequence[str], option: str) -> dict[str, str]:
    """``NAME=URL`` items of ``option`` (``--callgate-upstream``, ``--upstream``) by route name.
    Raises ``ValueError`` with the line that says what is wrong with one."""
    upstreams = {}
    for item in items:
        name, equals, url = item.partition("=")
        if not (equals and name and url.startswith(("http://", "https://"))):
            raise ValueError(f"{option} takes NAME=http(s)://..., not {item!r}")
        if problem := upstream_problem(url):
            raise ValueError(f"{option} {item}: {problem}")
        upstreams[name] = url
    return upstreams
