"""The SARIF 2.1.0 log of a scan: one result per finding, its rule the finding's kind and
pattern (``credential/openai-key``), its place the file and the finding's location; files that
could not be read are tool execution notifications."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from callgate.cli.replay.reports.common import artifact_uri
from callgate.cli.replay.reports.sarif import sarif_text
from callgate.cli.scan import ScanResult
from callgate.redact.scanning import PATTERN_DOCS, Kind

_HELP = {
    Kind.CREDENTIAL: "Rotate the credential now: it is in the repository's history. Then "
    "remove it from the recording (re-record through callgate record, or callgate import).",
    Kind.PROMPT: "Remove the prompt from the recording: callgate import keeps only the "
    "request's tools and parameters.",
    Kind.OUTPUT: "Redact the fixture again (callgate import, or redact_envelope) so that its "
    "text and arguments are masked as its meta.redaction says.",
}


def sarif_log(results: Sequence[ScanResult], *, root: Path | None) -> str:
    """SARIF 2.1.0, one run, results in file order."""
    found = [
        _result(f"{f.kind.value}/{f.pattern}", f.location, artifact_uri(r.path, root))
        for r in results
        for f in r.findings
    ]
    return sarif_text(found, _rule, _invocation(results, root))


def _result(rule: str, location: str, uri: str) -> dict[str, Any]:
    kind, _, pattern = rule.partition("/")
    return {
        "ruleId": rule,
        "level": "error",
        "message": {"text": f"{kind} ({pattern}) at {location}"},
        "locations": [
            {
                "physicalLocation": {"artifactLocation": {"uri": uri}},
                "logicalLocations": [{"fullyQualifiedName": location, "kind": "element"}],
            }
        ],
    }


def _rule(rule_id: str) -> dict[str, Any]:
    kind, _, pattern = rule_id.partition("/")
    return {
        "id": rule_id,
        "shortDescription": {"text": PATTERN_DOCS[Kind(kind)][pattern]},
        "help": {"text": _HELP[Kind(kind)]},
        "defaultConfiguration": {"level": "error"},
    }


def _invocation(results: Sequence[ScanResult], root: Path | None) -> dict[str, Any]:
    notes = [
        {
            "level": "error" if r.error is not None else "note",
            "message": {"text": r.error if r.error is not None else "not a recording"},
            "locations": [
                {"physicalLocation": {"artifactLocation": {"uri": artifact_uri(r.path, root)}}}
            ],
        }
        for r in results
        if r.error is not None or r.skipped
    ]
    invocation: dict[str, Any] = {
        "executionSuccessful": not any(r.error is not None for r in results)
    }
    if notes:
        invocation["toolExecutionNotifications"] = notes
    return invocation
