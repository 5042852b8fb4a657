"""The fixture envelope: one streamed turn plus what is needed to judge it.

``ENVELOPE_SCHEMA`` is the published JSON Schema (``schemas/envelope-v1.schema.json`` is generated
from it and a test keeps the two equal). ``check`` validates an envelope against it and runs the
engine over its stream.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from callgate.reassemble.engine import Reassembler
from callgate.reassemble.errors import InputError
from callgate.reassemble.limits import Limits
from callgate.reassemble.profiles import PROFILES
from callgate.reassemble.report import Report, Status

ENVELOPE_VERSION = 1


def _envelope_schema() -> dict[str, Any]:
    stream_rules = [
        {
            "if": {"properties": {"profile": {"const": name}}, "required": ["profile"]},
            "then": {"required": [profile.stream_key]},
        }
        for name, profile in sorted(PROFILES.items())
    ]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://callgate.dev/schemas/envelope-v1.schema.json",
        "title": "callgate fixture envelope, version 1",
        "type": "object",
        "required": ["profile"],
        "additionalProperties": False,
        "properties": {
            "envelope_version": {"const": ENVELOPE_VERSION},
            "description": {"type": "string", "description": "What this fixture shows."},
            "profile": {"enum": sorted(PROFILES), "description": "How to read the stream."},
            "provider": {"type": "string", "description": "Who served it; selects quirks."},
            "tool_schemas": {
                "type": "object",
                "description": "Tool name to the JSON Schema of its arguments.",
                "additionalProperties": {"type": ["object", "boolean"]},
            },
            "request": {
                "type": "object",
                "description": "Non-prompt request parameters (tool_choice, model, n, ...).",
            },
            "chunks": {"type": "array", "description": "Chat Completions chunks, in order."},
            "events": {"type": "array", "description": "Messages stream events, in order."},
            "meta": {"type": "object", "description": "Provenance; ignored by the verdict."},
            "expect": {"$ref": "#/$defs/expect"},
        },
        "allOf": stream_rules,
        "$defs": {
            "expect": {
                "type": "object",
                "description": "Pinned expectations for replay; ignored by check.",
                "required": ["status"],
                "additionalProperties": False,
                "properties": {
                    "status": {"enum": [s.value for s in Status]},
                    "codes": {"type": "array", "items": {"type": "string"},
                              "uniqueItems": True},
                    "calls": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["id", "name", "arguments"],
                            "additionalProperties": False,
                            "properties": {
                                "id": {"type": ["string", "null"]},
                                "name": {"type": ["string", "null"]},
                                "arguments": {"type": ["string", "null"]},
                            },
                        },
                    },
                },
            },
        },
    }


ENVELOPE_SCHEMA: dict[str, Any] = _envelope_schema()
_VALIDATOR = Draft202012Validator(ENVELOPE_SCHEMA)


class EnvelopeError(InputError):
    """The input is not a callgate envelope. The message is one line naming the problem."""


def validate_envelope(envelope: object) -> Mapping[str, Any]:
    """Return ``envelope`` if it is a valid envelope; raise ``EnvelopeError`` otherwise."""
    error = best_match(_VALIDATOR.iter_errors(envelope))
    if error is None:
        assert isinstance(envelope, Mapping)
        return envelope
    where = "".join(f"/{part}" for part in error.absolute_path) or "(root)"
    message = error.message if len(error.message) <= 200 else error.message[:200] + "..."
    raise EnvelopeError(f"not a callgate envelope: at {where}: {message}")


def check(
    envelope: object,
    *,
    allow_quirks: Iterable[str] = (),
    limits: Limits | None = None,
) -> Report:
    """Judge the streamed turn in ``envelope``.

    Raises ``EnvelopeError`` when it is not an envelope and ``ValueError`` for an unknown quirk.
    """
    valid = validate_envelope(envelope)
    profile = PROFILES[valid["profile"]]
    reassembler = Reassembler(
        valid["profile"],
        valid.get("tool_schemas", {}),
        request=valid.get("request"),
        provider=valid.get("provider"),
        limits=limits,
        allow_quirks=allow_quirks,
    )
    for raw in valid[profile.stream_key]:
        reassembler.feed(raw)
    return reassembler.close()
