"""``callgate tape serve`` and ``callgate tape run``: a folder of tapes served to any client.

The upstream is ``callgate serve``'s fake provider on loopback; the clients are plain HTTP
requests and a Python child process (the Node SDK's run is ``tests/test_example_node.py``).
"""

from __future__ import annotations

import http.client
import io
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from callgate.cli.app import app
from callgate.cli.serve import FakeProvider
from callgate.cli.tape import DUMMY_KEY, RecordMode, store
from callgate.cli.tape.command import TapeOptions, run_tape_run, tape_environment
from callgate.cli.tape.server import Located, Refused
from callgate.cli.tape.shape import request_shape
from callgate.cli.tape.shelf import Shelf
from callgate.reassemble import check
from tests.conftest import CONFORMANCE, load

#: The command line, as a user's shell runs it.
CALLGATE = [sys.executable, "-c", "from callgate.cli.app import main; main()"]
WEATHER = {
    "model": "gpt-4o-mini",
    "stream": True,
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}],
    "messages": [{"role": "user", "content": "Weather in Oslo?"}],
}


def post(port: int, path: str, body: dict[str, Any]) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("POST", path, body=json.dumps(body).encode())
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def free_port() -> int:
    from callgate.cli.loopback import free_port as port

    return port()


def serve(folder: Path, port: int, *options: str) -> subprocess.Popen[str]:
    """``callgate tape serve`` in a process of its own, once it listens."""
    server = subprocess.Popen(
        [*CALLGATE, "tape", "serve", str(folder), "--listen", f"127.0.0.1:{port}", *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    assert server.stdout.readline().startswith(f"callgate tape serve: {folder} (")
    return server


def stopped(server: subprocess.Popen[str]) -> tuple[int, list[str], list[str]]:
    server.send_signal(signal.SIGTERM)
    out, err = server.communicate(timeout=30)
    return server.returncode, out.splitlines(), err.splitlines()


def at_once(*clients: tuple[str, list[dict[str, Any]]], port: int) -> dict[str, list[int]]:
    """Each client's requests to its tape path, the clients in threads started together; the
    status codes each got."""
    start = threading.Barrier(len(clients))
    got: dict[str, list[int]] = {}

    def client(path: str, bodies: list[dict[str, Any]]) -> None:
        start.wait()
        got[path] = [post(port, path, body)[0] for body in bodies]

    threads = [threading.Thread(target=client, args=c) for c in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return got


def test_tape_serve_serves_two_tapes_to_two_clients_at_once_and_counts_each_when_stopped(
    tmp_path: Path,
) -> None:
    upstream = FakeProvider({"turn": load(CONFORMANCE / "openai/valid_fragmented.json")}).start()
    a, b = "/t/a/v1/chat/completions", "/t/b/v1/chat/completions"
    try:
        port = free_port()
        server = serve(
            tmp_path, port, "--record-mode", "once", "--upstream", f"openai={upstream.url}"
        )
        assert at_once((a, [WEATHER]), (b, [WEATHER, WEATHER]), port=port) == {
            a: [200],
            b: [200, 200],
        }
        assert stopped(server) == (
            0,
            [
                "tape a: served 1, unused 0, mismatched 0, blocking 0: ok",
                "tape b: served 2, unused 0, mismatched 0, blocking 0: ok",
            ],
            [],
        )
    finally:
        upstream.close()
    assert [p.name for _, p in store.entry_files(tmp_path / "b")] == ["001.json", "002.json"]

    # Replayed with no upstream: a asks once more than it recorded, b once less.
    port = free_port()
    server = serve(tmp_path, port)
    assert at_once((a, [WEATHER, WEATHER]), (b, [WEATHER]), port=port) == {a: [200, 400], b: [200]}
    code, out, err = stopped(server)
    assert (code, out) == (
        1,
        [
            "tape a: served 1, unused 0, mismatched 1, blocking 0: FAILED",
            "tape b: served 1, unused 1, mismatched 0, blocking 0: FAILED",
        ],
    )
    assert err == [
        f"tape a ({tmp_path / 'a'}): request 2 is not on the tape: POST /v1/chat/completions "
        "(openai), model gpt-4o-mini, tools [get_weather], stream, messages user 1; the tape "
        "holds next: nothing more. To record it: --record-mode new_episodes, or delete the "
        "folder and run with --record-mode once",
        f"tape b ({tmp_path / 'b'}): 1 recorded exchange(s) were not requested, from 002.json "
        "(POST /v1/chat/completions (openai), model gpt-4o-mini, tools [get_weather], stream, "
        "messages user 1); the app made fewer requests than when it was recorded "
        "(--allow-unused accepts that)",
    ]


def blocking_tape(folder: Path) -> None:
    envelope = load(CONFORMANCE / "openai/reused_index_new_id.json")
    shape = request_shape("openai", "POST", "/v1/chat/completions", b'{"model": "m"}')
    store.write(folder, 1, shape, envelope=envelope, report=check(envelope))


CHILD = """
import http.client, json, os, sys
url = os.environ["CALLGATE_TAPE_URL"]
port = int(url.rsplit(":", 1)[1])
print(json.dumps({k: os.environ.get(k) for k in sys.argv[2:]}))
for path in sys.argv[1].split(",") if sys.argv[1] else []:
    connection = http.client.HTTPConnection("127.0.0.1", port)
    connection.request("POST", path, body=b'{"model": "m"}')
    print(path, connection.getresponse().status)
"""


def run(folder: Path, paths: list[str], code: int = 0, **options: Any) -> tuple[int, str, str]:
    """``tape run`` of a Python child that posts to ``paths`` and exits with ``code``."""
    out, err = io.StringIO(), io.StringIO()
    tape_options = TapeOptions(folder, RecordMode.NONE, {}, **options)
    script = CHILD + f"\nsys.exit({code})"
    command = [sys.executable, "-c", script, ",".join(paths), "OPENAI_BASE_URL"]
    result = run_tape_run(tape_options, command, "default", out, err)
    return result, out.getvalue(), err.getvalue()


def test_tape_run_exits_with_the_commands_code_or_1_when_it_passed_and_a_tape_failed(
    tmp_path: Path,
) -> None:
    blocking_tape(tmp_path / "blocks")
    path = "/t/blocks/v1/chat/completions"
    code, out, err = run(tmp_path, [path])
    assert (code, out) == (1, "")  # the child's output is its own (captured apart)
    assert err.splitlines() == [
        "tape blocks: served 1, unused 0, mismatched 0, blocking 1: FAILED",
        f"tape blocks ({tmp_path / 'blocks'}): 001.json: the turn does not pass: fail "
        "[identity_collision] (allow it with --allow identity_collision)",
    ]
    assert run(tmp_path, [path], code=3)[0] == 3
    code, out, err = run(tmp_path, [path], allow=("identity_collision",))
    assert (code, out, err) == (
        0,
        "",
        "tape blocks: served 1, unused 0, mismatched 0, blocking 0: ok\n",
    )


def test_tape_run_leaves_the_commands_stdout_byte_for_byte_as_it_wrote_it(
    tmp_path: Path, capfdbinary: pytest.CaptureFixture[bytes]
) -> None:
    """A wrapper that adds a line to its child's stdout breaks what reads it (TAP, JUnit,
    JSON): the child's bytes come out as they were, with no newline added, and the summary
    goes to stderr."""
    written = b"TAP version 13\nok 1 - weather\n1..1\n\x00\xff no newline at the end"
    script = f"import sys; sys.stdout.buffer.write({written!r})"
    out, err = io.StringIO(), io.StringIO()
    options = TapeOptions(tmp_path, RecordMode.NONE, {})
    assert run_tape_run(options, [sys.executable, "-c", script], "default", out, err) == 0
    assert (capfdbinary.readouterr().out, out.getvalue(), err.getvalue()) == (written, "", "")


def test_tape_run_points_the_sdk_variables_at_its_tape_and_never_records_with_a_dummy_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    for variable in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CALLGATE_RECORD_MODE"):
        monkeypatch.delenv(variable, raising=False)
    environment = tape_environment("http://127.0.0.1:5", "booking", {"ANTHROPIC_API_KEY": "k"})
    assert environment["CALLGATE_TAPE_URL"] == "http://127.0.0.1:5"
    assert environment["OPENAI_BASE_URL"] == "http://127.0.0.1:5/t/booking/openai/v1"
    assert environment["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:5/t/booking/anthropic"
    assert environment["OPENAI_API_KEY"] == DUMMY_KEY
    assert environment["ANTHROPIC_API_KEY"] == "k"

    out, err = io.StringIO(), io.StringIO()
    options = TapeOptions(tmp_path, RecordMode.ONCE, {"openai": "http://127.0.0.1:9"})
    script = CHILD.replace(
        'b\'{"model": "m"}\'',
        "b'{}', headers={'authorization': 'Bearer ' + os.environ['OPENAI_API_KEY']}",
    )
    path = "/t/default/v1/chat/completions"
    code = run_tape_run(options, [sys.executable, "-c", script, path], "default", out, err)
    assert (code, capfd.readouterr().out.splitlines()[1:], out.getvalue()) == (
        1,
        [f"{path} 401"],
        "",
    )
    assert err.getvalue().splitlines() == [
        "tape default: served 0, unused 0, mismatched 0, blocking 0: FAILED",
        f"tape default ({tmp_path / 'default'}): POST /v1/chat/completions (openai): not "
        "recorded: the request carries the replay's dummy key; set OPENAI_API_KEY to record",
    ]
    assert not (tmp_path / "default").exists()


def test_a_tapes_route_is_told_from_its_api_path_or_named_before_it(tmp_path: Path) -> None:
    shelf = Shelf(tmp_path, RecordMode.NONE)

    def route(path: str) -> tuple[str, str]:
        located = shelf.locate(path, None)
        assert isinstance(located, Located)
        return located.route, located.rest

    assert route("/t/x/v1/chat/completions") == ("openai", "/v1/chat/completions")
    assert route("/t/x/v1/messages") == ("anthropic", "/v1/messages")
    assert route("/t/x/v1beta/models/g:streamGenerateContent?alt=sse") == (
        "gemini",
        "/v1beta/models/g:streamGenerateContent?alt=sse",
    )
    assert route("/t/x/api/chat") == ("ollama", "/api/chat")
    assert route("/t/x/mistral/v1/chat/completions") == ("mistral", "/v1/chat/completions")
    assert shelf.locate("/v1/chat/completions", None) == Refused(
        404, "callgate tape: /v1/chat/completions names no tape: /t/<tape>/ then the API path"
    )
    assert shelf.locate("/t/../v1/messages", None) == Refused(
        404, "callgate tape: '..' is no tape name ([A-Za-z0-9_.+=-])", "anthropic"
    )


def test_a_fault_on_a_tape_never_recorded_refuses_its_requests_with_one_line(
    tmp_path: Path,
) -> None:
    shelf = Shelf(tmp_path, RecordMode.ONCE)
    refused = shelf.locate("/t/new/v1/chat/completions", "reuse_slot")
    line = (
        f"tape new [reuse_slot]: no recorded tape at {tmp_path / 'new'} to mutate (mutate never "
        "records): record it first, with --record-mode once"
    )
    assert refused == Refused(400, line, "openai")
    assert [(o.line, o.problems) for o in shelf.outcomes()] == [
        ("tape new [reuse_slot]: served 0, unused 0, mismatched 1, blocking 0: FAILED", [line])
    ]
    assert shelf.locate("/t/new/v1/chat/completions", "no_such_kind") == Refused(
        400, "callgate tape: no mutation 'no_such_kind' (one of " + refused_kinds() + ")"
    )


def refused_kinds() -> str:
    from callgate.reassemble.mutations import KINDS

    return ", ".join(KINDS)


@pytest.mark.parametrize(
    ("arguments", "environment", "message"),
    [
        (
            ["--upstream", "openai=http://127.0.0.1:8000/v1"],
            {},
            "callgate: --upstream openai=http://127.0.0.1:8000/v1: requests already start with "
            "/v1 (they would go to /v1/v1/...); give the URL without it: http://127.0.0.1:8000",
        ),
        (
            ["--upstream", "bedrock=http://127.0.0.1:8000"],
            {},
            "callgate: --upstream: no route 'bedrock' (one of openai, anthropic, mistral, "
            "gemini, ollama)",
        ),
        (
            [],
            {"CALLGATE_RECORD_MODE": "sometimes"},
            "callgate: CALLGATE_RECORD_MODE: 'sometimes' is not one of none, once, new_episodes, "
            "all",
        ),
        ([], {}, "callgate: tape run needs a command after --: callgate tape run DIR -- npm test"),
    ],
)
def test_tape_run_refuses_a_bad_option_with_one_line(
    tmp_path: Path, arguments: list[str], environment: dict[str, str], message: str
) -> None:
    command = [] if not environment and not arguments else ["true"]
    result = CliRunner().invoke(
        app,
        ["tape", "run", str(tmp_path), *arguments, "--", *command],
        env={"CALLGATE_RECORD_MODE": "", **environment},
    )
    assert (result.exit_code, result.stderr.strip()) == (2, message)
    assert not os.listdir(tmp_path)
