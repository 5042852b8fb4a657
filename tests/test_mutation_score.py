"""``make mutation-score`` itself, on a planted project: a mutant its tests kill and one they do
not, a baseline that fails, the fast lane the Makefile defines, targets that exist."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import ROOT
from tools import mutation_score
from tools.mutation_score import (
    EXTRA_LANES,
    TARGETS,
    Score,
    Workspace,
    fast_markers,
    files_of,
    mutants,
    score,
)

PLANTED = {
    "Makefile": "FAST_MARKERS := not slow\n",
    "planted/__init__.py": "",
    # Two places an edit changes what the code does: the sum, and the comparison.
    "planted/calc.py": (
        '"""A module of two mutants."""\n\n\n'
        "def total(a, b):\n    return a + b\n\n\n"
        "def missing(a):\n    return a is None\n"
    ),
    # The sum is pinned; the comparison is not.
    "tests/test_calc.py": (
        "from planted.calc import total\n\n\ndef test_total():\n    assert total(2, 3) == 5\n"
    ),
}


def planted(root: Path, **files: str) -> Path:
    for name, text in {**PLANTED, **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def run(root: Path) -> Score | str:
    return score(root, {"planted": ("planted",)}, sample=10, seed=1, jobs=1, probe="planted.calc")


def test_a_mutant_the_tests_pin_is_killed_and_one_they_do_not_survives(tmp_path: Path) -> None:
    found = run(planted(tmp_path))
    assert isinstance(found, Score)
    assert [m.kind for m in found.tested["planted"]] == [
        "arithmetic Add -> Sub",
        "compare Is -> IsNot",
    ]
    assert [m.describe() for m in found.survivors["planted"]] == [
        "planted/calc.py:9 compare Is -> IsNot: return a is None"
    ]


def test_a_screen_leaves_out_the_whole_lane_so_what_only_it_kills_survives(tmp_path: Path) -> None:
    """The comparison runs when the module is imported, which no test's coverage counts: only
    the whole lane, which a screen leaves out, would kill its mutants (the test of the import
    fails on each)."""
    calc = PLANTED["planted/calc.py"] + "\n\nNONE_IS_MISSING = missing(None)\n"
    test = (
        "from planted import calc\n\n\n"
        "def test_none_is_missing():\n    assert calc.NONE_IS_MISSING\n"
    )
    root = planted(tmp_path, **{"planted/calc.py": calc, "tests/test_import.py": test})
    screened = score(
        root,
        {"planted": ("planted",)},
        sample=10,
        seed=1,
        jobs=1,
        probe="planted.calc",
        screen=True,
    )
    assert isinstance(screened, Score)
    assert [m.describe() for m in screened.survivors["planted"]] == [
        "planted/calc.py:12 delete statement: NONE_IS_MISSING = missing(None)",
        "planted/calc.py:9 compare Is -> IsNot: return a is None",
    ]


def test_a_baseline_that_fails_is_refused_before_any_mutant(tmp_path: Path) -> None:
    failing = "from planted.calc import total\n\n\ndef test_total():\n    assert total(2, 3) == 6\n"
    assert run(planted(tmp_path, **{"tests/test_calc.py": failing})) == (
        "the tests fail without any mutant (FAILED tests/test_calc.py::test_total - assert 5 == 6)"
    )


def test_the_tool_runs_the_fast_lane_the_makefile_runs(tmp_path: Path) -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert fast_markers() == "not (slow or sweep or proxy or browser or sdk or gateway or corpus)"
    assert "-m '$(FAST_MARKERS)'" in makefile.split("test-fast: $(STAMP)", 1)[1].split("\n")[1]


def test_every_target_exists_and_the_gates_are_among_them() -> None:
    """A target that moved would leave its group empty, and a gate unmutated."""
    found = files_of(ROOT, TARGETS)
    assert all(found[group] for group in TARGETS)
    gates = {path.relative_to(ROOT).as_posix() for path in found["gates"]}
    assert {
        "integrations/enforce/tap.py",
        "integrations/gateway.py",
        "integrations/sdk/wrap.py",
    } <= gates
    assert mutation_score.SKIPPED(str(ROOT), [".git", ".venv", "tests"]) == {".venv"}


def test_the_baseline_notes_which_tests_ran_each_line(tmp_path: Path) -> None:
    """A mutant's own tests run first: those that ran a line of it in the baseline. The sum is
    run by its test; the comparison by none, so its mutant faces the whole lane."""
    source = planted(tmp_path / "source")
    space = Workspace(source, tmp_path, 0, timeout=120)
    assert space.cover(tmp_path / "coverage", ["planted"])[0]
    total, missing = mutants(source / "planted" / "calc.py", source)
    assert space.own_tests(total) == ["tests/test_calc.py::test_total"]
    assert space.own_tests(missing) == []
    assert list(space.seconds_of) == ["tests/test_calc.py::test_total"]


def test_a_mutants_own_tests_run_the_quickest_first(tmp_path: Path) -> None:
    source = planted(tmp_path / "source")
    space = Workspace(source, tmp_path, 0, timeout=120)
    total = mutants(source / "planted" / "calc.py", source)[0]
    space.tests_of = {(total.path, total.line): {"tests/a.py::slow", "tests/b.py::quick"}}
    space.seconds_of = {"tests/a.py::slow": 2.0, "tests/b.py::quick": 0.1}
    assert space.own_tests(total) == ["tests/b.py::quick", "tests/a.py::slow"]


def test_every_extra_lane_names_test_files_that_exist_and_a_target_it_covers() -> None:
    targets = {
        path.relative_to(ROOT).as_posix()
        for found in files_of(ROOT, TARGETS).values()
        for path in found
    }
    for lane in EXTRA_LANES:
        assert all((ROOT / name).is_file() for name in lane.files), lane
        for prefix in lane.prefixes:
            assert any(path.startswith(prefix) for path in targets), (lane, prefix)
