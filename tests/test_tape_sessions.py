"""Tapes of WebSocket sessions: the real openai SDK (``tests/apps/realtime_app.py``) records a
session of two tool turns through a tape from ``callgate serve``, the second turn blocking
(Realtime: cancelled mid-arguments; Responses: cut by ``max_output_tokens`` mid-call), then
replays it with no upstream, sync and async, guarded and not; each run is asserted on its own
against the same app talking to ``serve``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from callgate.cli.serve import FakeProvider, collect
from callgate.cli.tape import RecordMode, store
from callgate.cli.tape.server import TapeServer
from callgate.cli.tape.session import Tape
from tests.conftest import CONFORMANCE
from tests.proxy_harness import APPS_PYTHON, batch_results
from tests.test_realtime_sdk import (
    APP,
    REALTIME,
    RESPONSES,
    RESPONSES_TWO_TURNS,
    SCENARIOS,
    TWO_TURNS,
    session,
)

pytestmark = [pytest.mark.sdk, pytest.mark.xdist_group("tape-sessions")]

#: What the app says, and its key (``realtime_app.py``): no tape file may hold them.
CANARIES = ("canary-prompt-5d1e", "canary-instructions-8b2f", "sk-canary-key-3c9a7e")
#: Each API's session: where the tape records it from below serve's URL, the shape of its
#: responses, and the codes its second response blocks with.
REALTIME_SHAPE = {
    "route": "openai",
    "method": "WEBSOCKET",
    "path": "/v1/realtime",
    "model": "gpt-realtime",
    "tools": ["get_weather", "book_flight"],
    "messages_by_role": {"system": 1},
}
RESPONSES_SHAPE = {
    "route": "openai",
    "method": "WEBSOCKET",
    "path": "/v1/responses",
    "model": "gpt-5",
    "tools": ["get_weather", "search", "get_time"],
}
#: Each API's session: where the tape records it from below serve's URL, the shapes of its two
#: responses, and the codes its second response blocks with.
SESSIONS = {
    TWO_TURNS: (
        f"/f/{TWO_TURNS}",
        [REALTIME_SHAPE, REALTIME_SHAPE],  # the session's settings, both times
        ["invalid_arguments_json", "wrong_terminal_reason"],
    ),
    RESPONSES_TWO_TURNS: (
        f"/s/{RESPONSES_TWO_TURNS}",
        [  # each response.create: the prompt, then the first call's output
            {**RESPONSES_SHAPE, "messages_by_role": {"system": 1}},
            {**RESPONSES_SHAPE, "messages_by_role": {"function_call_output": 1}},
        ],
        ["wrong_terminal_reason"],
    ),
}
GUARDS = ("none", "connection")


def cases(fixture: str, host: str, root: str | None) -> list[Any]:
    """The app's sessions of ``fixture``, sync and async, guarded and not, at ``host`` (below
    ``root``, a tape's route, when given)."""
    made = []
    for mode in ("sync", "async"):
        for guard in GUARDS:
            case = session(fixture, mode=mode, guard=guard, turns=2).case(host)
            made.append({**case, "id": f"{fixture}-{mode}-{guard}", "root": root})
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


@pytest.fixture(scope="module")
def provider() -> Any:
    fixtures = {
        f"{folder.name}/{name}": document
        for folder in (CONFORMANCE / REALTIME, CONFORMANCE / RESPONSES)
        for name, document in collect([folder]).items()
    }
    served = FakeProvider(fixtures, scenarios=SCENARIOS).start()
    yield served
    served.close()


@pytest.mark.parametrize("fixture", list(SESSIONS))
def test_a_session_records_to_a_tape_and_replays_from_it(
    fixture: str, provider: FakeProvider, tmp_path: Path
) -> None:
    if not APPS_PYTHON.exists():
        pytest.fail("the apps environment is not built: run make test")
    below, shapes, codes = SESSIONS[fixture]
    direct = batch_results(APP, cases(fixture, provider.url.removeprefix("http://"), None))
    recorded, replayed = {}, {}
    for mode, into in ((RecordMode.ALL, recorded), (RecordMode.NONE, replayed)):
        tape = Tape.open(tmp_path, mode, "test_session", allow=codes)
        # Replay has no upstream: a port nothing listens on.
        upstream = provider.url + below if mode is RecordMode.ALL else "http://127.0.0.1:9"
        server = TapeServer(tape, {"openai": upstream}).start()
        try:
            into.update(batch_results(APP, cases(fixture, server.url[7:], "openai")))
        finally:
            server.close()
        assert tape.problems() == [], mode
    # Two responses a session, four sessions: eight entries, redacted.
    entries = store.load(tmp_path)
    assert [(e.number, dict(e.shape)) for e in entries] == list(enumerate(shapes * 4, 1))
    assert [e.report.blocking_codes for e in entries if e.report] == [[], codes] * 4
    for path in tmp_path.iterdir():
        for canary in CANARIES:
            assert canary not in path.read_text(), (path.name, canary)
    for run, found in direct.items():
        assert recorded[run] == found, run  # relayed as it came
        assert outcome(replayed[run]) == outcome(found), run
    assert [outcome(found)[1] for found in direct.values()] == [[], [codes]] * 2
