"""What each finding code means, what typically causes it, and how to recover.

This is the single source for ``docs/findings.md`` (generated; a test keeps it in step) and for
``callgate explain``.
"""

from __future__ import annotations

from dataclasses import dataclass

from callgate.reassemble.codes import Code


@dataclass(frozen=True)
class Entry:
    meaning: str
    causes: str
    recovery: str


_QUARANTINE = (
    "Execute nothing from this turn; keep the redacted fixture and report the adapter "
    "and provider versions."
)

CATALOGUE: dict[Code, Entry] = {
    Code.IDENTITY_COLLISION: Entry(
        "A slot that already has an id or name receives a different non-empty id or name.",
        "A gateway or server reuses tool-call index 0 for a second parallel call (Ollama, "
        "Bedrock via proxies, vLLM speculative decoding); a reused Anthropic block index.",
        "Quarantine the whole turn; do not guess the calls apart or invent indices. Capture the "
        "raw events earlier in the pipeline to find who rewrote the index.",
    ),
    Code.DUPLICATE_CALL_ID: Entry(
        "Two different slots of the turn carry the same call id.",
        "A proxy re-chunks calls and repeats ids; a provider generates ids per chunk.",
        "Block the turn: tool results could not be matched to calls unambiguously.",
    ),
    Code.MISSING_CALL_ID: Entry(
        "A call ended without ever receiving a non-empty id.",
        "Providers that omit ids (older Gemini OpenAI-compatible streams), or a dropped first "
        "delta.",
        "Block, or allow the provider's documented quirk by name if results are matched by "
        "position in your stack.",
    ),
    Code.MISSING_TOOL_NAME: Entry(
        "A call ended without ever receiving a function name.",
        "The first delta of the call was lost, or the provider sent the name in a field callgate "
        "does not read.",
        "Block the turn; without a name there is no schema and no tool to run.",
    ),
    Code.INVALID_SLOT: Entry(
        "A fragment cannot be placed in a slot: its index is missing, negative, not an integer, "
        "or (Mistral) an index-less call has no id. The turn fails even when no call was read: "
        "the fragment may be one.",
        "Ollama and Gemini's OpenAI-compatible endpoint omit tool_calls[].index; gateways send "
        "the index as a string.",
        "Block; if the provider documents whole index-less calls, allow the "
        "missing_tool_call_index quirk for it.",
    ),
    Code.DUPLICATE_START: Entry(
        "A slot was started a second time (Anthropic content_block_start on an index in use).",
        "A proxy replays events, or reuses a content-block index for a new block.",
        _QUARANTINE,
    ),
    Code.DELTA_BEFORE_START: Entry(
        "A fragment or block end arrived for a slot that was never started.",
        "Events were dropped or reordered between the provider and the recorder.",
        _QUARANTINE,
    ),
    Code.MISSING_TERMINAL: Entry(
        "The stream ended before the provider ended a call or the turn.",
        "Network cut, client or proxy timeout, upstream abort, max_tokens in a server that "
        "forgets the finish chunk; a recording that lost its tail.",
        "Mark the outcome unknown and do not replay automatically. Retry only under an "
        "idempotency policy, with a fresh turn.",
    ),
    Code.WRONG_TERMINAL_REASON: Entry(
        "A turn holding calls ended with a reason other than the tool-call reason "
        "(tool_calls / tool_use), e.g. length, max_tokens, end_turn, content_filter, or an "
        "OpenAI Realtime response ended cancelled, incomplete or failed.",
        "The call was cut by the token limit or a filter; OpenAI says stop for a named "
        "tool_choice (accepted); Ollama and Gemini's OpenAI-compatible endpoint say stop; the "
        "user spoke over a Realtime voice model (turn_detected) or the client cancelled the "
        "response.",
        "Do not execute: the arguments may be cut, or the model withdrew the response. Raise "
        "max_tokens and retry the turn, or wait for the next response.",
    ),
    Code.DUPLICATE_TERMINAL: Entry(
        "A call or turn was ended twice.",
        "OpenRouter and Avian repeat the finish chunk (a named quirk); proxies that replay the "
        "last chunk.",
        "Block unless the provider's quirk applies; a second terminal with another reason is "
        "never tolerated.",
    ),
    Code.DELTA_AFTER_TERMINAL: Entry(
        "A fragment arrived after its call or turn had ended.",
        "Accumulators that treat parseable JSON as finished hide this; servers that flush "
        "buffered tokens after the finish chunk.",
        _QUARANTINE,
    ),
    Code.CALL_WITHDRAWN: Entry(
        "The provider withdrew a call it had sent: Gemini Live's toolCallCancellation names "
        "its id.",
        "The user interrupted the model's turn (spoke over a voice agent) after the toolCall "
        "was sent.",
        "Do not execute the withdrawn request's calls; undo one that already ran where it had "
        "side effects, and answer the turn the model takes next.",
    ),
    Code.TERMINAL_WITHOUT_CALL: Entry(
        "The turn ended with the tool-call reason but holds no call callgate could read.",
        "Calls were sent in a form callgate does not read (custom tools, legacy function_call) "
        "or were dropped.",
        "Block; look at the unsupported_event or invalid_slot findings that usually come with it.",
    ),
    Code.STREAM_ERROR: Entry(
        "The provider sent an error object or event mid-stream.",
        "Overload (Anthropic overloaded_error), quota, server errors reported with HTTP 200 "
        "(OpenRouter, vLLM).",
        "Treat the turn as failed; retry under your idempotency policy.",
    ),
    Code.EVENT_GAP: Entry(
        "The stream's own event counter (OpenAI Responses' sequence_number) skipped a number or "
        "went back: events were lost, duplicated or reordered on the way.",
        "A proxy or recorder that drops or replays events; a reconnect that resumed mid-stream.",
        _QUARANTINE,
    ),
    Code.UNSUPPORTED_EVENT: Entry(
        "An event, block, delta or field this profile cannot interpret, where tool data could "
        "be: the turn fails even when no call was read, as what was not read may be one.",
        "A new provider event type, legacy function_call deltas, custom tool calls, a gateway's "
        "non-standard shape, an SSE body that stops being UTF-8 (the rest of it is one text "
        "event).",
        "Keep the fixture, add a reviewed profile rule or quirk, and block until then; never drop "
        "tool data silently.",
    ),
    Code.INVALID_ARGUMENTS_JSON: Entry(
        "The reassembled argument text is not JSON (RFC 8259), or is empty.",
        "Truncation, a fine-grained tool streaming cut, a model writing invalid JSON, fragments "
        "merged from two calls.",
        "Do not repair by intuition; block and retry the turn.",
    ),
    Code.TRAILING_DATA: Entry(
        "The argument text holds a complete JSON value followed by more text.",
        "Two calls' fragments merged into one slot; a parser that stopped at the first object "
        "would have run a prefix.",
        _QUARANTINE,
    ),
    Code.NON_FINITE_NUMBER: Entry(
        "The arguments hold NaN, Infinity or a number that overflows to infinity (1e400).",
        "Models writing Python-style floats; parsers that accept them pass them on.",
        "Block; a tool must never receive a non-finite number it did not ask for.",
    ),
    Code.DUPLICATE_KEY: Entry(
        "An object in the arguments names the same member twice.",
        "Model output; parsers disagree on which value wins, so the tool and the validator could "
        "see different arguments.",
        "Block the turn.",
    ),
    Code.INVALID_UNICODE: Entry(
        "The arguments hold a lone surrogate escape or bytes that are not UTF-8.",
        "Text split and re-encoded badly by a gateway; model output.",
        "Block the turn.",
    ),
    Code.LIMIT_EXCEEDED: Entry(
        "The arguments exceed a configured limit: size (1 MiB), nesting depth (128) or number "
        "literal length (1,000 characters). A whole document callgate reads (a recorded body, a "
        "fixture file, a request) may be 256 MiB.",
        "Runaway generation, hostile input.",
        "Block; raise the limit only for tools that really take such input.",
    ),
    Code.ARGUMENTS_NOT_OBJECT: Entry(
        "The arguments parse, but as an array, string, number, boolean or null, not an object.",
        "Double-encoded arguments (a JSON string holding JSON), models answering with a bare "
        "value.",
        "Block; tool arguments are an object of named parameters.",
    ),
    Code.ARGUMENT_MISMATCH: Entry(
        "Two copies of one call's arguments disagree, or a copy of the whole turn leaves a "
        "streamed call out (Anthropic: the input stated in content_block_start and the streamed "
        "input; OpenAI Responses: the .done events and response.completed's output).",
        "A proxy that rewrites one copy; a provider bug.",
        _QUARANTINE,
    ),
    Code.UNKNOWN_TOOL: Entry(
        "The call names a tool with no schema in the envelope, a built-in tool of a type or "
        "version callgate ships no schema for (the message names the versions it knows), or a "
        "tool that takes the other kind of input (a free-form call to a JSON tool, or back).",
        "The model called a tool that was not offered; a request that did not declare the "
        "built-in tool (Anthropic's bash_20250124, OpenAI's shell); a tool version newer than "
        "this callgate.",
        "Block; declare the tool in the request (or tool_schemas) if it is really offered, or "
        "upgrade callgate for a new tool version.",
    ),
    Code.UNSUPPORTED_SCHEMA_KEYWORD: Entry(
        "The tool schema uses a keyword, format, dialect or $ref callgate does not support "
        "(including typos such as requird).",
        "Hand-written schemas; remote $ref; $dynamicRef; OpenAPI-only keywords such as nullable.",
        "Fix or simplify the schema; callgate fails closed instead of ignoring what it cannot "
        "check.",
    ),
    Code.INVALID_SCHEMA: Entry(
        "The tool schema is not a valid JSON Schema, or a local $ref points nowhere.",
        "type: 'strng', required given as a string, a dangling #/$defs reference.",
        "Fix the schema.",
    ),
    Code.SCHEMA_VIOLATION: Entry(
        "The arguments do not satisfy the tool's schema; the finding names the keyword and the "
        "argument path.",
        "Model output that ignores the schema; schema drift between the app and the fixture.",
        "Block; pin the deployed schema and update fixtures deliberately.",
    ),
    Code.INVALID_PATCH: Entry(
        "An apply_patch call's diff does not have the structure its operation needs: a "
        "create_file diff whose lines do not all start with '+', an update_file diff with a line "
        "that is no hunk header, context, removal or addition, or a diff on a delete_file.",
        "A diff cut mid-line or mid-hunk that still parsed as a JSON string; a model that wrote "
        "a unified diff's file headers; a proxy that rewrote the item.",
        "Block: a cut V4A diff still applies without an error and writes a partial file.",
    ),
    Code.GRAMMAR_VIOLATION: Entry(
        "A custom tool's free-form input is refused by the grammar (Lark or regex) its tool "
        "declares; the message names the first byte it refuses.",
        "Two calls' input merged; a proxy that rewrote the input; a grammar changed between the "
        "request and the check.",
        "Block; the sampler that wrote the input was held to this grammar, so a refusal means "
        "the input is not what the model wrote.",
    ),
    Code.GRAMMAR_INCOMPLETE: Entry(
        "A custom tool's input is a valid beginning of a sentence of its grammar, but not a "
        "whole one: the input was cut.",
        "Output cut by max_output_tokens; a stream that lost its last input delta.",
        "Block and retry the turn; never run a cut command or patch.",
    ),
    Code.UNSUPPORTED_GRAMMAR: Entry(
        "A custom tool declares a format callgate cannot check: a grammar that does not compile "
        "in LLGuidance's Lark dialect or Rust regex syntax, a syntax or format type it does not "
        "know, or an input the grammar's parser gives up on (its size bounds).",
        "A grammar with features OpenAI also refuses (lookaround, terminal priorities); a new "
        "format type; llguidance not installed.",
        "Fix the grammar (OpenAI compiles with the same engine), or install llguidance; callgate "
        "fails closed instead of passing input it could not check.",
    ),
}


def markdown() -> str:
    """``docs/findings.md``: every code with its meaning, causes and recovery."""
    lines = [
        "# Finding codes",
        "",
        "Generated from `reassemble/catalogue.py`; `callgate explain CODE` prints the same "
        "text. Codes are stable: they are never renamed.",
        "",
    ]
    for code, entry in CATALOGUE.items():
        lines += [
            f"## `{code.value}`",
            "",
            f"**Meaning.** {entry.meaning}",
            "",
            f"**Typical causes.** {entry.causes}",
            "",
            f"**Recovery.** {entry.recovery}",
            "",
        ]
    return "\n".join([*lines, *_provider_defined_tools()])


def _provider_defined_tools() -> list[str]:
    """The tool types callgate ships a schema for, and where each schema's sources are cited."""
    from callgate.reassemble.profiles import tools_anthropic, tools_openai

    lines = [
        "# Provider-defined tools",
        "",
        "Tools a provider defines carry no JSON Schema in the request: a call to one is checked "
        "against the schema callgate ships for its tool type and version (a type or version not "
        "listed here is `unknown_tool`), read with what the request declared (a display size, "
        "`enable_zoom`). The module named cites the documentation and SDK types each schema is "
        "written from. Custom tools (`type: custom`) are checked against their declared format: "
        "`text`, or a Lark or regex grammar in LLGuidance's dialect, run by llguidance "
        "(`grammar_violation`, `grammar_incomplete`, `unsupported_grammar`).",
        "",
        "| provider | tool type | schema written in |",
        "| --- | --- | --- |",
    ]
    for provider, module in (("OpenAI", tools_openai), ("Anthropic", tools_anthropic)):
        where = f"`reassemble/profiles/{module.__name__.rsplit('.', 1)[1]}.py`"
        lines += [f"| {provider} | `{kind}` | {where} |" for kind in module.BUILDERS]
    return [*lines, ""]
