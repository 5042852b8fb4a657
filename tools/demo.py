"""``make demo``: the whole loop, offline, on loopback.

1. A fake provider (``callgate serve``) streams bundled fixtures, good and bad, for each profile.
2. ``callgate record`` runs mitmproxy in front of it; a real app (the openai, anthropic and
   mistralai SDKs, from ``.venv-apps``) makes one streamed tool-call turn per fixture through it.
   The proxy's own terminal lines appear as they happen: the live warnings, then one verdict line
   per turn.
3. The recorded, redacted fixtures are checked offline, and the verdicts shown as a table, next
   to what the SDK itself handed the app.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from callgate.cli.files import load_envelope
from callgate.cli.loopback import free_port, wait_listening
from callgate.cli.serve import FakeProvider, collect
from callgate.reassemble import check

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "tests" / "apps" / "client.py"
APPS_PYTHON = ROOT / ".venv-apps" / "bin" / "python"
#: (sdk, fixture): each turn the app makes.
TURNS = (
    ("openai", "openai/valid_parallel_interleaved"),
    ("openai", "openai/reused_index_new_id"),
    ("openai", "openai/truncated_after_complete_json"),
    ("anthropic", "anthropic/valid_text_then_two_tools"),
    ("anthropic", "anthropic/reused_index_new_id"),
    ("mistral", "mistral/native_parallel_calls"),
    ("mistral", "mistral/native_indexless_without_id"),
)


def _start_record(
    upstream: str, out: Path, home: Path, provider: str | None, console: Console
) -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    command = [
        str(Path(sys.executable).parent / "callgate"),
        "record",
        "--upstream",
        upstream,
        "--listen",
        f"127.0.0.1:{port}",
        "--output-dir",
        str(out),
    ]
    if provider:
        command += ["--provider", provider]
    env = {**os.environ, "CALLGATE_HOME": str(home), "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    threading.Thread(target=_echo, args=(process, console), daemon=True).start()
    if not wait_listening(port, lambda: process.poll() is None):
        raise RuntimeError("callgate record did not start")
    return process, f"http://127.0.0.1:{port}"


def _echo(process: subprocess.Popen[str], console: Console) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        console.print(f"  [dim]proxy |[/dim] {line.rstrip()}", markup=True, highlight=False)


def _app(sdk: str, base: str, tools: Path) -> dict[str, Any]:
    done = subprocess.run(
        [str(APPS_PYTHON), str(APP), sdk, base, "--tools", str(tools)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    result: dict[str, Any] = (
        json.loads(done.stdout)
        if done.returncode == 0
        else {"error": {"type": "app failed", "message": done.stderr[-200:]}}
    )
    return result


def _sdk_summary(result: dict[str, Any]) -> str:
    if result.get("error"):
        return f"raised {result['error']['type']}"
    calls = result.get("tool_calls") or []
    names = ", ".join(str(c.get("name")) for c in calls)
    return f"{len(calls)} call(s): {names}" if calls else "no call"


def main() -> None:
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 150)
    if not APPS_PYTHON.exists():
        console.print("the demo's app needs .venv-apps: run `make demo`")
        raise SystemExit(2)
    fixtures = collect([ROOT / "fixtures" / "conformance"])
    upstream = FakeProvider(fixtures, timing=0.02).start()
    work = Path(tempfile.mkdtemp(prefix="callgate-demo-"))
    console.rule("callgate demo")
    console.print(f"fake provider on {upstream.url}; fixtures will be written to {work}/fixtures")
    proxies = {
        None: _start_record(upstream.url, work / "fixtures", work / "home", None, console),
        "mistral": _start_record(
            upstream.url, work / "fixtures", work / "home", "mistral", console
        ),
    }
    rows: list[tuple[str, str, Path | None]] = []
    try:
        for sdk, name in TURNS:
            _, proxy = proxies["mistral" if sdk == "mistral" else None]
            tools = work / f"{name.replace('/', '_')}.tools.json"
            tools.write_text(json.dumps(fixtures[name].get("tool_schemas", {})))
            base = f"{proxy}/f/{name}" + ("/v1" if sdk == "openai" else "")
            before = set((work / "fixtures").glob("*.json"))
            said = _sdk_summary(_app(sdk, base, tools))
            console.print(f"app ({sdk} SDK) -> {name}: the SDK gave the app {said}")
            rows.append((f"{sdk}: {name}", said, _new_file(work / "fixtures", before)))
    finally:
        for process, _ in proxies.values():
            process.send_signal(signal.SIGINT)
        for process, _ in proxies.values():
            process.wait(timeout=30)
        upstream.close()
    _table(console, work / "fixtures", rows)


def _new_file(folder: Path, before: set[Path]) -> Path | None:
    """The fixture the proxy wrote for the last turn (written off its event loop)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        new = set(folder.glob("*.json")) - before
        if new:
            return new.pop()
        time.sleep(0.05)
    return None


def _table(console: Console, folder: Path, rows: list[tuple[str, str, Path | None]]) -> None:
    console.rule("recorded fixtures, checked offline with callgate check")
    table = Table("turn", "the SDK gave the app", "callgate", "exit", "codes", "fixture")
    for turn, said, path in rows:
        if path is None:
            table.add_row(turn, said, "no fixture", "-", "-", "-")
            continue
        report = check(load_envelope(path))
        style = {0: "green", 1: "red"}.get(report.exit_code, "yellow")
        table.add_row(
            turn,
            said,
            f"[{style}]{report.status.value}[/{style}]",
            str(report.exit_code),
            ", ".join(report.blocking_codes) or "-",
            path.name,
        )
    console.print(table)
    console.print(
        "exit 0: every call of the turn may run; 1: run none of them. Look closer: "
        f"[bold].venv/bin/callgate check --report text {folder}/*.json[/bold]"
    )


if __name__ == "__main__":
    main()
