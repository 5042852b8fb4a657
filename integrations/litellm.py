"""``CallgateGuardrail``: callgate inside the LiteLLM proxy, after its stream converters, so it
sees exactly what every client behind the gateway will get.

How this works: LiteLLM runs a guardrail's ``async_post_call_streaming_iterator_hook`` on every
streamed response when the guardrail's class itself defines it (LiteLLM looks in the class's own
``__dict__``: a subclass must define it again), with every item and no sampling; defining
``apply_guardrail`` too would route ``/v1/messages`` to LiteLLM's sampled path, so it is not
defined. The hook reads the tools from the request, hands each item on at once and holds the
turn's terminal evidence (``callgate.integrations.gateway``). On a turn whose calls may not run it
raises ``CallgateBlocked``, a plain exception with ``status_code = 400``: once the stream started,
LiteLLM ends it with its SSE error frame, which the openai and anthropic SDKs raise; an
``HTTPException`` would cut a ``/v1/messages`` stream instead. A route callgate does not read
(embeddings, a provider's own path) passes through untouched, with one log line. A turn callgate
cannot judge (an item it cannot read, tools it cannot read, a failure of its own) fails closed:
``CallgateUnjudged`` (status 500) ends it the same way, with one log line. ``on_error: pass``
under ``litellm_params`` chooses availability instead: such a turn then goes on unjudged, one
log line and an ``unjudged`` count each (a gate that lets through what it cannot read lets
through what it exists to stop: choose it knowingly). The guardrail keeps nothing across turns:
any number of gateway replicas can run it.

Registered in the proxy's config:

    guardrails:
      - guardrail_name: callgate
        litellm_params:
          guardrail: callgate.integrations.litellm.CallgateGuardrail
          mode: post_call
          default_on: true
          # on_error: pass   # availability first: pass on what callgate cannot judge
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Iterable
from typing import Any

from litellm.integrations.custom_guardrail import CustomGuardrail

from callgate.integrations.gateway import GatewayTurn, profile_of_route
from callgate.integrations.otel import record_unjudged
from callgate.reassemble.errors import UsageError
from callgate.reassemble.gate import ON_ERROR, Blocked, Unjudged
from callgate.reassemble.quirks import QUIRKS

log = logging.getLogger("callgate.litellm")


def _unjudged(route: str, error: Exception, on_error: str) -> None:
    done = "passed on unjudged" if on_error == "pass" else "blocked, unjudged,"
    log.warning("callgate: %s %s after %s: %s", route, done, type(error).__name__, error)


class CallgateBlocked(Exception):
    """A turn whose tool calls may not run. LiteLLM reads ``status_code`` for the error frame's
    status (``invalid_request_error``) and ``type``, on the routes that keep it, for its type."""

    status_code = 400
    type = "callgate_blocked"

    def __init__(self, blocked: Blocked) -> None:
        super().__init__(str(blocked))
        self.report = blocked.report


class CallgateUnjudged(Exception):
    """A turn callgate could not judge, under ``on_error: block``: it may not run either."""

    status_code = 500
    type = "callgate_unjudged"

    def __init__(self, unjudged: Unjudged) -> None:
        super().__init__(str(unjudged))


class CallgateGuardrail(CustomGuardrail):  # type: ignore[misc]
    """The guardrail LiteLLM builds from the config. ``allow`` (a list under ``litellm_params``)
    names quirks to tolerate, ``on_error`` (``block`` or ``pass``) what a turn callgate cannot
    judge does; every other setting is LiteLLM's."""

    def __init__(self, allow: Iterable[str] = (), on_error: str = "block", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.allow, self.on_error = tuple(allow or ()), on_error
        unknown = [name for name in self.allow if name not in QUIRKS]
        if unknown:  # at the proxy's start, not as every turn passing unjudged
            raise ValueError(
                f"callgate: unknown quirk {unknown[0]!r} under allow; known: {', '.join(QUIRKS)}"
            )
        if on_error not in ON_ERROR:
            raise ValueError(f"callgate: on_error {on_error!r} is not one of {', '.join(ON_ERROR)}")

    async def async_post_call_streaming_iterator_hook(
        self, user_api_key_dict: Any, response: Any, request_data: dict[str, Any]
    ) -> AsyncGenerator[Any, None]:
        route = str(getattr(user_api_key_dict, "request_route", None) or "")
        turn = self._turn(route, request_data)
        if turn is None:
            async for item in response:
                yield item
            return
        try:
            async for item in response:
                try:
                    ready = turn.take(item)
                except Exception as error:  # an item it cannot read, or callgate's own failure
                    _unjudged(route, error, self.on_error)
                    for out in turn.failed(error, item):  # raises Unjudged unless it passes
                        yield out
                    async for rest in response:
                        yield rest
                    return
                for out in ready:
                    yield out
            try:
                held = turn.finish()
            except Blocked as blocked:
                raise CallgateBlocked(blocked) from None
            except Exception as error:  # callgate's own failure
                _unjudged(route, error, self.on_error)
                held = turn.failed(error)
        except Unjudged as unjudged:
            raise CallgateUnjudged(unjudged) from None
        for out in held:
            yield out

    def _turn(self, route: str, request_data: dict[str, Any]) -> GatewayTurn | None:
        """The turn to gate, or None for a route callgate does not read. Raises
        ``CallgateUnjudged`` for a request it cannot read, unless ``on_error`` passes it."""
        profile = profile_of_route(route)
        if profile is None:
            log.info("callgate: %s is not a stream callgate reads; passed on unjudged", route)
            return None
        try:
            return GatewayTurn(profile, request_data, allow=self.allow, on_error=self.on_error)
        except UsageError as error:
            _unjudged(route, error, self.on_error)
            if self.on_error == "pass":
                record_unjudged(profile, type(error).__name__)
                return None
            raise CallgateUnjudged(Unjudged(error)) from None
