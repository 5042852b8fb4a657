"""A WebSocket session cut into its turns: each response of an OpenAI Realtime session, and of a
Responses API WebSocket (its ``response.create`` mode), is judged as a turn of its own, as it
ends, while the session goes on.

How this works: a router says which response in flight each server event is about.

``ResponseRouter`` (Realtime): an event that names a response (``response_id``;
``response.created`` and ``response.done`` name it as ``response.id``) belongs to that response;
one the server sends before ``response.created`` opens the response too. An event that names
none (the session's, the conversation's, an ``error``, an event callgate cannot read or does not
know) belongs to every response in flight: an error or an unknown event fails the responses it
could be about, and the events callgate knows carry nothing a call is made of, so they change no
verdict. With no response in flight it belongs to none: no call can be made of it.

``LaneRouter`` (Responses): the server runs the responses of one lane (``stream_id``; none
names the default lane) one after the other, and its events carry the lane but not the
response. A ``response.created`` starts the lane's next response, and the Responses API's end
(``response.completed``, ``.incomplete``, ``.failed``) ends it; an event of a lane with no
response going on starts one with no ``response.created`` (it blocks), but an ``error`` there is
the answer to a request that made no response. Each response is judged by the ``response.create``
that asked for it: the lane's requests are answered in order.

``SessionRouter`` (Gemini Live): the session is one turn of its own, named ``SESSION``: its
``toolCall`` requests are its choices, and a later ``toolCallCancellation`` can withdraw a call an
earlier one made, so it is judged whole, when the socket closes (its close frame read as the
``{"close": ...}`` entry a fixture records, ``SessionGate.read_close``), by the tools of the
client's ``setup``.

``SessionGate`` keeps a ``Gate`` per response in flight (``callgate.reassemble.gate``), fed only
that response's events, and judges it at its end: the event that ends a response whose calls may
not run is never handed on (``Blocked``, naming the response). A response the session never ended
is judged when the session closes. A Realtime event naming a response that already ended is
judged at once, alone: a response does not start again, so it blocks (``delta_before_start``,
``missing_terminal``), though the calls of the response it names may have gone on already.

Like the engine, this is sans-I/O: it never reads, writes or closes anything.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from callgate.reassemble.errors import UsageError
from callgate.reassemble.gate import Blocked, Gate, Unjudged
from callgate.reassemble.profiles import PROFILES
from callgate.reassemble.profiles.openai_realtime import DONE
from callgate.reassemble.readers import event_reader
from callgate.reassemble.report import Report

REALTIME, RESPONSES, GEMINI_LIVE = "openai-realtime", "openai-responses", "gemini-live"
#: The tools a response is judged by: as a ``Gate`` takes them.
Tools = Mapping[str, object] | Sequence[object]
#: The profiles a ``SessionGate`` judges response by response over a WebSocket.
BY_RESPONSE = (REALTIME, RESPONSES)
#: The profiles a ``SessionGate`` reads: those, and Gemini Live's, judged as one turn.
SESSION_PROFILES = (*BY_RESPONSE, GEMINI_LIVE)
#: The name of a Gemini Live session's one turn.
SESSION = "session"


def response_of(event: object) -> str | None:
    """The id of the response a Realtime server event is about, or None."""
    if not isinstance(event, dict):
        return None
    named = event.get("response_id")
    if isinstance(named, str):
        return named
    response = event.get("response")
    if event.get("type") in ("response.created", DONE) and isinstance(response, dict):
        own = response.get("id")
        return own if isinstance(own, str) else None
    return None


@dataclass(frozen=True)
class Routed:
    """Where one server event goes: the responses it belongs to, those it ends (after it is
    read), and the lane a response it starts belongs to."""

    responses: tuple[str, ...]
    ends: tuple[str, ...] = ()
    lane: str | None = None


class ResponseRouter:
    """Which responses in flight each server event of a Realtime session belongs to."""

    def __init__(self) -> None:
        #: The responses started and not ended, in the order they started.
        self.in_flight: list[str] = []
        self._ended: set[str] = set()

    def route(self, event: object) -> Routed:
        named = response_of(event)
        if named is None:
            return Routed(tuple(self.in_flight))
        if named in self._ended:  # too late: the response is over, so this event ends it again
            return Routed((named,), ends=(named,))
        if named not in self.in_flight:
            self.in_flight.append(named)
        if isinstance(event, dict) and event.get("type") == DONE:
            self.in_flight.remove(named)
            self._ended.add(named)
            return Routed((named,), ends=(named,))
        return Routed((named,))


class LaneRouter:
    """Which response each server event of a Responses API WebSocket belongs to: its lane's."""

    def __init__(self) -> None:
        self._current: dict[str | None, str] = {}  # lane -> the response going on in it
        self._unnamed = 0
        self._ends = PROFILES[RESPONSES].carries_terminal

    @property
    def in_flight(self) -> list[str]:
        return list(self._current.values())

    def route(self, event: object) -> Routed:
        if not isinstance(event, dict):  # no lane can be read: every response it could be of
            return Routed(tuple(self._current.values()))
        lane = event.get("stream_id")
        lane = lane if isinstance(lane, str) else None
        ends: tuple[str, ...] = ()
        if event.get("type") == "response.created":
            if lane in self._current:  # the lane's last response never ended
                ends = (self._current[lane],)
            named = response_of(event) or self._unnamed_turn()
            self._current[lane] = named
        elif lane in self._current:
            named = self._current[lane]
        elif event.get("type") == "error":
            return Routed(())  # the answer to a request that made no response
        else:
            named = self._current[lane] = self._unnamed_turn()
        if self._ends(event):
            del self._current[lane]
            return Routed((named,), ends=(*ends, named), lane=lane)
        return Routed((named,), ends=ends, lane=lane)

    def _unnamed_turn(self) -> str:
        self._unnamed += 1
        return f"(no response.created #{self._unnamed})"


class SessionRouter:
    """Every server event of a Gemini Live session belongs to its one turn, which only the
    session's close ends."""

    def __init__(self) -> None:
        self.in_flight: list[str] = []

    def route(self, event: object) -> Routed:
        if not self.in_flight:
            self.in_flight.append(SESSION)
        return Routed((SESSION,))


def router_for(profile: str) -> ResponseRouter | LaneRouter | SessionRouter:
    if profile == GEMINI_LIVE:
        return SessionRouter()
    return ResponseRouter() if profile == REALTIME else LaneRouter()


def session_parts(events: Sequence[Any], profile: str = REALTIME) -> list[list[Any]]:
    """A recorded session's events in the parts a server sends them in, one part per
    ``response.create`` the client sends: first what came before any response, then from each
    ``response.created`` that starts a run of responses in flight together, up to the next
    (what comes after a response ended, even about it, stays where it was recorded)."""
    router = router_for(profile)
    parts: list[list[Any]] = [[]]
    for event in events:
        created = isinstance(event, dict) and event.get("type") == "response.created"
        if created and not router.in_flight:
            parts.append([])
        router.route(event)
        parts[-1].append(event)
    return parts


@dataclass(frozen=True)
class Ended:
    """One response judged: its verdict (None when callgate failed on it), the JSON text of each
    server message it was given (a message that is no JSON as a JSON string), and the request it
    was judged by (its tools among it)."""

    response_id: str
    report: Report | None
    texts: list[str]
    request: Mapping[str, object] | None


class SessionGate:
    """One WebSocket session between an SDK and the app, each response judged as it ends.
    ``profile`` is one of ``SESSION_PROFILES``; ``tools``, ``request``, ``provider``, ``allow``,
    ``on_verdict``, ``on_error`` and ``on_unjudged`` are each response's ``Gate``'s (``ask``
    changes the tools and request for the responses that start after it, and so do the client's
    messages, ``read_client_text``). ``on_end`` is called with each response as it is judged,
    with the messages it was given (kept only for it). ``judging=False`` cuts the session into
    responses for ``on_end`` without judging them (each ``Ended`` has no report, and nothing is
    raised, nor are the tools checked): a recording's responses are judged as the fixtures made
    of them."""

    def __init__(
        self,
        profile: str,
        tools: Tools,
        *,
        request: Mapping[str, object] | None = None,
        provider: str | None = None,
        allow: Iterable[str] = (),
        on_verdict: Callable[[Report], None] | None = None,
        on_error: str = "block",
        on_unjudged: Callable[[BaseException], None] | None = None,
        on_end: Callable[[Ended], None] | None = None,
        judging: bool = True,
    ) -> None:
        if profile not in SESSION_PROFILES:
            raise UsageError(f"a session gate judges {', '.join(SESSION_PROFILES)}, not {profile}")
        self._profile = profile
        self._settings: dict[str, Any] = {
            "provider": provider,
            "allow": tuple(allow),
            "on_verdict": on_verdict,
            "on_error": on_error,
            "on_unjudged": on_unjudged,
        }
        self._on_end = on_end
        self._judging = judging
        self._value = event_reader(PROFILES[profile].names_proof)
        self._router = router_for(profile)
        self._responses: dict[str, _Response] = {}
        #: The Responses API's requests (``response.create``) not answered yet, by lane.
        self._asked: dict[str | None, deque[tuple[Tools, Mapping[str, object]]]] = {}
        #: The session's settings as the client's ``session.update`` messages set them.
        self.settings: dict[str, Any] = {}
        #: The request of the last ``response.create`` read: what its response is judged by.
        self.asked: Mapping[str, object] | None = None
        #: The verdict of each response judged, by response id, in the order they ended.
        self.reports: dict[str, Report] = {}
        #: A client message callgate could not read (``client_unread``): what the session was
        #: asked from then on is unknown.
        self._client_fault: Exception | None = None
        self.ask(tools, request)

    def ask(self, tools: Tools, request: Mapping[str, object] | None) -> None:
        """The tools and request the responses that start from now on are judged by (a
        ``session.update`` changes them); raises ``UsageError`` for tools callgate cannot
        read, as a ``Gate`` does."""
        if self._judging:  # checked now, not when a response starts
            self._gate(tools, request)
        self._tools, self._request = tools, request

    def read_client_text(self, text: str) -> bool:
        """A message the client sent; whether it asks for a response (a ``response.create``:
        ``asked`` is then that response's request). Realtime: a ``session.update`` sets the
        tools and settings of the responses that start after it; a ``response.create`` with its
        own (``response.tools``) sets them for the responses after it, until the next of either.
        Responses: each ``response.create`` is the request of its lane's next response. Gemini
        Live: ``setup`` gives the session's. Anything else asks nothing of the gate (a message
        that is no JSON object included: it is the app's)."""
        try:
            event = json.loads(text)
        except ValueError:
            return False
        if not isinstance(event, dict):
            return False
        kind = event.get("type")
        if self._profile == GEMINI_LIVE:
            setup = event.get("setup")
            if isinstance(setup, dict):  # the session's settings, sent once as it opens
                self.settings = dict(setup)
                self.ask(_tools_in(self.settings), self.settings)
                self.asked = self.settings
            return False
        if self._profile == RESPONSES:
            if kind != "response.create":
                return False
            body = {k: v for k, v in event.items() if k not in ("type", "stream_id")}
            self.asked = body
            lane = event.get("stream_id")
            if self._judging:  # checked now, as ``ask`` checks
                self._gate(_tools_in(body), body)
            waiting = self._asked.setdefault(lane if isinstance(lane, str) else None, deque())
            waiting.append((_tools_in(body), body))
            return True
        if kind == "session.update" and isinstance(event.get("session"), dict):
            self.settings = {**self.settings, **event["session"]}
            self.ask(_tools_in(self.settings), self.settings)
        elif kind == "response.create":
            own = event.get("response")
            asked = {**self.settings, **(own if isinstance(own, dict) else {})}
            self.ask(_tools_in(asked), asked)
            self.asked = asked
            return True
        return False

    def client_unread(self, error: Exception) -> None:
        """callgate could not read a message the client sent (an SDK's event it cannot write as
        the SDK wrote it): the tools and settings the session was asked for from then on are
        unknown, so every response that starts after it fails as callgate failing on it does,
        under ``on_error`` (``"block"``: ``Unjudged`` at its end; without ``on_error``,
        ``error`` is raised now)."""
        if self._settings["on_error"] is None:
            raise error
        self._client_fault = error

    def _gate(self, tools: Tools, request: Mapping[str, object] | None) -> Gate[Any]:
        gate: Gate[Any] = Gate(self._profile, tools, request=request, **self._settings)
        if self._client_fault is not None:
            gate.fail(self._client_fault)
        return gate

    def read_text(self, text: str) -> object:
        """The next server message's text. Returns the event read (its JSON value, or the text
        when it is no strict JSON). Raises ``Blocked`` when it ends a response whose calls may
        not run (``Unjudged`` when callgate failed on it, under ``on_error="block"``): the
        message is not to be handed on."""
        event = self._value(text)
        routed = self._router.route(event)
        for named in routed.responses:
            response = self._responses.get(named)
            if response is None:
                response = self._responses[named] = self._start(routed.lane)
            if response.gate is not None:
                response.gate.read(event)
            if self._on_end is not None:  # kept as JSON: a text that is none, as a string
                response.texts.append(json.dumps(text) if isinstance(event, str) else text)
        self._judge_all(routed.ends)
        return event

    def read_close(self, code: int | None, reason: str = "") -> None:
        """The socket's close frame (``code`` None: it closed without one), for a profile that
        records it as an entry (Gemini Live: ``{"close": {"code", "reason"}}``); read as a
        server message, before ``close``. Others ignore it."""
        if self._profile == GEMINI_LIVE:
            frame = {"code": 1006 if code is None else code, "reason": reason}
            self.read_text(json.dumps({"close": frame}))

    def _start(self, lane: str | None) -> _Response:
        """A response starts: judged by its lane's oldest request not answered yet, or the
        session's."""
        waiting = self._asked.get(lane)
        tools, request = waiting.popleft() if waiting else (self._tools, self._request)
        return _Response(self._gate(tools, request) if self._judging else None, request)

    def close(self) -> None:
        """The session ended: each response still in flight is judged (it has no end, so it
        blocks); raises for the first one that blocked, once all are judged."""
        self._judge_all(list(self._responses))

    def _judge_all(self, names: Iterable[str]) -> None:
        first: Exception | None = None
        for named in names:
            try:
                self._judge(named)
            except (Blocked, Unjudged) as error:
                first = first or error
        if first is not None:
            raise first

    def _judge(self, named: str) -> None:
        response = self._responses.pop(named)
        gate = response.gate
        if gate is None:
            if self._on_end is not None:
                self._on_end(Ended(named, None, response.texts, response.request))
            return
        try:
            gate.judge()
        except Blocked as blocked:
            raise Blocked(blocked.report, response_id=named) from None
        finally:
            if gate.report is not None:
                self.reports[named] = gate.report
            if self._on_end is not None:
                ended = Ended(named, gate.report, response.texts, response.request)
                self._on_end(ended)


def _tools_in(request: Mapping[str, object]) -> list[object]:
    """The tools a request names (none when it names no list of them)."""
    tools = request.get("tools")
    return tools if isinstance(tools, list) else []


@dataclass
class _Response:
    gate: Gate[Any] | None  # None when the session is cut, not judged
    request: Mapping[str, object] | None
    texts: list[str] = field(default_factory=list)
