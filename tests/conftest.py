"""Shared test helpers: the bundled fixtures, the optional shared corpus, what decides a turn."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from callgate.reassemble.framing import SSE
from callgate.reassemble.profiles import PROFILES
from callgate.reassemble.readers import READERS

# No timing assertions in the suite, hypothesis's own included: a loaded machine (two xdist
# workers, a proxy and an SDK process on two cores) must not fail a property.
settings.register_profile(
    "callgate", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.load_profile("callgate")

ROOT = Path(__file__).resolve().parents[1]
#: The LiteLLM gateway's environment the gateway tests run in: ``.venv-gateway`` (the newest
#: LiteLLM of the range ``callgate[litellm]`` accepts), or another named by
#: ``CALLGATE_GATEWAY_VENV`` (``make test`` runs them again in ``.venv-gateway-lowest``).
GATEWAY_VENV = ROOT / os.environ.get("CALLGATE_GATEWAY_VENV", ".venv-gateway")
GATEWAY_PYTHON = GATEWAY_VENV / "bin" / "python"
CONFORMANCE = ROOT / "fixtures" / "conformance"
#: The shared corpus lives beside the repository for the developers and CI; users won't have it.
#: ``CALLGATE_TEST_CORPUS`` points elsewhere (the suite's own test of a clone without it).
SHARED_CORPUS = Path(os.environ.get("CALLGATE_TEST_CORPUS") or ROOT.parent / "shared" / "corpus")


#: The faults of built-in and custom tools' input (shell commands, diffs, custom tools' text,
#: computer actions): a turn of function calls takes every other fault.
INPUT_FAULTS = ("cut_input", "restate_other_input", "cut_free_form_input", "drop_coordinates")
#: The faults of a restated copy of streamed arguments: only the APIs that restate them (OpenAI
#: Responses and Realtime) take them.
COPY_FAULTS = ("restate_other_arguments",)


def function_call_faults() -> list[str]:
    """The faults ``callgate.mutate`` makes of a turn of function calls over HTTP (a session's
    own, a cancelled response or a withdrawn call, are not)."""
    from callgate import mutations

    over_http = {
        kind
        for name, profile in PROFILES.items()
        if not profile.over_websocket
        for kind in mutations(blocking=True, profile=name)
    }
    left_out = (*INPUT_FAULTS, *COPY_FAULTS)
    return [k for k in mutations(blocking=True) if k in over_http and k not in left_out]


def conformance_fixtures() -> list[Path]:
    return sorted(CONFORMANCE.rglob("*.json"))


def body_fixtures() -> list[Path]:
    """The conformance fixtures of APIs that stream an HTTP body (not a WebSocket session's
    messages): what the proxy's body tap and ``serve``'s HTTP answers read."""
    return [
        path for path in conformance_fixtures() if not PROFILES[path.parent.name].over_websocket
    ]


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def gemini_chunk(call: dict[str, Any] | None, finish: str | None = None) -> dict[str, Any]:
    """A Gemini chunk of one candidate holding ``call`` as its one functionCall part (none when
    None), with ``finish`` as its finishReason."""
    candidate: dict[str, Any] = {
        "content": {
            "role": "model",
            "parts": ([{"functionCall": call}] if call is not None else []),
        }
    }
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate]}


def deciding(profile: str, raw: object) -> bool:
    """Whether a raw event can decide its turn: it carries the terminal evidence or ends the
    stream (what enforce mode must read before it lets the event go)."""
    ends = PROFILES[profile].ends_stream
    return PROFILES[profile].carries_terminal(raw) or bool(ends and ends(raw))


def fixture_id(path: Path) -> str:
    return str(path.relative_to(CONFORMANCE).with_suffix(""))


#: Why a corpus test skips: the one reason every one of them gives.
CORPUS_ABSENT = f"shared corpus not present at {SHARED_CORPUS}"


def require_corpus(sub: str) -> Path:
    path = SHARED_CORPUS / sub
    if not path.is_dir():
        pytest.skip(CORPUS_ABSENT)
    return path


def corpus_params(values: list[Any], ids: Any = None) -> list[Any]:
    """``values`` as parameters, or one parameter that skips with ``CORPUS_ABSENT`` when there
    are none (pytest's own "empty parameter set" would not say why)."""
    if values:
        return [pytest.param(value, id=ids(value) if ids else None) for value in values]
    return [pytest.param(None, id="corpus-absent", marks=pytest.mark.skip(reason=CORPUS_ABSENT))]


#: The message of the error event a gate sends for a blocked turn, its codes in place of ``{}``.
BLOCKED_LINE = "callgate blocked this turn: {}"


def blocked_event(profile: str, codes: list[str], framing: str = SSE) -> bytes:
    """The provider's own error event that enforce mode sends after a blocked turn has begun
    (nothing of a JSON array's closing sent yet): its message names the blocking codes."""
    record = PROFILES[profile]
    message = BLOCKED_LINE.format(", ".join(codes) or "conformance failure")
    return READERS[framing].error_frame(record, record.error_body(message, codes), first=False)


class Dumps:
    """Stands for an SDK's pydantic model (LiteLLM's chunks, the SDKs' events and tools): all
    callgate may rely on is a callable ``model_dump``, whose options it notes (the real models
    are fed in ``test_sdk.test_real_sdk_models_read_as_their_wire_json``)."""

    def __init__(self, wire: Any) -> None:
        self.wire = wire
        self.asked: dict[str, Any] = {}

    def model_dump(self, **options: Any) -> Any:
        self.asked = options
        return self.wire
