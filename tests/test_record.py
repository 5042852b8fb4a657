"""``callgate record`` and ``mitmdump -s`` as a user runs them: real processes, real terminal."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from callgate.cli.loopback import free_port
from tests.proxy_harness import fake_provider, fixtures_in, post, request_body, start_record

pytestmark = pytest.mark.proxy

BIN = Path(sys.executable).parent
KEY, QUERY_KEY, PROMPT = "sk-proj-CANARYkey0123456789ab", "AIzaCANARYquery0123", "CANARYprompt"


def test_record_flags_live_writes_redacted_fixtures_and_prints_no_secret(tmp_path: Path) -> None:
    upstream = fake_provider(timing=0.05)
    process, port = start_record(BIN / "callgate", upstream.url, tmp_path / "fx", tmp_path)
    try:
        body = json.loads(request_body("openai/reused_index_new_id"))
        body["messages"] = [{"role": "user", "content": PROMPT}]
        post(
            f"http://127.0.0.1:{port}",
            f"/f/openai/reused_index_new_id/v1/chat/completions?key={QUERY_KEY}",
            json.dumps(body).encode(),
            {"authorization": f"Bearer {KEY}"},
        )
        post(
            f"http://127.0.0.1:{port}",
            "/f/anthropic/valid_fragmented/v1/messages",
            request_body("anthropic/valid_fragmented"),
            {"x-api-key": KEY},
        )
        fixtures_in(tmp_path / "fx", 2)
    finally:
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=30)
        upstream.close()
    assert process.returncode == 0, output
    lines = output.splitlines()
    assert any(
        "/f/openai/reused_index_new_id/v1/chat/completions identity_collision slot=0 "
        "event=2" in line
        for line in lines
    ), output
    assert any(" fail -> " in line and "(identity_collision)" in line for line in lines), output
    assert any(" pass -> " in line for line in lines), output
    fixtures = sorted((tmp_path / "fx").glob("*.json"))
    assert len(fixtures) == 2
    for text in [output, *(f.read_text() for f in fixtures)]:
        for canary in (KEY, QUERY_KEY, PROMPT, "CANARY"):
            assert canary not in text
    assert (tmp_path / "callgate" / "mitmproxy").is_dir()
    assert not (tmp_path / "user" / ".mitmproxy").exists()


def test_mitmdump_loads_the_addon_and_refuses_raw_writers(tmp_path: Path) -> None:
    addon = subprocess.run(
        [str(BIN / "callgate"), "addon-path"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert addon.endswith("proxy_addon/script.py") and Path(addon).is_file()
    refused = subprocess.run(
        [
            str(BIN / "mitmdump"),
            "-s",
            addon,
            "--set",
            f"confdir={tmp_path / 'conf'}",
            "--listen-port",
            str(free_port()),
            "-w",
            str(tmp_path / "raw.flow"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert refused.returncode != 0
    assert "would write unredacted traffic to disk" in refused.stdout + refused.stderr
    raw = tmp_path / "raw.flow"  # mitmproxy's save addon may create it before we refuse
    assert not raw.exists() or raw.stat().st_size == 0
