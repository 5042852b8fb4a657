"""Generated documentation stays equal to the code it is generated from."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from callgate.reassemble import Code
from callgate.reassemble.catalogue import CATALOGUE
from tests.conftest import CONFORMANCE, ROOT, load
from tools.gendocs import GENERATED


def test_generated_files_are_up_to_date() -> None:
    for path, text in GENERATED.items():
        assert path.read_text(encoding="utf-8") == text, f"run `make docs` ({path.name})"


def test_every_code_has_a_catalogue_entry() -> None:
    assert list(CATALOGUE) == list(Code)


def test_the_python_pages_example_runs_on_a_fixture() -> None:
    page = (ROOT / "docs" / "python.md").read_text(encoding="utf-8")
    section = page[page.index("# Use it from Python") :]
    start = section.index("```python\n") + len("```python\n")
    example = section[start : section.index("\n```", start)]
    fixture = load(CONFORMANCE / "anthropic" / "reused_index_new_id.json")
    warned: list[tuple[str, int | None]] = []
    printed: list[tuple[object, ...]] = []
    names = {
        "envelope": fixture,
        "tool_schemas": fixture["tool_schemas"],
        "stream": fixture["events"],
        "warn": lambda *a: warned.append(a),
        "print": lambda *a: printed.append(a),
    }
    exec(compile(example, "docs/python.md", "exec"), names)
    report = names["report"]
    assert (report.status.value, report.blocking_codes) == (
        "fail",
        ["duplicate_start", "identity_collision"],
    )
    assert warned == [("duplicate_start", 0), ("identity_collision", 0), ("identity_collision", 0)]
    assert printed == [(c.slot, c.id, c.name, c.arguments) for c in report.calls] != []


def test_the_site_builds_with_no_broken_link_or_anchor(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    zensical = Path(sys.executable).parent / "zensical"
    built = subprocess.run(
        [str(zensical), "build", "--strict"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    said = built.stdout + built.stderr
    assert (built.returncode, "No issues found" in said) == (0, True), said
    listed = {page.name for page in (ROOT / "docs").glob("*.md")}
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert sorted(page for page in listed if f" {page}\n" not in nav) == []  # every page is in it


def test_the_readme_is_a_front_door_whose_links_all_resolve() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.split()) < 2500
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    local = [t for t in targets if not t.startswith(("http://", "https://"))]
    assert local and [t for t in local if not (ROOT / t).exists()] == []
