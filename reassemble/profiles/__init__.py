"""Provider profiles: one module each, all built the same way, looked up in ``PROFILES``.

A profile translates one raw provider event into provider-neutral events
(``callgate.reassemble.events``). It keeps only the state it needs to read the wire format (which
block
index is which kind, the next free slot for index-less calls); what a slot *is* and whether the
turn may run is the engine's business.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol, TypeGuard

from callgate.reassemble.events import Event


def is_index(value: object) -> TypeGuard[int]:
    """A slot or choice index on the wire: a non-negative integer, and not a boolean (which
    Python counts as an int)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class Translator(Protocol):
    def translate(self, raw: object) -> list[Event]:
        """The neutral events one raw provider event amounts to, in order."""
        ...


@dataclass(frozen=True)
class Profile:
    name: str
    #: The envelope key holding this profile's stream: "chunks" or "events".
    stream_key: str
    #: Terminal reasons that claim the turn made tool calls ("tool_calls", "tool_use").
    call_reasons: frozenset[str]
    #: Terminal reasons that properly end a choice holding calls, given the request parameters.
    accepted_reasons: Callable[[Mapping[str, object]], frozenset[str]]
    #: Whether the end of a turn also ends its slots (Chat Completions), or each slot has its
    #: own end event (Anthropic ``content_block_stop``).
    turn_ends_slots: bool
    #: Build a translator for one stream, given the quirks in force and the request parameters.
    translator: Callable[[frozenset[str], Mapping[str, object]], Translator]
    #: Whether a call must carry an id (Gemini's functionCall.id is optional).
    requires_call_id: bool = True
    #: Whether the SSE stream ends with ``data: [DONE]`` (Chat Completions).
    done_sentinel: bool = False
    #: Whether a raw event carries the turn's terminal evidence, or follows it (what a proxy in
    #: enforce mode holds back until the verdict is known).
    carries_terminal: Callable[[object], bool] = lambda raw: False
    #: Whether a raw event is the last that belongs to the turn (besides ``[DONE]``).
    ends_stream: Callable[[object], bool] = lambda raw: False


def event_type_in(*types: str) -> Callable[[object], bool]:
    """A test on the ``type`` field of a raw event (Anthropic, OpenAI Responses)."""
    return lambda raw: isinstance(raw, dict) and raw.get("type") in types


def any_item_has(items: str, key: str) -> Callable[[object], bool]:
    """A test that some entry of the raw event's list ``items`` has a non-null ``key``
    (``choices[].finish_reason``, Gemini's ``candidates[].finishReason``)."""
    def test(raw: object) -> bool:
        entries = raw.get(items) if isinstance(raw, dict) else None
        return isinstance(entries, list) and any(
            isinstance(entry, dict) and entry.get(key) is not None for entry in entries)

    return test


def _registry() -> dict[str, Profile]:
    from callgate.reassemble.profiles import anthropic, gemini, mistral, openai, openai_responses

    return {p.name: p for p in (openai.PROFILE, mistral.PROFILE, anthropic.PROFILE,
                                    openai_responses.PROFILE, gemini.PROFILE)}


PROFILES: dict[str, Profile] = _registry()
