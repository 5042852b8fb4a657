"""The gate: an SDK's stream items handed on at once, the turn's terminal evidence held until the
turn is judged.

How this works: the same rule as the proxy's enforce mode. ``read_text`` takes the data of each
SSE event as the SDK's stream decodes it, ``read`` a wire event already parsed (a dict, or an
SDK's pydantic model of one), and each is fed to the engine;
the first event the profile says ``carries_terminal`` (Chat Completions' chunk with a
``finish_reason``, Anthropic's ``message_delta``, the Responses API's ``response.completed``)
switches the gate to holding. ``pass_on`` says whether an item the app is to see goes now, or is
kept because the gate holds. ``judge``, at the end of the stream, returns what was held when the
turn may run, and raises ``Blocked`` when it may not: the held items never reach the app.

An item and its evidence are told apart: the evidence is what the provider sent, read before
the SDK turns it into objects (an SDK's model can repair what the wire got wrong: openai's
coerces a string index to a number; its stream raises on an error event instead of handing it
on), and SDK helpers (openai's ``.stream()``, anthropic's ``MessageStream``) hand out events they
make themselves, some of them snapshots that parse before the provider ended anything. The
items are whatever the app iterates. The table below says which SDK objects callgate reads.

Like the engine, the gate is sans-I/O: it never reads, writes or closes anything.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from callgate.reassemble.engine import Reassembler
from callgate.reassemble.errors import UsageError
from callgate.reassemble.eventstream import HeaderValue, Message
from callgate.reassemble.profiles import PROFILES, profile_for
from callgate.reassemble.readers import event_reader
from callgate.reassemble.report import Report
from callgate.reassemble.sdk import event_json

Item = TypeVar("Item")


class Blocked(Exception):
    """The turn's tool calls may not run. ``report`` is the verdict; ``str()`` is one line naming
    the blocking codes. Not a ``CallgateError``: a blocked turn is an answer about the provider's
    stream, not a misuse of callgate, and an app's handler for bad input must not swallow it."""

    def __init__(self, report: Report, *, response_id: str | None = None) -> None:
        codes = ", ".join(report.blocking_codes) or "conformance failure"
        turn = "this turn" if response_id is None else f"response {response_id}"
        super().__init__(f"callgate blocked {turn}: {codes}")
        self.report = report
        #: In a WebSocket session, the response blocked (its other responses went on or may).
        self.response_id = response_id


#: What a gate does with a turn it cannot judge: fail closed (the default), or pass it on.
ON_ERROR = ("block", "pass")


def require_on_error(on_error: str) -> str:
    """``on_error`` when it is one of ``ON_ERROR``; raises ``UsageError`` otherwise."""
    if on_error not in ON_ERROR:
        raise UsageError(f"on_error {on_error!r} is not one of {', '.join(ON_ERROR)}")
    return on_error


class Unjudged(Exception):
    """callgate could not judge the turn (an item it cannot read, or a failure of its own) and
    fails closed: the turn may not run. ``error`` is what went wrong."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(
            f"callgate could not judge this turn ({type(error).__name__}: {str(error)[:200]}), "
            "so it may not run"
        )
        self.error = error


class UnreadItem(Exception):
    """An SDK made an item of bytes callgate did not read (``Gate.hold``)."""


class Gate(Generic[Item]):
    """One streamed turn between an SDK and the app. ``profile``, ``tools``, ``request``,
    ``provider`` and ``allow`` are the engine's (``Reassembler``); raises its ``UsageError``s.
    ``on_verdict`` is called once with the report when the turn is judged (telemetry).

    ``on_error`` is what the gate does with a failure of callgate's own while it reads or
    judges (an item it cannot read, an exception of the engine's): ``"block"`` holds everything
    from there on and ``judge`` raises ``Unjudged``; ``"pass"`` reads nothing more and ``judge``
    hands on what it held, unjudged, calling ``on_unjudged`` with the failure. None (the
    default) lets the failure propagate, for a caller with a rule of its own (the gateway's).
    An item of bytes callgate did not read (``hold``) is such a failure too."""

    def __init__(
        self,
        profile: str,
        tools: Mapping[str, object] | Sequence[object],
        *,
        request: Mapping[str, object] | None = None,
        provider: str | None = None,
        allow: Iterable[str] = (),
        on_verdict: Callable[[Report], None] | None = None,
        holds_from: Callable[[object], bool] | None = None,
        on_error: str | None = None,
        on_unjudged: Callable[[BaseException], None] | None = None,
    ) -> None:
        if on_error is not None:
            require_on_error(on_error)
        self._on_verdict = on_verdict
        self._on_error, self._on_unjudged = on_error, on_unjudged
        #: The failure that stopped the reading, under ``on_error``: nothing is read after it.
        self.fault: BaseException | None = None
        self._engine = Reassembler(
            profile, tools=tools, request=request, provider=provider, allow_quirks=allow
        )
        self._profile = profile
        carries_terminal = PROFILES[profile].carries_terminal
        #: Whether an event starts the holding: the terminal evidence, or what ``holds_from``
        #: also names (a gateway holds a Responses turn from its first complete call).
        self._holds_at: Callable[[object], bool] = (
            carries_terminal
            if holds_from is None
            else lambda event: carries_terminal(event) or holds_from(event)
        )
        self._value = event_reader(PROFILES[profile].names_proof)
        self._holding = False
        #: An item of bytes callgate did not read is held (``hold``): the turn may not run.
        self._unread = False
        self._held: list[Item] = []
        #: The verdict, once ``judge`` gave it.
        self.report: Report | None = None

    @property
    def holding(self) -> bool:
        """The terminal evidence came: what the app is to see next waits for the verdict."""
        return self._holding

    def read(self, raw: object) -> None:
        """The next wire event (a dict, or an SDK's model of one). Anything else is a
        ``TypeError``, as ``Reassembler.feed`` raises it (a failure, under ``on_error``)."""
        if self.fault is not None:
            return
        try:
            event = raw if type(raw) is dict else event_json(raw)
            if not self._holding and self._holds_at(event):
                self._holding = True
            self._engine.feed(event)
        except Exception as error:
            self._failed(error)

    def hold(self) -> None:
        """An SDK made an item of bytes callgate did not read as an event: the item and what
        follows are held, and the turn is blocked whatever the events read say, since what the
        item carries was never judged (under ``on_error="pass"``, it goes on unjudged)."""
        self._holding = self._unread = True

    def fail(self, error: Exception) -> None:
        """callgate failed on the turn outside its reading (what the app asked for it could not
        be read): as a failure while it reads, under ``on_error``."""
        self._failed(error)

    def _failed(self, error: Exception) -> None:
        """callgate failed while it read: raised as it is without ``on_error``; else nothing is
        read after it, and under ``"block"`` nothing the app is to see goes on after it."""
        if self._on_error is None:
            raise error
        self.fault = error
        if self._on_error == "block":
            self._holding = True

    def read_text(self, text: str) -> object:
        """The data of the next SSE event, as the provider sent it: parsed as the proxy parses it
        (strictly: a repeated member name is a finding, not a value the SDK kept), ``[DONE]``
        left out as the proxy's reader leaves it out. Returns the event read: its JSON value,
        or the text when it is no strict JSON (or ``[DONE]``)."""
        if text == "[DONE]" or self.fault is not None:
            return text
        try:
            event = self._value(text)
            if not self._holding and self._holds_at(event):
                self._holding = True
            self._engine.feed(event)
        except Exception as error:
            self._failed(error)
            return text
        return event

    def read_message(self, headers: Mapping[str, HeaderValue], payload: bytes) -> None:
        """The next AWS event-stream message (Bedrock's), its headers and payload as the SDK's
        decoder cut them: read as the proxy reads a message (the profile's ``from_message``;
        its payload parsed strictly)."""
        from_message = PROFILES[self._profile].from_message
        if from_message is None:
            raise TypeError(f"the {self._profile} profile reads no event-stream messages")
        if self.fault is not None:
            return
        try:
            event = from_message(Message(dict(headers), payload))
        except Exception as error:
            self._failed(error)
            return
        self.read(event)

    def pass_on(self, item: Item) -> bool:
        """Whether ``item`` goes to the app now; if not, the gate keeps it for ``judge``."""
        if self._holding and self.report is None:
            self._held.append(item)
            return False
        return True

    def unjudged(self) -> list[Item]:
        """The held items, to hand on unjudged: the caller gives up on the turn (it got
        something callgate cannot read). Nothing is held after this."""
        held, self._held = self._held, []
        return held

    def judge(self) -> list[Item]:
        """The end of the stream: the held items, in order, when the turn may run (it passes, or
        holds no tool call); raises ``Blocked`` when it may not. Judging again gives nothing
        more (and raises again for a blocked turn). Under ``on_error``, a turn callgate failed
        on raises ``Unjudged`` (``"block"``), or gives the held items unjudged (``"pass"``)."""
        if self.report is None and self.fault is None:
            try:
                self.report = self._engine.close()
            except Exception as error:
                self._failed(error)
            else:
                if self._on_verdict is not None:
                    self._on_verdict(self.report)
        if self.fault is not None:
            return self._unjudged(self.fault)
        assert self.report is not None
        if self.report.exit_code == 1:
            self._held.clear()
            raise Blocked(self.report)
        if self._unread and self._on_error == "pass":
            return self._unjudged(UnreadItem("an item the SDK made of bytes callgate did not read"))
        if self._unread:
            self._held.clear()
            raise Blocked(self.report)
        held, self._held = self._held, []
        return held

    def _unjudged(self, fault: BaseException) -> list[Item]:
        if self._on_error == "block":
            self._held.clear()
            raise Unjudged(fault)
        if self._on_unjudged is not None:
            self._on_unjudged(fault)
            self._on_unjudged = None  # counted once, however often it is judged
        held, self._held = self._held, []
        return held


# -- the SDK objects callgate reads ---------------------------------------------------------------

#: How a stream object hands out its events: ``events`` (one item per wire event, whose SSE
#: events its ``_iter_events`` decodes), ``helper`` (its items are made from the wire events of
#: the stream in its ``_raw_stream``),
#: ``manager`` (a context manager whose ``__enter__`` gives a helper), ``generator`` (a plain
#: generator of the SDK's, one item per wire event, read by a tap of that SDK's own),
#: ``messages`` (one item per AWS event-stream message, whose decoded messages are read),
#: ``wrapper`` (items made by a library from an SDK stream of the ``events`` role it keeps),
#: ``body`` (one item per SSE event, made by a decoder that loses evidence: the body of the HTTP
#: response the stream keeps is read by callgate itself).
EVENTS, HELPER, MANAGER, GENERATOR, MESSAGES, WRAPPER, BODY = (
    "events",
    "helper",
    "manager",
    "generator",
    "messages",
    "wrapper",
    "body",
)
#: ``session``: a WebSocket connection whose every message is a wire event, each response a turn
#: of its own (``callgate.reassemble.sessions``); ``session manager``: a context manager whose
#: ``__enter__`` gives one.
SESSION, SESSION_MANAGER = "session", "session manager"


@dataclass(frozen=True)
class StreamType:
    """One SDK stream class callgate reads."""

    #: The profile its wire events are read with; for an SDK whose one stream class serves
    #: several APIs, the default, refined by ``stream_profile``.
    profile: str
    role: str
    asynchronous: bool


def _kinds(profile: str, role: str, *names: str) -> dict[str, StreamType]:
    return {
        name: StreamType(profile, role, asynchronous=name.startswith("Async")) for name in names
    }


#: SDK package -> class name -> how callgate reads an object of that class. Classes are told by
#: name, so that ``import callgate`` never imports an SDK.
STREAM_TYPES: dict[str, dict[str, StreamType]] = {
    "openai": {
        **_kinds("openai", EVENTS, "Stream", "AsyncStream"),
        **_kinds("openai", HELPER, "ChatCompletionStream", "AsyncChatCompletionStream"),
        **_kinds(
            "openai", MANAGER, "ChatCompletionStreamManager", "AsyncChatCompletionStreamManager"
        ),
        **_kinds("openai-responses", HELPER, "ResponseStream", "AsyncResponseStream"),
        **_kinds(
            "openai-responses", MANAGER, "ResponseStreamManager", "AsyncResponseStreamManager"
        ),
        # ``client.realtime.connect()``, ``client.responses.connect()`` and the connections they
        # give.
        **_kinds("openai-realtime", SESSION, "RealtimeConnection", "AsyncRealtimeConnection"),
        **_kinds(
            "openai-realtime",
            SESSION_MANAGER,
            "RealtimeConnectionManager",
            "AsyncRealtimeConnectionManager",
        ),
        **_kinds("openai-responses", SESSION, "ResponsesConnection", "AsyncResponsesConnection"),
        **_kinds(
            "openai-responses",
            SESSION_MANAGER,
            "ResponsesConnectionManager",
            "AsyncResponsesConnectionManager",
        ),
    },
    "anthropic": {
        **_kinds("anthropic", EVENTS, "Stream", "AsyncStream"),
        **_kinds("anthropic", HELPER, "MessageStream", "AsyncMessageStream"),
        **_kinds("anthropic", MANAGER, "MessageStreamManager", "AsyncMessageStreamManager"),
    },
    # boto3's bedrock-runtime: ConverseStream, or InvokeModelWithResponseStream (Anthropic's
    # events in each message's chunk), told by the stream's operation (``message_profile``).
    "botocore": _kinds("bedrock-converse", MESSAGES, "EventStream"),
    # litellm's wrapper of the provider's stream (``completion_stream``), sync and async: read
    # where that is an SDK stream of this table (OpenAI and OpenAI-compatible providers).
    "litellm": _kinds("openai", WRAPPER, "CustomStreamWrapper"),
    # mistralai's ``chat.stream`` and ``chat.stream_async``: its decoder parses each event's data
    # and dumps it again for its model (a repeated member name is gone), and its model refuses a
    # call fragment without a name, closing the response mid-turn.
    "mistralai": {
        "EventStream": StreamType("mistral", BODY, asynchronous=False),
        "EventStreamAsync": StreamType("mistral", BODY, asynchronous=True),
    },
}

#: SDK package -> the qualified name of the generator function an SDK streams with -> how
#: callgate reads such a generator (google-genai and cohere keep no stream object).
GENERATOR_TYPES: dict[str, dict[str, StreamType]] = {
    "google": {
        "Models.generate_content_stream": StreamType("gemini", GENERATOR, asynchronous=False),
        "AsyncModels.generate_content_stream.<locals>.stream_generator": StreamType(
            "gemini", GENERATOR, asynchronous=True
        ),
    },
    "cohere": {
        "V2Client.chat_stream": StreamType("cohere", GENERATOR, asynchronous=False),
        "AsyncV2Client.chat_stream": StreamType("cohere", GENERATOR, asynchronous=True),
    },
    "ollama": {
        "Client._request.<locals>.inner": StreamType("ollama", GENERATOR, asynchronous=False),
        "AsyncClient._request.<locals>.inner": StreamType("ollama", GENERATOR, asynchronous=True),
    },
}

#: SDK package -> the attribute of its client that holds the httpx client it streams lines
#: through, for the SDKs with no reader of their own to tap (ollama's models drop a call's
#: ``index``): each line is read from the HTTP response, through a response hook.
LINE_CLIENTS = {"ollama": "_client"}


@dataclass(frozen=True)
class Reader:
    """The SDK method that yields what an HTTP response's SSE events hold, sync and async."""

    module: str
    owner: str
    sync: str
    asynchronous: str
    #: The data of the SSE event in what the method yields (None: nothing to read).
    data: Callable[[Any], str | None]
    #: The HTTP response the method's object reads.
    response: Callable[[Any], Any]


#: SDK package -> the method ``callgate.guard`` taps in it, for the SDKs that stream through a
#: plain generator (``GENERATOR_TYPES``).
READERS = {
    "google": Reader(
        "google.genai._api_client",
        "HttpResponse",
        "_iter_response_stream",
        "_aiter_response_stream",
        data=lambda text: text,
        response=lambda reader: reader.response_stream,
    ),
    "cohere": Reader(
        "cohere.core.http_sse._api",
        "EventSource",
        "iter_sse",
        "aiter_sse",
        data=lambda sse: sse.data or None,
        response=lambda reader: reader._response,
    ),
}


#: SDK package -> the client methods (attribute paths from the client) whose streamed result
#: ``guarded`` guards: ``create`` when called with ``stream=True``, ``stream`` always.
CLIENT_STREAMS: dict[str, frozenset[tuple[str, ...]]] = {
    "openai": frozenset(
        {
            ("chat", "completions", "create"),
            ("chat", "completions", "stream"),
            ("responses", "create"),
            ("responses", "stream"),
        }
    ),
    "anthropic": frozenset({("messages", "create"), ("messages", "stream")}),
}


def helper_text(item: object) -> str | None:
    """The text an item of anthropic's helper stream adds, as its ``text_stream`` yields it:
    a ``content_block_delta`` whose delta is a ``text_delta``; None for any other item."""
    delta = getattr(item, "delta", None)
    if getattr(item, "type", None) != "content_block_delta":
        return None
    if getattr(delta, "type", None) != "text_delta":
        return None
    return str(delta.text)  # type: ignore[union-attr]


#: SDK package -> the client's own request methods that stream when called with
#: ``stream=True``: a framework may call them past the resources (litellm streams Chat
#: Completions through ``client.post``), and ``guarded`` guards what they return.
CLIENT_REQUESTS: dict[str, tuple[str, ...]] = {
    "openai": ("get", "post", "request"),
    "anthropic": ("get", "post", "request"),
}

#: The profiles an ``events`` stream of openai's may be read with, told from its request's
#: URL (``profile_for``): Chat Completions and the APIs that copied it, and the Responses API.
_OPENAI_STREAMS = ("openai", "mistral", "openai-responses")


def stream_type(package: str, class_name: str) -> StreamType | None:
    """How callgate reads an object of ``class_name`` from the SDK ``package``, or None."""
    return STREAM_TYPES.get(package, {}).get(class_name)


def generator_type(package: str, qualified_name: str) -> StreamType | None:
    """How callgate reads a generator of the SDK ``package``'s function ``qualified_name``."""
    return GENERATOR_TYPES.get(package, {}).get(qualified_name)


#: Bedrock operation -> the profile of its event stream.
_BEDROCK_OPERATIONS = {
    "ConverseStream": "bedrock-converse",
    "InvokeModelWithResponseStream": "anthropic",
}


def message_profile(operation: str) -> str | None:
    """The profile of a Bedrock event stream of ``operation``, or None for another."""
    return _BEDROCK_OPERATIONS.get(operation)


def stream_profile(kind: StreamType, url: str | None, provider: str | None) -> str:
    """The profile of a stream of ``kind`` whose request went to ``url``: openai's ``Stream``
    carries Chat Completions chunks or Responses events, told from the endpoint."""
    if kind.profile == "openai" and kind.role == EVENTS and url is not None:
        found = profile_for(url, provider)
        if found in _OPENAI_STREAMS:
            return found
    return kind.profile
