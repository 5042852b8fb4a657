"""``examples/node``: a Vercel AI SDK app (ai 7.0.173, @ai-sdk/openai 4.0.118) whose
``node:test`` suite runs through ``callgate tape run``: recorded once from ``callgate serve``,
replayed offline with no key, a changed request failing with the tape's line, and the fault
its suite asks for by header. ``make test`` installs its node_modules (``npm ci``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from callgate.cli.loopback import free_port, wait_listening
from callgate.cli.tape import store
from callgate.cli.tape.command import tape_environment
from tests.conftest import ROOT

pytestmark = [pytest.mark.sdk, pytest.mark.xdist_group("example-node")]

EXAMPLE = ROOT / "examples" / "node"
CALLGATE = [sys.executable, "-c", "from callgate.cli.app import main; main()"]
KEY = "sk-proj-canaryKEY5f2e8c1d9a7b4e3f6a0b"
#: What the app and its test send that no tape may keep: the prompt, the system text, the tool
#: result and the key (each is checked to be in the example, so none goes stale).
CANARIES = {
    "test/weather.test.mjs": "ACME-BOOKING-2208",
    "weather.mjs": "ACME-FARE-7731",
    "weather.mjs ": "ACME-STATION-4410",
}
#: What the runs' summary says: the tape as recorded, and as its reused-index fault.
SUMMARY = [
    "tape weather: served 2, unused 0, mismatched 0, blocking 0: ok",
    "tape weather [reuse_slot]: served 1, unused 0, mismatched 0, blocking 0: ok",
]


@pytest.fixture
def app(tmp_path: Path) -> Path:
    """A copy of the example without its tapes, with the installed node_modules."""
    if shutil.which("node") is None:
        pytest.skip("no node on PATH (make test installs nodejs and npm)")
    if not (EXAMPLE / "node_modules" / "ai").is_dir():
        pytest.skip(f"no {EXAMPLE / 'node_modules'} (make test runs npm ci in examples/node)")
    copy = tmp_path / "app"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("node_modules", "tapes"))
    (copy / "node_modules").symlink_to(EXAMPLE / "node_modules")
    return copy


def clean_environment() -> dict[str, str]:
    return {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("OPENAI_", "CALLGATE_", "NODE_"))
    }


def tape_run(
    app: Path, *options: str, key: str | None = None, node: tuple[str, ...] = ("--test",)
) -> tuple[int, str, str]:
    environment = clean_environment()
    if key is not None:
        environment["OPENAI_API_KEY"] = key
    done = subprocess.run(
        [*CALLGATE, "tape", "run", "tapes", *options, "--", "node", *node],
        cwd=app,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


def summary(text: str) -> list[str]:
    """The summary's lines (a tape's problems follow its line, each naming its folder)."""
    return [line for line in text.splitlines() if line.startswith("tape ") and ": served " in line]


def record(app: Path) -> None:
    """The app's suite recorded once from ``callgate serve`` playing examples/node/upstream."""
    port = free_port()
    upstream = subprocess.Popen(
        [*CALLGATE, "serve", str(EXAMPLE / "upstream"), "--listen", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
    )
    try:
        assert wait_listening(port, lambda: upstream.poll() is None)
        served = f"openai=http://127.0.0.1:{port}/s/weather"
        code, out, err = tape_run(app, "--record-mode", "once", "--upstream", served, key=KEY)
        assert (code, summary(out), err.splitlines()) == (0, [], SUMMARY), out
    finally:
        # SIGTERM, not SIGINT: a suite started in the background by a non-interactive shell
        # inherits SIGINT ignored, and Python then leaves it ignored.
        upstream.terminate()
        upstream.wait(30)


def test_the_example_records_once_then_replays_offline_with_no_key_and_keeps_no_canary(
    app: Path,
) -> None:
    record(app)
    tapes = app / "tapes" / "weather"
    assert [path.name for _, path in store.entry_files(tapes)] == ["001.json", "002.json"]
    for source, canary in CANARIES.items():
        assert canary in (app / source.strip()).read_text()
    for path in tapes.iterdir():
        text = path.read_text()
        assert [c for c in [*CANARIES.values(), KEY] if c in text] == [], path
    # The example ships the tapes this recording makes.
    for path in tapes.iterdir():
        assert path.read_bytes() == (EXAMPLE / "tapes" / "weather" / path.name).read_bytes()

    code, out, err = tape_run(app)  # the upstream is gone; no key
    assert (code, summary(out), err.splitlines()) == (0, [], SUMMARY), out
    assert "# pass 2" in out


def test_a_changed_request_fails_the_suite_with_the_tapes_one_line(app: Path) -> None:
    shutil.copytree(EXAMPLE / "tapes", app / "tapes")
    weather = app / "weather.mjs"
    weather.write_text(weather.read_text().replace('chat("gpt-4o-mini")', 'chat("gpt-4.1")'))
    code, out, err = tape_run(app)
    assert code == 1
    assert summary(err) == [
        "tape weather: served 0, unused 2, mismatched 1, blocking 0: FAILED",
        "tape weather [reuse_slot]: served 0, unused 2, mismatched 1, blocking 0: FAILED",
    ]
    line = (
        "request 1 is not on the tape: POST /v1/chat/completions (openai), model gpt-4.1, tools "
        "[get_weather], stream, messages system 1 user 1; the tape holds next: 001.json (POST "
        "/v1/chat/completions (openai), model gpt-4o-mini, tools [get_weather], stream, messages "
        "system 1 user 1)."
    )
    assert f"tape weather (tapes/weather): {line} To record it: --record-mode" in err
    assert "callgate tape: " not in err
    assert f"tape weather (tapes/weather): {line}" in out  # the SDK's error, as the test saw it


def test_the_suites_stdout_through_tape_run_is_byte_for_byte_its_own(app: Path) -> None:
    """``node --test``'s reporter output, read by CI, is what the suite writes run through
    ``callgate tape run`` and what it writes run alone against the same tapes served by
    ``callgate tape serve`` (the dot reporter: no timings in it)."""
    shutil.copytree(EXAMPLE / "tapes", app / "tapes")
    node = ("--test", "--test-reporter=dot")
    code, wrapped, _ = tape_run(app, node=node)
    port = free_port()
    served = subprocess.Popen(
        [*CALLGATE, "tape", "serve", "tapes", "--listen", f"127.0.0.1:{port}"],
        cwd=app,
        env=clean_environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert wait_listening(port, lambda: served.poll() is None)
        url = f"http://127.0.0.1:{port}"
        alone = subprocess.run(
            ["node", *node],
            cwd=app,
            env=tape_environment(url, "default", clean_environment()),
            capture_output=True,
            timeout=120,
            check=False,
        )
    finally:
        served.terminate()
        served.wait(30)
    assert (code, alone.returncode) == (0, 0)
    assert wrapped.encode() == alone.stdout and alone.stdout.strip(b".\n") == b""
