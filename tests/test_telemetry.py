"""Verdicts as OpenTelemetry, exported by the real SDK over OTLP/HTTP to a receiver on loopback
that decodes the protobuf: from ``callgate.guard`` in an app that configured OpenTelemetry, and
from ``callgate record --otel``. The event, the attributes and the counter are there for a
passing and a blocked turn (and one the guard passed on unjudged); no prompt or argument is in
any exported byte. Without OpenTelemetry configured nothing of it is imported (the LiteLLM
guardrail's verdicts: ``test_litellm_gateway``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from callgate import check
from callgate.cli.loopback import free_port, wait_listening
from tests.conftest import CONFORMANCE, ROOT
from tests.proxy_harness import fake_provider, post, request_body

PASSING, FAILING = "openai/valid_parallel_interleaved", "openai/reused_index_new_id"
ARGUMENT_CANARY = "Oslo-argument-canary-3b7e"
PROMPT_CANARY = "prompt-canary-d41c"


def canaried(name: str, folder: Path) -> Path:
    """Fixture ``name`` with the argument canary in place of the city its calls name."""
    text = (CONFORMANCE / f"{name}.json").read_text().replace("Oslo", ARGUMENT_CANARY)
    path = folder / f"{name.replace('/', '-')}.json"
    path.write_text(text)
    assert ARGUMENT_CANARY in check(json.loads(text)).calls[0].arguments  # type: ignore[operator]
    return path


def test_without_opentelemetry_configured_nothing_of_it_or_litellm_is_imported() -> None:
    probe = f"""
import sys, json, callgate
from callgate.cli.app import app
envelope = json.load(open({str(CONFORMANCE / PASSING) + ".json"!r}))
assert callgate.check(envelope).status.value == "pass"
list(callgate.guard(iter(envelope["chunks"]), envelope["tool_schemas"], profile="openai"))
import callgate.cli.record, callgate.proxy_addon.addon, callgate.integrations.gateway
try:
    app(["check", {str(CONFORMANCE / FAILING) + ".json"!r}])
except SystemExit as done:
    assert done.code == 1, done.code
print(sorted(m for m in sys.modules if m.partition(".")[0] in ("opentelemetry", "litellm")))
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert (done.returncode, done.stdout.splitlines()[-1]) == (0, "[]"), done.stderr


def evaluation(span: Any) -> dict[str, Any]:
    return next(a for name, a in span.events if name == "gen_ai.evaluation.result")


def test_guard_s_verdicts_go_on_the_app_s_span_or_their_own(tmp_path: Path) -> None:
    from tests.otlp import start_receiver

    server, receiver = start_receiver()
    try:
        app = [str(ROOT / "tests" / "otel_app.py"), receiver.base]
        paths = [str(canaried(name, tmp_path)) for name in (PASSING, FAILING)]
        subprocess.run([sys.executable, *app, *paths], check=True, timeout=60)
    finally:
        server.shutdown()
    spans = {span.name: span for span in receiver.spans()}
    assert sorted(spans) == ["callgate.check", "chat gpt-4o-mini", "chat unjudged"]
    assert evaluation(spans["chat unjudged"]) == {
        "gen_ai.evaluation.name": "callgate.tool_call_admission",
        "gen_ai.evaluation.score.label": "unjudged",
        "gen_ai.evaluation.explanation": "TypeError",
    }
    assert spans["chat unjudged"].attributes == {
        "callgate.status": "unjudged",
        "callgate.profile": "openai",
    }
    passed, blocked = spans["chat gpt-4o-mini"], spans["callgate.check"]
    assert evaluation(passed) == {
        "gen_ai.evaluation.name": "callgate.tool_call_admission",
        "gen_ai.evaluation.score.label": "pass",
        "gen_ai.evaluation.explanation": "",
    }
    assert evaluation(blocked) == {
        "gen_ai.evaluation.name": "callgate.tool_call_admission",
        "gen_ai.evaluation.score.label": "fail",
        "gen_ai.evaluation.explanation": "identity_collision",
    }
    assert passed.attributes == {
        "callgate.status": "pass",
        "callgate.codes": [],
        "callgate.calls": 2,
        "callgate.profile": "openai",
        "callgate.provider": "unknown",
    }
    assert blocked.attributes["callgate.codes"] == ["identity_collision"]
    calls = [a for name, a in passed.events if name == "callgate.call"]
    expected = check(json.loads((CONFORMANCE / f"{PASSING}.json").read_text())).calls
    assert calls == [
        {"callgate.call.slot": c.slot, "gen_ai.tool.call.id": c.id, "gen_ai.tool.name": c.name}
        for c in expected
    ]
    counts = sorted(
        (a["callgate.status"], a["callgate.code"], n) for a, n in receiver.counts("callgate.turns")
    )
    assert counts == [
        ("fail", "identity_collision", 1),
        ("pass", "none", 1),
        ("unjudged", "TypeError", 1),
    ]
    assert ARGUMENT_CANARY.encode() not in b"".join(receiver.raw)


def record(
    upstream: str, home: Path, *options: str, **env: str
) -> tuple[subprocess.Popen[str], int]:
    port = free_port()
    where = ["--upstream", upstream, "--listen", f"127.0.0.1:{port}"]
    where += ["--output-dir", str(home / "fx")]
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "callgate"), "record", *where, *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "CALLGATE_HOME": str(home / "callgate"), "HOME": str(home), **env},
    )
    if not wait_listening(port, lambda: process.poll() is None):
        process.kill()
        raise AssertionError(f"record did not start: {process.communicate()[0]}")
    return process, port


@pytest.mark.proxy
def test_record_otel_exports_the_proxy_s_verdicts(tmp_path: Path) -> None:
    from tests.otlp import start_receiver

    server, receiver = start_receiver()
    upstream = fake_provider(timing=0.0)
    process, port = record(
        upstream.url,
        tmp_path,
        "--otel",
        "--provider",
        "openai",
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.base,
    )
    try:
        for name in (PASSING, FAILING):
            body = json.loads(request_body(name))
            body["messages"] = [{"role": "user", "content": PROMPT_CANARY}]
            post(
                f"http://127.0.0.1:{port}",
                f"/f/{name}/v1/chat/completions",
                json.dumps(body).encode(),
                {"authorization": "Bearer sk-test"},
            )
    finally:
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=30)
        upstream.close()
        server.shutdown()
    assert process.returncode == 0, output
    assert f"verdicts go over OTLP/HTTP to {receiver.base}" in output
    spans = list(receiver.spans())
    assert [s.name for s in spans] == ["callgate.check"] * 2
    assert [(evaluation(s)["gen_ai.evaluation.score.label"], s.attributes) for s in spans] == [
        (
            label,
            {
                "callgate.status": label,
                "callgate.codes": codes,
                "callgate.calls": calls,
                "callgate.profile": "openai",
                "callgate.provider": "openai",
            },
        )
        for label, codes, calls in (("pass", [], 2), ("fail", ["identity_collision"], 1))
    ]
    counts = sorted((a["callgate.status"], n) for a, n in receiver.counts("callgate.turns"))
    assert counts == [("fail", 1), ("pass", 1)]
    exported = b"".join(receiver.raw)
    assert PROMPT_CANARY.encode() not in exported and b"Oslo" not in exported


def test_record_otel_without_the_sdk_is_one_line_naming_what_to_install(tmp_path: Path) -> None:
    # The SDK is installed beside the tests: the interpreter is told it is not.
    probe = (
        "import sys; sys.modules['opentelemetry.sdk'] = None; "
        "from callgate.cli.app import main; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, "record", "--otel", "--upstream", "http://127.0.0.1:9"],
        capture_output=True,
        text=True,
        env={**os.environ, "CALLGATE_HOME": str(tmp_path), "HOME": str(tmp_path)},
        timeout=60,
    )
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        "callgate: --otel needs the OpenTelemetry SDK and its OTLP/HTTP exporter, which are "
        "not installed: pip install 'callgate[proxy,otel-export]'\n",
    )


def test_a_telemetry_fault_costs_the_turn_nothing(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A tracing library that fails when asked: no real SDK does on demand.
    class Failing:
        ProxyTracerProvider = type("ProxyTracerProvider", (), {})

        @staticmethod
        def get_tracer_provider() -> object:
            raise RuntimeError("exporter down")

    from callgate.integrations.otel import record_verdict

    monkeypatch.setitem(sys.modules, "opentelemetry.trace", Failing)
    report = check(json.loads((CONFORMANCE / f"{FAILING}.json").read_text()))
    record_verdict(report)
    assert [r.getMessage() for r in caplog.records] == [
        "callgate: the verdict was not exported: RuntimeError"
    ]
