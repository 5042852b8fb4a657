"""callgate's guardrail inside the real LiteLLM proxy (.venv-gateway), registered by its YAML,
in front of ``callgate serve``'s fake provider, with the real openai and anthropic SDKs as the
apps behind it: on Chat Completions, ``/v1/messages`` and ``/v1/responses``, every fault of a
passing turn makes the app's SDK raise before the turn's end reaches it, and every passing turn
and harmless variation arrives with its calls unchanged. Ollama's parallel calls, which LiteLLM's
converter gives one index, are blocked. The proxy starts once for the module (it takes seconds):
every case is a model group of its one config, served its own fixture.

The verdicts go to an OTLP receiver on loopback: the gateway's process exports them with the
real OpenTelemetry SDK (``tests/gateway/run_litellm.py``).
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import tomllib
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from callgate import NotApplicable, check, mutate, mutations
from callgate.cli.loopback import free_port
from callgate.cli.serve import FakeProvider, collect
from tests.conftest import CONFORMANCE, GATEWAY_PYTHON, ROOT, load

if TYPE_CHECKING:  # opentelemetry-proto: imported when the gateway starts, not at collection
    from tests.otlp import Receiver

pytestmark = [pytest.mark.gateway, pytest.mark.xdist_group("gateway")]

RUN_LITELLM = ROOT / "tests" / "gateway" / "run_litellm.py"
CLIENTS = ROOT / "tests" / "gateway" / "clients.py"
GUARDRAIL = "callgate.integrations.litellm.CallgateGuardrail"

#: The passing turn each endpoint's faults are made from.
SOURCES = {
    "chat": "openai/valid_parallel_interleaved",
    "messages": "anthropic/valid_text_then_two_tools",
    "responses": "openai-responses/valid_parallel_calls",
}
PROFILE_OF = {"chat": "openai", "messages": "anthropic", "responses": "openai-responses"}
#: Words that must never leave the gateway's process in telemetry: in every prompt, and in the
#: arguments of every served call that names the city.
PROMPT_CANARY = "prompt-canary-5e1d"
ARGUMENT_CANARY = "Oslo-argument-canary-91c2"

#: What LiteLLM 1.110.2's stream wrapper does to some turns before any guardrail sees them: it
#: keeps one ``finish_reason`` per stream (``received_finish_reason``), so a repeated
#: ``finish_reason`` chunk reaches clients once (the fault is gone: the turn is the source's), and
#: a turn of two choices reaches them with one choice unended (callgate blocks it).
REPAIRED_BY_LITELLM = {"chat-fault-duplicate_terminal"}
BROKEN_BY_LITELLM = {"chat-pass-valid_two_choices": "missing_terminal"}


def load_served(path: Path) -> dict[str, Any]:
    """A fixture with the argument canary in place of the city its calls name."""
    envelope: dict[str, Any] = json.loads(path.read_text().replace("Oslo", ARGUMENT_CANARY))
    return envelope


@dataclass(frozen=True)
class Case:
    """One model group: a fixture served under ``served`` and the endpoint its app calls."""

    name: str
    endpoint: str
    served: str  # the fixture's name under the served folder
    envelope: dict[str, Any]
    #: The deployment's LiteLLM provider prefix.
    route: str = ""

    def tools(self) -> list[dict[str, Any]]:
        schemas = self.envelope["tool_schemas"]
        if self.endpoint == "messages":
            return [{"name": n, "input_schema": s} for n, s in schemas.items()]
        if self.endpoint == "responses":
            return [{"type": "function", "name": n, "parameters": s} for n, s in schemas.items()]
        return [
            {"type": "function", "function": {"name": n, "parameters": s}}
            for n, s in schemas.items()
        ]

    def deployment(self, serve: str) -> dict[str, Any]:
        base = f"{serve}/f/{self.served}"
        if self.route == "ollama_chat":
            return {"model": "ollama_chat/llama3.1", "api_base": base}
        if self.endpoint == "messages":
            return {"model": "anthropic/claude-sonnet-4-5", "api_base": base, "api_key": "sk-x"}
        return {"model": "openai/gpt-4o-mini", "api_base": f"{base}/v1", "api_key": "sk-x"}


def fault_cases() -> list[Case]:
    cases = []
    for endpoint, source in SOURCES.items():
        envelope = load_served(CONFORMANCE / f"{source}.json")
        for kind in mutations(blocking=True, profile=PROFILE_OF[endpoint]):
            try:
                variant = mutate(envelope, kind, source)
            except NotApplicable:
                continue
            served = f"faults/{endpoint}/{kind}"
            cases.append(Case(f"{endpoint}-fault-{kind}", endpoint, served, variant))
    return cases


def passing_cases() -> list[Case]:
    cases = []
    for endpoint, source in SOURCES.items():
        profile = PROFILE_OF[endpoint]
        for path in sorted((CONFORMANCE / profile).glob("valid_*.json")):
            envelope = load_served(path)
            if "provider" not in envelope:
                name = f"{profile}/{path.stem}"
                cases.append(Case(f"{endpoint}-pass-{path.stem}", endpoint, name, envelope))
        envelope = load_served(CONFORMANCE / f"{source}.json")
        for kind in mutations(blocking=False, profile=profile):
            try:
                variant = mutate(envelope, kind, source)
            except NotApplicable:
                continue
            served = f"benign/{endpoint}/{kind}"
            cases.append(Case(f"{endpoint}-benign-{kind}", endpoint, served, variant))
    return cases


OLLAMA = {
    name: Case(
        f"ollama-{name}",
        "chat",
        f"ollama/{name}",
        load(CONFORMANCE / "ollama" / f"{name}.json"),
        route="ollama_chat",
    )
    for name in ("valid_parallel_calls_two_lines", "valid_parallel_calls_one_line")
}
FAULTS, PASSING = fault_cases(), passing_cases()
ALL = [*FAULTS, *PASSING, *OLLAMA.values()]


def write_served(folder: Path) -> None:
    for case in ALL:
        path = folder / f"{case.served}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(case.envelope))


def write_config(path: Path, serve: str, key: str) -> None:
    config = {
        "model_list": [
            {"model_name": case.name, "litellm_params": case.deployment(serve)} for case in ALL
        ],
        "guardrails": [
            {
                "guardrail_name": "callgate",
                "litellm_params": {"guardrail": GUARDRAIL, "mode": "post_call", "default_on": True},
            }
        ],
        "general_settings": {"master_key": key},
    }
    path.write_text(yaml.safe_dump(config))


@dataclass
class Gateway:
    base: str
    key: str
    receiver: Receiver
    log: Path


def wait_alive(base: str, process: subprocess.Popen[bytes], log: Path) -> None:
    import time

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"litellm exited: {log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{base}/health/liveliness", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.25)
    raise AssertionError(f"litellm did not start: {log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    if not GATEWAY_PYTHON.exists():
        pytest.fail(f"{GATEWAY_PYTHON} is missing: `make test` builds it")
    from tests.otlp import start_receiver

    folder = tmp_path_factory.mktemp("gateway")
    write_served(folder / "served")
    provider = FakeProvider(collect([folder / "served"]), timing=0.002).start()
    server, receiver = start_receiver()
    key = f"sk-{secrets.token_hex(32)}"
    port = free_port()
    write_config(folder / "config.yaml", provider.url, key)
    env = {
        **os.environ,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.base,
        "PYTHONPATH": str(ROOT),
    }
    log = folder / "litellm.log"
    listen = ["--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(GATEWAY_PYTHON), str(RUN_LITELLM), "--config", "config.yaml", *listen],
            cwd=folder,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_alive(base, process, log)
        yield Gateway(base, key, receiver, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
        provider.close()
        server.shutdown()


def run_clients(gateway: Gateway, cases: list[Case]) -> dict[str, dict[str, Any]]:
    requests = [
        {
            "name": case.name,
            "endpoint": case.endpoint,
            "model": case.name,
            "tools": case.tools(),
            # a forced call may end with "stop": the guardrail reads the choice the app sent
            "tool_choice": (case.envelope.get("request") or {}).get("tool_choice"),
            "prompt": f"Weather in Paris? {PROMPT_CANARY}",
        }
        for case in cases
    ]
    done = subprocess.run(
        [str(GATEWAY_PYTHON), str(CLIENTS), gateway.base, gateway.key],
        input=json.dumps(requests),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = [json.loads(line) for line in done.stdout.splitlines()]
    return {result.pop("name"): result for result in results}


@pytest.fixture(scope="module")
def outcomes(gateway: Gateway) -> dict[str, dict[str, Any]]:
    found = run_clients(gateway, ALL)
    if os.environ.get("CALLGATE_GATEWAY_DUMP"):
        Path(os.environ["CALLGATE_GATEWAY_DUMP"]).write_text(json.dumps(found, indent=1))
    return found


#: The SDK exception each endpoint's app gets for a blocked turn, by where the block fell:
#: after the first item (LiteLLM's SSE error frame) or before it (an HTTP 400).
RAISED = {
    "chat": {"openai.APIError", "openai.BadRequestError"},
    # The anthropic SDK's MessageStream parses each tool input as it grows, and raises on one
    # that no more text can make JSON, before callgate's error frame comes.
    "messages": {"anthropic.APIStatusError", "anthropic.BadRequestError", "builtins.ValueError"},
    # Plain iteration of a Responses stream yields LiteLLM's response.failed and raises
    # nothing; the SDK's stream() helper raises for want of response.completed.
    "responses": {"builtins.RuntimeError", "openai.BadRequestError"},
}


def calls_of(envelope: dict[str, Any]) -> list[tuple[str | None, Any]]:
    return [(call.name, call.parsed_arguments) for call in check(envelope).calls]


def arrived(outcome: dict[str, Any]) -> list[tuple[str | None, Any]]:
    return [(c["name"], json.loads(c["arguments"] or "{}")) for c in outcome["calls"]]


@pytest.mark.parametrize("case", FAULTS, ids=lambda c: c.name)
def test_a_fault_makes_the_app_s_sdk_raise_before_the_turn_ends(
    outcomes: dict[str, dict[str, Any]], case: Case
) -> None:
    outcome = outcomes[case.name]
    if case.name in REPAIRED_BY_LITELLM:
        source = load_served(CONFORMANCE / f"{SOURCES[case.endpoint]}.json")
        assert (outcome["raised"], arrived(outcome)) == (None, calls_of(source))
        return
    assert outcome["raised"] in RAISED[case.endpoint], outcome
    assert outcome["ended"] == []
    assert outcome["calls"] == [] or case.endpoint == "chat"
    if outcome["raised"] != "openai.BadRequestError":
        assert outcome.get("failed", True)


@pytest.mark.parametrize("case", PASSING, ids=lambda c: c.name)
def test_a_turn_that_may_run_arrives_with_its_calls_unchanged(
    outcomes: dict[str, dict[str, Any]], case: Case
) -> None:
    outcome = outcomes[case.name]
    if case.name in BROKEN_BY_LITELLM:
        blocked = f"callgate blocked this turn: {BROKEN_BY_LITELLM[case.name]}"
        assert (outcome["raised"], outcome["message"], outcome["ended"]) == (
            "openai.APIError",
            blocked,
            [],
        )
        return
    assert outcome["raised"] is None, outcome.get("message")
    assert arrived(outcome) == calls_of(case.envelope)


def test_the_served_calls_carry_the_argument_canary() -> None:
    for endpoint, source in SOURCES.items():
        arguments = [c.arguments for c in check(load_served(CONFORMANCE / f"{source}.json")).calls]
        assert ARGUMENT_CANARY in arguments[0], endpoint


def test_ollama_parallel_calls_litellm_gives_one_index_are_blocked(
    outcomes: dict[str, dict[str, Any]],
) -> None:
    merged = outcomes[OLLAMA["valid_parallel_calls_two_lines"].name]
    assert (merged["raised"], merged["ended"]) == ("openai.APIError", [])
    assert "identity_collision" in merged["message"] or "duplicate_start" in merged["message"]
    whole = outcomes[OLLAMA["valid_parallel_calls_one_line"].name]
    assert whole["raised"] is None
    assert arrived(whole) == calls_of(OLLAMA["valid_parallel_calls_one_line"].envelope)


# -- the verdicts, exported by the gateway's OpenTelemetry SDK ------------------------------------


def evaluations(receiver: Receiver, label: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(span attributes, event attributes) of each evaluation with ``label``."""
    return [
        (span.attributes, attributes)
        for span in receiver.spans()
        for name, attributes in span.events
        if name == "gen_ai.evaluation.result"
        and attributes["gen_ai.evaluation.score.label"] == label
    ]


def test_the_guardrail_s_verdicts_reach_the_traces(
    gateway: Gateway, outcomes: dict[str, dict[str, Any]]
) -> None:
    receiver = gateway.receiver
    blocked = receiver.wait_for(lambda: evaluations(receiver, "fail"))
    collision = next(
        (span, event)
        for span, event in blocked
        if event["gen_ai.evaluation.explanation"] == "identity_collision"
    )
    assert collision[1]["gen_ai.evaluation.name"] == "callgate.tool_call_admission"
    assert collision[1]["gen_ai.response.id"]
    mine = {k: v for k, v in collision[0].items() if k.startswith("callgate.")}
    assert {k: v for k, v in mine.items() if k != "callgate.calls"} == {
        "callgate.status": "fail",
        "callgate.codes": ["identity_collision"],
        "callgate.profile": "openai",
        "callgate.provider": "unknown",
    }
    passed = evaluations(receiver, "pass")
    assert passed and all(span["callgate.status"] == "pass" for span, _ in passed)
    # The gateway's web framework traces each request: the verdict goes on that span.
    spans = [s for s in receiver.spans() if s.attributes.get("callgate.status") == "pass"]
    assert {s.name for s in spans} == {
        "POST /v1/chat/completions",
        "POST /v1/messages",
        "POST /v1/responses",
    }
    two_calls = next(s for s in spans if s.attributes["callgate.calls"] == 2)
    calls = [attributes for name, attributes in two_calls.events if name == "callgate.call"]
    assert [sorted(c) for c in calls] == [
        ["callgate.call.slot", "gen_ai.tool.call.id", "gen_ai.tool.name"]
    ] * 2
    assert {c["gen_ai.tool.name"] for c in calls} == {"get_weather", "search"}


def test_the_guardrail_counts_turns_by_verdict(
    gateway: Gateway, outcomes: dict[str, dict[str, Any]]
) -> None:
    collisions = sum(
        1
        for name, outcome in outcomes.items()
        if name.startswith(("chat-", "ollama-"))
        and (outcome.get("message") or "") == "callgate blocked this turn: identity_collision"
    )
    series = {
        "callgate.status": "fail",
        "callgate.code": "identity_collision",
        "callgate.provider": "unknown",
        "callgate.profile": "openai",
    }
    found = gateway.receiver.wait_for(
        lambda: [n for a, n in gateway.receiver.counts("callgate.turns") if a == series]
    )
    assert collisions == 2 and found == [collisions]


def test_no_prompt_or_argument_leaves_in_telemetry(
    gateway: Gateway, outcomes: dict[str, dict[str, Any]]
) -> None:
    receiver = gateway.receiver
    receiver.wait_for(lambda: receiver.counts("callgate.turns"))
    exported = b"".join(receiver.raw)
    assert len(exported) > 1000
    assert PROMPT_CANARY.encode() not in exported
    assert ARGUMENT_CANARY.encode() not in exported
    assert b"Oslo" not in exported


def test_an_unknown_quirk_stops_the_guardrail_at_start() -> None:
    probe = (
        "from callgate.integrations.litellm import CallgateGuardrail\n"
        "try:\n"
        "    CallgateGuardrail(allow=['no_such_quirk'], guardrail_name='callgate',"
        " event_hook='post_call', default_on=True)\n"
        "except ValueError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run(
        [str(GATEWAY_PYTHON), "-c", probe],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        timeout=120,
        check=True,
    )
    assert done.stdout.startswith("callgate: unknown quirk 'no_such_quirk' under allow; known: ")


def litellm_range() -> SpecifierSet:
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (requirement,) = [
        Requirement(r) for r in extra["optional-dependencies"]["litellm"] if r.startswith("litellm")
    ]
    return requirement.specifier


def test_each_gateway_environment_runs_an_end_of_the_extras_litellm_range() -> None:
    """``.venv-gateway-lowest`` holds the range's lower bound, ``.venv-gateway`` a release of
    the range (the newest the index served when it was built): the ends the docs name."""
    lowest = [s.version for s in litellm_range() if s.operator == ">="]
    pinned = (ROOT / "tests" / "gateway" / "lowest.txt").read_text()
    assert lowest and f"\nlitellm=={lowest[0]}\n" in pinned
    installed = subprocess.run(
        [str(GATEWAY_PYTHON), "-c", "import importlib.metadata as m; print(m.version('litellm'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert installed in litellm_range()
    if GATEWAY_PYTHON.parents[1].name == ".venv-gateway-lowest":
        assert installed == lowest[0]
