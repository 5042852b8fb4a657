"""A turn ``callgate.guard`` cannot judge fails closed by default, and goes on unjudged, logged
and counted, with ``on_error="pass"``: the real openai and anthropic SDKs against ``callgate
serve``, the engine made to fail on the third event it reads or at its verdict (a fault no real
part produces on demand), through ``guard`` and a ``guarded`` client, sync and async, in one
interpreter (``tests/apps/guard_faults_app.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from typing import Any

import pytest

from callgate.cli.serve import FakeProvider, collect
from tests.conftest import CONFORMANCE, ROOT
from tests.proxy_harness import APPS_PYTHON, app_results
from tests.test_guard_request import sdk_tools

pytestmark = [
    pytest.mark.sdk,
    pytest.mark.xdist_group("guard-faults"),
    pytest.mark.skipif(not APPS_PYTHON.exists(), reason="run `make test` to create .venv-apps"),
]

APP = ROOT / "tests" / "apps" / "guard_faults_app.py"
OPENAI = "openai/valid_parallel_interleaved"
ANTHROPIC = "anthropic/valid_text_then_two_tools"
CLIENTS = {"openai": OPENAI, "openai-guarded": OPENAI, "anthropic": ANTHROPIC}
CASES = {
    f"{client}-{fault}-{on_error}": (client, fault, on_error)
    for client in CLIENTS
    for fault in ("read", "verdict")
    for on_error in ("block", "pass")
}


@pytest.fixture(scope="module")
def results() -> Iterator[dict[str, Any]]:
    cases = [
        {
            "id": case_id,
            "client": client,
            "fixture": CLIENTS[client],
            "tools": sdk_tools(CLIENTS[client]),
            "fault": fault,
            "on_error": on_error,
        }
        for case_id, (client, fault, on_error) in CASES.items()
    ]
    with closing(FakeProvider(collect([CONFORMANCE])).start()) as serve:
        yield app_results(APP, serve.url, cases)


UNJUDGED = "callgate could not judge this turn (RuntimeError: the engine failed), so it may not run"
#: What the app sees of each turn whole: the ``finish_reason`` of each openai chunk (the last
#: one, "usage", has no choice), the type of each anthropic event.
WHOLE = {
    OPENAI: ["None"] * 6 + ["tool_calls", "usage"],
    ANTHROPIC: ["message_start"]
    + ["content_block_start", "content_block_delta", "content_block_stop"] * 2
    + ["content_block_start", "content_block_delta", "content_block_delta", "content_block_stop"]
    + ["message_delta", "message_stop"],
}
#: What the app sees of a turn failed closed: the two items before the third event (the fault
#: holds what follows), or every item before the terminal evidence (the verdict's fault).
BEFORE_END = {OPENAI: 6, ANTHROPIC: 11}


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_a_fault_of_callgates_own_fails_the_turn_closed_unless_on_error_passes_it(
    results: dict[str, Any], case_id: str
) -> None:
    client, fault, on_error = CASES[case_id]
    fixture = CLIENTS[client]
    profile = fixture.partition("/")[0]
    unjudged = ["Unjudged", UNJUDGED]
    if on_error == "block":
        shown = 2 if fault == "read" else BEFORE_END[fixture]
        expected = {
            "seen": WHOLE[fixture][:shown],
            "raised": unjudged,
            "calls": unjudged,
            "counted": [],
            "logged": [],
        }
    else:
        expected = {
            "seen": WHOLE[fixture],
            "raised": None,
            "calls": unjudged,  # the turn went on; callgate has no judged calls to give
            "counted": [[profile, "RuntimeError"]],
            "logged": [
                f"callgate: an unjudged {profile} turn went on (on_error='pass') after "
                "RuntimeError: the engine failed"
            ],
        }
    for mode in ("sync", "async"):
        assert results[case_id][mode] == expected, mode
