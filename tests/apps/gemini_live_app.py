"""A text voice-agent turn over google-genai's Live API client (``client.aio.live.connect``), run
in the apps environment; ``tests/test_gemini_live_proxy.py`` drives it.

    gemini_live_app.py < cases.json > results.json

Each case opens one session at ``base_url`` (through mitmproxy, whose CA the environment's
``SSL_CERT_FILE`` names: the client always speaks TLS), with the case's fixture
(``x-callgate-fixture``) and mutation (``x-callgate-mutate``), its tools declared in the
session's setup. It sends a user turn, then reads the model's turn: each ``toolCall``'s calls
are run (noted) and answered with ``send_tool_response``; a ``toolCallCancellation``'s ids are
noted. One interpreter runs every case; each result is printed under the case's id, with the
traceback of a case that crashed.
"""

from __future__ import annotations

import asyncio
import json
import sys
import traceback
from typing import Any

from google import genai
from google.genai import types

#: What the app says, and the API key it sends: no fixture may hold them.
CANARY_PROMPT = "canary-prompt-2f7c: weather in Paris, then hang up"
CANARY_INSTRUCTIONS = "canary-instructions-9a4e: you are a phone agent"
API_KEY = "AIzaCanaryKey7b1d0123456789abcdefghijklmn"


async def run(case: dict[str, Any]) -> dict[str, Any]:
    headers = {"x-callgate-fixture": case["fixture"]}
    if case.get("mutate"):
        headers["x-callgate-mutate"] = case["mutate"]
    client = genai.Client(
        api_key=API_KEY, http_options={"base_url": case["base_url"], "headers": headers}
    )
    config = types.LiveConnectConfig(
        response_modalities=[types.Modality.AUDIO],
        system_instruction=CANARY_INSTRUCTIONS,
        tools=[types.Tool(function_declarations=case["declarations"])],
    )
    ran: list[list[Any]] = []
    cancelled: list[str] = []
    closed = None
    try:
        async with client.aio.live.connect(model="gemini-live-2.5-flash", config=config) as live:
            turn = types.Content(role="user", parts=[types.Part(text=CANARY_PROMPT)])
            await live.send_client_content(turns=turn, turn_complete=True)
            async for message in live.receive():
                if message.tool_call is not None:
                    calls = message.tool_call.function_calls or []
                    ran += [[call.name, call.args] for call in calls]
                    answers = [
                        types.FunctionResponse(id=call.id, name=call.name, response={"ok": True})
                        for call in calls
                    ]
                    await live.send_tool_response(function_responses=answers)
                if message.tool_call_cancellation is not None:
                    cancelled += message.tool_call_cancellation.ids or []
    except Exception as error:  # the server closed the session under the app
        closed = type(error).__name__
    return {"ran": ran, "cancelled": cancelled, "closed": closed}


def main() -> None:
    results = {}
    for case in json.load(sys.stdin):
        try:
            results[case["id"]] = asyncio.run(run(case))
        except Exception:
            results[case["id"]] = {"crashed": traceback.format_exc()}
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
