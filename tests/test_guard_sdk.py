"""``callgate.guard`` and ``callgate.guarded`` with the real SDKs of the apps environment
(openai, anthropic, google-genai, cohere, boto3, litellm, ollama, mistralai), sync and async,
against ``callgate serve`` on loopback: a fault never reaches the app's tool runner, a turn that
may run reaches the app exactly as the SDK gives it, and leaving the loop early closes the HTTP
response. The app is ``tests/apps/guard_app.py``, one interpreter per SDK for all its turns;
each turn is asserted on its own."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from callgate import NotApplicable, check, mutate, mutations
from callgate.cli.serve import FakeProvider, collect
from callgate.reassemble.profiles import PROFILES
from tests.conftest import CONFORMANCE, ROOT, fixture_id, load
from tests.proxy_harness import APPS_PYTHON

#: One worker runs the module: each SDK's cases are one interpreter's batch, run once.
pytestmark = [pytest.mark.sdk, pytest.mark.xdist_group("guard-sdk-batch")]

APP = ROOT / "tests" / "apps" / "guard_app.py"
SDKS = {
    "openai": ("openai", "openai-responses"),
    "anthropic": ("anthropic",),
    "google-genai": ("gemini",),
    "cohere": ("cohere",),
    "boto3": ("bedrock-converse", "anthropic"),
    "litellm": ("openai",),
    "ollama": ("ollama",),
    "mistralai": ("mistral",),
}
#: The turn each kind is made from: the first of these (then any passing fixture) it applies to.
BASES = {
    "openai": ("valid_parallel_interleaved", "valid_two_choices"),
    "openai-responses": ("valid_parallel_calls", "valid_text_then_call"),
    "anthropic": ("valid_text_then_two_tools",),
    "gemini": ("valid_parallel_two_chunks",),
    "cohere": ("valid_parallel_calls",),
    "bedrock-converse": ("valid_parallel_calls",),
    "ollama": ("valid_parallel_calls_two_lines",),
    # Mistral's own whole calls first: the SDK's model refuses OpenAI-style fragments by itself.
    "mistral": ("native_parallel_calls", "valid_parallel_interleaved"),
}
#: A second turn each blocking kind is made from, too: mistralai's model refuses OpenAI-style
#: call fragments (no name), so the SDK gives up on this one mid-turn by itself.
ALSO_FROM = {"mistral": "mistral/valid_parallel_interleaved"}
#: The kind whose second turn is also served paced (``Servers.slow``): the SDK gives up while
#: the body still arrives, and only a body read to its end shows the turn's own end.
PACED_KIND = "wrong_terminal"
FORMS = ("create", "stream", "client-create", "client-stream")
#: How each SDK's stream is got: the others have no helper, and ``guarded`` takes openai and
#: anthropic clients only; boto3's call is ``converse_stream`` or
#: ``invoke_model_with_response_stream``, by the profile.
FORMS_OF = {
    "google-genai": ("create",),
    "cohere": ("create",),
    "boto3": ("invoke",),
    "litellm": ("completion",),
    "ollama": ("create",),
    "mistralai": ("create",),
}
#: boto3 has no async client.
MODES_OF = {"boto3": ("sync",)}
MODES = ("sync", "async")
#: A fixture long enough that the server is still sending when the app leaves after one item.
LEAVING = {
    "openai": "openai/valid_fragmented",
    "openai-responses": "openai-responses/valid_single_call",
    "anthropic": "anthropic/valid_fragmented",
    "gemini": "gemini/valid_thought_then_call",
    "cohere": "cohere/valid_text_then_tool",
    "bedrock-converse": "bedrock-converse/valid_parallel_calls",
    "ollama": "ollama/valid_text_then_tool",
    "mistral": "mistral/valid_fragmented",
}


#: Turns whose calls the SDK's own accumulation (its ``.stream()`` helper) gets wrong: openai's
#: joins an id and a name each fragment restates ("call_w1call_w1"); mistralai, which
#: accumulates nothing, hands each such fragment as a call of its own (its model refuses a
#: fragment without a name, so these are the fragmented turns it reads at all).
SDK_WRONG = {
    ("openai/repeated_identical_id_and_name", None),
    ("openai/valid_parallel_interleaved", "repeat_identity"),
    ("mistral/repeated_identical_id_and_name", None),
    ("mistral/valid_parallel_interleaved", "repeat_identity"),
}


@dataclass(frozen=True)
class Case:
    sdk: str
    profile: str
    fixture: str  # "profile/stem"
    kind: str | None
    mode: str
    form: str
    role: str  # "fault", "passing" or "leave"
    leave: str | None = None

    @property
    def id(self) -> str:
        paced = "paced" if self.role == "paced" else ""
        parts = [self.fixture, self.kind or "as_is", self.mode, self.form, self.leave or "", paced]
        return "-".join(part for part in parts if part)

    def document(self) -> dict[str, Any]:
        document = load(CONFORMANCE / f"{self.fixture}.json")
        return mutate(document, self.kind, self.fixture) if self.kind else document


def passing(profile: str) -> list[str]:
    return [
        path.stem
        for path in sorted((CONFORMANCE / profile).glob("*.json"))
        if check(load(path)).status.value == "pass"
    ]


def base_for(profile: str, kind: str) -> str | None:
    for stem in dict.fromkeys([*BASES[profile], *passing(profile)]):
        try:
            mutate(load(CONFORMANCE / profile / f"{stem}.json"), kind)
        except NotApplicable:
            continue
        return f"{profile}/{stem}"
    return None


def cases_of(sdk: str) -> list[Case]:
    cases = []
    every, modes = FORMS_OF.get(sdk, FORMS), MODES_OF.get(sdk, MODES)
    direct = every[:2]
    for profile in SDKS[sdk]:
        for kind in mutations(profile=profile):
            fixture = base_for(profile, kind)
            assert fixture is not None, f"{kind} applies to no {profile} fixture"
            role = "fault" if kind in mutations(blocking=True) else "passing"
            forms = every if role == "fault" else direct
            cases += [Case(sdk, profile, fixture, kind, m, f, role) for m in modes for f in forms]
            if role == "fault" and ALSO_FROM.get(profile, fixture) != fixture:
                also = ALSO_FROM[profile]
                cases += [Case(sdk, profile, also, kind, m, f, role) for m in modes for f in forms]
                if kind == PACED_KIND:  # and once more, its body arriving while the SDK gives up
                    cases += [Case(sdk, profile, also, kind, m, "create", "paced") for m in modes]
        for path in sorted((CONFORMANCE / profile).glob("*.json")):
            role = "fault" if check(load(path)).exit_code == 1 else "passing"
            fixture = fixture_id(path)
            cases += [Case(sdk, profile, fixture, None, m, f, role) for m in modes for f in direct]
        if (sdk, profile) not in {("boto3", "anthropic"), ("litellm", "openai")}:  # their SDKs' ids
            cases.append(Case(sdk, profile, LEAVING[profile], None, "sync", "misuse", "misuse"))
        cases += [
            Case(sdk, profile, LEAVING[profile], None, m, f, "leave", leave)
            for m in modes
            for f in direct
            for leave in ("break", "raise")
        ]
    return cases


CASES = {sdk: cases_of(sdk) for sdk in SDKS}


class Servers:
    """``callgate serve`` twice on loopback: at full speed, and pausing between events for the
    turns the app leaves early, telling how many clients went while it was still sending."""

    def __init__(self) -> None:
        fixtures = collect([CONFORMANCE])
        self.fast = FakeProvider(fixtures).start()
        self.slow = FakeProvider(fixtures, timing=0.05)
        self.gone = 0
        self._lock = threading.Lock()
        self.slow.server.handle_error = self._went  # type: ignore[method-assign]
        self.slow.start()

    def _went(self, request: object, client_address: object) -> None:
        with self._lock:
            self.gone += 1

    def close(self) -> None:
        self.fast.close()
        self.slow.close()


@pytest.fixture(scope="module")
def servers() -> Iterator[Servers]:
    running = Servers()
    yield running
    running.close()


_RESULTS: dict[str, dict[str, Any]] = {}


def results(sdk: str, servers: Servers) -> dict[str, Any]:
    """Every case of ``sdk``, run once by one interpreter of the app."""
    if sdk not in _RESULTS:
        batch = [
            {
                "id": case.id,
                "sdk": case.sdk,
                "profile": case.profile,
                "fixture": case.fixture,
                "kind": case.kind,
                "mode": case.mode,
                "form": case.form,
                "leave": case.leave,
                "compare": case.role == "passing",
                **turn_of(case.fixture),
                "base": servers.slow.url if case.role in ("leave", "paced") else servers.fast.url,
            }
            for case in CASES[sdk]
        ]
        done = subprocess.run(
            [str(APPS_PYTHON), str(APP)],
            input=json.dumps(batch),
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        _RESULTS[sdk] = json.loads(done.stdout)
    return _RESULTS[sdk]


def turn_of(fixture: str) -> dict[str, Any]:
    """What the app passes the SDK and the guard from the fixture: its tools, the request's
    ``tool_choice``, its provider (which names its quirks)."""
    document = load(CONFORMANCE / f"{fixture}.json")
    return {
        "tool_schemas": document.get("tool_schemas", {}),
        "tool_choice": (document.get("request") or {}).get("tool_choice"),
        "provider": document.get("provider"),
    }


def result_of(case: Case, servers: Servers) -> dict[str, Any]:
    found: dict[str, Any] = results(case.sdk, servers)[case.id]
    assert "crash" not in found, found.get("crash")
    return found


def of_role(role: str) -> list[Case]:
    return [case for cases in CASES.values() for case in cases if case.role == role]


def first_terminal(document: dict[str, Any]) -> int:
    profile = PROFILES[document["profile"]]
    events = document[profile.stream_key]
    return next((n for n, e in enumerate(events) if profile.carries_terminal(e)), len(events))


@pytest.mark.parametrize("case", of_role("fault") + of_role("paced"), ids=lambda case: case.id)
def test_a_fault_raises_blocked_with_its_code_and_no_tool_runs(
    case: Case, servers: Servers
) -> None:
    document, outcome = case.document(), result_of(case, servers)["guarded"]
    expected = check(as_the_sdk_reads(document, case.sdk))
    assert outcome.get("error") is None
    if expected.status.value == "invalid":  # no call left to gate: it ends as enforce mode ends
        assert (outcome["status"], outcome["calls"]) == ("invalid", [])
        return
    blocked = outcome["blocked"]
    assert blocked["codes"] == expected.blocking_codes
    assert blocked["line"] == f"callgate blocked this turn: {', '.join(expected.blocking_codes)}"
    assert blocked["error_family"] is False
    if case.fixture == ALSO_FROM.get(case.profile):  # the SDK gave up first, on a fragment
        assert blocked["cause"] == "ResponseValidationError"
    assert outcome["ran"] == []
    assert outcome["closed"] is True
    assert len(outcome["items"]) <= first_terminal(document) + helper_items(case, outcome)


def as_the_sdk_reads(document: dict[str, Any], sdk: str) -> dict[str, Any]:
    """The turn up to the event the SDK raises on, where it stops reading (and closes the
    response): an openai event with an ``error`` member, anthropic's ``error`` event, and a
    line ollama's models refuse (``ollama_refuses``). The turn as sent for an SDK whose body
    callgate reads to its end itself, whatever its model refuses (mistralai)."""
    if sdk in READS_THE_BODY:
        return document
    profile = PROFILES[document["profile"]]
    events = document[profile.stream_key]
    refuses = SDK_REFUSES.get(sdk, lambda event: False)
    raises = next(
        (
            n
            for n, event in enumerate(events)
            if (isinstance(event, dict) and (event.get("error") or event.get("type") == "error"))
            or refuses(event)
        ),
        None,
    )
    if raises is None:
        return document
    return {**document, profile.stream_key: events[: raises + 1]}


def ollama_refuses(event: object) -> bool:
    """A line ollama-python raises on: no JSON object (it asks it for ``error``), or a call its
    pydantic model refuses (no name, arguments that are no object)."""
    if not isinstance(event, dict):
        return True
    calls = (event.get("message") or {}).get("tool_calls") or []
    return any(
        "name" not in call.get("function", {})
        or not isinstance(call.get("function", {}).get("arguments"), dict)
        for call in calls
    )


SDK_REFUSES = {"ollama": ollama_refuses}
#: The SDKs whose HTTP response's body the guard reads itself, to its end.
READS_THE_BODY = {"mistralai"}


def helper_items(case: Case, outcome: dict[str, Any]) -> int:
    """A helper hands out events of its own besides one per wire event: those count too."""
    return len(outcome["items"]) if "stream" in case.form else 0


@pytest.mark.parametrize("case", of_role("passing"), ids=lambda case: case.id)
def test_a_turn_that_may_run_reaches_the_app_as_the_sdk_gives_it(
    case: Case, servers: Servers
) -> None:
    found = result_of(case, servers)
    outcome, plain = found["guarded"], found["unguarded"]
    expected = check(case.document())
    assert outcome.get("error") == plain.get("error")
    assert as_released(outcome["items"]) == as_released(plain["items"])
    assert outcome["closed"] is True  # however the turn ended, its response is closed
    if plain.get("error"):
        return  # the SDK fails on this turn by itself, and the guard hands its error on
    assert outcome["status"] == expected.status.value
    assert outcome["calls"] == [
        [c.id, c.name, c.arguments, c.parsed_arguments] for c in expected.calls
    ]
    if "sdk_calls" in outcome:
        assert outcome["sdk_calls"] == plain["sdk_calls"]
        right = (case.fixture, case.kind) not in SDK_WRONG
        assert (outcome["sdk_calls"] == sdk_view(case, expected.calls)) is right


def as_released(items: list[Any]) -> list[Any]:
    """The items, but for the snapshot of openai's ``chunk`` helper event: the helper's own
    accumulation, one object it goes on changing, which a held event shows as it is when the
    event is released (the same object the unguarded app would see at its next item)."""
    return [
        {key: value for key, value in item.items() if key != "snapshot"}
        if isinstance(item, dict) and item.get("type") == "chunk"
        else item
        for item in items
    ]


def sdk_view(case: Case, calls: Any) -> list[list[Any]]:
    """The calls as the SDK's own accumulation states them (anthropic keeps parsed input)."""
    if case.profile == "anthropic":
        return [[c.id, c.name, c.parsed_arguments] for c in calls]
    return [[c.id, c.name, c.arguments] for c in calls]


@pytest.mark.parametrize("case", of_role("leave"), ids=lambda case: case.id)
def test_leaving_the_loop_early_closes_the_response(case: Case, servers: Servers) -> None:
    outcome = result_of(case, servers)["guarded"]
    assert len(outcome["items"]) == 1
    assert outcome["closed"] is True
    assert outcome.get("raised", False) is (case.leave == "raise")


def test_the_server_sees_every_client_that_left_go(servers: Servers) -> None:
    leaving = of_role("leave")
    for sdk in SDKS:
        results(sdk, servers)
    deadline = time.monotonic() + 10  # the server notices at its next write
    while servers.gone < len(leaving) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert servers.gone == len(leaving)


#: The package whose stream object guard() reads, for the SDKs whose streams keep no request.
STREAMED_BY = {
    "google-genai": "google",
    "cohere": "cohere",
    "boto3": "botocore",
    "litellm": "litellm",
    "ollama": "ollama",
    "mistralai": "mistralai",
}
CLIENTS = {
    "openai": "openai.OpenAI",
    "anthropic": "anthropic.Anthropic",
    "google-genai": "google.genai.client.Client",
    "cohere": "cohere.client_v2.ClientV2",
    "boto3": "botocore.client.BedrockRuntime",
    "litellm": "builtins.module",
    "ollama": "ollama._client.Client",
    "mistralai": "mistralai.client.sdk.Mistral",
}


@pytest.mark.parametrize("case", of_role("misuse"), ids=lambda case: case.id)
def test_misuse_with_a_real_sdk_is_a_one_line_usage_error(case: Case, servers: Servers) -> None:
    lines = result_of(case, servers)["guarded"]
    client = CLIENTS[case.sdk]
    # openai's and anthropic's streams keep the request they sent: guard() reads the tools
    # there, and refuses a list that differs; the others need them.
    asked = (
        {
            "other tools": "guard(tools=...) differs from the tools the SDK sent (other): pass "
            "the list given to the SDK, or leave tools= out"
        }
        if case.sdk in ("openai", "anthropic")
        else {
            "no tools": "guard() needs the tools the app gave the SDK (tools=[...], [] for none):"
            f" a {STREAMED_BY[case.sdk]} stream keeps no request to read them from, and a call"
            " to a tool callgate was not told about is unknown_tool"
        }
    )
    assert lines == {
        **asked,
        "a client": (
            f"guard() cannot read a {client}: "
            "give it the stream an SDK returned, or an iterable of wire events with profile="
        ),
        "read from": "guard() takes a stream nothing has read from yet",
        "not a client": "guarded() takes an SDK client (anthropic, openai), not a builtins.object",
        **OTHER_STREAM.get(case.sdk, {}),
    }


#: What guard() says of a stream of the SDK it cannot read (``tests/apps/guard_app.py``).
OTHER_STREAM = {
    "boto3": {
        "another stream": "guard() reads Bedrock's ConverseStream and "
        "InvokeModelWithResponseStream, not a SubscribeToShard stream"
    },
    "litellm": {
        "another stream": "guard() reads a litellm stream whose provider stream is an openai or "
        "anthropic SDK stream, not a "
        "litellm.llms.ollama.completion.transformation.OllamaTextCompletionResponseIterator: "
        "callgate cannot read the provider's events under it"
    },
}


def test_every_case_names_a_fixture_that_exists() -> None:
    assert all(
        (CONFORMANCE / f"{case.fixture}.json").exists()
        for cases in CASES.values()
        for case in cases
    )
    roles = {case.role for cases in CASES.values() for case in cases}
    assert roles == {"fault", "paced", "passing", "leave", "misuse"}
    assert Path(APP).exists()
