"""``callgate.guard`` on the openai SDK's WebSocket connections, its Realtime API's and its
Responses API's (``responses.connect()``), sync and async, against ``callgate serve``'s WebSocket
sessions on loopback: the app is ``tests/apps/realtime_app.py``, one interpreter for every
session; each session is asserted on its own.

What each session must show: a response whose calls may not run never reaches the app's tool
runner (``Blocked`` names it instead of its end), the session goes on to the next response, and
a session that passes reaches the app exactly as it does without the guard."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from callgate import NotApplicable, check, mutate, mutations
from callgate.cli.serve import FakeProvider, collect
from callgate.reassemble.gate import Blocked
from callgate.reassemble.profiles import PROFILES
from callgate.reassemble.sessions import SessionGate, session_parts
from tests.conftest import CONFORMANCE, ROOT, load
from tests.proxy_harness import APPS_PYTHON, batch_results, request_body_of

pytestmark = [pytest.mark.sdk, pytest.mark.xdist_group("realtime-sdk-batch")]

APP = ROOT / "tests" / "apps" / "realtime_app.py"
REALTIME, RESPONSES = "openai-realtime", "openai-responses"
#: The session of two tool turns, the second cancelled mid-arguments.
TWO_TURNS = f"{REALTIME}/two_tool_turns_second_cancelled"
#: Two Responses turns over one socket (a scenario): a call, then a response cut by
#: max_output_tokens mid-call.
RESPONSES_TWO_TURNS = "responses-two-turns"
SCENARIOS = {
    RESPONSES_TWO_TURNS: [f"{RESPONSES}/valid_single_call", f"{RESPONSES}/incomplete_with_call"]
}
#: The turns each fault is made from: the first it applies to.
BASES = {
    REALTIME: ("valid_single_call", "valid_parallel_calls", "valid_interleaved_responses"),
    RESPONSES: ("valid_single_call", "valid_parallel_calls", "shell_call_valid"),
}
#: The Responses turns (coding agents' built-in tools among them) played whole and cut.
RESPONSES_TURNS = (
    "valid_single_call",
    "valid_parallel_calls",
    "shell_call_valid",
    "apply_patch_update_valid",
    "text_only",
    "shell_call_cut_mid_command",
    "apply_patch_then_response_incomplete",
    "response_failed_mid_call",
)


@dataclass(frozen=True)
class Session:
    id: str
    fixture: str  # "profile/stem", or a scenario's name
    mode: str = "sync"
    guard: str = "connection"  # or "manager", or "none"
    mutate: str | None = None
    turns: int = 1
    abort_after: int | None = None
    read_tools: bool = False
    queued: bool = False
    tools_as: str | None = None
    via: str | None = None
    entered: bool = False  # opened with the manager's enter(), not its with block
    model_update: bool = False  # a second session.update, the SDK's model, of instructions only
    update_on_manager: bool = False  # the session.update sent on the manager once open
    iterate: bool = False  # events read by iterating the connection, not by recv()
    document: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def api(self) -> str:
        return "responses" if self.document["profile"] == RESPONSES else "realtime"

    def case(self, host: str) -> dict[str, Any]:
        return {
            "id": self.id,
            "host": host,
            "api": self.api,
            "prefix": "s" if self.fixture in SCENARIOS else "f",
            "fixture": self.fixture,
            "mode": self.mode,
            "guard": self.guard,
            "mutate": self.mutate,
            "turns": self.turns,
            "abort_after": self.abort_after,
            "read_tools": self.read_tools,
            "queued": self.queued,
            "tools_as": self.tools_as,
            "via": self.via,
            "entered": self.entered,
            "model_update": self.model_update,
            "update_on_manager": self.update_on_manager,
            "iterate": self.iterate,
            "tools": tools_of(self.document),
        }


def tools_of(document: dict[str, Any]) -> list[Any]:
    """The tools the app gives the session: the Realtime fixture's own request's, else those of
    the request an app sends for the turn (built-in tools declared as the API takes them)."""
    if "tools" in document.get("request", {}):
        return list(document["request"]["tools"])
    return list(json.loads(request_body_of(document))["tools"])


def session(fixture: str, **options: Any) -> Session:
    """A session of ``fixture`` ("profile/stem"), or of a scenario (its first turn's
    document stands for it)."""
    document = load(CONFORMANCE / f"{SCENARIOS.get(fixture, [fixture])[0]}.json")
    kind = options.get("mutate")
    if kind:
        document = mutate(document, kind, fixture)
    name = "-".join([fixture, *(str(v) for v in options.values() if v is not None)])
    return Session(name, fixture, document=document, **options)


def faults(profile: str) -> list[Session]:
    """Every blocking fault the profile takes, on the first base it applies to; the connection
    is dropped after the variant's last event, so that a response left without its end is
    judged when the socket closes."""
    made = []
    for kind in mutations(blocking=True, profile=profile):
        for base in BASES[profile]:
            try:
                variant = mutate(load(CONFORMANCE / profile / f"{base}.json"), kind, base)
            except NotApplicable:
                continue
            stream = variant[PROFILES[profile].stream_key]
            # A response for each response.create the app sends (``repeat_after_cancel``: two).
            turns = len(session_parts(stream, profile)) - 1
            for guard in ("connection", "none"):
                made.append(
                    session(
                        f"{profile}/{base}",
                        guard=guard,
                        mutate=kind,
                        abort_after=len(stream),
                        turns=turns,
                    )
                )
            break
    return made


def passing(profile: str) -> list[str]:
    return [
        f"{profile}/{path.stem}"
        for path in sorted((CONFORMANCE / profile).glob("*.json"))
        if check(load(path)).status.value in ("pass", "not_applicable")
    ]


SESSIONS = [
    *(
        session(two, mode=mode, guard=guard, turns=2)
        for two in (TWO_TURNS, RESPONSES_TWO_TURNS)
        for mode in ("sync", "async")
        for guard in ("connection", "manager", "none")
    ),
    *(
        session(two, mode=mode, guard=guard, turns=2, read_tools=True)
        for two in (TWO_TURNS, RESPONSES_TWO_TURNS)
        for mode in ("sync", "async")
        for guard in ("connection", "manager")
    ),
    *(
        session(two, mode=mode, guard="manager", turns=2, read_tools=True, queued=True)
        for two in (TWO_TURNS, RESPONSES_TWO_TURNS)
        for mode in ("sync", "async")
    ),
    *(
        session(two, mode=mode, turns=2, read_tools=True, tools_as="models")
        for two in (TWO_TURNS, RESPONSES_TWO_TURNS)
        for mode in ("sync", "async")
    ),
    *(
        session(two, mode=mode, turns=2, iterate=True)
        for two in (TWO_TURNS, RESPONSES_TWO_TURNS)
        for mode in ("sync", "async")
    ),
    *(
        session(TWO_TURNS, mode=mode, turns=2, read_tools=True, via="resources")
        for mode in ("sync", "async")
    ),
    *(
        session(TWO_TURNS, mode=mode, turns=2, read_tools=True, model_update=True)
        for mode in ("sync", "async")
    ),
    *(
        session(
            TWO_TURNS, mode=mode, guard="manager", turns=2, read_tools=True, update_on_manager=True
        )
        for mode in ("sync", "async")
    ),
    *(
        session(RESPONSES_TWO_TURNS, mode=mode, turns=2, read_tools=True, tools_as="generator")
        for mode in ("sync", "async")
    ),
    *(
        session(name, guard=g, abort_after=len(load(CONFORMANCE / f"{name}.json")["events"]))
        for name in passing(REALTIME)
        for g in ("connection", "none")
    ),
    *(
        session(
            f"{RESPONSES}/{stem}",
            guard=g,
            abort_after=len(load(CONFORMANCE / RESPONSES / f"{stem}.json")["events"]),
        )
        for stem in RESPONSES_TURNS
        for g in ("connection", "none")
    ),
    *faults(REALTIME),
    *faults(RESPONSES),
    *(
        session(f"{REALTIME}/valid_single_call", mode=m, guard=g, abort_after=5)
        for m in ("sync", "async")
        for g in ("connection", "none")
    ),
    *(
        session(TWO_TURNS, mode=mode, guard="manager", turns=2, entered=True)
        for mode in ("sync", "async")
    ),
]


def expected(document: dict[str, Any], served: int | None = None) -> dict[str, Any]:
    """What the guarded app must see, worked out offline: each response judged by
    ``SessionGate`` as the app's reading meets it; the calls each response's end lists run
    when it is handed on; the events the guard withholds (by number). ``served``: the server
    sent only so many events."""
    profile = document["profile"]
    gate = SessionGate(profile, tools_of(document))
    ran, blocked, withheld = [], [], []
    for number, event in enumerate(document[PROFILES[profile].stream_key][:served]):
        try:
            gate.read_text(json.dumps(event))
        except Blocked as error:
            blocked.append({"response": error.response_id, "codes": error.report.blocking_codes})
            withheld.append(number)
            continue
        if event["type"] in ENDS:
            ran += [
                [item["type"], item.get("name"), _input(item)]
                for item in event["response"]["output"]
                if item["type"] in CALLS
            ]
    try:
        gate.close()
    except Blocked as error:
        blocked.append({"response": error.response_id, "codes": error.report.blocking_codes})
    return {"ran": ran, "blocked": blocked, "withheld": withheld}


#: As the app has them (``tests/apps/realtime_app.py``).
ENDS = ("response.done", "response.completed", "response.incomplete", "response.failed")
CALLS = ("function_call", "shell_call", "apply_patch_call", "custom_tool_call")


def _input(item: dict[str, Any]) -> Any:
    return next(
        (item[name] for name in ("arguments", "input", "action", "operation") if name in item),
        None,
    )


_RESULTS: dict[str, Any] = {}


def results() -> dict[str, Any]:
    if not _RESULTS:
        folders = [CONFORMANCE / REALTIME, CONFORMANCE / RESPONSES]
        fixtures = {
            f"{folder.name}/{name}": document
            for folder in folders
            for name, document in collect([folder]).items()
        }
        provider = FakeProvider(fixtures, scenarios=SCENARIOS).start()
        try:
            host = provider.url.removeprefix("http://")
            _RESULTS.update(batch_results(APP, [s.case(host) for s in SESSIONS]))
        finally:
            provider.close()
    return _RESULTS


def result_of(s: Session) -> dict[str, Any]:
    if not APPS_PYTHON.exists():
        pytest.fail("the apps environment is not built: run make test")
    found = results()[s.id]
    assert "crashed" not in found, found.get("crashed")
    return found  # type: ignore[no-any-return]


def test_the_guard_reads_the_tools_the_app_gives_the_session() -> None:
    """Guarded without ``tools=``: the tools of the ``session.update`` the app sends through
    the guarded connection judge its responses, as the tools given would; so do those it queues
    on the guarded manager before the connection opens, function tools the app gives as the
    SDK's models inside its dict event, and those it sends through the connection's resources
    (``connection.session.update``, as the SDK's docs do). A later ``session.update`` the app
    sends as the SDK's model, setting only the instructions, leaves them as they were. One the
    app sends on the guarded manager once the connection is open is read too."""
    read = [s for s in SESSIONS if s.read_tools and s.tools_as != "generator"]
    assert {(s.queued, s.tools_as, s.via, s.model_update, s.update_on_manager) for s in read} == {
        (False, None, None, False, False),
        (True, None, None, False, False),
        (False, "models", None, False, False),
        (False, None, "resources", False, False),
        (False, None, None, True, False),
        (False, None, None, False, True),
    }
    for s in read:
        told = next(
            o
            for o in SESSIONS
            if (o.fixture, o.mode, o.guard, o.read_tools) == (s.fixture, s.mode, s.guard, False)
        )
        found = result_of(s)
        # Each pair holds a turn that runs and one that blocks: the tools were read, not missed.
        assert len(found["ran"]) == len(found["blocked"]) == 1, s.id
        assert (found["ran"], found["blocked"]) == (
            result_of(told)["ran"],
            result_of(told)["blocked"],
        ), s.id


def test_a_client_event_the_guard_cannot_read_fails_the_responses_after_it() -> None:
    """Tools given as a generator: the SDK lists them as it writes the ``response.create``, and
    callgate, which cannot read them again, does not know the tools asked for; neither
    response's calls run, each ``Unjudged``, whatever the tools were."""
    read = [s for s in SESSIONS if s.tools_as == "generator"]
    assert [s.mode for s in read] == ["sync", "async"]
    for s in read:
        found = result_of(s)
        assert (found["ran"], found["blocked"], found["unjudged"]) == (
            [],
            [],
            ["TypeError", "TypeError"],
        ), s.id


def unguarded(s: Session) -> Session:
    return next(
        o
        for o in SESSIONS
        if o.guard == "none"
        and o.fixture == s.fixture
        and o.mode == s.mode
        and o.mutate == s.mutate
        and o.abort_after == s.abort_after
    )


def two_turns(fixture: str) -> dict[str, Any]:
    """A two-turn session's document: its events, both turns' where it is a scenario."""
    names = SCENARIOS.get(fixture, [fixture])
    documents = [load(CONFORMANCE / f"{name}.json") for name in names]
    key = PROFILES[documents[0]["profile"]].stream_key
    return {**documents[0], key: [e for d in documents for e in d[key]]}


def test_the_blocked_second_turn_never_reaches_the_tool_runner() -> None:
    """Both APIs, sync and async, the connection or the manager guarded: the first response's
    call runs; the second (Realtime: cancelled while book_flight's arguments streamed;
    Responses: cut by max_output_tokens mid-call) is ``Blocked`` by its id, and every event
    before its end reached the app as it does without the guard."""
    seen = 0
    for s in SESSIONS:
        if s.fixture not in (TWO_TURNS, RESPONSES_TWO_TURNS) or s.guard == "none":
            continue
        if s.tools_as == "generator":  # the tools unread: each response unjudged (below)
            continue
        found, bare, want = result_of(s), result_of(unguarded(s)), expected(two_turns(s.fixture))
        assert len(want["ran"]) == 1 and len(want["blocked"]) == 1, s.id
        assert (found["ran"], found["blocked"]) == (want["ran"], want["blocked"]), s.id
        assert found["events"] == bare["events"][:-1], s.id
        assert bare["events"][-1]["type"] in ENDS
        assert found["closed"] is None
        seen += 1
    # Two APIs, sync and async: connection or manager, told the tools or not (16); the tools
    # queued on the manager (4); the tools as the SDK's models (4); Realtime's setup through
    # the connection's resources (2); Realtime's manager opened with enter(), no with block (2);
    # Realtime's instructions updated by the SDK's model after the tools (2); Realtime's tools
    # sent on the manager once the connection is open (2); events read by iterating the
    # connection (4).
    assert seen == 36


def test_the_realtime_session_pins_what_the_guard_blocks() -> None:
    want = expected(two_turns(TWO_TURNS))
    assert want["ran"] == [["function_call", "get_weather", '{"city":"Paris","unit":"c"}']]
    assert want["blocked"] == [
        {
            "response": "resp_CAm8Kq7ry3Mxa2",
            "codes": ["invalid_arguments_json", "wrong_terminal_reason"],
        }
    ]


def test_without_the_guard_the_app_runs_the_cut_call() -> None:
    for s in SESSIONS:
        if s.fixture in (TWO_TURNS, RESPONSES_TWO_TURNS) and s.guard == "none":
            ran = result_of(s)["ran"]
            assert len(ran) == 2 and ran[0] == expected(two_turns(s.fixture))["ran"][0], s.id
    bare = next(s for s in SESSIONS if s.fixture == TWO_TURNS and s.guard == "none")
    assert result_of(bare)["ran"][1] == ["function_call", "book_flight", '{"to":"Li']


@pytest.mark.parametrize(
    "s",
    [
        s
        for s in SESSIONS
        if s.guard == "connection" and s.fixture not in (TWO_TURNS, RESPONSES_TWO_TURNS)
    ],
    ids=lambda s: s.id,
)
def test_each_session_is_gated_as_it_is_judged_offline(s: Session) -> None:
    """What the guarded app runs and is told is blocked is what ``SessionGate`` says of the
    session; every event reaches it as it reaches the app without the guard, but the ends the
    guard withholds."""
    found, bare = result_of(s), result_of(unguarded(s))
    want = expected(s.document, s.abort_after)
    assert (found["ran"], found["blocked"]) == (want["ran"], want["blocked"])
    kept = [e for n, e in enumerate(bare["events"]) if n not in want["withheld"]]
    assert found["events"] == kept
    if s.mutate:
        assert want["blocked"], f"{s.mutate} blocks nothing"


def test_the_cut_responses_turns_block() -> None:
    """Each Responses turn cut short (a shell command, a patch, a call) blocks; each whole one
    passes."""
    verdicts = {
        s.fixture.split("/")[1]: bool(result_of(s)["blocked"])
        for s in SESSIONS
        if s.api == "responses"
        and s.guard == "connection"
        and s.mutate is None
        and s.fixture != RESPONSES_TWO_TURNS
    }
    assert verdicts == {
        "valid_single_call": False,
        "valid_parallel_calls": False,
        "shell_call_valid": False,
        "apply_patch_update_valid": False,
        "text_only": False,
        "shell_call_cut_mid_command": True,
        "apply_patch_then_response_incomplete": True,
        "response_failed_mid_call": True,
    }


def test_a_socket_dropped_mid_arguments_blocks_the_response() -> None:
    """The server drops the connection after five events, in the middle of the call's
    arguments: the guarded app gets ``Blocked`` for the response, then the SDK's
    ``ConnectionClosedError`` as the bare app does, which has the call's fragments in hand."""
    for mode in ("sync", "async"):
        guarded = result_of(
            session(f"{REALTIME}/valid_single_call", mode=mode, guard="connection", abort_after=5)
        )
        bare = result_of(
            session(f"{REALTIME}/valid_single_call", mode=mode, guard="none", abort_after=5)
        )
        assert guarded["blocked"] == [
            {"response": "resp_CAm8Jp0qx2Lwz1", "codes": ["missing_terminal"]}
        ], mode
        assert guarded["ran"] == [] and guarded["closed"] == "ConnectionClosedError", mode
        assert guarded["events"] == bare["events"], mode
        assert bare["blocked"] == [] and bare["closed"] == "ConnectionClosedError", mode
        assert [e["type"] for e in bare["events"]][-1] == "response.function_call_arguments.delta"
