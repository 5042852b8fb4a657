"""One streamed turn inside an LLM gateway, gated: the items a gateway hands its client go on at
once, the terminal evidence is held until the turn is judged.

How this works: a ``GatewayTurn`` is made from the endpoint's route and the request body the
gateway received (the tools in the client's dialect, ``tool_choice``). ``take`` gets each item
the gateway would send and returns those that go now; ``finish`` returns the held rest when the
turn may run, and raises ``Blocked`` when it may not. Items are the gateway's objects: parsed
events (a dict, or a pydantic model of the wire JSON), each read as one event, or raw SSE bytes,
cut into whole events here (a gateway passes bytes on as it read them from the socket, not
frame-aligned), so only whole events go on and a held event is held whole.

What is held: from the first event that carries the turn's end (the gate's rule: Chat
Completions' chunk with a ``finish_reason`` and every chunk after it, Anthropic's
``message_delta``), and on the Responses API also from the first event that completes a call
or part of one (``completes_call``: the ``done`` of a function's arguments, a custom tool's
input, a shell command or a diff, and ``response.output_item.done`` of any item that may be a
call): there a client can act on a complete call long before ``response.completed``.

When callgate cannot judge a turn (an item it cannot read, or a failure of its own), the turn
fails closed: ``failed`` raises ``Unjudged``, and the gateway ends the stream with an error
instead of a finished turn. ``on_error="pass"`` keeps availability first instead: the rest of
the stream goes on unjudged, and the turn is counted as ``unjudged`` (OpenTelemetry).

Sans-I/O, like the gate; nothing here imports a gateway.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from callgate.integrations.otel import record_unjudged, record_verdict
from callgate.reassemble.gate import Gate, Unjudged, require_on_error
from callgate.reassemble.profiles import PROFILES, profile_for
from callgate.reassemble.profiles.responses_sites import completes_call
from callgate.reassemble.readers import SSEReader
from callgate.reassemble.report import Report
from callgate.reassemble.sdk import event_json


def profile_of_route(route: str) -> str | None:
    """The profile whose events a gateway's endpoint ``route`` streams, or None."""
    return profile_for(route)


class GatewayTurn:
    """One turn read with ``profile``, asked with the request body ``request`` (its ``tools``
    and ``tool_choice``); ``provider`` and ``allow`` are the engine's; ``on_error`` what
    ``failed`` does (``ON_ERROR``). Raises ``UsageError`` for tools callgate cannot read or an
    ``on_error`` it does not know."""

    def __init__(
        self,
        profile: str,
        request: Mapping[str, Any],
        *,
        provider: str | None = None,
        allow: tuple[str, ...] = (),
        on_verdict: Callable[[Report, str | None], None] = record_verdict,
        on_error: str = "block",
    ) -> None:
        require_on_error(on_error)
        self._on_error, self._profile = on_error, profile
        choice = request.get("tool_choice")
        self._gate: Gate[Any] = Gate(
            profile,
            request.get("tools") or [],
            request={"tool_choice": choice} if isinstance(choice, str | dict) else None,
            provider=provider,
            allow=allow,
            on_verdict=lambda report: on_verdict(report, self.response_id),
            holds_from=completes_call,
        )
        self._received = bytearray()
        self._sent = 0  # bytes of ``_received`` handed on
        self._sse = SSEReader(PROFILES[profile], lambda: bytes(self._received))
        #: The response id the first events named, for the trace.
        self.response_id: str | None = None

    @property
    def report(self) -> Report | None:
        return self._gate.report

    def take(self, item: Any) -> list[Any]:
        """The items to send now for ``item`` (none while holding). Raises ``TypeError`` for
        an item that is neither bytes nor an event."""
        if isinstance(item, bytes | bytearray):
            return self._take_bytes(bytes(item))
        event = item if type(item) is dict else event_json(item)
        self._read(event)
        return [item] if self._gate.pass_on(item) else []

    def finish(self) -> list[Any]:
        """The end of the stream: the held items (and a last, unterminated SSE event) when the
        turn may run; raises ``Blocked`` when it may not."""
        tail: list[Any] = []
        if self._received:
            rest = self._sse.rest()
            if rest:
                self._read_block(rest)
                tail = [rest] if self._gate.pass_on(rest) else []
            for event in self._sse.read(b""):
                self._read(event)
        return self._gate.judge() + tail

    def failed(self, error: Exception, item: Any = None) -> list[Any]:
        """callgate could not judge the turn: ``take`` raised ``error`` for ``item`` (or
        ``finish`` raised it). Fails closed, raising ``Unjudged``, unless ``on_error`` is
        ``"pass"``: then the unjudged rest to send (``give_up``), the turn counted as unjudged."""
        if self._on_error != "pass":
            raise Unjudged(error) from error
        record_unjudged(self._profile, type(error).__name__, self.response_id)
        return self.give_up(item)

    def give_up(self, failed: Any = None) -> list[Any]:
        """Everything received and not sent, ``failed`` (the item ``take`` raised for) among it,
        to pass on unjudged: the gateway handed over something callgate cannot read, or callgate
        failed, and a stream is never broken for either. Nothing is taken after this."""
        out = [item for item in self._gate.unjudged() if not isinstance(item, bytes)]
        unsent = bytes(self._received[self._sent :])
        if unsent:  # held blocks, the framer's partial event and what ``take`` did not cut
            out.append(unsent)
        if failed is not None and not isinstance(failed, bytes | bytearray):
            out.append(failed)
        self._sent = len(self._received)
        return out

    def _take_bytes(self, data: bytes) -> list[Any]:
        self._received += data
        out = []
        for block in self._sse.feed(data):
            self._read_block(block)
            if self._gate.pass_on(block):
                out.append(block)
        self._sent += sum(map(len, out))  # counted once all of them go
        return out

    def _read_block(self, block: bytes) -> None:
        for event in self._sse.read_block(block):
            self._read(event)

    def _read(self, event: object) -> None:
        if self.response_id is None:
            self.response_id = _response_id(event)
        self._gate.read(event)


def _response_id(event: object) -> str | None:
    """The response id an opening event names (a chunk's ``id``, Anthropic's ``message.id``,
    the Responses API's ``response.id``), else None."""
    if not isinstance(event, dict):
        return None
    for holder in (event.get("response"), event.get("message"), event):
        if isinstance(holder, dict) and isinstance(holder.get("id"), str):
            return str(holder["id"])
    return None
