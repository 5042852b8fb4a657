"""Mistral La Plateforme chat streams: the OpenAI chunk shape, but calls arrive whole, without
``index`` or ``type``, several per delta, with ``finish_reason`` in the same chunk (recorded:
corpus mistral/chat-mistral-large-parallel-magentic.sse). An index-less entry that carries an id
and a name takes the next slot of its choice in arrival order; one without an id cannot be placed.
Entries that do carry an index (other models hosted on Mistral's API stream incrementally) are
read exactly as OpenAI's.
"""

from __future__ import annotations

from callgate.reassemble.profiles.base import Profile
from callgate.reassemble.profiles.openai import CHAT_WIRE, ChatTranslator

PROFILE = Profile(
    name="mistral",
    translator=lambda quirks, request: ChatTranslator(quirks, mistral=True),
    # Mistral's endpoint is OpenAI's path: this profile reads it when the provider is Mistral.
    claims=frozenset({"mistral"}),
    **CHAT_WIRE,
)
