"""The profile registry: one module per streaming API, each a ``Profile`` (see ``base``), looked
up by name in ``PROFILES`` or by endpoint with ``profile_for``. A profile's module is imported
the first time its profile is asked for: a command that judges one API's turns loads that API's
reader only.

Adding a provider: ``docs/adding-a-provider.md``.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Iterator, Mapping, MutableMapping
from functools import cache
from typing import Any
from urllib.parse import urlsplit

from callgate.reassemble.framing import EVENTSTREAM, JSON_ARRAY, MEDIA_TYPES, NDJSON, SSE, WEBSOCKET
from callgate.reassemble.profile_names import PROFILE_NAMES
from callgate.reassemble.profiles.base import STRUCTURAL_KEYS, Profile


class _Registry(MutableMapping[str, Profile]):
    """The profiles by name, in ``PROFILE_NAMES``' order; each profile's module (its name with
    ``_`` for ``-``) imported when the profile is first asked for. A profile set here (a test's
    variant of one) is kept as it is."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self._names = dict.fromkeys(names)
        self._loaded: dict[str, Profile] = {}

    def __getitem__(self, name: str) -> Profile:
        try:
            return self._loaded[name]
        except KeyError:
            if name not in self._names:
                raise
        module = importlib.import_module(f"{__name__}.{name.replace('-', '_')}")
        profile: Profile = module.PROFILE
        self._loaded[name] = profile
        return profile

    def __setitem__(self, name: str, profile: Profile) -> None:
        self._names[name] = None
        self._loaded[name] = profile

    def __delitem__(self, name: str) -> None:
        del self._names[name]
        self._loaded.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._names


PROFILES: MutableMapping[str, Profile] = _Registry(PROFILE_NAMES)


@cache
def version_headers() -> tuple[str, ...]:
    """Every profile's version headers, in registry order: request headers that hold no
    secret."""
    return tuple(
        dict.fromkeys(header for profile in PROFILES.values() for header in profile.version_headers)
    )


@cache
def all_structural_keys() -> frozenset[str]:
    """String fields that are structure in some profile's events: the redactor keeps them."""
    return STRUCTURAL_KEYS.union(*(profile.structural_keys for profile in PROFILES.values()))


def profile_for(url: str, provider: str | None = None) -> str | None:
    """The profile that reads a stream from ``url``, or None when callgate has none for it. Where
    several profiles serve an endpoint, the one that claims ``provider`` wins, else the first."""
    serving = [p for p in PROFILES.values() if serves(p.name, url)]
    claiming = [p for p in serving if provider in p.claims]
    chosen = claiming or [p for p in serving if not p.claims]
    return chosen[0].name if chosen else None


def serves(profile: str, url: str) -> bool:
    """Whether ``profile`` streams from an endpoint at ``url`` (its path's ending, or one of
    its path patterns)."""
    path = urlsplit(url).path
    spec = PROFILES[profile]
    return path.endswith(spec.endpoints) or any(
        re.search(pattern, path) for pattern, _ in spec.path_framings
    )


def profile_of_events(events: list[object]) -> str | None:
    """The profile whose events these could only be, judged by the first event; None if unsure."""
    first = next((e for e in events if isinstance(e, dict)), None)
    if first is None:
        return None
    return next((p.name for p in PROFILES.values() if p.sniff(first)), None)


def framing_for(profile: str, media_type: str) -> str | None:
    """The framing a response of ``profile`` served as ``media_type`` streams in (the media type
    without parameters, lower case), or None when the profile does not stream that way."""
    return next(
        (framing for framing in PROFILES[profile].framings if media_type in MEDIA_TYPES[framing]),
        None,
    )


def framing_of_request(profile: str, path: str, asks_sse: bool) -> str:
    """The framing a provider answers a request for ``profile`` at ``path`` with: the one its
    path pattern names (Bedrock's event stream), SSE when asked (Gemini's ``alt=sse``) and the
    API has it, else the API's first."""
    record = PROFILES[profile]
    for pattern, framing in record.path_framings:
        if re.search(pattern, path):
            return framing
    return SSE if asks_sse and SSE in record.framings else record.framings[0]


def framed(envelope: Mapping[str, Any], framing: str) -> Iterator[bytes]:
    """The bytes of each event of an envelope in ``framing``, as its provider sends them."""
    if framing == JSON_ARRAY:
        return array_frames(envelope)
    if framing == NDJSON:
        return line_frames(envelope)
    if framing == EVENTSTREAM:
        return message_frames(envelope)
    if framing == WEBSOCKET:
        raise ValueError("a WebSocket session's messages are not an HTTP body to frame")
    return sse_frames(envelope)


def message_frames(envelope: Mapping[str, Any]) -> Iterator[bytes]:
    """AWS event-stream messages, one per event, as Bedrock sends them."""
    profile = PROFILES[envelope["profile"]]
    return map(profile.message_frame, envelope[profile.stream_key])


def frames(envelope: Mapping[str, Any]) -> Iterator[bytes]:
    """The bytes of each event of an envelope as SSE, or in its profile's framing when the API
    has no SSE."""
    framings = PROFILES[envelope["profile"]].framings
    return framed(envelope, SSE if SSE in framings else framings[0])


def line_frames(envelope: Mapping[str, Any]) -> Iterator[bytes]:
    """Newline-delimited JSON, as Ollama sends it: one compact line per chunk."""
    for chunk in envelope[PROFILES[envelope["profile"]].stream_key]:
        yield json.dumps(chunk, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def array_frames(envelope: Mapping[str, Any]) -> Iterator[bytes]:
    """Gemini's streamed JSON array, framed as Gemini sends it: ``[`` and the first chunk, then
    ``\\n,\\r\\n`` before each further chunk, then ``\\n]``."""
    chunks = envelope[PROFILES[envelope["profile"]].stream_key]
    for number, chunk in enumerate(chunks):
        separator = b"[" if number == 0 else b"\n,\r\n"
        yield separator + json.dumps(chunk, ensure_ascii=False, indent=2).encode()
    yield b"\n]" if chunks else b"[]"


def sse_frames(envelope: Mapping[str, Any]) -> Iterator[bytes]:
    """The SSE bytes of each event of an envelope, as the profile's provider frames them."""
    profile = PROFILES[envelope["profile"]]
    for event in envelope[profile.stream_key]:
        yield profile.sse_frame(event)
    done = envelope.get("meta", {}).get("stream", {}).get("done", True)
    if profile.done_sentinel and done:
        yield b"data: [DONE]\n\n"
