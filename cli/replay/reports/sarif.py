"""The SARIF 2.1.0 report for code-scanning UIs: one result per blocking finding of a fixture
whose expectation did not hold, tolerated findings as notes, and expectation differences that no
finding shows as results of rule ``expectation``."""

from __future__ import annotations

import importlib.metadata
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from callgate.cli.replay.outcome import Outcome
from callgate.cli.replay.reports.common import artifact_uri
from callgate.reassemble import Code
from callgate.reassemble.catalogue import CATALOGUE

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
#: The project has no public home yet; when it has one, SARIF's ``informationUri`` names it.
INFORMATION_URI: str | None = None
EXPECTATION_RULE = {
    "id": "expectation",
    "shortDescription": {
        "text": "The fixture's pinned expect block does not match the verdict callgate gives now."
    },
    "help": {
        "text": "If the new verdict is intended, update the expect block (callgate replay "
        "--update-expectations) and review the diff; otherwise find what changed "
        "the verdict."
    },
    "defaultConfiguration": {"level": "error"},
}


def sarif_report(outcomes: Sequence[Outcome], *, root: Path | None = None) -> str:
    """SARIF 2.1.0, one run. Unreadable files are tool execution notifications. Artifact URIs
    are relative to ``root`` when the fixture is under it."""
    results = [result for o in outcomes for result in _results(o, root)]
    return sarif_text(results, _rule, _invocation(outcomes, root))


def sarif_text(
    results: list[dict[str, Any]],
    rule: Callable[[str], dict[str, Any]],
    invocation: dict[str, Any],
) -> str:
    """One SARIF 2.1.0 run of callgate's: ``results`` indexed into the rules they name (each
    described by ``rule``), with the tool's name, home and version."""
    rule_ids = sorted({result["ruleId"] for result in results})
    for result in results:
        result["ruleIndex"] = rule_ids.index(result["ruleId"])
    driver: dict[str, Any] = {"name": "callgate", "rules": [rule(r) for r in rule_ids]}
    if INFORMATION_URI:
        driver["informationUri"] = INFORMATION_URI
    if version := driver_version():
        driver["version"] = version
    run = {"tool": {"driver": driver}, "invocations": [invocation], "results": results}
    log = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    return json.dumps(log, indent=2) + "\n"


def _results(outcome: Outcome, root: Path | None) -> list[dict[str, Any]]:
    if outcome.report is None:
        return []
    uri = artifact_uri(outcome.fixture, root)
    results = [
        _result(f.code.value, "error" if f.blocking else "note", f.message, uri, f.path)
        for f in outcome.report.findings
        if not (f.blocking and outcome.held)
    ]
    results += [
        _result("expectation", "error", p.text, uri, p.pointer)
        for p in outcome.problem_details()
        if not p.shown_by_findings
    ]
    return results


def _result(rule: str, level: str, message: str, uri: str, pointer: str) -> dict[str, Any]:
    location = {
        "physicalLocation": {"artifactLocation": {"uri": uri}},
        "logicalLocations": [{"fullyQualifiedName": pointer, "kind": "element"}],
    }
    return {"ruleId": rule, "level": level, "message": {"text": message}, "locations": [location]}


def _rule(rule_id: str) -> dict[str, Any]:
    if rule_id == EXPECTATION_RULE["id"]:
        return EXPECTATION_RULE
    entry = CATALOGUE[Code(rule_id)]
    return {
        "id": rule_id,
        "shortDescription": {"text": entry.meaning},
        "fullDescription": {"text": f"{entry.meaning} Typical causes: {entry.causes}"},
        "help": {"text": entry.recovery},
        "defaultConfiguration": {"level": "error"},
    }


def _invocation(outcomes: Sequence[Outcome], root: Path | None) -> dict[str, Any]:
    notes = [
        {
            "level": "error",
            "message": {"text": o.error},
            "locations": [
                {"physicalLocation": {"artifactLocation": {"uri": artifact_uri(o.fixture, root)}}}
            ],
        }
        for o in outcomes
        if o.error is not None
    ]
    invocation: dict[str, Any] = {"executionSuccessful": not notes}
    if notes:
        invocation["toolExecutionNotifications"] = notes
    return invocation


def driver_version() -> str | None:
    try:
        return importlib.metadata.version("callgate")
    except importlib.metadata.PackageNotFoundError:
        return None
