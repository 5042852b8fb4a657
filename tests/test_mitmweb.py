"""mitmweb and the mitmproxy console, as a person sees them: the live warning, the verdict, the
body and the callgate view of a judged flow.

Uses Debian's Chromium, headless, and tmux for the console (``make test`` installs both).
"""

from __future__ import annotations

import itertools
import json
import logging
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from callgate.cli import serve
from callgate.cli.loopback import free_port, wait_listening
from callgate.cli.serve import FakeProvider, collect
from callgate.reassemble.profiles import frames
from tests.conftest import CONFORMANCE, load
from tests.proxy_harness import (
    Proxy,
    fake_provider,
    post,
    request_body,
    request_body_of,
    wait_for_log,
    websocket_texts,
)

pytestmark = [pytest.mark.proxy, pytest.mark.browser]

BIN = Path(sys.executable).parent
CHROMIUM = shutil.which("chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--virtual-time-budget=4000",
    "--window-size=1400,400",
]


def browse(url: str, profile: Path, *extra: str) -> str:
    assert CHROMIUM is not None
    done = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *extra, url],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    return done.stdout


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (make test installs it)")
def test_mitmweb_shows_the_live_warning_then_the_verdict_on_a_failing_flow(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.INFO, logger="callgate")
    name = "openai/reused_index_new_id"
    # The collision comes with the third of six chunks; the upstream holds the rest until the
    # browser has read the page, so the stream is still running while it looks.
    looked = threading.Event()
    monkeypatch.setattr(serve, "pauses", held_after(3, looked))
    upstream = fake_provider()
    try:
        with Proxy(upstream.url, tmp_path / "fixtures", web=True) as proxy:
            request = threading.Thread(
                target=post, args=(proxy.url, f"/f/{name}/v1/chat/completions", request_body(name))
            )
            request.start()
            wait_for_log(caplog, "identity_collision slot=")  # the live warning
            ui = proxy.web_url
            live = browse(ui, tmp_path / "browser", "--dump-dom")
            looked.set()
            request.join()
            wait_for_log(caplog, " fail -> ")  # the verdict is marked before the fixture is out
            done = browse(ui, tmp_path / "browser", "--dump-dom")
            browse(ui, tmp_path / "browser", f"--screenshot={tmp_path / 'mitmweb.png'}")
    finally:
        upstream.close()
    assert "\u26a0" in live and "callgate: identity_collision (stream still running)" in live
    assert "\u274c" in done and "callgate: fail (identity_collision)" in done
    assert (tmp_path / "mitmweb.png").stat().st_size > 1000


def held_after(sent: int, go: threading.Event) -> Callable[..., Iterator[float]]:
    """A stand-in for the fake provider's pauses: ``sent`` frames at once, then the rest once
    ``go`` is set (at most a minute later)."""

    def pauses(envelope: object, timing: object) -> Iterator[float]:
        for number in itertools.count():
            if number == sent:
                go.wait(60)
            yield 0.0

    return pauses


WEB_TOKEN = "callgate-test-token"
OUTPUT_CANARY, ARGUMENT_CANARY = "CANARYoutputtext", "CANARYargument"


def api(proxy: Proxy, path: str) -> tuple[int, bytes]:
    """GET mitmweb's own API (mitmproxy 12 wants its token; 11 ignores the header)."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{proxy.web_port}{path}", headers={"Authorization": f"Bearer {WEB_TOKEN}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def view_text(raw: bytes) -> str:
    """The callgate view's text: mitmproxy 12 sends it whole, 11 as styled lines."""
    view = json.loads(raw)
    if "text" in view:
        return str(view["text"])
    return "\n".join("".join(text for _, text in line) for line in view["lines"])


def canary_envelope() -> dict[str, object]:
    """A passing turn whose output text and arguments hold canaries."""
    envelope = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    chunks = envelope["chunks"]
    chunks.insert(
        0, {"choices": [{"index": 0, "delta": {"content": OUTPUT_CANARY}, "finish_reason": None}]}
    )
    for choice in (choice for chunk in chunks for choice in chunk["choices"]):
        for call in choice["delta"].get("tool_calls", []):
            arguments = call["function"].get("arguments", "")
            call["function"]["arguments"] = arguments.replace("Par", ARGUMENT_CANARY + "Par")
    return envelope


def flow_ids(proxy: Proxy) -> dict[str, str]:
    status, raw = api(proxy, "/flows")
    assert status == 200
    return {flow["request"]["path"]: flow["id"] for flow in json.loads(raw)}


def test_mitmweb_shows_the_redacted_stream_and_the_callgate_view_of_each_judged_flow(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="callgate")
    fixtures = collect([CONFORMANCE])
    fixtures["canary"] = canary_envelope()
    upstream = FakeProvider(fixtures).start()
    turns = {"openai/reused_index_new_id": "fail", "canary": "pass"}
    try:
        with Proxy(upstream.url, tmp_path / "fx", web=True) as proxy:
            for name in turns:
                post(proxy.url, f"/f/{name}/v1/chat/completions", request_body_of(fixtures[name]))
            wait_for_log(caplog, " fail -> ")
            wait_for_log(caplog, " pass -> ")
            ids = flow_ids(proxy)
            shown = {
                name: api(
                    proxy, f"/flows/{ids[f'/f/{name}/v1/chat/completions']}/response/content.data"
                )
                for name in turns
            }
            views = {
                name: api(
                    proxy,
                    f"/flows/{ids[f'/f/{name}/v1/chat/completions']}"
                    "/response/content/callgate.json",
                )
                for name in turns
            }
            proxy.set(callgate_web_body="raw")
            raw_path = "/f/canary/v1/chat/completions?raw"
            raw_body = post(proxy.url, raw_path, request_body_of(fixtures["canary"]))[2]
            wait_for_log(caplog, " pass -> ", count=2)
            raw_shown = api(
                proxy,
                f"/flows/{flow_ids(proxy)['/f/canary/v1/chat/completions?raw']}"
                "/response/content.data",
            )
    finally:
        upstream.close()
    written = [json.loads(path.read_text()) for path in sorted((tmp_path / "fx").glob("*.json"))]
    redacted_bodies = {b"".join(frames(envelope)) for envelope in written}
    for name, verdict in turns.items():
        status, data = shown[name]
        assert status == 200 and data in redacted_bodies
        assert OUTPUT_CANARY.encode() not in data and ARGUMENT_CANARY.encode() not in data
        view_status, view = views[name]
        assert view_status == 200
        first = view_text(view).splitlines()[0]
        assert first.startswith(f"callgate: {verdict} (")
    assert "identity_collision" in view_text(views["openai/reused_index_new_id"][1])
    assert "calls (1)" in view_text(views["canary"][1])
    assert raw_shown == (200, raw_body)
    assert OUTPUT_CANARY.encode() in raw_body and ARGUMENT_CANARY.encode() in raw_body


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (make test installs it)")
def test_the_response_tab_of_a_failing_flow_shows_the_callgate_view(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="callgate")
    name = "openai/reused_index_new_id"
    upstream = fake_provider()
    try:
        with Proxy(upstream.url, tmp_path / "fx", web=True) as proxy:
            post(proxy.url, f"/f/{name}/v1/chat/completions", request_body(name))
            wait_for_log(caplog, " fail -> ")
            flow = flow_ids(proxy)[f"/f/{name}/v1/chat/completions"]
            page = f"{proxy.web_url}#/flows/{flow}/response"
            dom = browse(page, tmp_path / "browser", "--dump-dom")
            shot = tmp_path / "response-tab.png"
            browse(page, tmp_path / "browser", f"--screenshot={shot}", "--window-size=1400,1000")
    finally:
        upstream.close()
    print(f"screenshot: {shot}")
    assert "callgate: fail (BLOCKED)" in dom and "identity_collision" in dom
    assert "callgate explain identity_collision" in dom
    assert shot.stat().st_size > 1000


@pytest.mark.parametrize(
    "megabytes", [pytest.param(2, id="2MB"), pytest.param(50, id="50MB", marks=pytest.mark.full)]
)
def test_a_long_stream_keeps_only_its_head_and_tail_for_mitmweb(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, megabytes: int
) -> None:
    caplog.set_level(logging.INFO, logger="callgate")
    envelope = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    first, *rest = envelope["chunks"]
    filler = {"choices": [{"index": 0, "delta": {"content": "x" * 4000}, "finish_reason": None}]}
    envelope["chunks"] = [first, *[filler] * (megabytes * 252), *rest]  # of output text
    upstream = FakeProvider({"long": envelope}).start()
    limit = 64 << 10
    try:
        with Proxy(
            upstream.url,
            tmp_path / "fx",
            web=True,
            callgate_web_body="raw",
            callgate_web_body_max=limit,
        ) as proxy:
            body = post(proxy.url, "/f/long/v1/chat/completions", request_body_of(envelope))[2]
            wait_for_log(caplog, " pass -> ")
            flow = flow_ids(proxy)["/f/long/v1/chat/completions"]
            status, shown = api(proxy, f"/flows/{flow}/response/content.data")
    finally:
        upstream.close()
    left = len(body) - limit
    note = f"\n: callgate left out {left} bytes of this stream here (limit {limit})\n\n".encode()
    assert len(body) > megabytes * 1_000_000 and status == 200
    assert shown == body[: limit // 2] + note + body[-(limit // 2) :]


TMUX = shutil.which("tmux")


def pane_shows(session: str, text: str, timeout: float = 30) -> str:
    """Poll the tmux pane until ``text`` is on it; return the pane."""
    deadline = time.monotonic() + timeout
    while True:
        pane = subprocess.run(
            ["tmux", "capture-pane", "-t", session, "-p"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        if text in pane or time.monotonic() > deadline:
            return pane
        time.sleep(0.2)


@pytest.mark.skipif(TMUX is None, reason="needs Debian's tmux (make test installs it)")
def test_the_mitmproxy_console_shows_the_callgate_view_of_a_failing_flow(tmp_path: Path) -> None:
    """The console in a real terminal: tmux runs mitmproxy, keys open the flow's response."""
    name = "openai/reused_index_new_id"
    upstream, port, session = fake_provider(), free_port(), f"callgate-{free_port()}"
    addon = Path(
        subprocess.run(
            [str(BIN / "callgate"), "addon-path"], capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    command = (
        f"{BIN / 'mitmproxy'} -s {addon} --mode reverse:{upstream.url} --listen-port "
        f"{port} --set confdir={tmp_path / 'conf'} --set callgate_out={tmp_path / 'fx'}"
    )
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", session, "-x", "160", "-y", "45", command], check=True
    )
    try:
        assert wait_listening(port), pane_shows(session, "never")
        post(f"http://127.0.0.1:{port}", f"/f/{name}/v1/chat/completions", request_body(name))
        pane_shows(session, "\u274c")  # the verdict marks the flow in the list
        subprocess.run(["tmux", "send-keys", "-t", session, "Enter"], check=True)
        subprocess.run(["tmux", "send-keys", "-t", session, "Tab"], check=True)
        # The view's last part, the events, may be drawn after its top: wait for the struck one.
        pane = pane_shows(session, "\u2717    2  ")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)
        upstream.close()
    assert "callgate: fail (BLOCKED)  openai/-  identity_collision" in pane
    assert "(callgate explain identity_collision)" in pane
    assert "\u2717    2  " in pane  # the event where the collision struck


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (make test installs it)")
def test_mitmweb_marks_a_realtime_session_once_a_response_is_blocked(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A Realtime session of two responses, the second cancelled mid-arguments, through
    mitmweb: its flow shows the ❌ and the comment that counts the blocked responses."""
    caplog.set_level(logging.INFO, logger="callgate")
    name = "openai-realtime/two_tool_turns_second_cancelled"
    tools = load(CONFORMANCE / f"{name}.json")["request"]["tools"]
    sends = [
        {"type": "session.update", "session": {"tools": tools}},
        {"type": "response.create"},
        {"type": "response.create"},
    ]
    upstream = fake_provider()
    try:
        with Proxy(upstream.url, tmp_path / "fixtures", web=True) as proxy:
            websocket_texts(proxy.url, f"/f/{name}/v1/realtime", sends)
            wait_for_log(caplog, "response resp_CAm8Kq7ry3Mxa2 fail")
            seen = browse(proxy.web_url, tmp_path / "browser", "--dump-dom")
    finally:
        upstream.close()
    assert "\u274c" in seen
    assert (
        "callgate: 1 of 2 responses blocked; last: response resp_CAm8Kq7ry3Mxa2 fail "
        "(invalid_arguments_json, wrong_terminal_reason)"
    ) in seen
