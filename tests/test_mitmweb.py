"""mitmweb, as a person sees it in a browser: the live warning, then the verdict, on the flow.

Uses Debian's Chromium, headless (``make test`` installs it).
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.proxy_harness import Proxy, fake_provider, post, request_body

pytestmark = [pytest.mark.proxy, pytest.mark.browser]

CHROMIUM = shutil.which("chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--virtual-time-budget=4000", "--window-size=1400,400"]


def browse(url: str, profile: Path, *extra: str) -> str:
    assert CHROMIUM is not None
    done = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *extra, url],
                          capture_output=True, text=True, timeout=90, check=False)
    return done.stdout


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (make test installs it)")
def test_mitmweb_shows_the_live_warning_then_the_verdict_on_a_failing_flow(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="callgate")
    name = "openai/reused_index_new_id"
    # Six chunks 2 s apart: the collision comes at 4 s and the end at 12 s, which leaves the
    # browser 8 s to start and read the page while the stream is still running.
    upstream = fake_provider(timing=2.0)
    try:
        with Proxy(upstream.url, tmp_path / "fixtures", web=True) as proxy:
            request = threading.Thread(target=post, args=(
                proxy.url, f"/f/{name}/v1/chat/completions", request_body(name)))
            request.start()
            wait_for_log(caplog, "identity_collision slot=")  # the live warning
            ui = proxy.web_url
            live = browse(ui, tmp_path / "browser", "--dump-dom")
            request.join()
            wait_for_log(caplog, " fail -> ")  # the verdict is marked before the fixture is out
            done = browse(ui, tmp_path / "browser", "--dump-dom")
            browse(ui, tmp_path / "browser", f"--screenshot={tmp_path / 'mitmweb.png'}")
    finally:
        upstream.close()
    assert "\u26a0" in live and "callgate: identity_collision (stream still running)" in live
    assert "\u274c" in done and "callgate: fail (identity_collision)" in done
    assert (tmp_path / "mitmweb.png").stat().st_size > 1000


def wait_for_log(caplog: pytest.LogCaptureFixture, text: str) -> None:
    deadline = time.monotonic() + 30
    while not any(text in r.getMessage() for r in caplog.records):
        assert time.monotonic() < deadline, f"no log line with {text!r}"
        time.sleep(0.05)
