"""One captured HTTP exchange, as every source (proxy, HAR, flow file, cassette, raw body) gives it.

Nothing here is redacted yet: an ``Exchange`` holds secrets and prompts and must never be written
anywhere. ``callgate.redact.redact_exchange`` turns it into a safe envelope.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, kw_only=True)
class Exchange:
    method: str
    #: The full request URL, query string included (it may hold a key; it is never kept).
    url: str
    request_headers: list[tuple[str, str]]
    request_body: bytes
    status: int
    response_headers: list[tuple[str, str]]
    #: The response body with any content-encoding (gzip, br, ...) already removed.
    response_body: bytes
    #: False when the response did not end cleanly (upstream abort, client disconnect).
    complete: bool = True
    #: Where it was captured: "proxy", "tape", "import:har", "import:flow", "import:vcr",
    #: "import:raw".
    capture: str = "import:raw"
    #: Why it did not end cleanly, when it did not (e.g. "Client disconnected.").
    error: str | None = None
    #: Seconds from the first response byte to each SSE event, when the source knows them.
    event_times: list[float] = field(default_factory=list)
    #: For one response of a WebSocket session (``callgate.redact.sessions``): the JSON text
    #: of each server message it was given, in place of a body.
    messages: tuple[str, ...] | None = None

    def header(self, name: str, *, response: bool = False) -> str | None:
        """The first value of header ``name`` (case-insensitive), or None."""
        wanted = name.lower()
        headers = self.response_headers if response else self.request_headers
        return next((value for key, value in headers if key.lower() == wanted), None)
