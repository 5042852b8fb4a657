"""A turn the gateway cannot judge fails closed by default, and goes on unjudged (counted) with
``on_error: pass``: the LiteLLM guardrail's hook in the gateway environment, with a fault
injected in each place callgate can fail (``tests/gateway/guardrail_faults.py``); and the same
rule in ``GatewayTurn``, without a gateway."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import pytest

from callgate.integrations import gateway
from callgate.integrations.gateway import GatewayTurn
from callgate.reassemble.engine import Reassembler
from callgate.reassemble.errors import UsageError
from callgate.reassemble.gate import Unjudged
from tests.conftest import CONFORMANCE, GATEWAY_PYTHON, ROOT, load

SOURCE = load(CONFORMANCE / "openai" / "valid_parallel_interleaved.json")
CHUNKS: list[Any] = SOURCE["chunks"]
TOOLS = [
    {"type": "function", "function": {"name": name, "parameters": schema}}
    for name, schema in SOURCE["tool_schemas"].items()
]
SCRIPT = ROOT / "tests" / "gateway" / "guardrail_faults.py"


def test_an_item_the_gateway_cannot_read_fails_the_turn_unless_on_error_passes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counted: list[tuple[Any, ...]] = []
    monkeypatch.setattr(gateway, "record_unjudged", lambda *args: counted.append(args))
    odd = object()
    for on_error in ("block", "pass"):
        turn = GatewayTurn("openai", {"tools": TOOLS}, on_error=on_error)
        sent = [out for chunk in CHUNKS[:3] for out in turn.take(chunk)]
        with pytest.raises(TypeError) as raised:
            turn.take(odd)
        if on_error == "block":
            with pytest.raises(Unjudged, match=r"^callgate could not judge this turn \(TypeError"):
                turn.failed(raised.value, odd)
            assert counted == []
        else:
            assert turn.failed(raised.value, odd) == [odd]
            assert sent == CHUNKS[:3] and counted == [("openai", "TypeError", "chatcmpl-fixture")]


def test_a_failure_of_callgate_at_the_verdict_fails_the_turn_unless_on_error_passes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(gateway, "record_unjudged", lambda *args: None)

    def broken(self: Reassembler) -> Any:
        raise RuntimeError("the engine failed")

    monkeypatch.setattr(Reassembler, "close", broken)
    for on_error in ("block", "pass"):
        turn = GatewayTurn("openai", {"tools": TOOLS}, on_error=on_error)
        sent = [out for chunk in CHUNKS for out in turn.take(chunk)]
        with pytest.raises(RuntimeError) as raised:
            turn.finish()
        if on_error == "block":
            with pytest.raises(Unjudged):
                turn.failed(raised.value)
        else:  # the held end goes on, unjudged: the client loses nothing
            assert sent + turn.failed(raised.value) == CHUNKS


def test_an_on_error_callgate_does_not_know_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"^on_error 'maybe' is not one of block, pass$"):
        GatewayTurn("openai", {"tools": TOOLS}, on_error="maybe")


@pytest.mark.gateway
@pytest.mark.xdist_group("gateway-faults")
@pytest.mark.skipif(
    not GATEWAY_PYTHON.exists(), reason=f"run `make test` to build {GATEWAY_PYTHON.parents[1].name}"
)
def test_the_litellm_guardrail_fails_closed_on_each_fault_and_passes_it_counted_when_asked() -> (
    None
):
    done = subprocess.run(
        [str(GATEWAY_PYTHON), str(SCRIPT)],
        env={**os.environ, "APP_EVENTS": json.dumps(CHUNKS), "APP_TOOLS": json.dumps(TOOLS)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = {(r["fault"], r["on_error"]): r for r in map(json.loads, done.stdout.splitlines())}
    unjudged = "callgate could not judge this turn ("
    blocked = {
        # the two chunks before the unreadable item went on, nothing after it
        "unreadable_item": (2, "TypeError: Reassembler.feed() takes one event as parsed from"),
        # every chunk went on but the held end (the finish chunk and the usage chunk)
        "engine_failure": (6, "RuntimeError: the engine failed), so it may not run"),
        # nothing went on: the request's tools cannot be read
        "unreadable_tools": (0, "UsageError: tools[0] (x): its schema is not a JSON object"),
    }
    for fault, (sent, line) in blocked.items():
        result = results[fault, "block"]
        assert (result["got"], result["counted"]) == (sent, []), fault
        assert result["raised"][0] == "CallgateUnjudged" and result["raised"][2] == 500, fault
        assert result["raised"][1].startswith(unjudged + line), (fault, result["raised"][1])
    for fault in blocked:
        result = results[fault, "pass"]
        assert ("raised" not in result, result["whole"]) == (True, True), fault
    assert [results[f, "pass"]["counted"] for f in blocked] == [
        ["TypeError"],
        ["RuntimeError"],
        ["UsageError"],
    ]
