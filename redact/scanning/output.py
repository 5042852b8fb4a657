"""Model output a fixture says it masked, and did not: the fixture's stream redacted again as
its ``meta.redaction`` says it was, compared string by string with the stream it holds.

Masking is idempotent (masked text masks to itself, pseudonyms map to themselves), so a fixture
that callgate redacted compares equal; a string that redaction would still change is output
that was never masked. Ids are left out: a pseudonym is not output, and a hand-edited id is no
leak of what the model said.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from callgate.reassemble.envelope import validate_envelope
from callgate.reassemble.errors import InputError
from callgate.reassemble.profiles import PROFILES
from callgate.redact.leaks import pointer_token
from callgate.redact.mask import mask_text
from callgate.redact.scanning.findings import Kind, ScanFinding
from callgate.redact.stream import ArgumentMode, redacted_copy, scrubbed

#: The places of argument fields: (id of the container, field).
_Sites = set[tuple[int, str]]


def unmasked_output(envelope: Mapping[str, Any]) -> list[ScanFinding]:
    """Output findings of a callgate fixture whose ``meta.redaction`` says text or arguments
    were masked (or dropped)."""
    meta = envelope.get("meta")
    redaction = meta.get("redaction") if isinstance(meta, Mapping) else None
    if not isinstance(redaction, Mapping):
        return []
    keep_text = redaction.get("text") == "keep"
    mode = redaction.get("arguments")
    arguments = ArgumentMode(mode) if mode in ("mask", "drop") else ArgumentMode.KEEP
    if keep_text and arguments is ArgumentMode.KEEP:
        return []
    try:
        validate_envelope(envelope)
    except InputError:
        return []
    key = PROFILES[envelope["profile"]].stream_key
    events = envelope[key]
    sites = {(id(c), f) for _, _, c, f in PROFILES[envelope["profile"]].argument_sites(events)}
    again = redacted_copy(envelope, arguments, owned=False, keep_text=keep_text)[key]
    return _differences(events, again, f"/{key}", sites, in_arguments=False)


def unmasked_record(record: Mapping[str, Any]) -> list[ScanFinding]:
    """Output findings of a tape's exchange record whose ``redaction.text`` is ``mask``."""
    redaction = record.get("redaction")
    response = record.get("response")
    if not isinstance(redaction, Mapping) or redaction.get("text") != "mask":
        return []
    if not isinstance(response, Mapping):
        return []
    findings = []
    if isinstance(response.get("text"), str) and mask_text(response["text"]) != response["text"]:
        findings.append(ScanFinding("/response/text", Kind.OUTPUT, "text"))
    if "json" in response:
        again = scrubbed(copy.deepcopy(response["json"]), keep_text=False)
        findings += _differences(response["json"], again, "/response/json", set(), False)
    return findings


def _differences(
    held: Any, again: Any, path: str, sites: _Sites, in_arguments: bool
) -> list[ScanFinding]:
    if isinstance(held, str):
        if held == again:
            return []
        return [ScanFinding(path, Kind.OUTPUT, "arguments" if in_arguments else "text")]
    found: list[ScanFinding] = []
    if isinstance(held, dict) and isinstance(again, dict):
        for key, child in held.items():
            if key not in again or key == "id" or key.endswith(("_id", "Id")):
                continue
            token = pointer_token(key)
            inside = in_arguments or (id(held), key) in sites
            found += _differences(child, again[key], f"{path}/{token}", sites, inside)
    elif isinstance(held, list) and isinstance(again, list):
        for index, (child, other) in enumerate(zip(held, again, strict=False)):
            found += _differences(child, other, f"{path}/{index}", sites, in_arguments)
    return found
