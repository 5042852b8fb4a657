"""An exchange no profile reads, made safe to keep on a tape: a whole (non-streamed) completion,
an embedding, a provider's error answer, a stream of an API callgate does not judge.

Default deny, as for envelopes: of the request only the shape the caller gives is kept (method,
path, model, tool names, counts; never a prompt); of the response its status, its content type
and its body, scrubbed as stream events are (ids to pseudonyms, free text masked unless
``keep_text``, structure and numbers kept). Then the leak gate, before anything can be written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from callgate.reassemble import strict_json
from callgate.reassemble.limits import DOCUMENT_LIMITS
from callgate.redact.exchange import Exchange
from callgate.redact.leaks import secrets_of
from callgate.redact.mask import mask_text
from callgate.redact.policy import refuse_leaks
from callgate.redact.stream import scrubbed

#: The ``tape_record`` value of the records this module writes.
RECORD_VERSION = 1


def exchange_record(
    exchange: Exchange, request_shape: Mapping[str, Any], *, keep_text: bool = False
) -> dict[str, Any]:
    """The record of ``exchange``. Raises ``RedactionRefused`` when a credential from the
    exchange, or a known credential format, would remain."""
    content_type = exchange.header("content-type", response=True) or ""
    response: dict[str, Any] = {"status": exchange.status, "content_type": content_type[:80]}
    body = exchange.response_body
    try:
        value = strict_json.loads_bytes(body, DOCUMENT_LIMITS) if body.strip() else None
    except strict_json.StrictJSONError:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            response["omitted"] = f"{len(body)} bytes that are not UTF-8"
        else:
            response["text"] = text if keep_text else mask_text(text)
    else:
        response["json"] = scrubbed(value, keep_text=keep_text)
    record = {
        "tape_record": RECORD_VERSION,
        "description": f"{exchange.method} {request_shape.get('path', '')}: HTTP "
        f"{exchange.status}, not a stream callgate judges",
        "request": dict(request_shape),
        "response": response,
        "redaction": {"text": "keep" if keep_text else "mask"},
    }
    refuse_leaks(record, secrets_of(exchange))
    return record
