"""The shape of the house, checked: no import circle, dependencies pointing one way.

The import graph is read from the source with ``ast``: every ``import`` and ``from ... import``
of a ``callgate`` module, at module level or inside a function (a lazy import is still a
dependency). ``from package import name`` depends on ``package.name`` when that is a module,
else on the package.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "callgate"
#: Who may import whom: each part may use the parts after it, never one before it.
LAYERS = ("cli", "proxy_addon", "integrations", "redact", "reassemble")


def modules() -> dict[str, Path]:
    """Every module of the package by its dotted name (through callgate/'s links)."""
    found = {}
    for folder in [PACKAGE, *(PACKAGE / part for part in LAYERS)]:
        for path in folder.rglob("*.py") if folder != PACKAGE else folder.glob("*.py"):
            parts = ["callgate", *path.relative_to(PACKAGE).with_suffix("").parts]
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1]
                    + ([base] if base else [])
                )
            for alias in node.names:
                targets.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return {t for t in targets if t in known and t != name}


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(edges[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def part(module: str) -> str | None:
    pieces = module.split(".")
    return pieces[1] if len(pieces) > 1 and pieces[1] in LAYERS else None


def test_the_graph_reads_every_module_and_sees_known_edges() -> None:
    edges = graph()
    assert "callgate.cli.replay.runner" in edges and "callgate.reassemble.engine" in edges
    assert "callgate.reassemble.state" in edges["callgate.reassemble.engine"]
    assert "callgate.cli.replay.outcome" in edges["callgate.cli.replay.runner"]


def test_no_module_imports_itself_through_others() -> None:
    assert cycles(graph()) == []


def test_the_cycle_finder_finds_a_circle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_dependencies_point_one_way() -> None:
    backwards = sorted(
        (source, target)
        for source, targets in graph().items()
        for target in targets
        if part(source)
        and part(target)
        and LAYERS.index(part(target) or "") < LAYERS.index(part(source) or "")
    )
    assert backwards == []


# -- one place per provider ----------------------------------------------------------------------

#: Folders that must ask the registry instead of naming providers. ``cli/diff/`` is left out: its
#: adapter registry says which profiles each accumulator library reads, and its runner runs in
#: another interpreter, where callgate cannot be imported.
ASKING = ("redact", "proxy_addon", "cli", "integrations")
NAMING_ALLOWED = ("cli/diff/",)


def provider_names() -> set[str]:
    from callgate.reassemble.profiles import PROFILES
    from callgate.reassemble.providers import _HOSTS
    from callgate.reassemble.quirks import QUIRKS

    names = set(PROFILES) | {name for _, name in _HOSTS}
    names |= {provider for quirk in QUIRKS.values() for provider in quirk.providers}
    return names | {"gemini-vertex", "gemini-openai-compat", "anthropic-vertex", "ollama"}


def written_outside_the_registry(names: set[str]) -> list[str]:
    """Where a string constant of the asking folders is one of ``names``: ``path:line 'name'``."""
    named = []
    for part_name in ASKING:
        for path in sorted((ROOT / part_name).rglob("*.py")):
            where = path.relative_to(ROOT).as_posix()
            if where.startswith(NAMING_ALLOWED):
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and node.value in names:
                    named.append(f"{where}:{node.lineno} {node.value!r}")
    return named


def test_no_provider_is_named_outside_the_registry() -> None:
    assert written_outside_the_registry(provider_names()) == []


def test_the_name_check_sees_a_provider_name() -> None:
    tree = ast.parse('profile = "gemini"')
    assert [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and n.value in provider_names()
    ] == ["gemini"]


#: Event names that are also plain words of callgate's own (a report's "error" level).
PLAIN_WORDS = frozenset({"error"})


def event_names() -> set[str]:
    """The event types of every conformance fixture, and the types of their deltas: the wire
    vocabulary a profile reads."""
    names: set[str] = set()
    for path in sorted((ROOT / "fixtures" / "conformance").rglob("*.json")):
        for event in json.loads(path.read_text(encoding="utf-8")).get("events", []):
            if not isinstance(event, dict):
                continue
            delta = event.get("delta")
            kinds = [event.get("type"), delta.get("type") if isinstance(delta, dict) else None]
            names.update(kind for kind in kinds if isinstance(kind, str))
    return names - PLAIN_WORDS


def test_the_event_vocabulary_is_read_from_every_profile() -> None:
    names = event_names()
    assert {"content_block_delta", "text_delta", "response.completed", "tool-call-delta"} <= names


def test_no_event_name_is_written_outside_the_profiles_and_the_sdk_table() -> None:
    assert written_outside_the_registry(event_names()) == []


def test_the_library_api_lives_outside_the_cli() -> None:
    """``cli/`` holds the typer commands and the servers they start; what an app imports
    (``callgate.guard``, ``callgate.guarded``...) lives in the parts below it."""
    import callgate

    homes = {name: module for name, module in callgate._EXPORTS.items()}
    assert [name for name, module in homes.items() if module.startswith("callgate.cli")] == []
    assert homes["guard"] == homes["guarded"] == "callgate.integrations.sdk"
    assert "callgate.integrations.sdk.wrap" in graph()
