"""The reports of ``callgate replay``: pure functions from outcomes to text for people and CI.

How this works: every report reads the same ``callgate.cli.replay.Outcome`` list in its order and
touches
nothing else, so a report is a function of the run. ``text_table`` is a rich table for terminals
and logs; ``json_report`` is the whole run as data; ``junit_report`` is the JUnit XML that CI test
reporters read (one testcase per fixture, a failure per unheld expectation, an error per
unreadable file), built with ElementTree; ``sarif_report`` is SARIF 2.1.0 for code-scanning UIs
(one result per blocking finding of a fixture whose expectation did not hold, tolerated findings
as notes, expectation differences that no finding shows as results of rule ``expectation``).
Fixture content is untrusted: rich text is never parsed as markup, and XML gets only characters
XML 1.0 can carry.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import quote

from rich.table import Column, Table
from rich.text import Text

from callgate.reassemble import Code, Finding
from callgate.reassemble.catalogue import CATALOGUE

if TYPE_CHECKING:  # cli.replay imports this module; the reports only read its outcomes
    from callgate.cli.replay import Outcome

REPORT_VERSION = 1
SUITE_NAME = "callgate replay"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
#: The project has no public home yet; when it has one, SARIF's ``informationUri`` names it.
INFORMATION_URI: str | None = None
EXPECTATION_RULE = {
    "id": "expectation",
    "shortDescription": {"text": "The fixture's pinned expect block does not match the verdict "
                                 "callgate gives now."},
    "help": {"text": "If the new verdict is intended, update the expect block (callgate replay "
                     "--update-expectations) and review the diff; otherwise find what changed "
                     "the verdict."},
    "defaultConfiguration": {"level": "error"},
}
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_STYLES = {"pass": "green", "fail": "red"}


class Summary(NamedTuple):
    fixtures: int
    held: int
    not_held: int
    unreadable: int

    @property
    def exit_code(self) -> int:
        """2 when a file was unreadable, else 1 when an expectation did not hold, else 0."""
        return 2 if self.unreadable else 1 if self.not_held else 0


def summarize(outcomes: Sequence[Outcome]) -> Summary:
    kinds = [o.kind for o in outcomes]
    return Summary(len(kinds), kinds.count("held"), kinds.count("not-held"),
                   kinds.count("unreadable"))


def summary_line(outcomes: Sequence[Outcome]) -> str:
    """``N fixtures: X held, Y did not, Z unreadable``."""
    s = summarize(outcomes)
    return f"{s.fixtures} fixtures: {s.held} held, {s.not_held} did not, {s.unreadable} unreadable"


# -- text --------------------------------------------------------------------------------------

def text_table(outcomes: Sequence[Outcome]) -> Table:
    """One row per fixture: fixture, profile, provider, verdict, codes, expectation."""
    table = Table("profile", "provider", "verdict", "codes")
    # A fixture's path and its problems are what a reader acts on: wrap them, never cut them.
    table.columns.insert(0, Column("fixture", overflow="fold"))
    table.add_column("expectation", overflow="fold")
    for outcome in outcomes:
        table.add_row(*_text_row(outcome))
    return table


def _text_row(outcome: Outcome) -> list[Text]:
    report = outcome.report
    if report is None:
        return [Text(str(outcome.fixture)), Text("-"), Text("-"), Text("unreadable", "red"),
                Text(""), Text(outcome.error or "", "red")]
    status = report.status.value
    tolerated = sorted({f.code.value for f in report.findings if not f.blocking})
    codes = "\n".join([*report.blocking_codes, *(f"{code} (tolerated)" for code in tolerated)])
    expectation = (Text("held", "green") if outcome.held
                   else Text("\n".join(outcome.problems), "red"))
    return [Text(str(outcome.fixture)), Text(report.profile), Text(report.provider or "-"),
            Text(status, _STYLES.get(status, "yellow")), Text(codes), expectation]


# -- JSON --------------------------------------------------------------------------------------

def json_report(outcomes: Sequence[Outcome]) -> str:
    """``{"report_version", "fixtures": [{"fixture", "held", "problems", "error", "report"}],
    "summary"}``; ``report`` is the engine's report (``null`` for an unreadable file)."""
    s = summarize(outcomes)
    document = {
        "report_version": REPORT_VERSION,
        "fixtures": [{"fixture": str(o.fixture), "held": o.held, "problems": o.problems,
                      "error": o.error, "report": o.report.to_dict() if o.report else None}
                     for o in outcomes],
        "summary": {**s._asdict(), "exit_code": s.exit_code},
    }
    return json.dumps(document, indent=2) + "\n"


# -- JUnit XML ---------------------------------------------------------------------------------

def junit_report(outcomes: Sequence[Outcome], *, root: Path | None = None) -> str:
    """JUnit XML: ``<testsuites>`` holding one ``<testsuite>``, one ``<testcase>`` per fixture
    (classname: its folder, dotted; name: its file stem). Paths under ``root`` are relative."""
    s = summarize(outcomes)
    seconds = f"{sum(o.seconds for o in outcomes):.3f}"
    counts = {"tests": str(s.fixtures), "failures": str(s.not_held),
              "errors": str(s.unreadable), "time": seconds}
    suites = ET.Element("testsuites", {"name": SUITE_NAME, **counts})
    suite = ET.SubElement(suites, "testsuite", {"name": SUITE_NAME, **counts, "skipped": "0"})
    for outcome in outcomes:
        suite.append(_testcase(outcome, root))
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def _testcase(outcome: Outcome, root: Path | None) -> ET.Element:
    path = display_path(outcome.fixture, root)
    folder = ".".join(p for p in path.parent.parts if p not in ("/", ".", ".."))
    case = ET.Element("testcase", {"classname": _xml(folder or "callgate"),
                                   "name": _xml(path.stem), "file": _xml(path.as_posix()),
                                   "time": f"{outcome.seconds:.3f}"})
    if outcome.error is not None:
        error = ET.SubElement(case, "error", {"message": _xml(outcome.error),
                                              "type": "unreadable"})
        error.text = _xml(outcome.error)
    elif not outcome.held:
        failure = ET.SubElement(case, "failure", {"message": _xml("; ".join(outcome.problems)),
                                                  "type": "expectation"})
        blocking = [f for f in outcome.report.findings if f.blocking] if outcome.report else []
        lines = [*outcome.problems, "", *(finding_line(f) for f in blocking)]
        failure.text = _xml("\n".join(lines).strip() + "\n")
    return case


def finding_line(finding: Finding) -> str:
    """``code: message (choice C, slot S, event E, /json/pointer)``."""
    where = "turn" if finding.slot is None else f"slot {finding.slot}"
    choice = "" if finding.choice is None else f"choice {finding.choice}, "
    return (f"{finding.code.value}: {finding.message} ({choice}{where}, event {finding.event}, "
            f"{finding.path or '/'})")


def _xml(text: str) -> str:
    """``text`` with what XML 1.0 cannot carry (control characters, lone surrogates) escaped."""
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


# -- SARIF -------------------------------------------------------------------------------------

def sarif_report(outcomes: Sequence[Outcome], *, root: Path | None = None) -> str:
    """SARIF 2.1.0, one run. Unreadable files are tool execution notifications. Artifact URIs
    are relative to ``root`` when the fixture is under it."""
    results = [result for o in outcomes for result in _results(o, root)]
    rule_ids = sorted({result["ruleId"] for result in results})
    for result in results:
        result["ruleIndex"] = rule_ids.index(result["ruleId"])
    driver: dict[str, Any] = {"name": "callgate", "rules": [_rule(rule) for rule in rule_ids]}
    if INFORMATION_URI:
        driver["informationUri"] = INFORMATION_URI
    if version := _version():
        driver["version"] = version
    run = {"tool": {"driver": driver}, "invocations": [_invocation(outcomes, root)],
           "results": results}
    log = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    return json.dumps(log, indent=2) + "\n"


def _results(outcome: Outcome, root: Path | None) -> list[dict[str, Any]]:
    if outcome.report is None:
        return []
    uri = artifact_uri(outcome.fixture, root)
    results = [_result(f.code.value, "error" if f.blocking else "note", f.message, uri, f.path)
               for f in outcome.report.findings if not (f.blocking and outcome.held)]
    results += [_result("expectation", "error", p.text, uri, p.pointer)
                for p in outcome.problem_details() if not p.shown_by_findings]
    return results


def _result(rule: str, level: str, message: str, uri: str, pointer: str) -> dict[str, Any]:
    location = {"physicalLocation": {"artifactLocation": {"uri": uri}},
                "logicalLocations": [{"fullyQualifiedName": pointer, "kind": "element"}]}
    return {"ruleId": rule, "level": level, "message": {"text": message},
            "locations": [location]}


def _rule(rule_id: str) -> dict[str, Any]:
    if rule_id == EXPECTATION_RULE["id"]:
        return EXPECTATION_RULE
    entry = CATALOGUE[Code(rule_id)]
    return {"id": rule_id, "shortDescription": {"text": entry.meaning},
            "fullDescription": {"text": f"{entry.meaning} Typical causes: {entry.causes}"},
            "help": {"text": entry.recovery}, "defaultConfiguration": {"level": "error"}}


def _invocation(outcomes: Sequence[Outcome], root: Path | None) -> dict[str, Any]:
    notes = [{"level": "error", "message": {"text": o.error},
              "locations": [{"physicalLocation": {"artifactLocation": {
                  "uri": artifact_uri(o.fixture, root)}}}]}
             for o in outcomes if o.error is not None]
    invocation: dict[str, Any] = {"executionSuccessful": not notes}
    if notes:
        invocation["toolExecutionNotifications"] = notes
    return invocation


def _version() -> str | None:
    try:
        return importlib.metadata.version("callgate")
    except importlib.metadata.PackageNotFoundError:
        return None


# -- paths -------------------------------------------------------------------------------------

def display_path(path: Path, root: Path | None) -> Path:
    """``path`` relative to ``root`` when it lies under it, else as given."""
    if root is not None and path.is_absolute():
        try:
            return path.relative_to(root)
        except ValueError:
            pass
    return path


def artifact_uri(path: Path, root: Path | None) -> str:
    """A URI reference for ``path``: relative with forward slashes, or ``file:`` when absolute."""
    shown = display_path(path, root)
    if shown.is_absolute():
        return shown.as_uri()
    return quote(shown.as_posix(), safe="/", errors="surrogateescape")
