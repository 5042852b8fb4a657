"""Generated documentation stays equal to the code it is generated from."""

from __future__ import annotations

from callgate.reassemble import Code
from callgate.reassemble.catalogue import CATALOGUE
from tests.conftest import CONFORMANCE, ROOT, load
from tools.gendocs import GENERATED


def test_generated_files_are_up_to_date() -> None:
    for path, text in GENERATED.items():
        assert path.read_text(encoding="utf-8") == text, f"run `make docs` ({path.name})"


def test_every_code_has_a_catalogue_entry() -> None:
    assert list(CATALOGUE) == list(Code)


def test_the_readmes_python_example_runs_on_a_fixture() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Use it from Python") :]
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
    exec(compile(example, "README.md", "exec"), names)
    report = names["report"]
    assert (report.status.value, report.blocking_codes) == (
        "fail",
        ["duplicate_start", "identity_collision"],
    )
    assert warned == [("duplicate_start", 0), ("identity_collision", 0), ("identity_collision", 0)]
    assert printed == [(c.slot, c.id, c.name, c.arguments) for c in report.calls] != []
