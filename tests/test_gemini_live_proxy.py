"""Gemini Live sessions through mitmproxy with the callgate addon, on loopback: ``callgate
serve`` upstream, google-genai's Live client as the app (``tests/apps/gemini_live_app.py``, TLS
to the proxy, whose CA it is given). Each session reaches the app as the server sent it, its
parts paced by what the app sends, and is written as one redacted fixture whose verdict is the
recorded session's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from callgate.cli.serve import FakeProvider, collect
from tests.conftest import CONFORMANCE, ROOT, load
from tests.proxy_harness import APPS_PYTHON, Proxy, batch_results, fixtures_in

pytestmark = [pytest.mark.proxy, pytest.mark.xdist_group("gemini-live-proxy")]

LIVE = "gemini-live"
APP = ROOT / "tests" / "apps" / "gemini_live_app.py"
#: The sessions played: a call, two calls of which the caller's barge-in withdraws one, the
#: same call sent twice, a session the server closes with an error.
SESSIONS = ("valid_single_call", "withdrawn_call", "same_call_twice", "closed_with_error")


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeProvider]:
    fixtures = {f"{LIVE}/{name}": doc for name, doc in collect([CONFORMANCE / LIVE]).items()}
    provider = FakeProvider(fixtures).start()
    yield provider
    provider.close()


def canaries() -> list[str]:
    """What the app says and the key it sends."""
    return [
        line.split('"')[1]
        for line in APP.read_text().splitlines()
        if line.startswith(("CANARY_PROMPT =", "CANARY_INSTRUCTIONS =", "API_KEY ="))
    ]


def toolcalls(document: dict[str, Any]) -> list[list[Any]]:
    """Every call of the session's ``toolCall`` messages: what an app that runs each runs."""
    return [
        [call["name"], call.get("args", {})]
        for event in document["events"]
        for call in event.get("toolCall", {}).get("functionCalls", [])
    ]


def test_google_genai_live_sessions_pass_through_and_are_recorded_whole(
    upstream: FakeProvider, tmp_path: Path
) -> None:
    if not APPS_PYTHON.exists():
        pytest.fail("the apps environment is not built: run make test")
    out = tmp_path / "fixtures"
    documents = {name: load(CONFORMANCE / LIVE / f"{name}.json") for name in SESSIONS}
    with Proxy(upstream.url, out) as proxy:
        cases = [
            {
                "id": name,
                "base_url": f"https://127.0.0.1:{proxy.port}",
                "fixture": f"{LIVE}/{name}",
                "declarations": document["request"]["tools"][0]["functionDeclarations"],
            }
            for name, document in documents.items()
        ]
        ca = tmp_path / "confdir" / "mitmproxy-ca-cert.pem"
        results = batch_results(APP, cases, timeout=300, SSL_CERT_FILE=str(ca))
        written = fixtures_in(out, len(SESSIONS))
    for name, document in documents.items():
        found = results[name]
        assert "crashed" not in found, found.get("crashed")
        cancelled = [
            i for e in document["events"] for i in e.get("toolCallCancellation", {}).get("ids", [])
        ]
        # The app, unguarded, runs every call it was sent, the withdrawn one and the repeated
        # one too: what the verdicts below are for.
        assert (found["ran"], found["cancelled"]) == (toolcalls(document), cancelled), name
        assert (found["closed"] is not None) is (name == "closed_with_error"), name
    verdicts = sorted((f["expect"]["status"], f["expect"]["codes"]) for f in written)
    assert verdicts == sorted(
        (d["expect"]["status"], d["expect"]["codes"]) for d in documents.values()
    )
    for fixture in written:  # judged by the tools of the app's setup, closed as it closed
        assert sorted(fixture["tool_schemas"]) == ["end_call", "get_weather"]
        assert list(fixture["events"][-1]) == ["close"]
    text = json.dumps(written)
    for secret in canaries():
        assert secret not in text, secret
    assert "AAABAAIAAwAEAA==" not in text  # audio: its length and digest only
