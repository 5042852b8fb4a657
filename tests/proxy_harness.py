"""Real parts for the proxy tests: mitmproxy on loopback, the fake provider, and SDK apps.

The proxy is mitmproxy's own DumpMaster with the callgate addon, running on its own event loop in
a thread (as it runs in ``callgate record``); the upstream is ``callgate serve``'s fake provider;
the apps are the real openai, anthropic and mistralai SDKs in their own virtualenv
(``.venv-apps``), run as separate processes, as a user's app would be.
"""

from __future__ import annotations

import asyncio
import errno
import http.client
import json
import os
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

from callgate.cli.loopback import free_port, wait_listening
from callgate.cli.record import WEB_COLUMNS
from callgate.cli.serve import FakeProvider, collect
from callgate.reassemble.profiles.builtin import TOOL_KEY

ROOT = Path(__file__).resolve().parents[1]
APPS_PYTHON = ROOT / ".venv-apps" / "bin" / "python"
CLIENT = ROOT / "tests" / "apps" / "client.py"


def fake_provider(timing: float = 0.0) -> FakeProvider:
    return FakeProvider(collect([ROOT / "fixtures" / "conformance"]), timing=timing).start()


class Proxy:
    """mitmproxy (reverse mode to ``upstream``) with the callgate addon, on its own loop. It
    listens on a port the OS picks, known (``port``, ``url``) once the proxy is entered.

    One at a time in a process: mitmproxy keeps its master and options in one global
    (``mitmproxy.ctx``), so a second master would read the first one's options. A proxy that
    can stop for another (``displaced``, set by ``SharedProxy``) does; any other one is an
    error."""

    #: The proxy running in this process, if any.
    running: ClassVar[Proxy | None] = None

    def __init__(
        self,
        upstream: str,
        out: Path,
        *,
        web: bool = False,
        watching: Sequence[Any] = (),
        **options: Any,
    ) -> None:
        from callgate.proxy_addon.addon import CallgateAddon

        #: Addons of the test's own, after callgate's (to see what it did to a flow).
        self.watching = watching
        self.port, self.out, self.web = 0, out, web
        self.url = ""
        self.web_port, self.web_url = 0, ""
        self.addon = CallgateAddon()
        self.displaced: Callable[[], None] | None = None
        self._upstream, self._options = upstream, {"callgate_out": str(out), **options}

    def __enter__(self) -> Proxy:
        if Proxy.running is not None:
            if Proxy.running.displaced is None:
                raise RuntimeError("another proxy runs in this process: mitmproxy's ctx is global")
            Proxy.running.displaced()
        for _ in range(WEB_PORT_TRIES if self.web else 1):
            # mitmweb binds the port it is given and tells no other: a port picked free can be
            # taken before it binds it, and then another is picked.
            self.web_port = free_port() if self.web else 0
            self.web_url = f"http://127.0.0.1:{self.web_port}/"
            failure = self._start()
            if failure is None:
                Proxy.running = self
                return self
            if not (isinstance(failure, OSError) and failure.errno == errno.EADDRINUSE):
                break
        raise RuntimeError(f"mitmproxy did not start: {failure!r}") from failure

    def _start(self) -> BaseException | None:
        """Run mitmproxy in a thread until it listens; what stopped it instead, if anything."""
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        # asyncio.run, as `callgate record` uses: at shutdown it cancels the connections still
        # open and closes the loop, so no transport outlives its loop.
        self._thread = threading.Thread(target=asyncio.run, args=(self._main(),), daemon=True)
        self._thread.start()
        if not self._ready.wait(60):
            return TimeoutError("mitmproxy did not start within 60 s")
        if self._failure is not None:
            self._thread.join(30)
        return self._failure

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self.master.shutdown)
        self._thread.join(30)
        if Proxy.running is self:
            Proxy.running = None

    async def _main(self) -> None:
        try:
            await self._run()
        except BaseException as failure:  # handed to the thread that waits for the start
            self._failure = failure
        finally:
            self._ready.set()

    async def _run(self) -> None:
        from mitmproxy import options
        from mitmproxy.tools.dump import DumpMaster
        from mitmproxy.tools.web.master import WebMaster

        self._loop = asyncio.get_running_loop()
        opts = options.Options(
            mode=[f"reverse:{self._upstream}"],
            listen_host="127.0.0.1",
            listen_port=0,
            confdir=str(self.out.parent / "confdir"),
        )
        if self.web:
            self.master = WebMaster(opts, with_termlog=False)
            self.master.options.update(
                web_open_browser=False, web_port=self.web_port, web_columns=WEB_COLUMNS
            )
            if "web_password" in self.master.options:  # mitmproxy 12 asks for a token
                self.master.options.update(web_password="callgate-test-token")
                self.web_url += "?token=callgate-test-token"
        else:
            self.master = DumpMaster(opts, with_termlog=False, with_dumper=False)
        self.master.addons.add(self.addon, *self.watching, _Listening(self._listening))
        self.master.options.update(**self._options)
        await self.master.run()

    def _listening(self) -> None:
        """mitmproxy runs: its servers listen (and mitmweb's, when there is one)."""
        _, self.port, *_ = self.master.addons.get("proxyserver").listen_addrs()[0]
        self.url = f"http://127.0.0.1:{self.port}"
        self._ready.set()

    def set(self, **options: Any) -> None:
        """Change options between requests."""
        done = threading.Event()

        def apply() -> None:
            self.master.options.update(**options)
            done.set()

        self._loop.call_soon_threadsafe(apply)
        done.wait(10)


#: How many ports mitmweb is offered before a proxy with a web UI gives up starting.
WEB_PORT_TRIES = 3


class _Listening:
    """A mitmproxy addon that calls back when mitmproxy runs: its ``running`` hook comes after
    the proxy servers (and mitmweb's) listen."""

    def __init__(self, callback: Callable[[], None]) -> None:
        self._callback = callback

    def running(self) -> None:
        self._callback()


class SharedProxy:
    """One proxy to ``upstream`` for many tests: starting one (and its fixture writer) costs far
    more than a turn through it. Each test takes it (``take``) with its own fixture folder and
    options (those an earlier test set go back to their defaults); mitmproxy reads the options
    when a turn starts and the folder when the turn ends, and a test's turns have ended (its
    client read them to the end, or it waited for their fixtures) before the next test takes
    the proxy. It stops when a test starts a proxy of its own, and starts again when a test
    takes it next (or when mitmproxy's one master is another's by then)."""

    def __init__(self, upstream: str, folder: Path) -> None:
        self._upstream, self._folder = upstream, folder
        self._proxy: Proxy | None = None
        self._starts = 0
        self._changed: set[str] = set()

    def take(self, out: Path, **options: Any) -> Proxy:
        """The proxy, now with ``options`` (the others at their defaults) and its fixtures
        going to ``out``."""
        from mitmproxy import ctx

        if self._proxy is not None and ctx.master is not self._proxy.master:
            self.close()
        if self._proxy is None:
            self._starts += 1
            proxy = Proxy(self._upstream, self._folder / f"start{self._starts}" / "fixtures")
            proxy.displaced = self.close
            self._proxy, self._changed = proxy.__enter__(), set()
        master_options = self._proxy.master.options
        self._changed |= set(options)
        self._proxy.set(
            callgate_out=str(out),
            **{name: options.get(name, master_options.default(name)) for name in self._changed},
        )
        self._proxy.out = out
        return self._proxy

    def close(self) -> None:
        if self._proxy is not None:
            proxy, self._proxy = self._proxy, None
            proxy.__exit__(None, None, None)


def start_record(
    callgate: Path,
    upstream: str,
    out: Path,
    home: Path,
) -> tuple[subprocess.Popen[str], int]:
    """``callgate record`` as a user runs it, in reverse mode to ``upstream`` on a free port,
    with its own ``CALLGATE_HOME`` and ``HOME`` under ``home``; returns once it listens."""
    port = free_port()
    env = {
        **os.environ,
        "CALLGATE_HOME": str(home / "callgate"),
        "PYTHONUNBUFFERED": "1",
        "HOME": str(home / "user"),
    }
    process = subprocess.Popen(
        [
            str(callgate),
            "record",
            "--upstream",
            upstream,
            "--listen",
            f"127.0.0.1:{port}",
            "--output-dir",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    if not wait_listening(port, lambda: process.poll() is None):
        process.kill()
        raise AssertionError(f"record did not start: {process.communicate()[0]}")
    return process, port


def fixtures_in(folder: Path, count: int, timeout: float = 20) -> list[dict[str, Any]]:
    """Wait until ``count`` fixtures are in ``folder`` (they are written off the event loop)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        files = sorted(folder.glob("*.json")) if folder.is_dir() else []
        if len(files) >= count:
            time.sleep(0.1)
            return [json.loads(f.read_text()) for f in sorted(folder.glob("*.json"))]
        time.sleep(0.05)
    raise AssertionError(f"expected {count} fixtures in {folder}")


def request_body(name: str) -> bytes:
    """The request an app would send for conformance fixture ``name``: its tools and parameters."""
    return request_body_of(
        json.loads((ROOT / "fixtures" / "conformance" / f"{name}.json").read_text())
    )


def request_body_of(envelope: dict[str, Any]) -> bytes:
    """The request an app would send for ``envelope``'s turn: its tools and parameters."""
    schemas = envelope.get("tool_schemas", {})
    if envelope["profile"] == "anthropic":
        tools: list[Any] = [{"name": n, "input_schema": s} for n, s in schemas.items()]
    elif envelope["profile"] == "gemini":
        tools = [
            {
                "functionDeclarations": [
                    {"name": n, "parametersJsonSchema": s} for n, s in schemas.items()
                ]
            }
        ]
    elif envelope["profile"] == "openai-responses":
        tools = [{"type": "function", "name": n, "parameters": s} for n, s in schemas.items()]
    elif envelope["profile"] == "bedrock-converse":
        return json.dumps(
            {
                "messages": [{"role": "user", "content": [{"text": "hi"}]}],
                "toolConfig": {
                    "tools": [
                        {"toolSpec": {"name": n, "inputSchema": {"json": s}}}
                        for n, s in schemas.items()
                    ]
                },
            }
        ).encode()
    else:
        tools = [
            {"type": "function", "function": {"name": n, "parameters": s}}
            for n, s in schemas.items()
        ]
    # A provider-defined tool is declared as the provider takes it, not by a schema.
    tools = [declared_tool(tool, envelope["profile"]) if _defined(tool) else tool for tool in tools]
    body = {
        "model": "m",
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
        "tools": tools,
        **envelope.get("request", {}),
    }
    return json.dumps(body).encode()


def _schema(tool: dict[str, Any]) -> Any:
    function = tool.get("function")
    inner = function.get("parameters") if isinstance(function, dict) else None
    return tool.get("parameters", tool.get("input_schema", inner))


def _defined(tool: dict[str, Any]) -> bool:
    schema = _schema(tool)
    return isinstance(schema, dict) and TOOL_KEY in schema


def declared_tool(tool: dict[str, Any], profile: str) -> dict[str, Any]:
    """The provider's own declaration of the tool whose ``tool_schemas`` entry holds its
    definition: as it stands for the Responses and Messages APIs; a Chat Completions custom
    tool nests it under ``custom``, a grammar's syntax and definition under ``grammar``."""
    definition = dict(_schema(tool)[TOOL_KEY])
    if profile in ("openai", "mistral") and definition.pop("type", None) == "custom":
        declared = definition.pop("format", None)
        if isinstance(declared, dict) and declared.get("type") == "grammar":
            declared = {
                "type": "grammar",
                "grammar": {k: declared[k] for k in ("syntax", "definition")},
            }
        return {
            "type": "custom",
            "custom": {**definition, **({"format": declared} if declared else {})},
        }
    return definition


def tools_file(name: str, folder: Path) -> str:
    """A ``--tools`` file for the app, with fixture ``name``'s schemas."""
    envelope = json.loads((ROOT / "fixtures" / "conformance" / f"{name}.json").read_text())
    path = folder / "tools.json"
    path.write_text(json.dumps(envelope.get("tool_schemas", {})))
    return str(path)


def post(
    base: str,
    path: str,
    body: bytes = b"{}",
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    """One POST with http.client: the raw body bytes (chunked framing removed, nothing
    decompressed) and the response headers."""
    host, port = base.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    connection.request("POST", path, body, {"content-type": "application/json", **(headers or {})})
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, data


def read_events(
    base: str, path: str, stop_after: int | None = None, headers: dict[str, str] | None = None
) -> Iterator[tuple[float, bytes]]:
    """Each SSE event block as it arrives, with its arrival time; stop (and hang up) after
    ``stop_after`` events."""
    host, port = base.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    start = time.monotonic()
    name = path.split("/f/", 1)[1].rsplit("/v1/", 1)[0]
    known = (ROOT / "fixtures" / "conformance" / f"{name}.json").is_file()
    connection.request(
        "POST",
        path,
        request_body(name) if known else b"{}",
        {"content-type": "application/json", **(headers or {})},
    )
    response = connection.getresponse()
    block, count = b"", 0
    while line := response.readline():
        block += line
        if line in (b"\n", b"\r\n"):
            yield time.monotonic() - start, block
            block, count = b"", count + 1
            if stop_after is not None and count >= stop_after:
                connection.sock.shutdown(socket.SHUT_RDWR)
                connection.close()
                return
    connection.close()


def wait_for_log(caplog: Any, text: str, count: int = 1) -> None:
    """Until ``count`` log lines hold ``text``: the proxy logs from its own thread, and may do
    so after the client has its last byte (a flow is judged right after the response ends)."""
    deadline = time.monotonic() + 30
    while sum(text in r.getMessage() for r in caplog.records) < count:
        assert time.monotonic() < deadline, f"no log line with {text!r}"
        time.sleep(0.05)


def app_results(app: Path, serve_url: str, cases: list[dict[str, Any]]) -> dict[str, Any]:
    """Run the apps environment's ``app`` once for every case against ``callgate serve`` at
    ``serve_url`` (``APP_SERVE_URL``, ``APP_CASES``), with no SDK variable of the machine's:
    the JSON line it printed for each case, by the case's ``id``."""
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("OPENAI") and "_BASE_URL" not in key
    }
    done = subprocess.run(
        [str(APPS_PYTHON), str(app)],
        env={**environment, "APP_SERVE_URL": serve_url, "APP_CASES": json.dumps(cases)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return {line["id"]: line for line in map(json.loads, done.stdout.splitlines())}


def batch_results(app: Path, cases: list[dict[str, Any]], timeout: float = 600, **env: str) -> Any:
    """Run the apps environment's ``app`` once with ``cases`` as JSON on its standard input
    (callgate imported from this checkout; ``env`` besides): what it printed, as JSON."""
    done = subprocess.run(
        [str(APPS_PYTHON), str(app)],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def app_script_output(script: str, *arguments: str) -> Any:
    """What a short app ``script`` printed as JSON, run by the apps environment's interpreter
    with ``arguments``, importing callgate from this checkout."""
    done = subprocess.run(
        [str(APPS_PYTHON), "-c", script, *arguments],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def websocket_texts(
    url: str,
    path: str,
    sends: list[dict[str, Any]],
    headers: dict[str, str] | None = None,
    *,
    until: int | None = None,
) -> tuple[list[list[str]], str]:
    """Open a WebSocket to ``path`` (wsproto over a socket), send ``sends`` one by one, each
    after the server has sent nothing for a moment or dropped the connection, and read until
    then after the last. Given ``until``, send them all at once and read until that many
    messages came (a slow server is waited for; the messages are then all in the first part).
    Returns the text messages received on connect and after each send, and how it ended
    ("quiet", "closed", "dropped" or "enough")."""
    from wsproto import ConnectionType, WSConnection
    from wsproto.events import AcceptConnection, CloseConnection, Request, TextMessage

    host, port = url.removeprefix("http://").split(":")
    client = WSConnection(ConnectionType.CLIENT)
    received: list[list[str]] = [[]]
    pieces: list[str] = []
    with socket.create_connection((host, int(port)), timeout=2) as sock:
        sock.sendall(
            client.send(
                Request(host=host, target=path, extra_headers=list((headers or {}).items()))
            )
        )

        def take(data: bytes) -> str | None:
            """Read ``data``'s events: "closed" at a close frame."""
            client.receive_data(data)
            for event in client.events():
                if isinstance(event, TextMessage):
                    pieces.append(event.data)
                    if event.message_finished:
                        received[-1].append("".join(pieces))
                        pieces.clear()
                elif isinstance(event, CloseConnection):
                    return "closed"
                elif not isinstance(event, AcceptConnection):
                    raise AssertionError(event)
            return None

        def read(last: bool) -> str:
            while True:
                if last and until is not None:
                    if sum(map(len, received)) >= until:
                        return "enough"
                    sock.settimeout(10)
                try:
                    data = sock.recv(65536)
                except TimeoutError:
                    return "quiet"
                if not data:
                    return "dropped"
                closed = take(data)
                if closed:
                    return closed
                sock.settimeout(0.3)

        if until is not None:  # no pacing to wait for: everything is sent, then read
            from wsproto.connection import ConnectionState

            while client.state is not ConnectionState.OPEN:  # the upgrade's answer first
                data = sock.recv(65536)
                if not data:
                    return received, "dropped"
                take(data)
            for message in sends:
                sock.sendall(client.send(TextMessage(data=json.dumps(message))))
            return received, read(True)
        ended = read(not sends)
        for number, message in enumerate(sends, 1):
            if ended != "quiet":
                break
            sock.sendall(client.send(TextMessage(data=json.dumps(message))))
            received.append([])
            ended = read(number == len(sends))
    return received, ended
