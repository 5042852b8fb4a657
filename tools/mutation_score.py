"""``make mutation-score``: how strongly the tests pin the engine, the redactor and the gates, as
numbers.

How this works: every module of ``TARGETS`` (``reassemble/``, ``redact/``, and the code that
decides whether a turn is released: the proxy's tap, the guard, the gateway) is read as a syntax
tree and
each place where one small edit changes what the code does is listed: a comparison turned
(``==``/``!=``, ``<``/``<=``, ``in``/``not in``, ``is``/``is not``), ``and``/``or`` swapped, a
``not`` dropped, ``+``/``-`` swapped, an integer moved by one (an index ``0`` to ``-1``),
``True``/``False`` flipped, a statement (a call, an assignment, a ``raise``, a ``break`` or
``continue``) deleted. Type annotations and docstrings are left alone. A sample is drawn with a
printed seed; each mutant is written into a private copy of the checkout (its git history
included: some tests list the checkout's files) and the fast lane of the test suite runs against
it (``pytest -x``, with the markers ``make test-fast`` runs: the Makefile's ``FAST_MARKERS``, the
one definition of the lane). A failing run or one over the time limit kills the mutant; a mutant
whose tests all pass survives and is printed with its place and its edit, for a person to judge:
a test that kills it, or the reason it changes nothing (``docs/reliability.md``). The score is
printed for each group of ``TARGETS`` apart.

The lane is run whole only where it must be. The baseline runs it once under coverage, each
line noted with the tests that ran it (pytest-cov's test contexts); a mutant's own tests (those
that ran any line of the mutated node) run first, and only when they all pass does the whole
lane run, so a mutant survives exactly when it would survive the whole lane. A group may add a
lane of its own (``EXTRA_LANES``): the guard's, the transport's and the proxy's WebSocket
gate's mutants also face the tests that drive the real SDKs through them, in the apps
environment, importing callgate from the copy.

No library is used: mutmut and cosmic-ray both expect the package's files where they are
imported from, and callgate's package is a folder of links to the design folders; a mutator
over ``ast`` is a page of code and runs each mutant in a copy, so the checkout is never touched.

    python -m tools.mutation_score [--sample N] [--seed S] [--jobs J] [--only PATH_PREFIX]...
                                   [--screen]
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

ROOT = Path(__file__).resolve().parents[1]
#: Group -> the folders and files mutated, relative to the checkout.
TARGETS: dict[str, tuple[str, ...]] = {
    "reassemble": ("reassemble",),
    "redact": ("redact",),
    "gates": (
        "integrations/enforce",
        "integrations/sdk",
        "integrations/gateway.py",
        "proxy_addon/sessions.py",
    ),
}
TESTS = ["tests"]


@dataclass(frozen=True)
class Lane:
    """Tests the mutants of a file under one of ``prefixes`` also face, before the whole fast
    lane: those of ``files`` with ``markers``, run by the interpreter in ``environment`` (linked
    into each copy, where it imports callgate from the copy)."""

    prefixes: tuple[str, ...]
    markers: str
    files: tuple[str, ...]
    environment: str


#: The guard, and the SDK table it reads (``reassemble/gate.py``): the tests that drive the real
#: SDKs' streams and sessions, blocked and passing, through it.
EXTRA_LANES = (
    Lane(
        ("integrations/sdk", "reassemble/gate.py"),
        "sdk",
        (
            "tests/test_guard_sdk.py",
            "tests/test_guard_context.py",
            "tests/test_guard_faults.py",
            "tests/test_guard_request.py",
            "tests/test_guard_unread.py",
            "tests/test_guard_views.py",
            "tests/test_realtime_sdk.py",
        ),
        ".venv-apps",
    ),
    # The proxy's WebSocket gate: Realtime and Responses sessions through mitmproxy, the real
    # openai SDK among the clients, and Gemini Live sessions from google-genai's Live client.
    Lane(
        ("proxy_addon/sessions.py",),
        "proxy",
        ("tests/test_realtime_proxy.py", "tests/test_gemini_live_proxy.py"),
        ".venv-apps",
    ),
    # The gate inside an httpx client: the tests that stream the real SDKs through it.
    Lane(
        ("integrations/enforce/transport.py",),
        "sdk",
        ("tests/test_transport_sdk.py",),
        ".venv-apps",
    ),
)
#: The address space each test run may take: a mutant that makes a loop keep what it should
#: let go fails there (``MemoryError``) instead of filling the machine.
MEMORY_LIMIT = 8 * 2**30
_LIMITED_PYTEST = (
    "import resource, sys, pytest\n"
    f"resource.setrlimit(resource.RLIMIT_AS, ({MEMORY_LIMIT}, {MEMORY_LIMIT}))\n"
    "sys.exit(pytest.console_main())"
)
#: Left out of each copy: environments and caches.
SKIPPED = shutil.ignore_patterns(
    ".venv*",
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".hypothesis",
    "node_modules",
    "*.egg-info",
    "build",
    "dist",
)

_SWAPS: dict[type[ast.AST], type[ast.AST]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.And: ast.Or,
    ast.Or: ast.And,
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
}
_DELETABLE = (ast.Expr, ast.Assign, ast.AugAssign, ast.Raise, ast.Break, ast.Continue)


@dataclass(frozen=True, kw_only=True)
class Mutant:
    path: str
    #: The node's place in ``ast.walk`` order, stable for one source text.
    index: int
    kind: str
    line: int
    #: The last line of the mutated node: a test that ran any line of it may kill the mutant.
    end_line: int = 0
    #: The line as it was when the mutants were listed (the checkout may change meanwhile).
    text: str = ""

    def describe(self) -> str:
        return f"{self.path}:{self.line} {self.kind}: {self.text}"


def _annotations(tree: ast.AST) -> set[int]:
    """ids of nodes inside annotations and docstrings: edits there change nothing."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        parts: list[ast.AST | None] = []
        if isinstance(node, ast.AnnAssign | ast.arg):
            parts.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            parts.append(node.returns)
        if (
            isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        ):
            parts.append(node.body[0])
        for part in parts:
            if part is not None:
                skipped.update(id(inner) for inner in ast.walk(part))
    return skipped


def _kinds(node: ast.AST, parent_body: bool) -> Iterator[str]:
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _SWAPS:
        yield f"compare {type(node.ops[0]).__name__} -> {_SWAPS[type(node.ops[0])].__name__}"
    elif isinstance(node, ast.BoolOp):
        yield f"boolean {type(node.op).__name__} -> {_SWAPS[type(node.op)].__name__}"
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield "drop not"
    elif isinstance(node, ast.BinOp) and type(node.op) in _SWAPS:
        yield f"arithmetic {type(node.op).__name__} -> {_SWAPS[type(node.op)].__name__}"
    elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
        yield f"constant {node.value} -> {not node.value}"
    elif isinstance(node, ast.Constant) and isinstance(node.value, int):
        yield (
            "constant 0 -> -1" if node.value == 0 else f"constant {node.value} -> {node.value + 1}"
        )
    if parent_body and isinstance(node, _DELETABLE):
        yield "delete statement"


def _in_bodies(tree: ast.AST) -> set[int]:
    """ids of statements that sit in a body list (which a deletion may replace by ``pass``)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            statements = getattr(node, field, None)
            if isinstance(statements, list):  # a lambda's body is one expression
                found.update(id(s) for s in statements if isinstance(s, ast.stmt))
    return found


def mutants(path: Path, root: Path = ROOT) -> list[Mutant]:
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    tree = ast.parse(source)
    skipped, bodies = _annotations(tree), _in_bodies(tree)
    relative = path.relative_to(root).as_posix()
    found = []
    for index, node in enumerate(ast.walk(tree)):
        if id(node) in skipped:
            continue
        for kind in _kinds(node, id(node) in bodies):
            line = getattr(node, "lineno", 0)
            found.append(
                Mutant(
                    path=relative,
                    index=index,
                    kind=kind,
                    line=line,
                    end_line=getattr(node, "end_lineno", None) or line,
                    text=lines[line - 1].strip() if line else "",
                )
            )
    return found


def mutated_source(mutant: Mutant, source: str) -> str:
    """``source`` (the module as the mutants were listed from it) with ``mutant`` applied."""
    tree = ast.parse(source)
    node = next(n for i, n in enumerate(ast.walk(tree)) if i == mutant.index)
    if mutant.kind == "delete statement":
        _replace_statement(tree, node)
    elif isinstance(node, ast.Compare):
        node.ops = [_SWAPS[type(node.ops[0])]()]  # type: ignore[list-item]
    elif isinstance(node, ast.BoolOp | ast.BinOp):
        node.op = _SWAPS[type(node.op)]()  # type: ignore[assignment]
    elif isinstance(node, ast.UnaryOp):
        _replace_expression(tree, node, node.operand)
    elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
        node.value = not node.value
    elif isinstance(node, ast.Constant) and isinstance(node.value, int):
        node.value = -1 if node.value == 0 else node.value + 1
    return ast.unparse(ast.fix_missing_locations(tree))


def _replace_statement(tree: ast.AST, old: ast.AST) -> None:
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            statements = getattr(node, field, None)
            if isinstance(statements, list) and old in statements:
                statements[statements.index(old)] = ast.Pass()
                return


def _replace_expression(tree: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for node in ast.walk(tree):
        for field, value in ast.iter_fields(node):
            if value is old:
                setattr(node, field, new)
                return
            if isinstance(value, list) and any(item is old for item in value):
                value[[id(item) for item in value].index(id(old))] = new
                return


def fast_markers(root: Path = ROOT) -> str:
    """The fast lane's marker expression, as the Makefile defines it (``FAST_MARKERS``)."""
    for line in (root / "Makefile").read_text(encoding="utf-8").splitlines():
        name, _, value = line.partition(":=")
        if name.strip() == "FAST_MARKERS":
            return value.strip()
    raise SystemExit("mutation-score: the Makefile defines no FAST_MARKERS")


class Workspace:
    """A private copy of the checkout ``source`` where one mutant at a time is written and
    tested."""

    def __init__(
        self, source: Path, base: Path, number: int, timeout: float, lanes: tuple[Lane, ...] = ()
    ) -> None:
        self.root = base / f"copy{number}"
        shutil.copytree(source, self.root, symlinks=True, ignore=SKIPPED)
        for environment in {lane.environment for lane in lanes}:
            (self.root / environment).symlink_to(source / environment)
        self.timeout = timeout
        self.markers = fast_markers(source)
        self.lanes = lanes
        self.env = {**os.environ, "PYTHONPATH": str(self.root), "PYTHONDONTWRITEBYTECODE": "1"}
        #: (file, line) -> the tests that ran it in the baseline (``cover``).
        self.tests_of: dict[tuple[str, int], set[str]] = {}
        #: Test function (node id without parameters) -> its seconds in the baseline.
        self.seconds_of: dict[str, float] = {}
        #: What the last run that failed said first.
        self.failed = ""

    def pytest(self, *arguments: str, env: dict[str, str] | None = None) -> tuple[bool, float]:
        """(whether every test passed, seconds); a run over the limit counts as failing."""
        start = time.monotonic()
        # A session of its own: a mutant that hangs a test's app (an SDK lane runs apps in
        # subprocesses) is stopped with every process it started, not only pytest.
        with subprocess.Popen(
            [
                sys.executable,
                "-c",
                _LIMITED_PYTEST,
                "-x",
                "-q",
                "-p",
                "no:cacheprovider",
                *arguments,
            ],
            cwd=self.root,
            env=env or self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        ) as running:
            try:
                stdout, stderr = running.communicate(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                os.killpg(running.pid, signal.SIGKILL)
                running.communicate()
                self.failed = "over the time limit"
                return False, time.monotonic() - start
        failures = [
            line
            for line in stdout.decode(errors="replace").splitlines()
            if line.startswith(("FAILED ", "ERROR "))
        ]
        self.failed = failures[0] if failures else stderr.decode(errors="replace")[-300:]
        return running.returncode == 0, time.monotonic() - start

    def run_tests(self) -> tuple[bool, float]:
        """The whole fast lane."""
        return self.pytest("-m", self.markers, *TESTS)

    def cover(self, data: Path, folders: list[str]) -> tuple[bool, float]:
        """The whole fast lane under coverage, each line of the files in ``folders`` noted with
        the tests that ran it (``tests_of``). Folders, not the package: callgate's package is a
        folder of links, and coverage places a file where its links lead."""
        env = {**self.env, "COVERAGE_FILE": str(data)}
        measure = [f"--cov={folder}" for folder in folders]
        measure += ["--cov-context=test", "--cov-report="]
        # Each test's time too (xunit1 names its file), so a mutant's own tests run fastest first.
        timed = [f"--junitxml={data}.xml", "-o", "junit_family=xunit1"]
        passed, seconds = self.pytest(*measure, *timed, "-m", self.markers, *TESTS, env=env)
        if passed:
            self.tests_of = tests_by_line(data, self.root)
            self.seconds_of = seconds_by_test(Path(f"{data}.xml"))
        return passed, seconds

    def imports_from_here(self, module: str, python: str = sys.executable) -> bool:
        done = subprocess.run(
            [python, "-c", f"import {module} as m;print(m.__file__)"],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        return done.stdout.strip().startswith(str(self.root))

    def own_tests(self, mutant: Mutant) -> list[str]:
        """The tests that ran any line of the mutated node in the baseline, the quickest first:
        the run stops at the first that fails."""
        found: set[str] = set()
        for line in range(mutant.line, max(mutant.line, mutant.end_line) + 1):
            found |= self.tests_of.get((mutant.path, line), set())
        return sorted(found, key=lambda test: (self.seconds_of.get(test, 0.0), test))

    def judge(self, mutant: Mutant, screen: bool = False) -> tuple[Mutant, bool, float]:
        """(the mutant, whether it survived, seconds): its own tests first, then, while they
        pass, the lanes of its place and the whole fast lane (``screen``: not the whole lane,
        and a mutant no test ran survives untested)."""
        target = self.root / mutant.path
        original = target.read_text(encoding="utf-8")
        # From the workspace's own copy: the checkout may have changed since it was made.
        target.write_text(mutated_source(mutant, original), encoding="utf-8")
        spent = 0.0
        try:
            own = self.own_tests(mutant)
            runs = [("-m", self.markers, *own)] if own else []
            # A gate's own lane before the whole fast lane: it is where its mutants die.
            runs += [
                ("-m", lane.markers, *lane.files)
                for lane in self.lanes
                if mutant.path.startswith(lane.prefixes)
            ]
            if not screen:
                runs.append(("-m", self.markers, *TESTS))
            for arguments in runs:
                passed, seconds = self.pytest(*arguments)
                spent += seconds
                if not passed:
                    return mutant, False, spent
        finally:
            target.write_text(original, encoding="utf-8")
        return mutant, True, spent


def tests_by_line(data: Path, root: Path) -> dict[tuple[str, int], set[str]]:
    """(file relative to ``root``, line) -> the test functions (node ids without their
    parameters) whose setup, call or teardown ran it, from pytest-cov's contexts; what ran
    outside any test (at import) is left out."""
    from coverage import CoverageData  # only here: the tool's own dependency

    found: dict[tuple[str, int], set[str]] = {}
    covered = CoverageData(basename=str(data))
    covered.read()
    real = root.resolve()
    for measured in covered.measured_files():
        try:
            relative = Path(measured).resolve().relative_to(real).as_posix()
        except ValueError:
            continue
        for line, contexts in covered.contexts_by_lineno(measured).items():
            tests = {c.partition("|")[0].partition("[")[0] for c in contexts if c}
            if tests:
                found[(relative, line)] = tests
    return found


def seconds_by_test(report: Path) -> dict[str, float]:
    """Test function (node id without parameters) -> the seconds its cases took, from a
    JUnit XML report written with ``junit_family=xunit1``."""
    found: dict[str, float] = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        test = f"{case.get('file')}::{case.get('name', '').partition('[')[0]}"
        found[test] = found.get(test, 0.0) + float(case.get("time") or 0)
    return found


@dataclass(frozen=True)
class Score:
    """What one run found: each group's mutants tested and those that survived."""

    seed: int
    tested: dict[str, list[Mutant]]
    survivors: dict[str, list[Mutant]]


def files_of(root: Path, targets: dict[str, tuple[str, ...]]) -> dict[str, list[Path]]:
    """Each group's Python files under ``root``."""
    found: dict[str, list[Path]] = {}
    for group, places in targets.items():
        paths = [root / place for place in places]
        found[group] = sorted(
            f for path in paths for f in ([path] if path.is_file() else path.rglob("*.py"))
        )
    return found


def score(
    root: Path,
    targets: dict[str, tuple[str, ...]],
    *,
    sample: int,
    seed: int,
    jobs: int,
    only: tuple[str, ...] = ("",),
    probe: str = "callgate.reassemble.engine",
    lanes: tuple[Lane, ...] = (),
    screen: bool = False,
) -> Score | str:
    """Test a sample of ``sample`` mutants of ``targets`` in copies of ``root``; the score, or
    why no mutant could be tested (``probe``, a module of the checkout, must import from the
    copy, and the tests must pass without any mutant). ``screen``: each mutant faces only the
    tests that ran its place and its lanes, so its survivors are where to look for a missing
    test, quickly; a screen is no score."""
    every = {
        group: [m for path in paths for m in mutants(path, root) if m.path.startswith(only)]
        for group, paths in files_of(root, targets).items()
    }
    pool_of = [m for group in every.values() for m in group]
    chosen = sorted(
        random.Random(seed).sample(pool_of, min(sample, len(pool_of))),
        key=lambda m: (m.path, m.index),
    )
    print(
        f"{len(pool_of)} mutants in {', '.join(targets)}; testing {len(chosen)} "
        f"(seed {seed}, {jobs} jobs)",
        flush=True,
    )
    group_of = {id(m): group for group, found in every.items() for m in found}
    with tempfile.TemporaryDirectory(prefix="callgate-mutation-score-") as base:
        for lane in lanes:
            if not (root / lane.environment / "bin" / "python").exists():
                return f"{lane.environment} is missing (its lane: {lane.markers}); make builds it"
        spaces = [Workspace(root, Path(base), n, timeout=900, lanes=lanes) for n in range(jobs)]
        if not spaces[0].imports_from_here(probe):
            return "the copy's tests would import callgate from elsewhere"
        for lane in lanes:
            python = str(spaces[0].root / lane.environment / "bin" / "python")
            if not spaces[0].imports_from_here(probe, python):
                return f"{lane.environment} would import callgate from elsewhere than the copy"
        folders = sorted(
            {place.partition("/")[0] for places in targets.values() for place in places}
        )
        passed, baseline = spaces[0].cover(Path(base) / "coverage", folders)
        if not passed:
            return f"the tests fail without any mutant ({spaces[0].failed.strip()})"
        for space in spaces:
            # A screen never runs the whole lane: a part of it may take the lane's time.
            space.timeout = max(60.0, baseline * (1 if screen else 4))
            space.tests_of = spaces[0].tests_of
        print(
            f"baseline: the tests pass under coverage in {baseline:.1f} s; "
            f"{len(spaces[0].tests_of)} lines ran by a test",
            flush=True,
        )
        free = list(spaces)

        def judge(mutant: Mutant) -> tuple[Mutant, bool, float]:
            space = free.pop()
            try:
                return space.judge(mutant, screen)
            finally:
                free.append(space)

        tested: dict[str, list[Mutant]] = {group: [] for group in targets}
        survivors: dict[str, list[Mutant]] = {group: [] for group in targets}
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for number, (mutant, survived, seconds) in enumerate(pool.map(judge, chosen), 1):
                tested[group_of[id(mutant)]].append(mutant)
                if survived:
                    survivors[group_of[id(mutant)]].append(mutant)
                print(
                    f"[{number}/{len(chosen)}] {'SURVIVED' if survived else 'killed  '} "
                    f"{seconds:5.1f}s {mutant.describe()}",
                    flush=True,
                )
    return Score(seed, tested, survivors)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, default=int(os.environ.get("MUTANTS", 200)))
    parser.add_argument(
        "--seed",
        type=int,
        default=int(os.environ.get("MUTATE_SEED", 0) or random.SystemRandom().randrange(10**8)),
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        help="only files whose path starts with this (repeated: with any of these)",
    )
    parser.add_argument(
        "--screen",
        action="store_true",
        help="each mutant against the tests that ran its place only: candidates, not a score",
    )
    options = parser.parse_args()
    found = score(
        ROOT,
        TARGETS,
        sample=options.sample,
        seed=options.seed,
        jobs=options.jobs,
        only=tuple(options.only) or ("",),
        lanes=EXTRA_LANES,
        screen=options.screen,
    )
    if isinstance(found, str):
        print(f"mutation-score: {found}", file=sys.stderr)
        return 2
    print()
    if options.screen:
        print("a screen, not a score: each survivor faced only the tests that ran its place")
    for group in TARGETS:
        tested, survived = len(found.tested[group]), found.survivors[group]
        killed = tested - len(survived)
        print(
            f"{group}: {killed} of {tested} mutants killed "
            f"({100 * killed / max(1, tested):.1f}%), seed {found.seed}"
        )
        for mutant in survived:
            print(f"  survived: {mutant.describe()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
