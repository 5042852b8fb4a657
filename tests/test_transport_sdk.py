"""``callgate.transport()`` under the real openai and anthropic SDKs against ``callgate serve``:
every path an app or framework streams through (``create``, the ``.stream()`` helpers, the
client's own ``post`` as litellm calls it, ``with_raw_response``), sync and async, in one
interpreter (``tests/apps/transport_app.py``). A passing turn reaches the app as it does without
the transport, item for item; a failing one makes the SDK raise its own API error with
callgate's line before the turn's end; the transport tells each verdict."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from typing import Any

import pytest

from callgate import check
from callgate.cli.serve import FakeProvider, collect
from tests.conftest import CONFORMANCE, ROOT, load
from tests.proxy_harness import APPS_PYTHON, app_results
from tests.test_guard_request import sdk_tools

pytestmark = [
    pytest.mark.sdk,
    pytest.mark.xdist_group("transport-sdk"),
    pytest.mark.skipif(not APPS_PYTHON.exists(), reason="run `make test` to create .venv-apps"),
]

APP = ROOT / "tests" / "apps" / "transport_app.py"
#: sdk -> (a passing fixture, a failing one, the forms its app streams through)
SDKS = {
    "openai": (
        "openai/valid_parallel_interleaved",
        "openai/reused_index_new_id",
        ("create", "stream", "post", "raw"),
    ),
    "anthropic": (
        "anthropic/valid_text_then_two_tools",
        "anthropic/malformed_arguments",
        ("create", "stream", "post", "raw"),
    ),
    "openai-responses": (
        "openai-responses/valid_single_call",
        "openai-responses/malformed_arguments",
        ("create", "stream", "post", "raw"),
    ),
}
CASES = {
    f"{sdk}-{form}-{verdict}": (sdk, fixture, form)
    for sdk, (good, bad, forms) in SDKS.items()
    for form in forms
    for verdict, fixture in (("pass", good), ("fail", bad))
}


@pytest.fixture(scope="module")
def results() -> Iterator[dict[str, Any]]:
    cases = [
        {"id": case_id, "sdk": sdk, "fixture": fixture, "form": form, "tools": sdk_tools(fixture)}
        for case_id, (sdk, fixture, form) in CASES.items()
    ]
    with closing(FakeProvider(collect([CONFORMANCE])).start()) as serve:
        yield app_results(APP, serve.url, cases)


#: What each SDK raises when the transport ends a failing turn with the provider's error event.
RAISED = {
    "openai": ["APIError", "callgate blocked this turn: identity_collision"],
    "openai-responses": ["APIError", "callgate blocked this turn: invalid_arguments_json"],
    "anthropic": [
        "APIStatusError",
        "{'type': 'error', 'error': {'type': 'callgate_blocked', "
        "'message': 'callgate blocked this turn: invalid_arguments_json'}}",
    ],
}


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_every_path_an_sdk_streams_through_is_gated_by_the_transport(
    results: dict[str, Any], case_id: str
) -> None:
    sdk, fixture, form = CASES[case_id]
    report = check(load(CONFORMANCE / f"{fixture}.json"))
    verdict = [[report.status.value, report.blocking_codes]]
    if sdk == "anthropic" and form == "stream" and not report.executable:
        # The helper stops reading when it raises; the transport judges what came, and does
        # not read on past a client that left (a stream may never end).
        verdict = [["fail", ["missing_terminal"]]]
    for mode in ("sync", "async"):
        got = results[case_id][mode]
        assert got["verdicts"] == verdict, mode
        if report.executable:  # item for item what the app sees without the transport
            assert (got["raised"], got["same"], got["items"] > 0) == (None, True, True), mode
        elif sdk == "anthropic" and form == "stream":
            # anthropic's MessageStream refuses the broken input itself, before the error event
            assert got["raised"][0] == "ValueError", mode
        else:
            assert got["raised"] == RAISED[sdk], mode
