"""Fuzzing with invariants, not just "no exception".

- Mutated fixtures through the Python API: whatever the events hold, ``check`` answers with a
  report (exit 0, 1 or 2) that is strict JSON, or raises ``EnvelopeError`` for a non-envelope,
  and nothing else. Each example takes a bundled fixture and changes its stream a few times: a
  value replaced by one of many shapes (a lone surrogate, a huge integer, infinity, the wrong
  container, a terminal reason), a member dropped or added under a name the profiles read, an
  event dropped or repeated.
- Canaries planted in every place the redactor must clear (text the model wrote, argument
  values, call ids), of every bundled fixture, as they are or base64- or URL-encoded: no form
  of any canary survives redaction, and the verdict is the planted stream's own or redaction is
  refused (never a silent change).
- Mutated recordings through ``callgate import``: bytes of a real recorded stream flipped, cut,
  repeated, deleted or inserted; the import answers with exit 0, 1 or 2 and one line per
  problem, never an exception, and every file it leaves is a whole fixture.

``make fuzz`` runs these with ``CALLGATE_FUZZ_EXAMPLES`` examples each (and prints the seed);
``make test`` runs a slice.
"""

from __future__ import annotations

import base64
import copy
import io
import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from callgate import EnvelopeError, check
from callgate.cli.files import load_envelope
from callgate.cli.importing.command import ImportOptions, run_import
from callgate.reassemble import strict_json
from callgate.reassemble.profiles import PROFILES
from callgate.redact import RedactionRefused, redact_envelope
from callgate.redact.leaks import encodings
from tests.conftest import (
    CONFORMANCE,
    CORPUS_ABSENT,
    SHARED_CORPUS,
    conformance_fixtures,
    load,
)

#: Examples per fuzz test: a slice in ``make test``, many in ``make fuzz``.
EXAMPLES = int(os.environ.get("CALLGATE_FUZZ_EXAMPLES", "1000"))
FIXTURES = [load(path) for path in conformance_fixtures()]
SHAPES: list[object] = [
    None,
    True,
    False,
    0,
    -1,
    2**70,
    1.5,
    float("inf"),
    float("nan"),
    "",
    "x",
    "\ud800",
    [],
    {},
    [1],
    {"a": 1},
    "tool_calls",
    "tool_use",
    "STOP",
    "completed",
    {"index": 0},
    -0.0,
    1e308,
    "[/x]",
    "\x1b[2J",
]
NAMES = [
    "index",
    "id",
    "type",
    "name",
    "arguments",
    "delta",
    "choices",
    "finish_reason",
    "content_block",
    "partial_json",
    "output_index",
    "item",
    "candidates",
    "functionCall",
    "partialArgs",
    "jsonPath",
    "stop_reason",
    "error",
    "sequence_number",
]


def mutate(value: Any, draw: st.DrawFn) -> None:
    """One change somewhere inside ``value`` (a list or an object), in place."""
    while True:
        if isinstance(value, dict) and value:
            key = draw(st.sampled_from(sorted(value)))
            action = draw(st.sampled_from(["replace", "drop", "add", "descend"]))
            if action == "replace":
                value[key] = copy.deepcopy(draw(st.sampled_from(SHAPES)))
            elif action == "drop":
                del value[key]
            elif action == "add":
                value[draw(st.sampled_from(NAMES))] = copy.deepcopy(draw(st.sampled_from(SHAPES)))
            if action != "descend" or not isinstance(value.get(key), dict | list):
                return
            value = value[key]
        elif isinstance(value, list) and value:
            index = draw(st.integers(0, len(value) - 1))
            action = draw(st.sampled_from(["replace", "drop", "repeat", "descend"]))
            if action == "replace":
                value[index] = copy.deepcopy(draw(st.sampled_from(SHAPES)))
            elif action == "drop":
                del value[index]
            elif action == "repeat":
                value.insert(index, copy.deepcopy(value[index]))
            if action != "descend" or not isinstance(value[index], dict | list):
                return
            value = value[index]
        else:
            return


@st.composite
def mutated_fixtures(draw: st.DrawFn) -> dict[str, Any]:
    envelope = copy.deepcopy(draw(st.sampled_from(FIXTURES)))
    stream = envelope[PROFILES[envelope["profile"]].stream_key]
    for _ in range(draw(st.integers(1, 5))):
        mutate(stream, draw)
    return envelope


def with_lone_surrogate_id() -> dict[str, Any]:
    """Found by a longer run: a call id that is a lone surrogate reached the report as is."""
    envelope = copy.deepcopy(load(CONFORMANCE / "openai" / "valid_fragmented.json"))
    envelope["chunks"][0]["choices"][0]["delta"]["tool_calls"][0]["id"] = "\ud800"
    return envelope


@pytest.mark.sweep
@settings(max_examples=EXAMPLES, deadline=None)
@example(with_lone_surrogate_id())
@given(mutated_fixtures())
def test_any_mutated_stream_gets_a_strict_json_report_or_an_envelope_error(
    envelope: dict[str, Any],
) -> None:
    try:
        report = check(envelope)
    except EnvelopeError:
        return
    assert report.exit_code in (0, 1, 2)
    strict_json.loads(json.dumps(report.to_dict(), allow_nan=False))


def masked_sites(envelope: dict[str, Any]) -> list[tuple[tuple[Any, ...], list[int]]]:
    """Where redaction changes a fixture's stream: each string's path, with the positions of
    the letters it masks (inside a text, an argument value or an id, never a JSON key or a
    literal, which redaction keeps)."""
    key = PROFILES[envelope["profile"]].stream_key
    redacted = redact_envelope(envelope).envelope[key]
    sites = []

    def walk(before: object, after: object, path: tuple[Any, ...]) -> None:
        if isinstance(before, dict) and isinstance(after, dict):
            for name in before.keys() & after.keys():
                walk(before[name], after[name], (*path, name))
        elif isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
            for n, (b, a) in enumerate(zip(before, after, strict=True)):
                walk(b, a, (*path, n))
        elif isinstance(before, str) and isinstance(after, str) and before != after:
            letters = [
                n
                for n, char in enumerate(before)
                if char.isascii() and char.isalpha() and (n >= len(after) or after[n] != char)
            ]
            if letters:
                sites.append((path, letters))

    walk(envelope[key], redacted, (key,))
    return sites


SITES = [masked_sites(envelope) for envelope in FIXTURES]
CANARY = st.text("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz", min_size=16, max_size=24).map(
    lambda s: "Cy" + s
)


def planted_form(canary: str, how: str) -> str:
    if how == "plain":
        return canary
    if how == "url":
        return quote(canary, safe="")
    shift = int(how[-1])  # base64 of the canary behind 0, 1 or 2 other bytes
    return base64.b64encode(b"-" * shift + canary.encode()).decode()


@st.composite
def planted_canaries(draw: st.DrawFn) -> tuple[dict[str, Any], list[str]]:
    """A bundled fixture with one to three canaries written over letters redaction masks."""
    n = draw(st.sampled_from([n for n, sites in enumerate(SITES) if sites]))
    envelope, canaries = copy.deepcopy(FIXTURES[n]), []
    for _ in range(draw(st.integers(1, 3))):
        path, letters = draw(st.sampled_from(SITES[n]))
        canary = draw(CANARY)
        form = planted_form(
            canary, draw(st.sampled_from(["plain", "url", "b64-0", "b64-1", "b64-2"]))
        )
        holder = envelope
        for step in path[:-1]:
            holder = holder[step]
        text, at = holder[path[-1]], draw(st.sampled_from(letters))
        # Over the run of letters around ``at``, so that the canary sits where letters were.
        start, end = at, at + 1
        while start > 0 and text[start - 1].isascii() and text[start - 1].isalpha():
            start -= 1
        while end < len(text) and text[end].isascii() and text[end].isalpha():
            end += 1
        holder[path[-1]] = text[:start] + form + text[end:]
        canaries.append(canary)
    return envelope, canaries


@settings(max_examples=max(200, EXAMPLES // 5), deadline=None)
@given(planted_canaries())
def test_no_planted_canary_survives_redaction_and_the_verdict_never_changes_silently(
    drawn: tuple[dict[str, Any], list[str]],
) -> None:
    envelope, canaries = drawn
    planted = check(envelope)
    try:
        redacted = redact_envelope(envelope)
    except RedactionRefused as refused:
        assert "verdict" in str(refused)
        return
    for text in (json.dumps(redacted.envelope), json.dumps(redacted.envelope, ensure_ascii=False)):
        for canary in canaries:
            assert not [form for form in encodings(canary) if form in text], canary
    assert (redacted.report.status, redacted.report.blocking_codes) == (
        planted.status,
        planted.blocking_codes,
    )


RECORDINGS = (
    sorted(
        path
        for path in (SHARED_CORPUS / "real").rglob("*")
        if path.suffix in (".sse", ".jsonl", ".json")
        and ".request." not in path.name
        and "decoded" not in path.name
    )
    if (SHARED_CORPUS / "real").is_dir()
    else []
)
INSERTS = [
    b"\xff",
    b"\x00",
    b"\r",
    b"\n\n",
    b"{",
    b'"',
    b"data: ",
    b"[",
    b"\xed\xa0\x80",
    b"event: x\n",
    b"[DONE]",
]


@st.composite
def mutated_recordings(draw: st.DrawFn) -> tuple[Path, bytes]:
    source = draw(st.sampled_from(RECORDINGS))
    data = bytearray(source.read_bytes())
    for _ in range(draw(st.integers(1, 4))):
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        action = draw(st.sampled_from(["flip", "cut", "repeat", "delete", "insert"]))
        if action == "flip":
            data[at] = draw(st.integers(0, 255))
        elif action == "cut":
            del data[at:]
        elif action == "repeat":
            data[at:at] = data[at : at + draw(st.integers(1, 200))]
        elif action == "delete":
            del data[at : at + draw(st.integers(1, 50))]
        else:
            data[at:at] = draw(st.sampled_from(INSERTS))
    return source, bytes(data)


@pytest.mark.corpus
@pytest.mark.skipif(not RECORDINGS, reason=CORPUS_ABSENT)
@settings(
    max_examples=max(50, EXAMPLES // 10),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(drawn=mutated_recordings())
def test_a_mutated_recording_imports_or_is_refused_with_one_line_per_problem(
    drawn: tuple[Path, bytes], tmp_path_factory: pytest.TempPathFactory
) -> None:
    source, data = drawn
    folder = tmp_path_factory.mktemp("fuzz")
    recording = folder / f"recording{source.suffix}"
    recording.write_bytes(data)
    out, err = io.StringIO(), io.StringIO()
    code = run_import([recording], ImportOptions(out_dir=folder / "fx", provider="fuzz"), out, err)
    assert code in (0, 1, 2)
    assert all(line.startswith("callgate: ") for line in err.getvalue().splitlines())
    written = sorted((folder / "fx").glob("*")) if (folder / "fx").exists() else []
    assert all(path.suffix == ".json" and load_envelope(path) for path in written)
