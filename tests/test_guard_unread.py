"""An SDK that makes an item of bytes callgate does not read as an event: mistralai's decoder
hands out a last event that no blank line ended, which an SSE reader (callgate's, the proxy's,
``check``'s) drops as unfinished. ``guard`` holds that item and blocks the turn: what it
carries was never judged. The real mistralai SDK, sync and async, in one interpreter of the
apps environment, against a server on loopback that ends its body inside the event."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Thread

import pytest

from tests.conftest import CONFORMANCE, load
from tests.proxy_harness import app_script_output

pytestmark = pytest.mark.sdk

TURN = load(CONFORMANCE / "mistral" / "native_parallel_calls.json")
#: Each chunk as an SSE event; the last (the calls and ``finish_reason``) ends without the
#: blank line, and no ``[DONE]`` follows.
BODY = b"".join(f"data: {json.dumps(chunk)}\n\n".encode() for chunk in TURN["chunks"])[:-2]

SCHEMAS = json.dumps(TURN["tool_schemas"])
APP = """
import asyncio, json, sys
import callgate
from mistralai.client import Mistral

base, schemas = sys.argv[1], json.loads(sys.argv[2])
tools = [
    {"type": "function", "function": {"name": name, "parameters": schema}}
    for name, schema in schemas.items()
]
messages = [{"role": "user", "content": "Weather in Paris?"}]
results = {}

def outcome(seen, error):
    return {
        "seen": seen,
        "blocked": None if error is None else str(error),
        "codes": None if error is None else error.report.blocking_codes,
    }

def run_sync():
    seen = []
    client = Mistral(api_key="k", server_url=base)
    stream = client.chat.stream(model="m", messages=messages, tools=tools)
    try:
        for item in callgate.guard(stream, tools):
            seen.append(item.data.choices[0].finish_reason)
    except callgate.Blocked as error:
        return outcome(seen, error) | {"closed": stream.response.is_closed}
    return outcome(seen, None) | {"closed": stream.response.is_closed}

async def run_async():
    seen = []
    client = Mistral(api_key="k", server_url=base)
    stream = await client.chat.stream_async(model="m", messages=messages, tools=tools)
    try:
        async for item in callgate.guard(stream, tools):
            seen.append(item.data.choices[0].finish_reason)
    except callgate.Blocked as error:
        return outcome(seen, error) | {"closed": stream.response.is_closed}
    return outcome(seen, None) | {"closed": stream.response.is_closed}

print(json.dumps({"sync": run_sync(), "async": asyncio.run(run_async())}))
"""


class _EndsInsideAnEvent(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def outcomes() -> Iterator[dict[str, dict[str, object]]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EndsInsideAnEvent)
    Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield app_script_output(APP, f"http://127.0.0.1:{server.server_port}", SCHEMAS)
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_item_of_an_unfinished_event_is_held_and_the_turn_blocked(
    outcomes: dict[str, dict[str, object]], mode: str
) -> None:
    assert outcomes[mode] == {
        # The first chunk reaches the app; the SDK's item of the unfinished one never does.
        "seen": [None],
        "blocked": "callgate blocked this turn: missing_terminal",
        "codes": ["missing_terminal"],
        "closed": True,
    }
