"""``callgate.guarded`` through the SDK's response views (``with_raw_response``,
``with_streaming_response``), as frameworks use them (openai-agents streams the Responses API
through ``responses.with_streaming_response.create``), with the real openai and anthropic SDKs
against ``callgate serve``: the stream ``parse()`` gives is guarded, so a fault raises
```Blocked`` and a passing turn reaches the app as the unguarded view gives it. The app is
``tests/apps/guard_views_app.py``, one interpreter for every case; each is asserted on its own."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from callgate import check, mutate
from callgate.cli.serve import FakeProvider, collect
from tests.conftest import CONFORMANCE, ROOT, load
from tests.proxy_harness import APPS_PYTHON

pytestmark = [pytest.mark.sdk, pytest.mark.xdist_group("guard-views-batch")]

APP = ROOT / "tests" / "apps" / "guard_views_app.py"
#: A passing turn of each profile with two calls, and the fault made of it with its code.
TURNS = {
    "openai": "openai/valid_parallel_interleaved",
    "openai-responses": "openai-responses/valid_parallel_calls",
    "anthropic": "anthropic/valid_text_then_two_tools",
}
FAULTS = ("truncate", "reuse_slot")
VIEWS = ("with_raw_response", "with_streaming_response")
MODES = ("sync", "async")


def wheres(profile: str) -> tuple[str, ...]:
    return ("resource", "client", "chat") if profile == "openai" else ("resource", "client")


CASES = [
    {"profile": profile, "kind": kind, "view": view, "where": where, "mode": mode}
    for profile in TURNS
    for kind in (None, *FAULTS)
    for view in VIEWS
    for where in wheres(profile)
    for mode in MODES
]


def case_id(case: dict[str, Any]) -> str:
    parts = [case["profile"], case["kind"] or "as_is", case["view"], case["where"], case["mode"]]
    return "-".join(parts)


@pytest.fixture(scope="module")
def results() -> Iterator[dict[str, Any]]:
    """Every case, run once by one interpreter of the app against ``callgate serve``."""
    server = FakeProvider(collect([CONFORMANCE])).start()
    batch = [
        case
        | {
            "id": case_id(case),
            "fixture": TURNS[case["profile"]],
            "tool_schemas": load(CONFORMANCE / f"{TURNS[case['profile']]}.json")["tool_schemas"],
            "base": server.url,
        }
        for case in CASES
    ]
    try:
        done = subprocess.run(
            [str(APPS_PYTHON), str(APP)],
            input=json.dumps(batch),
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            timeout=300,
            check=False,
        )
    finally:
        server.close()
    assert done.returncode == 0, done.stderr
    yield json.loads(done.stdout)


def checked(case: dict[str, Any]) -> Any:
    """The engine's report on the turn the case serves."""
    fixture = TURNS[case["profile"]]
    document = load(CONFORMANCE / f"{fixture}.json")
    return check(mutate(document, case["kind"], fixture) if case["kind"] else document)


def result_of(results: dict[str, Any], case: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = results[case_id(case)]
    assert "crash" not in found, found.get("crash")
    return found


@pytest.mark.parametrize("case", [c for c in CASES if c["kind"]], ids=case_id)
def test_a_fault_streamed_through_a_response_view_raises_blocked(
    results: dict[str, Any], case: dict[str, Any]
) -> None:
    """Unguarded, the view hands the app the whole faulty turn; guarded, ``Blocked`` names the
    fault's code instead of the turn's end, after the items before it, unchanged."""
    found = result_of(results, case)
    guarded, unguarded = found["guarded"], found["unguarded"]
    assert "blocked" not in unguarded
    assert guarded["blocked"] == checked(case).blocking_codes
    held = len(unguarded["items"]) - len(guarded["items"])
    assert held >= 1 and guarded["items"] == unguarded["items"][: len(guarded["items"])]


@pytest.mark.parametrize("case", [c for c in CASES if not c["kind"]], ids=case_id)
def test_a_passing_turn_streamed_through_a_response_view_is_the_views_own(
    results: dict[str, Any], case: dict[str, Any]
) -> None:
    found = result_of(results, case)
    guarded, unguarded = found["guarded"], found["unguarded"]
    assert guarded["items"] == unguarded["items"] and guarded["items"]
    calls = [[call.name, call.parsed_arguments] for call in checked(case).calls]
    assert guarded["calls"] == calls and len(calls) == 2
