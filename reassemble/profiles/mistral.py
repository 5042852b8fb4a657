"""Mistral La Plateforme chat streams: the OpenAI chunk shape, but calls arrive whole, without
``index`` or ``type``, several per delta, with ``finish_reason`` in the same chunk (recorded:
corpus mistral/chat-mistral-large-parallel-magentic.sse). An index-less entry that carries an id
and a name takes the next slot of its choice in arrival order; one without an id cannot be placed.
Entries that do carry an index (other models hosted on Mistral's API stream incrementally) are
read exactly as OpenAI's.
"""

from __future__ import annotations

from callgate.reassemble.profiles import Profile, any_item_has
from callgate.reassemble.profiles.openai import ChatTranslator, accepted_reasons

PROFILE = Profile(
    name="mistral",
    stream_key="chunks",
    call_reasons=frozenset({"tool_calls"}),
    accepted_reasons=accepted_reasons,
    turn_ends_slots=True,
    done_sentinel=True,
    carries_terminal=any_item_has("choices", "finish_reason"),
    translator=lambda quirks, request: ChatTranslator(quirks, mistral=True),
)
