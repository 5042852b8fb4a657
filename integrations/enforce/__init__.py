"""Enforce mode's byte-level gate: the stream tap (``tap``, its states in ``tap_state``, its
deferred reads in ``backlog``), which the proxy addon runs inside mitmproxy, and the httpx
transport (``transport``) that runs it inside the app."""
