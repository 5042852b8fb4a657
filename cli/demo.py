"""``make demo``: judge a bundled selection of good and bad streams, offline, and show the table.

Each row is what ``callgate check`` decides for one fixture in ``fixtures/conformance``; the
exit column is the code ``check`` would return for it alone.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from cli.files import load_envelope
from reassemble import check

ROOT = Path(__file__).resolve().parents[1] / "fixtures" / "conformance"
SHOWCASE = (
    "openai/valid_fragmented",
    "openai/valid_parallel_interleaved",
    "openai/reused_index_new_id",
    "openai/parseable_prefix_then_more",
    "openai/truncated_after_complete_json",
    "openai/quirk_repeated_finish_openrouter",
    "openai/text_only",
    "mistral/native_parallel_calls",
    "mistral/native_indexless_without_id",
    "anthropic/valid_text_then_two_tools",
    "anthropic/valid_no_argument_tool",
    "anthropic/reused_index_new_id",
    "anthropic/truncated_after_block_stop",
    "anthropic/schema_violation",
)


def main() -> None:
    console = Console(highlight=False)
    table = Table("fixture", "verdict", "exit", "codes", "calls", title="callgate check")
    for name in SHOWCASE:
        report = check(load_envelope(ROOT / f"{name}.json"))
        style = {0: "green", 1: "red"}.get(report.exit_code, "yellow")
        calls = "\n".join(f"{c.name}({c.arguments})" for c in report.calls if c.arguments)
        tolerated = sorted({f.quirk for f in report.findings if f.quirk})
        codes = ", ".join(report.blocking_codes + [f"tolerated: {q}" for q in tolerated])
        table.add_row(name, f"[{style}]{report.status.value}[/{style}]", str(report.exit_code),
                      codes or "-", calls or "-")
    console.print(table)
    console.print("0 = every call may run; 1 = block the whole turn; 2 = nothing to gate or "
                  "invalid input. Try: [bold].venv/bin/callgate check --report text "
                  "fixtures/conformance/openai/reused_index_new_id.json[/bold]")


if __name__ == "__main__":
    main()
