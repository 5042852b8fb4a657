"""Tapes of WebSocket sessions: the real openai SDK's Realtime client (``tests/apps/
realtime_app.py``) records a session of two tool turns, the second cancelled mid-arguments,
through a tape from ``callgate serve``, then replays it with no upstream, sync and async,
guarded and not; each run is asserted on its own against the same app talking to ``serve``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from callgate.cli.serve import FakeProvider, collect
from callgate.cli.tape import RecordMode, store
from callgate.cli.tape.server import TapeServer
from callgate.cli.tape.session import Tape
from tests.conftest import CONFORMANCE, load
from tests.proxy_harness import APPS_PYTHON, batch_results
from tests.test_realtime_sdk import APP, REALTIME, TWO_TURNS

pytestmark = [pytest.mark.sdk, pytest.mark.xdist_group("tape-sessions")]

CODES = ["invalid_arguments_json", "wrong_terminal_reason"]
TOOLS = load(CONFORMANCE / f"{TWO_TURNS}.json")["request"]["tools"]
#: What the app says, and its key (``realtime_app.py``): no tape file may hold them.
CANARIES = (
    "canary-prompt-5d1e",
    "canary-instructions-8b2f",
    "sk-canary-key-3c9a7e",
)


def cases(host: str, root: str | None, guards: tuple[str, ...] = ("none",)) -> list[Any]:
    made = []
    for mode in ("sync", "async"):
        for guard in guards:
            made.append(
                {
                    "id": f"{mode}-{guard}",
                    "host": host,
                    "root": root,
                    "api": "realtime",
                    "fixture": TWO_TURNS,
                    "mode": mode,
                    "guard": guard,
                    "mutate": None,
                    "turns": 2,
                    "abort_after": None,
                    "read_tools": False,
                    "tools": TOOLS,
                }
            )
    return made


def outcome(found: dict[str, Any]) -> tuple[Any, ...]:
    """What the app ran and was refused, and the events it read in order: their types (a tape
    keeps each response's events with their ids redacted, and nothing before the first
    response, such as ``session.created``)."""
    assert "crashed" not in found, found.get("crashed")
    return (
        found["ran"],
        [blocked["codes"] for blocked in found["blocked"]],
        [e["type"] for e in found["events"] if e["type"] != "session.created"],
    )


def test_a_realtime_session_records_to_a_tape_and_replays_from_it(tmp_path: Path) -> None:
    if not APPS_PYTHON.exists():
        pytest.fail("the apps environment is not built: run make test")
    folder = tmp_path / "tape"
    served = collect([CONFORMANCE / REALTIME])
    provider = FakeProvider({f"{REALTIME}/{name}": doc for name, doc in served.items()}).start()
    host = provider.url.removeprefix("http://")
    try:
        guards = ("none", "connection")
        direct = batch_results(APP, cases(host, None, guards))
        tape = Tape.open(folder, RecordMode.ALL, "test_session", allow=CODES)
        upstream = {"openai": f"{provider.url}/f/{TWO_TURNS}"}
        server = TapeServer(tape, upstream).start()
        try:
            at = server.url.removeprefix("http://")
            recorded = batch_results(APP, cases(at, "openai", guards))
        finally:
            server.close()
        assert tape.problems() == []
    finally:
        provider.close()
    # Recording: what the app saw is what it saw from serve; two responses a session, sync and
    # async, guarded and not: eight entries on the tape, redacted.
    for run, found in recorded.items():
        assert found == direct[run], run
    entries = store.load(folder)
    assert [(e.number, dict(e.shape)) for e in entries] == [
        (
            number,
            {
                "route": "openai",
                "method": "WEBSOCKET",
                "path": "/v1/realtime",
                "model": "gpt-realtime",
                "tools": ["get_weather", "book_flight"],
                "messages_by_role": {"system": 1},
            },
        )
        for number in range(1, 9)
    ]
    assert [e.report.blocking_codes for e in entries if e.report] == [[], CODES] * 4
    for path in folder.iterdir():
        text = path.read_text()
        for canary in CANARIES:
            assert canary not in text, (path.name, canary)
    # Replay, no upstream: sync and async, guarded and not, as from serve.
    tape = Tape.open(folder, RecordMode.NONE, "test_session", allow=CODES, allow_unused=True)
    server = TapeServer(tape, {"openai": "http://127.0.0.1:9"}).start()
    try:
        replayed = batch_results(APP, cases(server.url.removeprefix("http://"), "openai", guards))
    finally:
        server.close()
    for run, found in replayed.items():
        assert outcome(found) == outcome(direct[run]), run
    assert tape.problems() == []
    assert outcome(direct["sync-connection"])[:2] == (
        [["function_call", "get_weather", '{"city":"Paris","unit":"c"}']],
        [CODES],
    )
