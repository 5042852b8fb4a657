"""Free-form tool input (OpenAI's custom tools) against the format its tool declares.

A custom tool declares ``format: {"type": "text"}`` (any text) or ``{"type": "grammar",
"syntax": "lark" | "regex", "definition": ...}`` (OpenAI's function-calling guide, "Custom tools"
and "Context-free grammars"). OpenAI constrains the model's sampling with LLGuidance: its Lark
dialect (greedy lexer, no Earley ambiguity, terminals in Rust ``regex`` syntax) and, for
``regex``, a Rust regular expression that must match the whole input. The ``lark`` package and
Python's ``re`` read both differently (``lark`` cannot build the guide's math grammar; ``\\p{L}``,
``\\z`` and class intersection are Rust-only), so the grammar is compiled and run by
``llguidance`` itself, byte by byte: the input is whole when every byte is taken and the
grammar accepts there, cut when every byte is taken and more must follow, and wrong at the first
byte it refuses.

``llguidance`` is imported when the first grammar is compiled, never by ``import callgate``. A
tool's format is read once per process (``tool_input.input_check`` keeps it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from callgate.reassemble.codes import Code

_MESSAGE_CHARS = 200


class GrammarProblem(Exception):
    """A declared format callgate cannot use: every call to the tool blocks."""


@dataclass(frozen=True)
class FreeformFormat:
    """A custom tool's format: any text (``matcher`` None), or a compiled grammar."""

    kind: str
    matcher: Any = None

    def problems(self, text: object) -> list[tuple[Code, str]]:
        if not isinstance(text, str):
            return [(Code.GRAMMAR_VIOLATION, "the input is not text")]
        if self.matcher is None:
            return []
        return _match(self.matcher, text, self.kind)


def read_format(declared: object) -> FreeformFormat:
    """The format a custom tool declares (``None``: text, as OpenAI defaults it). Raises
    ``GrammarProblem`` for a format callgate does not know or a grammar that does not compile."""
    if declared is None:
        return FreeformFormat("text")
    if not isinstance(declared, dict):
        raise GrammarProblem("format is not an object")
    kind = declared.get("type")
    if kind == "text":
        return FreeformFormat("text")
    if kind != "grammar":
        raise GrammarProblem(f"format type {str(kind)[:40]!r} is not known; known: text, grammar")
    syntax, definition = declared.get("syntax"), declared.get("definition")
    if syntax not in ("lark", "regex"):
        raise GrammarProblem(f"grammar syntax {str(syntax)[:40]!r} is not lark or regex")
    if not isinstance(definition, str):
        raise GrammarProblem("the grammar's definition is not text")
    return FreeformFormat(f"{syntax} grammar", _compile(syntax, definition))


class _ByteTokenizer:
    """Every byte a token of its own, and one end token: llguidance then matches bytes, with no
    model's vocabulary (``llguidance.TokenizerWrapper`` reads these attributes). The end token
    needs no mark as special: an input is fed byte by byte, so no input can spell it."""

    def __init__(self) -> None:
        self.tokens = [bytes([byte]) for byte in range(256)] + [b"<end>"]
        self.eos_token_id = 256
        self.bos_token_id = None

    def __call__(self, data: bytes) -> list[int]:
        return list(data)


_LLG: Any = None


def _llguidance() -> Any:
    """The module and a byte tokenizer, made once."""
    global _LLG
    if _LLG is None:
        try:
            import llguidance
        except ImportError as error:
            raise GrammarProblem(
                "grammars are checked with llguidance, which is not installed "
                "(pip install llguidance)"
            ) from error
        tokenizer = llguidance.LLTokenizer(llguidance.TokenizerWrapper(_ByteTokenizer()))
        limits = llguidance.LLParserLimits(verbose_errors=False)
        _LLG = (llguidance, tokenizer, limits)
    return _LLG


def _compile(syntax: str, definition: str) -> Any:
    llg, tokenizer, limits = _llguidance()
    grammar = (
        llg.LLMatcher.grammar_from_lark(definition)
        if syntax == "lark"
        else llg.LLMatcher.grammar_from_regex(definition)
    )
    # Neither call above validates; the matcher reports a grammar it cannot build as an error.
    matcher = llg.LLMatcher(tokenizer, grammar, log_level=0, limits=limits)
    if matcher.is_error():
        raise GrammarProblem(
            f"the {syntax} grammar does not compile: {_clean(matcher.get_error())}"
        )
    return matcher


def _clean(message: str) -> str:
    return " ".join(message.replace("<non-verbose/>", "").split())[:_MESSAGE_CHARS]


def _match(template: Any, text: str, kind: str) -> list[tuple[Code, str]]:
    # A copy per input: a matcher that refused a byte stays refused, even after reset().
    matcher = template.deep_copy()
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        return [(Code.INVALID_UNICODE, "the input holds a lone surrogate, which no UTF-8 holds")]
    taken = matcher.try_consume_tokens(list(data))
    if matcher.is_error():  # llguidance's own bound on a parse, not the input's fault
        return [
            (
                Code.UNSUPPORTED_GRAMMAR,
                f"the {kind} could not be matched to the end: {_clean(matcher.get_error())}",
            )
        ]
    if taken < len(data):
        if matcher.is_stopped():
            why = "the input goes on after a complete match"
        else:
            matcher.consume_token(data[taken])
            why = _clean(matcher.get_error())
        return [(Code.GRAMMAR_VIOLATION, f"the {kind} refuses byte {taken}: {why}")]
    if not matcher.is_accepting():
        return [
            (
                Code.GRAMMAR_INCOMPLETE,
                f"the input ends after {len(data)} bytes, before the {kind} is complete",
            )
        ]
    return []
