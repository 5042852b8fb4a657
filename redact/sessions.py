"""A recorded WebSocket session as exchanges, one per response: what ``callgate import`` makes of
a session (OpenAI Realtime, or the Responses API's WebSocket mode) a flow file or a HAR file
holds; a Gemini Live session is one exchange, its close frame last where it was recorded.

Each response is cut out of the session as the proxy cuts it live (``SessionGate``): the server
messages about it, the settings the client had given it (Realtime's ``session.update``, the
``response.create`` that asked for it) as the request, the upgrade's URL and headers. The
client's messages go no further than those settings.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from callgate.reassemble.errors import NotApplicable
from callgate.reassemble.profiles import profile_for
from callgate.reassemble.sessions import SESSION_PROFILES, Ended, SessionGate
from callgate.redact.exchange import Exchange

#: One WebSocket message as a recording keeps it: whether the client sent it, and its text.
Message = tuple[bool, str]


def session_exchanges(
    *,
    url: str,
    request_headers: list[tuple[str, str]],
    status: int,
    response_headers: list[tuple[str, str]],
    messages: Iterable[Message],
    capture: str,
    provider: str | None = None,
    closed: tuple[int | None, str] | None = None,
) -> list[Exchange]:
    """One exchange per response of the session, in the order they ended. Raises
    ``NotApplicable`` for a WebSocket that is no session callgate reads, or one in which no
    response started. ``closed``: the close frame's code (None: none came) and reason, where
    the recording holds it."""
    profile = profile_for(url, provider)
    if profile not in SESSION_PROFILES:
        raise NotApplicable("a WebSocket that is no model session callgate reads")
    ended: list[Ended] = []
    # Cut, not judged: each response's fixture is judged when it is made.
    gate = SessionGate(profile, [], on_end=ended.append, judging=False)
    for from_client, text in messages:
        if from_client:
            gate.read_client_text(text)
        else:
            gate.read_text(text)
    if closed is not None:
        gate.read_close(*closed)
    gate.close()
    if not ended:
        raise NotApplicable("no response in this session")
    return [
        Exchange(
            method="GET",
            url=url,
            request_headers=request_headers,
            request_body=json.dumps(response.request or {}).encode(),
            status=status,
            response_headers=response_headers,
            response_body=b"",
            capture=capture,
            messages=tuple(response.texts),
        )
        for response in ended
    ]
