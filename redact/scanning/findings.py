"""What a scan reports: a finding's kind, where it is, and the pattern that caught it.

The patterns are stable codes, as finding codes are: ``PATTERN_DOCS`` gives each its one line
of documentation (``docs/scan.md`` is generated from it).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from callgate.redact.leaks import PATTERNS


class Kind(StrEnum):
    #: A credential in a format the leak gate knows, in any encoding the scan decodes.
    CREDENTIAL = "credential"
    #: Prompt material of a request: messages, system text, instructions, tool results.
    PROMPT = "prompt"
    #: Model text or tool-call arguments left unmasked in a fixture that says it masked them.
    OUTPUT = "output"


@dataclass(frozen=True)
class ScanFinding:
    """One place in one file. ``location`` is a JSON pointer, or an exchange's label and field
    (``interaction 2 request.body``), followed by the JSON pointer inside an embedded body."""

    location: str
    kind: Kind
    pattern: str

    def line(self, file: str) -> str:
        """``FILE:LOCATION: KIND (pattern)``: what ``callgate scan`` prints."""
        return f"{file}:{self.location}: {self.kind.value} ({self.pattern})"


_CREDENTIAL_DOCS = {
    "anthropic-key": "An Anthropic API key (sk-ant-...).",
    "openai-key": "An OpenAI API key (sk-..., sk-proj-..., sk-svcacct-..., sk-admin-...).",
    "google-api-key": "A Google API key (AIza...), as Gemini and Vertex take it.",
    "groq-key": "A Groq API key (gsk_...).",
    "xai-key": "An xAI API key (xai-...).",
    "huggingface-token": "A Hugging Face access token (hf_...).",
    "aws-access-key": "An AWS access key id (AKIA... or ASIA...), as Bedrock requests sign with.",
    "github-token": "A GitHub token (ghp_, gho_, ghu_, ghs_, ghr_ or github_pat_...).",
    "jwt": "A JSON Web Token (three base64url parts, eyJ...eyJ...): a session or service token.",
    "bearer-token": "A token after 'Bearer ' in any text, not only an Authorization header.",
}
assert _CREDENTIAL_DOCS.keys() == PATTERNS.keys(), "document every leak-gate pattern"

#: Every pattern the scan reports, by kind, with one line saying what it caught.
PATTERN_DOCS: dict[Kind, dict[str, str]] = {
    Kind.CREDENTIAL: {
        **_CREDENTIAL_DOCS,
        "credential-header": "A request header named like a credential (authorization, "
        "x-api-key, cookie, ...) holding a token-like value.",
        "credential-from-exchange": "The value of such a header again elsewhere in its exchange "
        "(the URL, another header, a body), plain, URL-encoded or base64.",
    },
    Kind.PROMPT: {
        "messages": "A request's conversation: messages (Chat Completions, Messages, Mistral, "
        "Ollama, Cohere).",
        "contents": "A request's conversation as Gemini sends it: contents.",
        "input": "A request's input items (Responses API), or the text of an embedding request.",
        "prompt": "A request's prompt text (completions, text generation).",
        "system": "A request's system text: system, systemInstruction, system_instruction.",
        "instructions": "A request's instructions (Responses API): its system prompt.",
        "tool-result": "A tool's result sent back to the model: a tool message, a tool_result "
        "block, a function_call_output item or a functionResponse part.",
    },
    Kind.OUTPUT: {
        "text": "Model text that the fixture's meta.redaction says was masked, but is not.",
        "arguments": "Tool-call arguments that the fixture's meta.redaction says were masked, "
        "but are not.",
    },
}


def markdown() -> str:
    """``docs/scan.md``: every pattern with its line (``make docs`` writes it)."""
    rows = [
        f"| `{kind.value}` | `{pattern}` | {text} |"
        for kind, patterns in PATTERN_DOCS.items()
        for pattern, text in patterns.items()
    ]
    return "\n".join(
        [
            "# What `callgate scan` reports",
            "",
            "Generated from `redact/scanning/findings.py`. Each finding is one line, "
            "`FILE:LOCATION: KIND (pattern)`; the patterns are stable and never renamed. How to "
            "run the scan in pre-commit and in GitHub Actions: [ci.md](ci.md).",
            "",
            "| Kind | Pattern | What it found |",
            "| --- | --- | --- |",
            *rows,
            "",
        ]
    )
