"""``callgate mutate``: faults and variations of a passing turn, made in its wire format and
checked by the engine before they are handed out."""

from __future__ import annotations

import copy
import io
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

import callgate
from callgate.cli.mutate import run_mutate
from callgate.cli.replay.runner import replay
from callgate.reassemble import check
from callgate.reassemble.errors import NotApplicable, UsageError
from callgate.reassemble.mutations import KINDS, mutate, with_own_ids
from callgate.reassemble.profiles import PROFILES
from tests.conftest import CONFORMANCE, conformance_fixtures, fixture_id, load

PASSING = [path for path in conformance_fixtures() if load(path)["expect"]["status"] == "pass"]


def call_entries(chunks: list[Any]) -> list[dict[str, Any]]:
    """Every Chat Completions tool-call entry of ``chunks``, in order (the envelope's own
    objects: changing one changes the stream)."""
    return [
        entry
        for chunk in chunks
        for choice in chunk["choices"]
        for entry in (choice.get("delta") or {}).get("tool_calls") or []
    ]


#: Why the kinds of free-form input do not apply to a turn of function calls.
NO_FREE_FORM = "cut_input: no free-form input (a command, a diff, a custom tool's text)"
NO_RESTATED = "restate_other_input: no streamed free-form input"
#: Why a turn no copy restates the arguments of does not take restated other arguments.
NO_COPY = "restate_other_arguments: no copy restates a streamed call's arguments"
#: Why a kind does not apply where a fragment cannot state its call's identity again.
NO_ENTRY = "no argument fragment sits in an indexed Chat Completions call entry"

#: What each kind makes of one passing fixture per profile: the variant's blocking codes, or
#: the start of the reason it does not apply.
EXPECTED: dict[str, dict[str, list[str] | str]] = {
    "openai/valid_fragmented": {
        "truncate": ["missing_terminal"],
        "drop_terminal": ["missing_terminal"],
        "duplicate_terminal": ["duplicate_terminal"],
        "delta_after_terminal": ["delta_after_terminal"],
        "wrong_terminal": ["wrong_terminal_reason"],
        "cancel": "cancel: this API has no cancelled turn end",
        "repeat_after_cancel": "repeat_after_cancel: this API has no cancelled turn end",
        "repeat_call": "repeat_call: this API sends no session messages that each hold whole calls",
        "withdraw": "withdraw: this API cannot withdraw a call it sent",
        "reuse_slot": "reuse_slot: no second call in the first call's choice",
        "drop_id": ["missing_call_id"],
        "corrupt_arguments": ["invalid_arguments_json"],
        "schema_violation": ["schema_violation"],
        "provider_error": ["missing_terminal", "stream_error"],
        "cut_input": NO_FREE_FORM,
        "restate_other_input": NO_RESTATED,
        "restate_other_arguments": NO_COPY,
        "cut_free_form_input": "cut_free_form_input: no call takes free-form input",
        "drop_coordinates": "drop_coordinates: no computer action states coordinates",
        "resplit": [],
        "interleave": "interleave: one call in the turn",
        "empty_deltas": [],
        "repeat_identity": [],
        "delayed_identity": [],
        "split_events": [],
    },
    "anthropic/valid_fragmented": {
        "truncate": ["missing_terminal"],
        "drop_terminal": ["missing_terminal"],
        "duplicate_terminal": ["duplicate_terminal"],
        "delta_after_terminal": ["delta_after_terminal"],
        "wrong_terminal": ["wrong_terminal_reason"],
        "cancel": "cancel: this API has no cancelled turn end",
        "repeat_after_cancel": "repeat_after_cancel: this API has no cancelled turn end",
        "repeat_call": "repeat_call: this API sends no session messages that each hold whole calls",
        "withdraw": "withdraw: this API cannot withdraw a call it sent",
        "reuse_slot": "reuse_slot: no second call in the first call's choice",
        "drop_id": ["missing_call_id"],
        "corrupt_arguments": ["invalid_arguments_json"],
        "schema_violation": ["schema_violation"],
        "provider_error": ["missing_terminal", "stream_error"],
        "cut_input": NO_FREE_FORM,
        "restate_other_input": NO_RESTATED,
        "restate_other_arguments": NO_COPY,
        "cut_free_form_input": "cut_free_form_input: no call takes free-form input",
        "drop_coordinates": "drop_coordinates: no computer action states coordinates",
        "resplit": [],
        "interleave": "interleave: one call in the turn",
        "empty_deltas": [],
        "repeat_identity": f"repeat_identity: {NO_ENTRY}",
        "delayed_identity": f"delayed_identity: {NO_ENTRY}",
        "split_events": [],
    },
    "mistral/native_parallel_calls": {
        "truncate": ["missing_terminal"],
        "drop_terminal": ["missing_terminal"],
        "duplicate_terminal": ["delta_after_terminal", "duplicate_terminal"],
        "delta_after_terminal": "delta_after_terminal: no argument fragment comes "
        "before the terminal evidence",
        "wrong_terminal": ["wrong_terminal_reason"],
        "cancel": "cancel: this API has no cancelled turn end",
        "repeat_after_cancel": "repeat_after_cancel: this API has no cancelled turn end",
        "repeat_call": "repeat_call: this API sends no session messages that each hold whole calls",
        "withdraw": "withdraw: this API cannot withdraw a call it sent",
        "reuse_slot": "reuse_slot: no field of the events names the calls' slots",
        "drop_id": "drop_id: the variant gives fail [invalid_slot], not missing_call_id",
        "corrupt_arguments": ["invalid_arguments_json"],
        "schema_violation": ["schema_violation"],
        "provider_error": ["stream_error"],
        "cut_input": NO_FREE_FORM,
        "restate_other_input": NO_RESTATED,
        "restate_other_arguments": NO_COPY,
        "cut_free_form_input": "cut_free_form_input: no call takes free-form input",
        "drop_coordinates": "drop_coordinates: no computer action states coordinates",
        "resplit": "resplit: no call's arguments come in two fragments or more",
        "interleave": "interleave: the first two calls share their events",
        "empty_deltas": "empty_deltas: no event only adds argument text to a call",
        "repeat_identity": f"repeat_identity: {NO_ENTRY}",
        "delayed_identity": f"delayed_identity: {NO_ENTRY}",
        "split_events": [],
    },
    "openai-responses/valid_single_call": {
        "truncate": ["missing_terminal"],
        "drop_terminal": ["missing_terminal"],
        "duplicate_terminal": ["duplicate_terminal", "event_gap"],
        "delta_after_terminal": ["delta_after_terminal", "event_gap"],
        "wrong_terminal": ["wrong_terminal_reason"],
        "cancel": "cancel: this API has no cancelled turn end",
        "repeat_after_cancel": "repeat_after_cancel: this API has no cancelled turn end",
        "repeat_call": "repeat_call: this API sends no session messages that each hold whole calls",
        "withdraw": "withdraw: this API cannot withdraw a call it sent",
        "reuse_slot": "reuse_slot: no second call in the first call's choice",
        "drop_id": ["missing_call_id"],
        "corrupt_arguments": ["invalid_arguments_json"],
        "schema_violation": ["schema_violation"],
        "provider_error": ["event_gap", "missing_terminal", "stream_error"],
        "cut_input": NO_FREE_FORM,
        "restate_other_input": NO_RESTATED,
        "restate_other_arguments": ["argument_mismatch"],
        "cut_free_form_input": "cut_free_form_input: no call takes free-form input",
        "drop_coordinates": "drop_coordinates: no computer action states coordinates",
        "resplit": [],
        "interleave": "interleave: one call in the turn",
        "empty_deltas": "empty_deltas: the variant gives fail [event_gap] with other calls",
        "repeat_identity": f"repeat_identity: {NO_ENTRY}",
        "delayed_identity": f"delayed_identity: {NO_ENTRY}",
        "split_events": [],
    },
    "cohere/valid_single_call": {
        "truncate": ["missing_terminal"],
        "drop_terminal": ["missing_terminal"],
        "duplicate_terminal": ["duplicate_terminal"],
        "delta_after_terminal": ["delta_after_terminal"],
        "wrong_terminal": ["wrong_terminal_reason"],
        "cancel": "cancel: this API has no cancelled turn end",
        "repeat_after_cancel": "repeat_after_cancel: this API has no cancelled turn end",
        "repeat_call": "repeat_call: this API sends no session messages that each hold whole calls",
        "withdraw": "withdraw: this API cannot withdraw a call it sent",
        "reuse_slot": "reuse_slot: no second call in the first call's choice",
        "drop_id": ["missing_call_id"],
        "corrupt_arguments": ["invalid_arguments_json"],
        "schema_violation": ["schema_violation"],
        # Cohere ends a failed stream with finish_reason ERROR: a wrong reason besides.
        "provider_error": ["missing_terminal", "stream_error", "wrong_terminal_reason"],
        "cut_input": NO_FREE_FORM,
        "restate_other_input": NO_RESTATED,
        "restate_other_arguments": NO_COPY,
        "cut_free_form_input": "cut_free_form_input: no call takes free-form input",
        "drop_coordinates": "drop_coordinates: no computer action states coordinates",
        "resplit": [],
        "interleave": "interleave: one call in the turn",
        "empty_deltas": [],
        "repeat_identity": f"repeat_identity: {NO_ENTRY}",
        "delayed_identity": f"delayed_identity: {NO_ENTRY}",
        "split_events": [],
    },
    "bedrock-converse/valid_single_call": {
        "truncate": ["missing_terminal"],
        "drop_terminal": ["missing_terminal"],
        "duplicate_terminal": ["duplicate_terminal"],
        "delta_after_terminal": ["delta_after_terminal"],
        "wrong_terminal": ["wrong_terminal_reason"],
        "cancel": "cancel: this API has no cancelled turn end",
        "repeat_after_cancel": "repeat_after_cancel: this API has no cancelled turn end",
        "repeat_call": "repeat_call: this API sends no session messages that each hold whole calls",
        "withdraw": "withdraw: this API cannot withdraw a call it sent",
        "reuse_slot": "reuse_slot: no second call in the first call's choice",
        "drop_id": ["missing_call_id"],
        "corrupt_arguments": ["invalid_arguments_json"],
        "schema_violation": ["schema_violation"],
        "provider_error": ["missing_terminal", "stream_error"],
        "cut_input": NO_FREE_FORM,
        "restate_other_input": NO_RESTATED,
        "restate_other_arguments": NO_COPY,
        "cut_free_form_input": "cut_free_form_input: no call takes free-form input",
        "drop_coordinates": "drop_coordinates: no computer action states coordinates",
        "resplit": [],
        "interleave": "interleave: one call in the turn",
        "empty_deltas": [],
        "repeat_identity": f"repeat_identity: {NO_ENTRY}",
        "delayed_identity": f"delayed_identity: {NO_ENTRY}",
        "split_events": [],
    },
    "ollama/valid_single_call": {
        "truncate": ["missing_terminal"],
        "drop_terminal": ["missing_terminal"],
        "duplicate_terminal": ["duplicate_terminal"],
        "delta_after_terminal": "delta_after_terminal: no argument fragment comes "
        "before the terminal evidence",
        "wrong_terminal": ["wrong_terminal_reason"],
        "cancel": "cancel: this API has no cancelled turn end",
        "repeat_after_cancel": "repeat_after_cancel: this API has no cancelled turn end",
        "repeat_call": "repeat_call: this API sends no session messages that each hold whole calls",
        "withdraw": "withdraw: this API cannot withdraw a call it sent",
        "reuse_slot": "reuse_slot: no second call in the first call's choice",
        "drop_id": "drop_id: call ids are optional in this API",
        "corrupt_arguments": "corrupt_arguments: no call streams its arguments",
        "schema_violation": ["schema_violation"],
        "provider_error": ["missing_terminal", "stream_error"],
        "cut_input": NO_FREE_FORM,
        "restate_other_input": NO_RESTATED,
        "restate_other_arguments": NO_COPY,
        "cut_free_form_input": "cut_free_form_input: no call takes free-form input",
        "drop_coordinates": "drop_coordinates: no computer action states coordinates",
        "resplit": "resplit: no call's arguments come in two fragments or more",
        "interleave": "interleave: one call in the turn",
        "empty_deltas": "empty_deltas: no event only adds argument text to a call",
        "repeat_identity": f"repeat_identity: {NO_ENTRY}",
        "delayed_identity": f"delayed_identity: {NO_ENTRY}",
        "split_events": [],
    },
    "gemini/vertex_partial_args_valid": {
        "truncate": ["missing_terminal"],
        "drop_terminal": ["missing_terminal"],
        "duplicate_terminal": ["duplicate_terminal", "invalid_slot"],
        "delta_after_terminal": "delta_after_terminal: no argument fragment comes "
        "before the terminal evidence",
        "wrong_terminal": ["wrong_terminal_reason"],
        "cancel": "cancel: this API has no cancelled turn end",
        "repeat_after_cancel": "repeat_after_cancel: this API has no cancelled turn end",
        "repeat_call": "repeat_call: this API sends no session messages that each hold whole calls",
        "withdraw": "withdraw: this API cannot withdraw a call it sent",
        "reuse_slot": "reuse_slot: no second call in the first call's choice",
        "drop_id": "drop_id: call ids are optional in this API",
        "corrupt_arguments": "corrupt_arguments: no call streams its arguments",
        "schema_violation": "schema_violation: arguments arrive as partial pieces",
        "provider_error": ["missing_terminal", "stream_error"],
        "cut_input": NO_FREE_FORM,
        "restate_other_input": NO_RESTATED,
        "restate_other_arguments": NO_COPY,
        "cut_free_form_input": "cut_free_form_input: no call takes free-form input",
        "drop_coordinates": "drop_coordinates: no computer action states coordinates",
        "resplit": "resplit: no call's arguments come in two fragments or more",
        "interleave": "interleave: one call in the turn",
        "empty_deltas": "empty_deltas: no event only adds argument text to a call",
        "repeat_identity": f"repeat_identity: {NO_ENTRY}",
        "delayed_identity": f"delayed_identity: {NO_ENTRY}",
        "split_events": [],
    },
    "openai-responses/shell_call_valid": {
        "truncate": ["missing_terminal"],
        "drop_terminal": ["missing_terminal"],
        "duplicate_terminal": ["duplicate_terminal", "event_gap"],
        "delta_after_terminal": "delta_after_terminal: no argument fragment comes before the",
        "wrong_terminal": ["wrong_terminal_reason"],
        "cancel": "cancel: this API has no cancelled turn end",
        "repeat_after_cancel": "repeat_after_cancel: this API has no cancelled turn end",
        "repeat_call": "repeat_call: this API sends no session messages that each hold whole calls",
        "withdraw": "withdraw: this API cannot withdraw a call it sent",
        "reuse_slot": "reuse_slot: no second call in the first call",
        "drop_id": ["missing_call_id"],
        "corrupt_arguments": "corrupt_arguments: no call streams its arguments (they",
        "schema_violation": "schema_violation: no call has an argument whose declared",
        "provider_error": ["event_gap", "missing_terminal", "stream_error"],
        "cut_input": ["missing_terminal"],
        "restate_other_input": ["argument_mismatch"],
        "restate_other_arguments": NO_COPY,
        "cut_free_form_input": "cut_free_form_input: no call takes free-form",
        "drop_coordinates": "drop_coordinates: no computer action states",
        "resplit": "resplit: no call",
        "interleave": "interleave: one call in the",
        "empty_deltas": "empty_deltas: no event only adds argument text to a",
        "repeat_identity": f"repeat_identity: {NO_ENTRY}",
        "delayed_identity": f"delayed_identity: {NO_ENTRY}",
        "split_events": [],
    },
    "openai-responses/custom_tool_call_only": {
        "truncate": ["missing_terminal"],
        "drop_terminal": ["missing_terminal"],
        "duplicate_terminal": ["duplicate_terminal", "event_gap"],
        "delta_after_terminal": "delta_after_terminal: no argument fragment comes before the",
        "wrong_terminal": ["wrong_terminal_reason"],
        "cancel": "cancel: this API has no cancelled turn end",
        "repeat_after_cancel": "repeat_after_cancel: this API has no cancelled turn end",
        "repeat_call": "repeat_call: this API sends no session messages that each hold whole calls",
        "withdraw": "withdraw: this API cannot withdraw a call it sent",
        "reuse_slot": "reuse_slot: no second call in the first call",
        "drop_id": ["missing_call_id"],
        "corrupt_arguments": "corrupt_arguments: no call streams its arguments (they",
        "schema_violation": "schema_violation: no call has an argument whose declared",
        "provider_error": ["event_gap", "missing_terminal", "stream_error"],
        "cut_input": ["missing_terminal"],
        "restate_other_input": ["argument_mismatch"],
        "restate_other_arguments": NO_COPY,
        "cut_free_form_input": ["grammar_incomplete"],
        "drop_coordinates": "drop_coordinates: no computer action states",
        "resplit": "resplit: no call",
        "interleave": "interleave: one call in the",
        "empty_deltas": "empty_deltas: no event only adds argument text to a",
        "repeat_identity": f"repeat_identity: {NO_ENTRY}",
        "delayed_identity": f"delayed_identity: {NO_ENTRY}",
        "split_events": [],
    },
    "anthropic/computer_mouse_move_valid": {
        "truncate": ["missing_terminal"],
        "drop_terminal": ["missing_terminal"],
        "duplicate_terminal": ["duplicate_terminal"],
        "delta_after_terminal": ["delta_after_terminal"],
        "wrong_terminal": ["wrong_terminal_reason"],
        "cancel": "cancel: this API has no cancelled turn end",
        "repeat_after_cancel": "repeat_after_cancel: this API has no cancelled turn end",
        "repeat_call": "repeat_call: this API sends no session messages that each hold whole calls",
        "withdraw": "withdraw: this API cannot withdraw a call it sent",
        "reuse_slot": "reuse_slot: no second call in the first call",
        "drop_id": ["missing_call_id"],
        "corrupt_arguments": ["invalid_arguments_json"],
        "schema_violation": ["schema_violation"],
        "provider_error": ["missing_terminal", "stream_error"],
        "cut_input": NO_FREE_FORM,
        "restate_other_input": NO_RESTATED,
        "restate_other_arguments": NO_COPY,
        "cut_free_form_input": "cut_free_form_input: no call takes free-form",
        "drop_coordinates": ["schema_violation"],
        "resplit": [],
        "interleave": "interleave: one call in the",
        "empty_deltas": [],
        "repeat_identity": f"repeat_identity: {NO_ENTRY}",
        "delayed_identity": f"delayed_identity: {NO_ENTRY}",
        "split_events": [],
    },
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_kind_makes_its_pinned_verdict_or_says_why_not(name: str) -> None:
    envelope = load(CONFORMANCE / f"{name}.json")
    got: dict[str, object] = {}
    for kind in KINDS:
        try:
            got[kind] = mutate(envelope, kind, name)["expect"]["codes"]
        except NotApplicable as skipped:
            expected = EXPECTED[name][kind]
            got[kind] = (
                expected
                if isinstance(expected, str) and str(skipped).startswith(expected)
                else str(skipped)
            )
    assert got == EXPECTED[name]


@pytest.mark.parametrize("path", PASSING, ids=fixture_id)
def test_every_variant_of_every_passing_fixture_does_what_its_kind_promises(path: Path) -> None:
    envelope = load(path)
    source = copy.deepcopy(envelope)
    calls = [(c.id, c.name, c.arguments) for c in check(envelope).calls]
    for name, kind in KINDS.items():
        try:
            variant = mutate(envelope, name, path.name)
        except NotApplicable:
            continue
        report = check(variant)
        assert variant["expect"] == {"status": report.status.value, "codes": report.blocking_codes}
        assert variant["meta"]["mutation"] == {
            "kind": name,
            "source": path.name,
            **({"pieces": [1, 2, 3, 5, 7, 11, 13]} if name == "split_events" else {}),
        }
        if kind.code is not None:
            assert kind.code.value in report.blocking_codes, name
        else:
            assert (report.status.value, [(c.id, c.name, c.arguments) for c in report.calls]) == (
                "pass",
                calls,
            ), name
        assert variant != envelope
        assert envelope == source, f"{name} changed the turn it was made from"


#: The passing fixture of each profile that shows a second call moved onto the first's slot.
REUSED_SLOT = {
    "openai/valid_parallel_interleaved": ["identity_collision"],
    "mistral/valid_parallel_interleaved": ["identity_collision"],
    "anthropic/valid_text_then_two_tools": [
        "delta_after_terminal",
        "duplicate_start",
        "duplicate_terminal",
        "identity_collision",
    ],
    "openai-responses/valid_parallel_calls": [
        "delta_after_terminal",
        "delta_before_start",
        "duplicate_start",
        "duplicate_terminal",
        "identity_collision",
    ],
    "cohere/valid_parallel_calls": [
        "delta_after_terminal",
        "duplicate_start",
        "duplicate_terminal",
        "identity_collision",
    ],
    "bedrock-converse/valid_parallel_calls": [
        "delta_after_terminal",
        "duplicate_start",
        "duplicate_terminal",
        "identity_collision",
    ],
    # Whole calls: the moved call's start is all the engine reads of it.
    "ollama/valid_parallel_calls_two_lines": ["duplicate_start", "identity_collision"],
}


@pytest.mark.parametrize("name", sorted(REUSED_SLOT))
def test_a_second_call_on_the_first_calls_slot_is_a_collision_in_every_profile_with_slots(
    name: str,
) -> None:
    assert mutate(load(CONFORMANCE / f"{name}.json"), "reuse_slot")["expect"] == {
        "status": "fail",
        "codes": REUSED_SLOT[name],
    }


def test_reuse_slot_moves_calls_never_the_choice_that_holds_them() -> None:
    """Chat Completions' ``choices[].index`` is the choice's, not a slot: a turn that is the
    second choice (index 1, the second call's slot too) keeps its choice index."""
    turn = load(CONFORMANCE / "openai" / "valid_parallel_interleaved.json")
    for chunk in turn["chunks"]:
        for choice in chunk["choices"]:
            choice["index"] = 1
    variant = mutate(turn, "reuse_slot")
    assert variant["expect"]["codes"] == ["identity_collision"]
    assert {choice["index"] for chunk in variant["chunks"] for choice in chunk["choices"]} == {1}


def test_every_kind_applies_to_some_fixture_of_every_profile_but_what_gemini_cannot_have() -> None:
    """Gemini sends each call whole (or, on Vertex, in partialArgs pieces) in one part: no
    fragments to re-cut, corrupt or repeat, no slot field, and the call id is optional. Ollama
    sends calls whole too, but names their slots. Only Chat Completions fragments can state
    their call's identity again."""
    applies = set()
    for path in PASSING:
        envelope = load(path)
        for kind in KINDS:
            try:
                mutate(envelope, kind)
            except NotApplicable:
                continue
            applies.add((envelope["profile"], kind))
    never = {(p, k) for p in PROFILES for k in KINDS} - applies
    assert never == {
        (p, k) for p in PROFILES for k in KINDS if k not in callgate.mutations(profile=p)
    }
    assert never == {
        ("gemini", kind)
        for kind in (
            "delta_after_terminal",
            "reuse_slot",
            "drop_id",
            "corrupt_arguments",
            "resplit",
            "empty_deltas",
        )
    } | {
        (profile, kind)
        for profile in ("anthropic", "openai-responses", "gemini", "openai-realtime")
        for kind in ("repeat_identity", "delayed_identity")
    } | {("cohere", kind) for kind in ("repeat_identity", "delayed_identity")} | {
        ("ollama", kind)
        for kind in (
            "delta_after_terminal",
            "drop_id",
            "corrupt_arguments",
            "resplit",
            "empty_deltas",
            "repeat_identity",
            "delayed_identity",
        )
    } | {("bedrock-converse", kind) for kind in ("repeat_identity", "delayed_identity")} | {
        (profile, kind)
        for profile in PROFILES
        if profile not in ("openai-responses", "openai")
        for kind in ("cut_input", "cut_free_form_input")
    } | {
        (profile, "restate_other_input") for profile in PROFILES if profile != "openai-responses"
    } | {
        (profile, "restate_other_arguments")
        for profile in PROFILES
        if profile not in ("openai-responses", "openai-realtime")
    } | {
        (profile, "drop_coordinates")
        for profile in PROFILES
        if profile not in ("openai-responses", "anthropic")
    } | {
        # Only Realtime responses end cancelled; only Gemini Live withdraws a call it sent.
        (profile, kind)
        for profile, kind in itertools.product(
            PROFILES, ("cancel", "repeat_after_cancel", "withdraw")
        )
        if (profile, kind)
        not in (
            ("openai-realtime", "cancel"),
            ("openai-realtime", "repeat_after_cancel"),
            ("gemini-live", "withdraw"),
        )
    } | {
        # Only Gemini Live's session messages hold whole calls that name no slot.
        (profile, "repeat_call")
        for profile in PROFILES
        if profile != "gemini-live"
    } | {
        # Gemini Live's toolCall holds whole calls and is itself the terminal evidence.
        ("gemini-live", kind)
        for kind in KINDS
        if kind
        not in (
            "truncate",
            "withdraw",
            "repeat_call",
            "drop_id",
            "schema_violation",
            "provider_error",
            "split_events",
        )
    }


def test_the_public_list_of_kinds_splits_faults_from_variations() -> None:
    assert callgate.mutations(blocking=True) == [
        "truncate",
        "drop_terminal",
        "duplicate_terminal",
        "delta_after_terminal",
        "wrong_terminal",
        "cancel",
        "repeat_after_cancel",
        "repeat_call",
        "withdraw",
        "reuse_slot",
        "drop_id",
        "corrupt_arguments",
        "schema_violation",
        "provider_error",
        "cut_input",
        "restate_other_input",
        "restate_other_arguments",
        "cut_free_form_input",
        "drop_coordinates",
    ]
    assert callgate.mutations(blocking=False) == [
        "resplit",
        "interleave",
        "empty_deltas",
        "repeat_identity",
        "delayed_identity",
        "split_events",
    ]
    assert callgate.mutations() == list(KINDS)


def fragments(envelope: dict[str, object]) -> list[str]:
    profile = PROFILES[str(envelope["profile"])]
    return [
        container[field]
        for kind, _, container, field in profile.argument_sites(envelope[profile.stream_key])  # type: ignore[arg-type]
        if kind == "stream"
    ]


def test_resplit_moves_every_cut_and_keeps_the_text() -> None:
    envelope = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    before, after = fragments(envelope), fragments(mutate(envelope, "resplit"))
    assert "".join(after) == "".join(before) and len(after) == len(before)
    cuts = [len("".join(before[:n])) for n in range(1, len(before))]
    assert [len("".join(after[:n])) for n in range(1, len(after))] == [c + 1 for c in cuts]


def run(fixture: Path, kinds: list[str], out_dir: Path | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run_mutate(fixture, kinds, out_dir, out, err)
    return code, out.getvalue(), err.getvalue()


def test_the_command_writes_each_variant_beside_the_fixture_and_replay_holds_them(
    tmp_path: Path,
) -> None:
    source = tmp_path / "turn.json"
    source.write_text((CONFORMANCE / "openai" / "valid_fragmented.json").read_text())
    code, out, err = run(source, [])
    assert (code, err) == (0, "")
    wrote = [
        f"wrote {tmp_path / f'turn.{kind}.json'}: {verdict}"
        for kind, verdict in [
            ("truncate", "fail [missing_terminal]"),
            ("drop_terminal", "fail [missing_terminal]"),
            ("duplicate_terminal", "fail [duplicate_terminal]"),
            ("delta_after_terminal", "fail [delta_after_terminal]"),
            ("wrong_terminal", "fail [wrong_terminal_reason]"),
            ("drop_id", "fail [missing_call_id]"),
            ("corrupt_arguments", "fail [invalid_arguments_json]"),
            ("schema_violation", "fail [schema_violation]"),
            ("provider_error", "fail [missing_terminal, stream_error]"),
            ("resplit", "pass []"),
            ("empty_deltas", "pass []"),
            ("repeat_identity", "pass []"),
            ("delayed_identity", "pass []"),
            ("split_events", "pass []"),
        ]
    ]
    assert out.splitlines() == [
        *wrote[:5],
        "skipped reuse_slot: no second call in the first call's choice to move onto its slot",
        *wrote[5:9],
        # The kinds of custom tools: this turn calls a function. (Those no Chat Completions
        # turn can take are not tried: restated free-form input, computer actions, cancelled
        # and withdrawn session turns, calls made again.)
        "skipped cut_input: no free-form input (a command, a diff, a custom tool's text) streams "
        "two words",
        "skipped cut_free_form_input: no call takes free-form input",
        wrote[9],
        "skipped interleave: one call in the turn: nothing to interleave",
        *wrote[10:],
    ]
    skipped = {"reuse_slot", "interleave", "cut_input", "restate_other_input"}
    skipped |= {"cut_free_form_input", "drop_coordinates", "cancel", "withdraw"}
    skipped |= {"repeat_after_cancel", "repeat_call", "restate_other_arguments"}
    assert [(o.fixture.name, o.held) for o in replay([tmp_path])] == sorted(
        [(f"turn.{kind}.json", True) for kind in KINDS if kind not in skipped]
        + [("turn.json", True)]
    )
    assert json.loads((tmp_path / "turn.resplit.json").read_text())["meta"]["mutation"] == {
        "kind": "resplit",
        "source": "turn.json",
    }


def test_a_kind_asked_for_that_cannot_apply_exits_1_and_a_failing_source_is_refused(
    tmp_path: Path,
) -> None:
    code, out, err = run(CONFORMANCE / "gemini" / "valid_single_call.json", ["resplit"], tmp_path)
    assert (code, out, err) == (
        1,
        "",
        "skipped resplit: no call's arguments come in two fragments or more\n",
    )
    with pytest.raises(
        NotApplicable,
        match=r"truncated\.json: the turn does not pass "
        r"\(fail \[missing_terminal\]\)",
    ):
        run(CONFORMANCE / "openai" / "truncated.json", [], tmp_path)
    with pytest.raises(UsageError, match="unknown kind 'nope'"):
        run(CONFORMANCE / "openai" / "valid_fragmented.json", ["nope"], tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_diff_mutations_takes_one_passing_fixture_and_says_so_in_one_line() -> None:
    from typer.testing import CliRunner

    from callgate.cli.app import app
    from callgate.cli.diff.mutations import run_diff_mutations

    failing = CONFORMANCE / "openai" / "truncated.json"
    out, err = io.StringIO(), io.StringIO()
    assert run_diff_mutations(failing, ["openai-python"], None, "text", out, err) == 2
    assert err.getvalue() == (
        f"callgate: {failing}: --mutations needs a passing turn to make its variants from\n"
    )
    result = CliRunner().invoke(
        app, ["diff", str(failing), str(failing), "--mutations", "--adapter", "openai-python"]
    )
    assert (result.exit_code, result.output) == (2, "callgate: --mutations takes one fixture\n")


def test_the_providers_error_comes_right_after_the_first_fragment_and_ends_the_stream() -> None:
    envelope = load(CONFORMANCE / "anthropic" / "valid_fragmented.json")
    events = envelope["events"]
    first = next(n for n, e in enumerate(events) if e["type"] == "content_block_delta")
    assert mutate(envelope, "provider_error")["events"] == [
        *events[: first + 1],
        {
            "type": "error",
            "error": {
                "type": "callgate_blocked",
                "message": "Overloaded (a provider error made by callgate mutate)",
            },
        },
    ]


def test_duplicate_terminal_repeats_the_first_event_with_the_terminal_evidence() -> None:
    envelope = load(CONFORMANCE / "anthropic" / "valid_fragmented.json")
    events = envelope["events"]
    at = next(n for n, e in enumerate(events) if e["type"] == "message_delta")
    assert events[-1]["type"] == "message_stop"  # a second event that carries it
    assert mutate(envelope, "duplicate_terminal")["events"] == [
        *events[: at + 1],
        events[at],
        *events[at + 1 :],
    ]


def test_schema_violation_rewrites_the_arguments_as_json_text_that_keeps_the_other_values() -> None:
    envelope = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    envelope["tool_schemas"] = {
        "get_weather": {
            "type": "object",
            "properties": {"n": {"type": "integer"}, "city": {"type": "string"}},
        }
    }
    pieces = ['{"n": 1, ', '"city": "Zürich"}']
    texts = call_entries(envelope["chunks"])
    for call in texts:
        call["function"]["arguments"] = ""
    texts[0]["function"]["arguments"], texts[-1]["function"]["arguments"] = pieces
    variant = mutate(envelope, "schema_violation")
    assert [c.arguments for c in check(variant).calls] == ['{"n": "12345", "city": "Zürich"}']


def test_delta_after_terminal_puts_the_last_fragment_right_after_the_first_terminal() -> None:
    envelope = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    events = envelope["chunks"]
    finish = next(
        n for n, c in enumerate(events) if c["choices"] and c["choices"][0].get("finish_reason")
    )
    last = max(
        n
        for n, c in enumerate(events[:finish])
        if c["choices"] and c["choices"][0]["delta"].get("tool_calls")
    )
    assert mutate(envelope, "delta_after_terminal")["chunks"] == [
        *events[: finish + 1],
        events[last],
        *events[finish + 1 :],
    ]


def test_without_fragments_the_providers_error_replaces_the_first_terminal() -> None:
    envelope = load(CONFORMANCE / "anthropic" / "stated_input_only.json")
    events = envelope["events"]
    ends = [n for n, e in enumerate(events) if e["type"] in ("message_delta", "message_stop")]
    assert len(ends) == 2 and not any(e["type"] == "content_block_delta" for e in events)
    assert mutate(envelope, "provider_error")["events"] == [
        *events[: ends[0]],
        {
            "type": "error",
            "error": {
                "type": "callgate_blocked",
                "message": "Overloaded (a provider error made by callgate mutate)",
            },
        },
    ]


def test_interleave_moves_the_events_after_a_calls_block_with_it() -> None:
    envelope = load(CONFORMANCE / "anthropic" / "valid_text_then_two_tools.json")
    events = envelope["events"]
    assert [e["type"] for e in events[4:7]] == [
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
    ]
    events.insert(7, {"type": "ping"})  # the first call's block ends with two call-less events
    variant = mutate(envelope, "interleave")["events"]
    # The first call (4-7, its stop and the ping) and the second (8-11) take turns.
    assert variant == [events[n] for n in (0, 1, 2, 3, 4, 8, 5, 9, 6, 10, 7, 11, 12, 13)]


def test_schema_violation_rewrites_a_stated_input_that_the_fragments_repeat() -> None:
    envelope = load(CONFORMANCE / "anthropic" / "valid_fragmented.json")
    start = envelope["events"][1]["content_block"]
    start["input"] = {"city": "Paris", "unit": "c"}  # what the fragments spell, stated first
    assert check(envelope).status.value == "pass"
    variant = mutate(envelope, "schema_violation")
    assert variant["events"][1]["content_block"]["input"] == {"city": 12345, "unit": "c"}
    assert check(variant).blocking_codes == ["schema_violation"]


def test_repeat_identity_states_the_calls_id_and_name_on_every_fragment() -> None:
    envelope = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    entries = call_entries(mutate(envelope, "repeat_identity")["chunks"])
    assert len(entries) > 2
    assert {(entry.get("id"), entry["function"].get("name")) for entry in entries} == {
        ("call_w1", "get_weather")
    }


def test_delayed_identity_needs_a_second_fragment_and_takes_the_second_of_two() -> None:
    envelope = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    chunks = envelope["chunks"]
    entries = [
        (n, entry)
        for n, chunk in enumerate(chunks)
        for choice in chunk["choices"]
        for entry in (choice.get("delta") or {}).get("tool_calls") or []
    ]
    first, rest = entries[0][1], entries[1:]
    first["function"]["arguments"] += "".join(e["function"]["arguments"] for _, e in rest)
    for n, _ in reversed(rest):
        del chunks[n]
    whole = copy.deepcopy(envelope)  # one fragment: no second one to move the identity to
    with pytest.raises(
        NotApplicable, match="no call has a second fragment to move its identity to"
    ):
        mutate(whole, "delayed_identity")
    text = first["function"]["arguments"]
    second = copy.deepcopy(chunks[entries[0][0]])
    first["function"]["arguments"] = text[:5]
    second["choices"][0]["delta"]["tool_calls"][0] = {
        "index": 0,
        "function": {"arguments": text[5:]},
    }
    chunks.insert(entries[0][0] + 1, second)
    variant = mutate(envelope, "delayed_identity")["chunks"]
    moved = call_entries(variant)
    assert ["id" in entry for entry in moved] == [False, True]
    # the first entry keeps its index and arguments only: its type goes with its identity
    assert [sorted(entry) for entry in moved] == [
        ["function", "index"],
        ["function", "id", "index"],
    ]


def test_a_variant_says_in_its_description_what_made_it_from_what() -> None:
    envelope = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    assert mutate(envelope, "truncate", "valid_fragmented.json")["description"] == (
        f"{KINDS['truncate'].description} (truncate of valid_fragmented.json)"
    )
    assert mutate(envelope, "resplit")["description"] == (
        f"{KINDS['resplit'].description} (resplit of a passing turn)"
    )


def test_reuse_slot_moves_the_second_call_onto_the_first_and_leaves_the_third() -> None:
    def block(index: int) -> list[dict[str, object]]:
        tool_use = {"type": "tool_use", "id": f"toolu_{index}", "name": "f", "input": {}}
        return [
            {"type": "content_block_start", "index": index, "content_block": tool_use},
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": "{}"},
            },
            {"type": "content_block_stop", "index": index},
        ]

    envelope = {
        "profile": "anthropic",
        "tool_schemas": {"f": {"type": "object"}},
        "events": [
            {"type": "message_start", "message": {"id": "m", "content": []}},
            *block(0),
            *block(1),
            *block(2),
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
            {"type": "message_stop"},
        ],
    }
    events = mutate(envelope, "reuse_slot")["events"]
    assert [e["index"] for e in events if "index" in e] == [0, 0, 0, 0, 0, 0, 2, 2, 2]


def test_cut_input_ends_at_the_event_that_holds_the_cut() -> None:
    envelope = load(CONFORMANCE / "openai-responses" / "custom_tool_call_text_valid.json")
    events = envelope["events"]
    cut = mutate(envelope, "cut_input")["events"]
    assert cut == [*events[:6], {**events[6], "delta": "l"}]


def test_schema_violation_changes_an_argument_the_call_has_not_one_it_lacks() -> None:
    envelope = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    properties = envelope["tool_schemas"]["get_weather"]["properties"]
    envelope["tool_schemas"]["get_weather"]["properties"] = {
        "country": {"type": "string"},  # declared first, and not in the call's arguments
        **properties,
    }
    [call] = check(mutate(envelope, "schema_violation")).calls
    assert json.loads(call.arguments or "") == {
        **json.loads(check(envelope).calls[0].arguments or ""),
        "city": 12345,
    }


def test_repeat_identity_repeats_it_on_a_call_of_two_fragments() -> None:
    envelope = {
        "profile": "openai",
        "tool_schemas": {"f": {"type": "object"}},
        "chunks": [
            chunk_with({"index": 0, "id": "call_1", "function": {"name": "f", "arguments": "{"}}),
            chunk_with({"index": 0, "function": {"arguments": "}"}}),
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        ],
    }
    second = mutate(envelope, "repeat_identity")["chunks"][1]["choices"][0]["delta"]
    assert second["tool_calls"] == [
        {"index": 0, "id": "call_1", "function": {"arguments": "}", "name": "f"}}
    ]


def chunk_with(entry: dict[str, object]) -> dict[str, object]:
    return {"choices": [{"index": 0, "delta": {"tool_calls": [entry]}, "finish_reason": None}]}


def test_a_cohere_delta_that_holds_no_function_is_no_argument_site() -> None:
    """A ``tool-call-delta`` whose ``tool_calls`` is empty passes, and holds nothing a kind
    may change."""
    envelope = load(CONFORMANCE / "cohere" / "valid_single_call.json")
    empty = {"type": "tool-call-delta", "index": 0, "delta": {"message": {"tool_calls": {}}}}
    envelope["events"].insert(5, empty)
    variant = mutate(envelope, "corrupt_arguments")
    assert variant["expect"]["codes"] == ["invalid_arguments_json"]
    assert variant["events"][5] == empty


def test_a_realtime_mcp_calls_arguments_are_not_a_function_calls_copy() -> None:
    """Only ``response.function_call_arguments.done`` restates a function call's arguments at
    its top level: an MCP call's ``arguments`` event in the same response is left as it is."""
    envelope = load(CONFORMANCE / "openai-realtime" / "valid_single_call.json")
    done = envelope["events"][7]
    mcp = {
        "type": "response.mcp_call_arguments.done",
        "event_id": "event_x",
        "response_id": done["response_id"],
        "item_id": "item_mcp",
        "output_index": 0,
        "arguments": '{"q":1}',
    }
    envelope["events"].insert(8, mcp)
    for kind in ("corrupt_arguments", "schema_violation", "resplit"):
        assert mutate(envelope, kind)["events"][8] == mcp, kind


def test_repeat_call_sends_the_message_of_the_first_call_again_right_after_it() -> None:
    envelope = load(CONFORMANCE / "gemini-live" / "valid_single_call.json")
    events = envelope["events"]
    at = next(n for n, e in enumerate(events) if "toolCall" in e)
    assert at + 1 < len(events) - 1  # a message follows it, which must not move
    variant = mutate(envelope, "repeat_call")
    assert variant["events"] == [*events[: at + 1], events[at], *events[at + 1 :]]


@pytest.mark.parametrize(
    ("kind", "value", "wrong"),
    [
        ("string", '"Oslo"', "12345"),
        ("number", "1.5", '"12345"'),
        ("integer", "2", '"12345"'),
        ("boolean", "true", '"yes"'),
        ("array", "[1]", '{"not": "an array"}'),
        ("object", '{"a": 1}', '["not", "an", "object"]'),
    ],
)
def test_schema_violation_gives_an_argument_a_value_of_another_type_than_its_own(
    kind: str, value: str, wrong: str
) -> None:
    envelope = load(CONFORMANCE / "openai" / "valid_fragmented.json")
    envelope["tool_schemas"] = {
        "get_weather": {"type": "object", "properties": {"v": {"type": kind}}}
    }
    calls = call_entries(envelope["chunks"])
    for call in calls:
        call["function"]["arguments"] = ""
    calls[0]["function"]["arguments"] = f'{{"v": {value}}}'
    variant = mutate(envelope, "schema_violation")
    assert [c.arguments for c in check(variant).calls] == [f'{{"v": {wrong}}}']


def one_word_custom_input() -> dict[str, Any]:
    """A passing custom tool call whose streamed input is one word, ``Remember``, in two
    fragments, restated by its ``.done`` event, its item and the final output."""
    envelope = load(CONFORMANCE / "openai-responses" / "custom_tool_call_text_valid.json")
    events = envelope["events"]
    events[3]["delta"], events[4]["delta"] = "Remem", "ber"
    del events[5:7]
    for event in events:
        for holder in [event, event.get("item"), *event.get("response", {}).get("output", [])]:
            if isinstance(holder, dict) and holder.get("input"):
                holder["input"] = "Remember"
    for number, event in enumerate(events):
        event["sequence_number"] = number
    assert check(envelope).status.value == "pass"
    return envelope


@pytest.mark.parametrize(
    ("kind", "why"),
    [
        (
            "cut_input",
            "no free-form input (a command, a diff, a custom tool's text) streams two words",
        ),
        (
            "restate_other_input",
            "no streamed free-form input of two words or more with a restated copy",
        ),
        (
            "cut_free_form_input",
            "no streamed free-form input of two words or more with a restated copy",
        ),
    ],
)
def test_an_input_of_one_word_has_no_word_boundary_to_cut_at(kind: str, why: str) -> None:
    with pytest.raises(NotApplicable) as refused:
        mutate(one_word_custom_input(), kind)
    assert str(refused.value) == f"{kind}: {why}"


def test_schema_violation_finds_a_call_stated_whole_beside_one_that_streams() -> None:
    """The second call's input is stated in its block's start, with no fragment: its arguments
    are found by that statement, not by the first call's fragments."""
    envelope = load(CONFORMANCE / "anthropic" / "valid_text_then_two_tools.json")
    envelope["tool_schemas"]["get_weather"] = {"type": "object"}  # no type there to break
    events = envelope["events"]
    events[7]["content_block"]["input"] = {"query": "rain"}
    del events[8:10]
    assert check(envelope).status.value == "pass"
    variant = mutate(envelope, "schema_violation")
    assert [c.arguments for c in check(variant).calls] == ['{"city":"Oslo"}', '{"query":12345}']


def test_repeat_identity_needs_a_call_of_two_fragments() -> None:
    with pytest.raises(NotApplicable) as refused:
        mutate(load(CONFORMANCE / "openai" / "valid_text_then_call.json"), "repeat_identity")
    assert str(refused.value) == (
        "repeat_identity: no call has a second fragment to repeat its identity on"
    )


def test_a_repeated_response_makes_each_id_its_own_and_nothing_else() -> None:
    """Only non-empty string ids are renamed, the longest first, so that an id that is another
    with the suffix already is not renamed twice over."""
    events = [
        {"type": "a", "id": "r", "item_id": "", "call_id": 7, "n": 7, "text": ""},
        {"type": "b", "response_id": "r_again", "event_id": None, "note": "r"},
    ]
    assert with_own_ids(events, "again") == [
        {"type": "a", "id": "r_again", "item_id": "", "call_id": 7, "n": 7, "text": ""},
        {"type": "b", "response_id": "r_again_again", "event_id": None, "note": "r_again"},
    ]


def test_cut_input_at_the_end_of_a_fragment_ends_with_that_fragment() -> None:
    envelope = one_word_custom_input()
    events = envelope["events"]
    events[3]["delta"], events[4]["delta"] = "Remember the", " milk"
    for event in events:
        for holder in [event, event.get("item"), *event.get("response", {}).get("output", [])]:
            if isinstance(holder, dict) and holder.get("input"):
                holder["input"] = "Remember the milk"
    variant = mutate(envelope, "cut_input")["events"]
    assert variant == events[:4]


def test_delta_after_terminal_comes_right_after_the_first_of_two_terminal_events() -> None:
    envelope = load(CONFORMANCE / "anthropic" / "valid_fragmented.json")
    events = envelope["events"]
    at = next(n for n, e in enumerate(events) if e["type"] == "message_delta")
    last = max(n for n, e in enumerate(events) if e["type"] == "content_block_delta")
    assert events[-1]["type"] == "message_stop"  # the second that carries the evidence
    assert mutate(envelope, "delta_after_terminal")["events"] == [
        *events[: at + 1],
        events[last],
        *events[at + 1 :],
    ]


def test_withdraw_sends_the_cancellation_right_after_the_first_terminal_message() -> None:
    """The ``toolCall`` is the message that ends the model's turn of calls: the cancellation
    comes right after it, before the model's spoken answer."""
    envelope = load(CONFORMANCE / "gemini-live" / "valid_single_call.json")
    events = envelope["events"]
    at = next(n for n, e in enumerate(events) if "toolCall" in e)
    assert mutate(envelope, "withdraw")["events"] == [
        *events[: at + 1],
        {"toolCallCancellation": {"ids": ["function-call-13457310911862935045"]}},
        *events[at + 1 :],
    ]


def test_repeat_after_cancel_makes_the_response_again_from_its_first_event_only() -> None:
    """The session's own events before the response (``session.created``) are not repeated."""
    envelope = load(CONFORMANCE / "openai-realtime" / "valid_single_call.json")
    events = envelope["events"]
    assert [e["type"] for e in events[:2]] == ["session.created", "response.created"]
    cancelled = mutate(envelope, "cancel")["events"]
    assert mutate(envelope, "repeat_after_cancel")["events"] == [
        *cancelled,
        *with_own_ids(events[1:], "again"),
    ]


def test_restate_other_input_cuts_every_copy_and_leaves_the_stream() -> None:
    envelope = load(CONFORMANCE / "openai-responses" / "custom_tool_call_text_valid.json")
    expected = copy.deepcopy(envelope["events"])
    cut = "Remember the milk, then call"
    expected[7]["input"] = expected[8]["item"]["input"] = cut
    expected[9]["response"]["output"][0]["input"] = cut
    assert mutate(envelope, "restate_other_input")["events"] == expected


def test_drop_coordinates_keeps_every_other_argument_of_the_action() -> None:
    envelope = load(CONFORMANCE / "anthropic" / "computer_mouse_move_valid.json")
    assert [c.arguments for c in check(envelope).calls] == [
        '{"action": "mouse_move", "coordinate": [10, 20]}'
    ]
    variant = mutate(envelope, "drop_coordinates")
    assert [c.arguments for c in check(variant).calls] == ['{"action": "mouse_move"}']


def test_rewritten_arguments_leave_the_empty_input_a_streamed_block_starts_with() -> None:
    """An Anthropic ``tool_use`` block that streams its input starts with ``input: {}``, which
    states nothing: the new arguments go into the fragments, and the start stays as it was."""
    envelope = load(CONFORMANCE / "anthropic" / "valid_fragmented.json")
    variant = mutate(envelope, "schema_violation")
    starts = [e for e in variant["events"] if e["type"] == "content_block_start"]
    assert [s["content_block"]["input"] for s in starts] == [{}]
    assert [c.arguments for c in check(variant).calls] == ['{"city": 12345, "unit": "c"}']


def test_interleave_takes_turns_between_the_first_two_calls_of_three() -> None:
    envelope = load(CONFORMANCE / "anthropic" / "valid_text_then_two_tools.json")
    events = envelope["events"]
    third = [
        {
            "type": "content_block_start",
            "index": 3,
            "content_block": {"type": "tool_use", "id": "toolu_s2", "name": "search", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 3,
            "delta": {"type": "input_json_delta", "partial_json": '{"query":"snow"}'},
        },
        {"type": "content_block_stop", "index": 3},
    ]
    events[-2:-2] = third
    assert len(check(envelope).calls) == 3
    variant = mutate(envelope, "interleave")["events"]
    # the two calls' blocks (events 4-6 and 7-10) take turns; the third's stay where they were
    order = [0, 1, 2, 3, 4, 7, 5, 8, 6, 9, 10, 11, 12, 13, 14, 15]
    assert variant == [events[n] for n in order]


def test_withdraw_comes_after_the_first_of_two_tool_call_messages() -> None:
    envelope = load(CONFORMANCE / "gemini-live" / "valid_parallel_calls.json")
    events = envelope["events"]
    first, second = events[1]["toolCall"]["functionCalls"]
    events[1:2] = [
        {"toolCall": {"functionCalls": [first]}},
        {"toolCall": {"functionCalls": [second]}},
    ]
    assert check(envelope).status.value == "pass"
    assert mutate(envelope, "withdraw")["events"] == [
        *events[:2],
        {"toolCallCancellation": {"ids": [first["id"]]}},
        *events[2:],
    ]


def test_drop_coordinates_leaves_a_function_s_own_points_alone() -> None:
    """Only a computer action's ``x`` and ``y`` are coordinates: a function's stated input that
    holds a typed point is no action."""
    envelope = load(CONFORMANCE / "anthropic" / "stated_input_only.json")
    envelope["tool_schemas"]["get_weather"] = {"type": "object"}
    envelope["events"][1]["content_block"]["input"] = {"at": {"type": "point", "x": 1, "y": 2}}
    assert check(envelope).status.value == "pass"
    with pytest.raises(NotApplicable) as refused:
        mutate(envelope, "drop_coordinates")
    assert str(refused.value) == "drop_coordinates: no computer action states coordinates"
