"""Named provider quirks: documented, harmless breaks of the stream rules.

A quirk relaxes exactly one finding code in one narrow shape, and only when the envelope's
``provider`` is one known to have it or the caller allows it by name. An applied quirk is still
reported, as a finding with ``severity: "tolerated"`` and the quirk's name: never silent.
Each entry cites the evidence it rests on.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from callgate.reassemble.codes import Code
from callgate.reassemble.errors import UsageError


@dataclass(frozen=True, kw_only=True)
class Quirk:
    name: str
    relaxes: Code
    providers: frozenset[str]
    description: str
    evidence: tuple[str, ...]

    @property
    def seen_from(self) -> str:
        """The providers it is seen from, as the docs and ``callgate explain`` name them."""
        return ", ".join(sorted(self.providers)) or "any"


QUIRKS: dict[str, Quirk] = {
    q.name: q
    for q in (
        Quirk(
            name="repeated_finish_chunk",
            relaxes=Code.DUPLICATE_TERMINAL,
            providers=frozenset({"openrouter", "avian"}),
            description=(
                "A second chunk repeats the same finish_reason for a choice and carries no tool "
                "call delta."
            ),
            evidence=(
                "corpus: openrouter/chat-openrouter-anthropic-parallel-fantasy.sse",
                "corpus: avian/chat-avian-kimi-parallel-fantasy.sse",
                "skye-harris/hass_local_openai_llm PR #92",
            ),
        ),
        Quirk(
            name="missing_tool_call_index",
            relaxes=Code.INVALID_SLOT,
            providers=frozenset({"ollama", "gemini-openai-compat"}),
            description=(
                "tool_calls entries carry no index; each entry that names a function is a whole "
                "call and takes the next slot of its choice."
            ),
            evidence=(
                "corpus: ollama/chat-ollama-openai-compat-magentic.sse",
                "corpus: gemini-openai-compat/chat-gemini-openai-compat-magentic.sse",
                "openai/openai-python #2806; ollama/ollama #7881",
            ),
        ),
        Quirk(
            name="stop_finish_with_tool_calls",
            relaxes=Code.WRONG_TERMINAL_REASON,
            providers=frozenset({"ollama", "gemini-openai-compat"}),
            description='finish_reason is "stop" on a choice that made tool calls.',
            evidence=(
                "corpus: ollama/chat-ollama-openai-compat-magentic.sse",
                "corpus: gemini-openai-compat/chat-gemini-openai-compat-magentic.sse",
                "googleapis/python-genai #2868",
            ),
        ),
        Quirk(
            name="missing_call_id",
            relaxes=Code.MISSING_CALL_ID,
            providers=frozenset({"gemini-openai-compat"}),
            description="Tool calls carry no id; results are matched by position instead.",
            evidence=(
                "corpus: gemini-openai-compat/chat-gemini-openai-compat-magentic.sse",
                "microsoft/autogen #4878",
            ),
        ),
        Quirk(
            name="choice_message_mirror",
            relaxes=Code.UNSUPPORTED_EVENT,
            providers=frozenset({"writer"}),
            description=(
                "Each streamed choice also carries a non-standard message object equal to its "
                "delta; tolerated only while the two are equal."
            ),
            evidence=("corpus: writer/chat-writer-palmyra-x4-7-calls-openllmetry.sse",),
        ),
        Quirk(
            name="rotating_item_id",
            relaxes=Code.IDENTITY_COLLISION,
            providers=frozenset({"github-copilot"}),
            description=(
                "OpenAI Responses item ids (item.id, item_id) change on every event of one "
                "output item; events are matched to items by output_index instead. call_id and "
                "name must still stay the same."
            ),
            evidence=(
                "vercel/ai packages/openai/src/responses/__fixtures__/"
                "github-copilot-id-rotation.1.chunks.txt",
                'vercel/ai test "should correlate rotated item ids by output index"',
            ),
        ),
    )
}


def quirks_in_force(provider: str | None, allowed: Iterable[str] = ()) -> frozenset[str]:
    """The quirk names that apply: those the provider is known for plus those allowed by name.

    Raises ``UsageError`` for an allowed name that is not a known quirk (a caller's mistake).
    """
    by_provider = _BY_PROVIDER.get(provider, frozenset())
    if not allowed:  # none allowed by name: every engine but a caller's, once a turn
        return by_provider
    allowed = frozenset(allowed)
    unknown = sorted(allowed - QUIRKS.keys())
    if unknown:
        raise UsageError(f"unknown quirk {unknown[0]!r}; known: {', '.join(sorted(QUIRKS))}")
    return by_provider | allowed


#: Each provider's quirks (every engine asks, once per turn).
_BY_PROVIDER: dict[str | None, frozenset[str]] = {
    provider: frozenset(q.name for q in QUIRKS.values() if provider in q.providers)
    for provider in sorted({provider for q in QUIRKS.values() for provider in q.providers})
}
