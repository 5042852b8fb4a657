"""Credentials in one string: the leak gate's formats, searched in the string as it is and in
what it holds encoded (URL-encoding, base64 and base64url, and gzip or zlib inside base64, as a
cassette's ``!!binary`` body or a HAR's base64 ``content.text`` holds a compressed answer).
"""

from __future__ import annotations

import base64
import binascii
import re
import zlib
from collections.abc import Iterator
from urllib.parse import unquote_plus

from callgate.redact.leaks import PATTERNS

#: A run that may be base64 or base64url; shorter runs cannot hold a whole credential.
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{24,}={0,2}")
#: How far one string is unwrapped: base64 inside URL-encoding inside base64 is not a recording.
_DEPTH = 2
#: A compressed blob is inflated up to this many bytes: a bomb costs the scan nothing more.
_INFLATED_LIMIT = 64 * 1024 * 1024


def credential_patterns(text: str) -> list[str]:
    """The names of the credential formats found in ``text`` or in what it holds encoded, in
    ``PATTERNS`` order. A format whose only match lies inside another's (the key after
    ``Bearer``, the ``sk-`` inside ``sk-ant-``) is not named again."""
    found: list[str] = []
    for form in _forms(text, _DEPTH):
        for name in _patterns_in(form):
            if name not in found:
                found.append(name)
    return [name for name in PATTERNS if name in found]


def _patterns_in(text: str) -> list[str]:
    taken: list[tuple[int, int]] = []
    names = []
    for name, pattern in PATTERNS.items():
        for match in pattern.finditer(text):
            start, end = match.span()
            if not any(start < e and s < end for s, e in taken):
                taken.append((start, end))
                names.append(name)
    return names


def _forms(text: str, depth: int) -> Iterator[str]:
    yield text
    if depth == 0:
        return
    if "%" in text or "+" in text:
        unquoted = unquote_plus(text)
        if unquoted != text:
            yield from _forms(unquoted, depth - 1)
    for run in _BASE64_RUN.finditer(text):
        decoded = _base64(run.group())
        if decoded is not None:
            yield from _forms(_text(decoded), depth - 1)


def _base64(run: str) -> bytes | None:
    """A ``_BASE64_RUN`` decoded, or None when it is not base64 (b64decode refuses a run one
    character past a whole quantum)."""
    padded = run.rstrip("=")
    padded += "=" * (-len(padded) % 4)
    alphabet = "-_" if ("-" in run or "_" in run) else "+/"
    try:
        return base64.b64decode(padded, altchars=alphabet.encode(), validate=True)
    except (binascii.Error, ValueError):
        return None


def inflated(data: bytes) -> bytes:
    """``data`` without gzip or zlib compression when it has it (cut at ``_INFLATED_LIMIT``),
    else ``data``."""
    if not (data[:2] == b"\x1f\x8b" or (data[:1] == b"x" and int.from_bytes(data[:2]) % 31 == 0)):
        return data
    try:
        return zlib.decompressobj(wbits=47).decompress(data, _INFLATED_LIMIT)
    except zlib.error:
        return data


def _text(data: bytes) -> str:
    return inflated(data).decode("utf-8", "replace")
