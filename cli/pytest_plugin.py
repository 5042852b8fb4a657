"""The ``callgate`` pytest plugin: ``pytest --callgate fixtures/`` replays fixtures as tests.

How this works: each ``--callgate PATH`` (a fixture file or a folder of them; repeatable) is added
to the run's collection arguments, so pytest walks to it with its own directory collectors,
whether it lies inside the project's test folders or anywhere else, and honours the usual
``norecursedirs`` (hidden folders are skipped, as ``callgate replay`` skips them).
``pytest_collect_file`` then claims every ``*.json`` under a ``--callgate`` folder (and a
``--callgate`` file of any name) as a ``FixtureFile`` holding one ``FixtureItem``, named by its
path relative to that folder and marked ``callgate`` (``-m callgate`` runs only the fixtures).

The item loads the envelope with ``callgate.cli.files.load_envelope``, judges it with
``callgate.reassemble.check`` and fails with the lines of
``callgate.cli.replay.outcome.expectation_problems``; an
unreadable file fails with the ``InputError`` line. Both are a ``FixtureFailure``, which
``repr_failure`` prints as those lines alone: the traceback would only show this plugin.

Registered as the ``pytest11`` entry point ``callgate``, so pytest imports this module in every
run of every project that has callgate installed: it imports callgate's engine only when an item
runs, to cost nothing in runs without ``--callgate``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from callgate.cli.tape import EXCHANGE_SUFFIX, RecordMode, tape_options

if TYPE_CHECKING:  # pytest does not export these names; they only type repr_failure
    from _pytest._code.code import TerminalRepr, TracebackStyle

_ROOTS = pytest.StashKey[tuple[Path, ...]]()
_TAPE_OPTIONS = pytest.StashKey[tuple[RecordMode, dict[str, str]]]()


class FixtureFailure(Exception):
    """A fixture's expectation does not hold, or its file cannot be used: one line each."""

    def __init__(self, lines: Iterable[str]) -> None:
        self.lines = list(lines)
        super().__init__("\n".join(self.lines))


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("callgate", "callgate fixture replay and tapes")
    group.addoption(
        "--callgate",
        action="append",
        default=[],
        metavar="PATH",
        dest="callgate",
        help="Replay the callgate fixture envelopes (*.json) in PATH, a file or folder, as one "
        "test each, checked against their pinned expect block. Repeatable.",
    )
    group.addoption(
        "--callgate-record-mode",
        default=None,
        dest="callgate_record_mode",
        choices=[mode.value for mode in RecordMode],
        metavar="MODE",
        help="How callgate_tape treats a test's tape: none (replay only, the default), once, "
        "new_episodes or all. Wins over $CALLGATE_RECORD_MODE.",
    )
    group.addoption(
        "--callgate-upstream",
        action="append",
        default=[],
        metavar="NAME=URL",
        dest="callgate_upstream",
        help="Record route NAME (openai, anthropic, mistral, gemini) from URL instead of the "
        "provider's public host. Repeatable.",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Check the ``--callgate`` paths and add them to what pytest collects."""
    config.addinivalue_line("markers", "callgate: a callgate fixture replayed by --callgate")
    config.addinivalue_line(
        "markers",
        "callgate_tape(name=None, providers=None, redaction='replay', allow=(), "
        "allow_unused=False): how callgate_tape records and replays this test",
    )
    config.stash[_TAPE_OPTIONS] = _tape_options(config)
    roots = tuple(_absolute(config, raw) for raw in config.getoption("callgate"))
    if missing := [str(root) for root in roots if not root.exists()]:
        raise pytest.UsageError(f"--callgate: no such file or folder: {', '.join(missing)}")
    config.stash[_ROOTS] = roots
    # Collection arguments are how pytest reaches paths outside its test folders; pytest itself
    # collects a folder that is also under another argument only once.
    chosen = [_absolute(config, arg.split("::")[0]) for arg in config.args]
    config.args.extend(str(root) for root in roots if not _narrowed(root, chosen))


def _narrowed(root: Path, chosen: Iterable[Path]) -> bool:
    """Whether an argument already selects ``root`` or part of it: then the root is not added,
    so that ``pytest --callgate fixtures fixtures/a.json::a.json`` runs that one fixture."""
    return any(path == root or root in path.parents for path in chosen)


def _absolute(config: pytest.Config, raw: str) -> Path:
    # Normalised the way pytest makes collection arguments absolute (no symlinks resolved), so
    # the paths pytest hands to pytest_collect_file compare equal to these.
    return Path(os.path.abspath(config.invocation_params.dir / raw))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> FixtureFile | None:
    """A ``FixtureFile`` for a ``--callgate`` file or a ``*.json`` under a ``--callgate``
    folder; nothing for any other file."""
    roots = parent.config.stash[_ROOTS]
    root = _root_of(file_path, roots)
    if root is None:
        return None
    name = file_path.name if root == file_path else file_path.relative_to(root).as_posix()
    return FixtureFile.from_parent(parent, path=file_path, fixture_name=name)


def _root_of(path: Path, roots: Iterable[Path]) -> Path | None:
    """The innermost root that is ``path`` or, for a ``*.json`` file, a folder above it."""
    if path in roots:
        return path
    if path.suffix != ".json" or path.name.endswith(EXCHANGE_SUFFIX):
        return None
    holding = [root for root in roots if root in path.parents]
    return max(holding, key=lambda root: len(root.parts), default=None)


class FixtureFile(pytest.File):
    """One fixture file; its single item carries the name relative to its ``--callgate`` root."""

    def __init__(self, *, fixture_name: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fixture_name = fixture_name

    def collect(self) -> Iterable[FixtureItem]:
        item = FixtureItem.from_parent(self, name=self.fixture_name)
        item.add_marker("callgate")
        return [item]


class FixtureItem(pytest.Item):
    """Judges one fixture against its ``expect`` block."""

    def runtest(self) -> None:
        # Imported here: see the module comment (the plugin loads in every pytest run).
        from callgate.cli.output import safe
        from callgate.cli.replay.outcome import judge

        outcome = judge(self.path)
        if outcome.error is not None:
            raise FixtureFailure([safe(f"{self.path}: {outcome.error}", one_line=True)])
        if outcome.problems:
            raise FixtureFailure([safe(problem, one_line=True) for problem in outcome.problems])

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: TracebackStyle | None = None
    ) -> str | TerminalRepr:
        if isinstance(excinfo.value, FixtureFailure):
            return "\n".join(excinfo.value.lines)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"callgate fixture {self.name}"


# -- tapes -------------------------------------------------------------------------------------


def _tape_options(config: pytest.Config) -> tuple[RecordMode, dict[str, str]]:
    try:
        return tape_options(
            config.getoption("callgate_record_mode"),
            config.getoption("callgate_upstream"),
            os.environ,
            mode_option="--callgate-record-mode",
            upstream_option="--callgate-upstream",
        )
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None


@pytest.fixture
def callgate_tape(request: pytest.FixtureRequest) -> Iterator[Any]:
    """This test's tape, served on loopback, with each provider SDK's base URL variable pointing
    at it (and a dummy API key where none is set) until the test ends. Records or replays per
    ``--callgate-record-mode``; the test fails at the end when a request was not on the tape,
    recorded exchanges went unused, or a turn's verdict blocks. See ``callgate.cli.tape``."""
    # Imported here: see the module comment (the plugin loads in every pytest run).
    from callgate.cli.tape.fixture import open_tape

    mode, upstreams = request.config.stash[_TAPE_OPTIONS]
    marker = request.node.get_closest_marker("callgate_tape")
    with open_tape(request.node, mode, upstreams, dict(marker.kwargs) if marker else {}) as tape:
        yield tape
    if problems := tape.problems():
        pytest.fail("\n".join(problems), pytrace=False)
