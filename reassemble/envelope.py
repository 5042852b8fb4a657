"""The fixture envelope: one streamed turn plus what is needed to judge it.

``ENVELOPE_SCHEMA`` is the published JSON Schema (``schemas/envelope-v1.schema.json`` is generated
from it and a test keeps the two equal). ``check`` validates an envelope against it and runs the
engine over its stream. ``fixture_bytes`` lays an envelope out as a fixture file holds it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any

from callgate.reassemble.encoder_pieces import encoder_pieces
from callgate.reassemble.engine import Reassembler
from callgate.reassemble.errors import InputError, UsageError
from callgate.reassemble.limits import Limits
from callgate.reassemble.profile_names import STREAM_KEYS
from callgate.reassemble.profiles import PROFILES
from callgate.reassemble.report import Report, Status

ENVELOPE_VERSION = 1


def _envelope_schema() -> dict[str, Any]:
    stream_rules = [
        {
            "if": {"properties": {"profile": {"const": name}}, "required": ["profile"]},
            "then": {"required": [stream_key]},
        }
        for name, stream_key in sorted(STREAM_KEYS.items())
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
            "profile": {"enum": sorted(STREAM_KEYS), "description": "How to read the stream."},
            "provider": {"type": "string", "description": "Who served it; selects quirks."},
            "tool_schemas": {
                "type": "object",
                "description": (
                    "Tool name to the JSON Schema of its arguments, or, for a tool the "
                    'provider defines, {"x-callgate-tool": its definition}.'
                ),
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
                    "codes": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
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


@cache
def _validator() -> Any:
    """jsonschema's validator of ``ENVELOPE_SCHEMA``, made when an envelope is not plainly valid
    (``_plainly_valid``): only then is jsonschema needed, to name the problem."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(ENVELOPE_SCHEMA)


class EnvelopeError(InputError):
    """The input is not a callgate envelope. The message is one line naming the problem."""


_TOP_KEYS = frozenset(ENVELOPE_SCHEMA["properties"])
_EXPECT_KEYS = frozenset(ENVELOPE_SCHEMA["$defs"]["expect"]["properties"])
_CALL_KEYS = frozenset({"id", "name", "arguments"})
_STATUSES = frozenset(status.value for status in Status)
_TYPED = {
    "description": str,
    "provider": str,
    "request": dict,
    "meta": dict,
    "chunks": list,
    "events": list,
    "tool_schemas": dict,
}


def _plainly_valid(document: object) -> bool:
    """``ENVELOPE_SCHEMA`` read directly: True only for documents the schema accepts (a test
    holds the two together on generated documents), where jsonschema walks every keyword of
    the schema to say the same; anything this does not accept goes to it, and it names the
    problem."""
    if not isinstance(document, dict) or not _TOP_KEYS.issuperset(document):
        return False
    profile = document.get("profile")
    if (
        not isinstance(profile, str)
        or profile not in STREAM_KEYS
        or STREAM_KEYS[profile] not in document
    ):
        return False
    for key, value in document.items():  # loops, not generators: this runs once per fixture
        kind = _TYPED.get(key)
        if kind is not None and not isinstance(value, kind):
            return False
    if "envelope_version" in document:
        version = document["envelope_version"]  # const 1: 1.0 equals it, true does not
        if type(version) not in (int, float) or version != ENVELOPE_VERSION:
            return False
    for schema in document.get("tool_schemas", {}).values():
        if not isinstance(schema, (dict, bool)):
            return False
    return "expect" not in document or _plain_expect(document["expect"])


def _plain_expect(expect: object) -> bool:
    if not isinstance(expect, dict) or not _EXPECT_KEYS.issuperset(expect):
        return False
    status = expect.get("status")
    if not isinstance(status, str) or status not in _STATUSES:
        return False
    codes = expect.get("codes", [])
    if not isinstance(codes, list):
        return False
    for code in codes:
        if not isinstance(code, str):
            return False
    if len(set(codes)) != len(codes):  # after the types: a list in the list is unhashable
        return False
    calls = expect.get("calls", [])
    if not isinstance(calls, list):
        return False
    for call in calls:
        if not isinstance(call, dict) or call.keys() != _CALL_KEYS:
            return False
        for value in call.values():
            if value is not None and not isinstance(value, str):
                return False
    return True


def validate_envelope(envelope: object) -> Mapping[str, Any]:
    """Return ``envelope`` if it is a valid envelope; raise ``EnvelopeError`` otherwise."""
    if _plainly_valid(envelope):
        assert isinstance(envelope, Mapping)
        return envelope
    from jsonschema.exceptions import best_match

    error = best_match(_validator().iter_errors(envelope))
    if error is None:
        assert isinstance(envelope, Mapping)
        return envelope
    where = "".join(f"/{part}" for part in error.absolute_path) or "(root)"
    message = error.message if len(error.message) <= 200 else error.message[:200] + "..."
    raise EnvelopeError(f"not a callgate envelope: at {where}: {message}")


def check(
    envelope: object,
    *,
    tools: Mapping[str, object] | Sequence[object] | None = None,
    allow_quirks: Iterable[str] = (),
    limits: Limits | None = None,
) -> Report:
    """Judge the streamed turn in ``envelope``. ``tools``, for an envelope without
    ``tool_schemas``, are its tools as the provider's SDK takes them (see ``Reassembler``).

    Raises ``EnvelopeError`` when it is not an envelope and ``UsageError`` for an unknown quirk,
    a tools list it cannot read, or tools given both ways.
    """
    valid = validate_envelope(envelope)
    profile = PROFILES[valid["profile"]]
    if tools is not None and "tool_schemas" in valid:
        raise UsageError("give the tools once: the envelope's tool_schemas or tools, not both")
    reassembler = Reassembler(
        valid["profile"],
        valid.get("tool_schemas", {}) if tools is None else tools,
        request=valid.get("request"),
        provider=valid.get("provider"),
        limits=limits,
        allow_quirks=allow_quirks,
    )
    for raw in valid[profile.stream_key]:
        reassembler.feed(raw)
    return reassembler.close()


# -- as a file ---------------------------------------------------------------------------------

#: One JSON value on one line, by the C encoder (``json.dumps`` with options builds an encoder
#: per call). Values read from JSON hold no cycle, so none is looked for (the encoder would
#: otherwise record every list and object it enters).
_ENCODER = json.JSONEncoder(ensure_ascii=False, check_circular=False)
_ONE_LINE = _ENCODER.encode
#: ``_ONE_LINE``'s C encoder, built once: a stream's events, nearly all of a long fixture, are
#: each its pieces joined.
_EVENT_PIECES = encoder_pieces(_ENCODER)
#: A string as ``_ONE_LINE`` writes it, quotes included.
encoded_string = (
    json.encoder.encode_basestring_ascii
    if _ENCODER.ensure_ascii
    else json.encoder.encode_basestring
)


def one_line_events(values: list[Any]) -> list[str]:
    """Each of ``values`` as ``_ONE_LINE`` writes it."""
    pieces = _EVENT_PIECES
    return ["".join(pieces(value, 0)) for value in values]


def fixture_bytes(envelope: Mapping[str, Any]) -> bytes:
    """How a fixture is stored: indented UTF-8 JSON with a final newline, each event of the
    stream on a line of its own. A diff then shows which events changed, and the events (nearly
    all of a long stream) go through the C encoder: Python 3.11's indenting encoder is pure
    Python, and was a large share of what writing a long fixture cost the proxy. Any other JSON
    object (a tape's record) is laid out the same way, without a stream."""
    return fixture_text(envelope).encode()


def fixture_text(envelope: Mapping[str, Any], event_lines: list[str] | None = None) -> str:
    """``fixture_bytes`` before encoding: the text a leak gate searches before it is written.
    ``event_lines``: the stream's events as ``one_line_events`` writes them, where the caller
    wrote them already."""
    profile = PROFILES.get(envelope.get("profile"))  # type: ignore[arg-type]
    stream_key = profile.stream_key if profile is not None else None
    fields = []
    for key, value in envelope.items():
        if key == stream_key and isinstance(value, list) and value:
            lines = one_line_events(value) if event_lines is None else event_lines
            text = "[\n    " + ",\n    ".join(lines) + "\n  ]"
        else:
            # A JSON string holds no raw line break, so every one here is layout.
            text = json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n  ")
        fields.append(f"  {_ONE_LINE(key)}: {text}")
    return "{\n" + ",\n".join(fields) + "\n}\n" if fields else "{}\n"
