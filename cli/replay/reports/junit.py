"""The JUnit XML report that CI test reporters read: one testcase per fixture, a failure per
expectation that did not hold, an error per unreadable file; built with ElementTree."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from callgate.cli.replay.outcome import Outcome, summarize
from callgate.cli.replay.reports.common import display_path, finding_line

SUITE_NAME = "callgate replay"
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def junit_report(outcomes: Sequence[Outcome], *, root: Path | None = None) -> str:
    """JUnit XML: ``<testsuites>`` holding one ``<testsuite>``, one ``<testcase>`` per fixture
    (classname: its folder, dotted; name: its file stem). Paths under ``root`` are relative."""
    s = summarize(outcomes)
    seconds = f"{sum(o.seconds for o in outcomes):.3f}"
    counts = {
        "tests": str(s.fixtures),
        "failures": str(s.not_held),
        "errors": str(s.unreadable),
        "time": seconds,
    }
    suites = ET.Element("testsuites", {"name": SUITE_NAME, **counts})
    suite = ET.SubElement(suites, "testsuite", {"name": SUITE_NAME, **counts, "skipped": "0"})
    for outcome in outcomes:
        suite.append(_testcase(outcome, root))
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def _testcase(outcome: Outcome, root: Path | None) -> ET.Element:
    path = display_path(outcome.fixture, root)
    folder = ".".join(p for p in path.parent.parts if p not in ("/", ".", ".."))
    case = ET.Element(
        "testcase",
        {
            "classname": _xml(folder or "callgate"),
            "name": _xml(path.stem),
            "file": _xml(path.as_posix()),
            "time": f"{outcome.seconds:.3f}",
        },
    )
    if outcome.error is not None:
        error = ET.SubElement(case, "error", {"message": _xml(outcome.error), "type": "unreadable"})
        error.text = _xml(outcome.error)
    elif not outcome.held:
        failure = ET.SubElement(
            case, "failure", {"message": _xml("; ".join(outcome.problems)), "type": "expectation"}
        )
        blocking = [f for f in outcome.report.findings if f.blocking] if outcome.report else []
        lines = [*outcome.problems, "", *(finding_line(f) for f in blocking)]
        failure.text = _xml("\n".join(lines).strip() + "\n")
    return case


def _xml(text: str) -> str:
    """``text`` with what XML 1.0 cannot carry (control characters, lone surrogates) escaped."""
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
