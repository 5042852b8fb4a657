"""Redaction's short path for a Chat Completions chunk that is one call's argument fragment
(``fragment_site``) is held to the general reading: the same argument sites, and the same
redacted stream in every argument mode, over chunks changed in the places that decide."""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Iterator
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from callgate.reassemble.profiles import PROFILES
from callgate.reassemble.profiles.base import ArgumentSite
from callgate.reassemble.profiles.openai import chunk_sites, fragment_site
from callgate.redact import ArgumentMode
from callgate.redact.stream import redacted_copy
from tests.test_profiles import (
    _CHANGES,
    _CHOICE,
    _DELTA,
    _ENTRY,
    _FUNCTION,
    _TWO_CALLS_STARTED,
    _changed,
)

#: Beyond what the engine's short path is held to: members the scrub would change (text, ids,
#: objects) where the short path must see them, and inert ones it may pass over.
_SCRUBBED = [
    *((_CHOICE, "logprobs", value) for value in (None, 0, 1.5, False, {"content": []}, "x")),
    *((_CHOICE, "native_finish_reason", value) for value in (None, "tool_calls")),
    *(((), key, value) for key in ("id", "model", "system_fingerprint") for value in ("a_1", "")),
    ((), "usage", {"prompt_tokens": 1}),
    *((_DELTA, key, value) for key in ("content", "role", "refusal") for value in ("hi", None)),
    *((_ENTRY, "x", value) for value in ("secret", 1, None)),
    *((_FUNCTION, "x", value) for value in ("secret", 1, None)),
    *((_FUNCTION, "name", value) for value in ("f", None)),
]
_ALL_CHANGES = _CHANGES + _SCRUBBED


def _general_sites(events: list[Any]) -> Iterator[ArgumentSite]:
    for number, chunk in enumerate(events):
        yield from chunk_sites(chunk, number)


#: The Chat profile redacted without its short path.
_GENERAL = dataclasses.replace(
    PROFILES["openai"], argument_sites=_general_sites, fragment_site=None
)


def _stream(changes: list[list[Any]], texts: list[str]) -> list[Any]:
    """Two calls started, then continuation chunks each changed in a few places, then the end."""
    chunks: list[Any] = [{"id": "chatcmpl-1", "model": "m", **_TWO_CALLS_STARTED}]
    for some, text in zip(changes, itertools.cycle(texts), strict=False):
        continuation = {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 1, "function": {"arguments": text}}]},
                    "logprobs": None,
                    "finish_reason": None,
                }
            ],
        }
        chunks.append(_changed(continuation, some))
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    return chunks


_CHANGED = st.lists(st.lists(st.sampled_from(_ALL_CHANGES), max_size=2), min_size=1, max_size=5)
_TEXTS = st.lists(st.sampled_from(['{"v": "a', "b", '"}', "", "é:", "\\u0041", "1, "]), min_size=1)


@settings(max_examples=1000, deadline=None)
@given(changes=_CHANGED, texts=_TEXTS)
def test_a_fragment_chunk_has_the_one_site_the_general_reading_finds(
    changes: list[list[Any]], texts: list[str]
) -> None:
    for number, chunk in enumerate(_stream(changes, texts)):
        site = fragment_site(chunk)
        if site is None:
            continue
        key, container, member = site
        [(kind, general_key, general_container, field)] = chunk_sites(chunk, number)
        assert (kind, general_key, field) == ("stream", key, "arguments")
        assert general_container is container
        assert member == "choices"


@settings(max_examples=500, deadline=None)
@given(
    changes=_CHANGED,
    texts=_TEXTS,
    mode=st.sampled_from(ArgumentMode),
    keep_text=st.booleans(),
)
def test_a_stream_is_redacted_with_the_short_path_as_without_it(
    changes: list[list[Any]], texts: list[str], mode: ArgumentMode, keep_text: bool
) -> None:
    envelope = {"profile": "openai", "tool_schemas": {}, "chunks": _stream(changes, texts)}
    short = redacted_copy(envelope, mode, owned=False, keep_text=keep_text)
    PROFILES["openai"], kept = _GENERAL, PROFILES["openai"]
    try:
        general = redacted_copy(envelope, mode, owned=False, keep_text=keep_text)
    finally:
        PROFILES["openai"] = kept
    assert json.dumps(short) == json.dumps(general)


def test_the_chunks_a_long_call_is_made_of_take_the_short_path_and_no_other_does() -> None:
    start, fragment, end = _stream([[]], ["x"])
    assert fragment_site(fragment) == (
        ("delta", 0, 1),
        fragment["choices"][0]["delta"]["tool_calls"][0]["function"],
        "choices",
    )
    assert fragment_site(start) is None
    assert fragment_site(end) is None
