"""What ``callgate_tape`` hands a test: its tape, served, with the SDKs pointed at it.

A test's tape lives in ``<the test file's folder>/tapes/<module>/<test name>/``; the marker's
``name`` replaces the test name. While the test runs, every route's base URL variables
(``OPENAI_BASE_URL`` and langchain's ``OPENAI_API_BASE``, ``ANTHROPIC_BASE_URL``,
``GOOGLE_GEMINI_BASE_URL``) point at the tape server, and in replay an SDK whose API key
variables are all unset gets a dummy key (SDKs refuse to start without one); all are restored
afterwards. Each test gets its own server on a free port, so ``pytest-xdist`` workers never
share one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import pytest

from callgate.cli.tape import DUMMY_KEY, RecordMode
from callgate.cli.tape.server import ROUTES, TapeServer
from callgate.cli.tape.session import Faulted, Redaction, Tape, TapeTurn
from callgate.cli.tape.store import Entry
from callgate.reassemble.errors import InputError
from callgate.reassemble.mutations import KINDS

#: The marker's keywords.
MARKER_OPTIONS = ("name", "providers", "redaction", "allow", "allow_unused", "mutate")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\[\]=+-]+")


class CallgateTape:
    """The ``callgate_tape`` fixture's value."""

    def __init__(self, tape: Tape, server: TapeServer) -> None:
        self._tape, self._server = tape, server
        #: Why ``mutate`` failed the test: then that is the test's one line, and the tape
        #: it did not mutate adds no other.
        self._unmutated: str | None = None

    @property
    def folder(self) -> Path:
        return self._tape.folder

    @property
    def mode(self) -> RecordMode:
        return self._tape.mode

    @property
    def recording(self) -> bool:
        """Whether requests may go upstream in this run."""
        return self._tape.recording

    @property
    def turns(self) -> list[TapeTurn]:
        """The streamed turns served so far, each with callgate's ``report`` (waiting for the
        ones being recorded to be written down)."""
        self._tape.settled()
        return list(self._tape.turns)

    @property
    def exchanges(self) -> list[Entry]:
        """Every exchange served so far, streamed or not, as tape entries."""
        self._tape.settled()
        return list(self._tape.exchanges)

    @property
    def faulted(self) -> Faulted | None:
        """After ``mutate``: whether the fault was served (``served``, at ``turn`` of
        ``turns``) and what the app asked after it (``requests_after``, of which
        ``refused_after`` the tape did not hold); None when the tape is not mutated."""
        self._tape.settled()
        return self._tape.faulted

    @property
    def url(self) -> str:
        return self._server.url

    def base_url(self, provider: str) -> str:
        """The base URL to give ``provider``'s SDK (``openai``, ``anthropic``, ``mistral``,
        ``gemini``); for SDKs that read no variable, such as ``Mistral(server_url=...)``."""
        if provider not in ROUTES:
            raise ValueError(f"no tape route {provider!r} (one of {', '.join(ROUTES)})")
        return self._server.base_url(provider)

    def problems(self) -> list[str]:
        return [] if self._unmutated else self._tape.problems()

    def mutate(self, kind: str) -> None:
        """Serve the tape's recorded streamed turns as their ``kind`` variants (one of
        ``callgate.mutations()``), so the test sees what its app does with that fault. A turn the
        kind cannot apply to is served as recorded. The test fails with one line when there is
        no recorded tape, or when the kind applies to none of its turns: a fault test that
        tests nothing must not pass. A variant's verdict is what the test asked for: it never
        fails the test. In every record mode a mutated tape is replayed, never recorded. The
        recorded script ends at the fault: a request after it that the tape does not hold gets
        the provider's error, and neither that nor the entries left unrequested after it fail
        the test (``faulted`` says what happened)."""
        if kind not in KINDS:
            raise ValueError(f"no mutation {kind!r} (one of {', '.join(KINDS)})")
        held = self._tape.held
        if why := self._tape.fault(kind):
            advice = (
                ""
                if held
                else ": record it first by running the test that makes it, without mutate, "
                "with --callgate-record-mode=once; or name a recorded tape with "
                "@pytest.mark.callgate_tape(name=...)"
            )
            self._fail(f"tape {self._tape.test}: {why}{advice}")

    def _fail(self, line: str) -> NoReturn:
        self._unmutated = line
        pytest.fail(line, pytrace=False)


@contextmanager
def open_tape(
    node: pytest.Item, mode: RecordMode, upstreams: Mapping[str, str], options: Mapping[str, Any]
) -> Iterator[CallgateTape]:
    """The tape of test ``node``, served until the block ends."""
    settings = _settings(node, options)
    folder = tape_folder(node, settings.pop("name"))
    providers, mutation = settings.pop("providers"), settings.pop("mutate")
    try:
        tape = Tape.open(folder, mode, node.nodeid, **settings)
    except InputError as error:
        pytest.fail(f"tape {node.nodeid}: {error}", pytrace=False)
    server = TapeServer(tape, dict(upstreams)).start()
    try:
        handed = CallgateTape(tape, server)
        if mutation:
            handed.mutate(mutation)
        with pytest.MonkeyPatch.context() as patch:
            for name in providers:
                route = ROUTES[name]
                for variable in route.base_url_variables:
                    patch.setenv(variable, server.base_url(name))
                keys = route.key_variables
                if keys and not tape.recording and not any(_is_set(v) for v in keys):
                    patch.setenv(keys[0], DUMMY_KEY)
            yield handed
    finally:
        server.close()


def tape_folder(node: pytest.Item, name: str | None) -> Path:
    """``<the test file's folder>/tapes/<module>/<test name or the marker's name>``; a name
    with a ``/`` is a path below ``tapes/`` (``test_agent/test_weather``: another module's
    tape). Raises ``pytest.UsageError`` for a name that would leave ``tapes/``."""
    tapes = node.path.parent / "tapes"
    if name is None or "/" not in name:
        return tapes / node.path.stem / _UNSAFE.sub("_", name or node.name)
    parts = [part for part in name.split("/") if part]
    if not parts or any(part in (".", "..") for part in parts):
        raise pytest.UsageError(
            f"{node.nodeid}: callgate_tape name {name!r}: a path below tapes/ such as "
            "'test_agent/test_weather', without '.' or '..'"
        )
    return tapes.joinpath(*(_UNSAFE.sub("_", part) for part in parts))


def _settings(node: pytest.Item, options: Mapping[str, Any]) -> dict[str, Any]:
    if unknown := sorted(set(options) - set(MARKER_OPTIONS)):
        raise pytest.UsageError(
            f"{node.nodeid}: callgate_tape takes {', '.join(MARKER_OPTIONS)}"
            f", not {', '.join(unknown)}"
        )
    providers = list(options.get("providers") or ROUTES)
    if unknown := [name for name in providers if name not in ROUTES]:
        raise pytest.UsageError(
            f"{node.nodeid}: callgate_tape providers: no route "
            f"{unknown[0]!r} (one of {', '.join(ROUTES)})"
        )
    if (kind := options.get("mutate")) is not None and kind not in KINDS:
        raise pytest.UsageError(
            f"{node.nodeid}: callgate_tape mutate: no mutation {kind!r} (one of {', '.join(KINDS)})"
        )
    redaction = options.get("redaction", Redaction.REPLAY)
    if redaction not in Redaction.ALL:
        raise pytest.UsageError(
            f"{node.nodeid}: callgate_tape redaction is replay or strict, not {redaction!r}"
        )
    return {
        "name": options.get("name"),
        "providers": providers,
        "redaction": redaction,
        "allow": tuple(options.get("allow", ())),
        "allow_unused": bool(options.get("allow_unused", False)),
        "mutate": options.get("mutate"),
    }


def _is_set(variable: str) -> bool:
    return bool(os.environ.get(variable))
