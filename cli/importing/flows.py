"""Reads mitmproxy flow files (.flow/.mitm, as ``mitmdump -w`` writes them) with mitmproxy's own
``FlowReader``: each HTTP flow becomes an ``Exchange`` or a ``Skipped``.
"""

from __future__ import annotations

from io import BytesIO
from typing import Any

from callgate.cli.extras import PROXY_EXTRA
from callgate.cli.importing.common import (
    Headers,
    RawRequest,
    Skipped,
    convert_item,
    convert_items,
    header_value,
    require_stream,
    short,
)
from callgate.cli.importing.har import read_har
from callgate.reassemble.errors import InputError, NotApplicable
from callgate.redact.exchange import Exchange
from callgate.redact.sessions import session_exchanges


def read_flows(data: bytes, raw: RawRequest) -> list[Exchange | Skipped]:
    if data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):  # FlowReader reads HAR too
        return read_har(data, raw)
    try:
        from mitmproxy import exceptions, io
    except ImportError:
        raise InputError(f"reading mitmproxy flow files needs mitmproxy: {PROXY_EXTRA}") from None
    flows: list[Any] = []
    try:
        for flow in io.FlowReader(BytesIO(data)).stream():
            flows.append(flow)
    # Any exception: mitmproxy's deserialiser raises more than FlowReadException on bad state.
    except Exception as error:
        if not flows:
            known = isinstance(error, exceptions.FlowReadException)
            problem = short(error) if known else f"{type(error).__name__} in the first flow"
            raise InputError(f"not a mitmproxy flow file: {problem}") from None
        flows.append(None)  # a writer that was killed leaves a partial last flow: keep the rest
    items: list[Exchange | Skipped] = []
    for number, flow in enumerate(flows, 1):
        if getattr(flow, "websocket", None) is not None:
            items += convert_items(f"flow {number}", _session_exchanges, flow)
        else:
            items.append(convert_item(f"flow {number}", _flow_exchange, flow))
    return items


def _session_exchanges(flow: Any) -> list[Exchange]:
    """A WebSocket flow: one exchange per response of its session; its text messages only."""
    request, response = flow.request, flow.response
    return session_exchanges(
        url=request.pretty_url,
        request_headers=_mitmproxy_headers(request.headers),
        status=response.status_code if response is not None else 0,
        response_headers=_mitmproxy_headers(response.headers) if response is not None else [],
        messages=[
            (message.from_client, message.content.decode("utf-8", "replace"))
            for message in flow.websocket.messages
            if message.is_text
        ],
        capture="import:flow",
        closed=(flow.websocket.close_code, flow.websocket.close_reason or "")
        if flow.websocket.timestamp_end is not None
        else None,
    )


def _flow_exchange(flow: Any) -> Exchange:
    from mitmproxy import http

    if flow is None:
        raise NotApplicable("file is truncated or corrupt from here on")
    if not isinstance(flow, http.HTTPFlow):
        raise NotApplicable(f"not an HTTP flow ({flow.type})")
    request, response = flow.request, flow.response
    error = short(flow.error.msg) if flow.error else None
    if response is None:
        raise NotApplicable(f"no response ({error or 'none recorded'})")
    response_headers = _mitmproxy_headers(response.headers)
    body = _flow_content(response, response_headers)
    require_stream(request.method, request.pretty_url, response_headers, body or b"")
    if body is None:
        raise NotApplicable("no response body stored (streamed without store_streamed_bodies)")
    request_headers = _mitmproxy_headers(request.headers)
    return Exchange(
        method=request.method,
        url=request.pretty_url,
        request_headers=request_headers,
        request_body=_flow_content(request, request_headers) or b"",
        status=response.status_code,
        response_headers=response_headers,
        response_body=body,
        complete=flow.error is None,
        capture="import:flow",
        error=error,
    )


def _mitmproxy_headers(headers: Any) -> Headers:
    # As mitmproxy's own Headers.items(): UTF-8, undecodable bytes kept as surrogates.
    return [
        (name.decode("utf-8", "surrogateescape"), value.decode("utf-8", "surrogateescape"))
        for name, value in headers.fields
    ]


def _flow_content(message: Any, headers: Headers) -> bytes | None:
    """A mitmproxy message's body with content-encoding removed; None if it was not stored."""
    try:
        content = message.get_content()
    except ValueError:
        coding = short(header_value(headers, "content-encoding"), 20)
        raise NotApplicable(f"body is not valid {coding} (truncated?)") from None
    return content if isinstance(content, bytes) else None
