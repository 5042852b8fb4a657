"""``callgate serve`` scenarios: an ordered list of fixtures served one per request.

An agent loop asks again after each tool turn, so serving it one fixture for ever makes it call
tools until its own limit. A scenario answers the first request at ``/s/<name>/`` with its first
turn, the next with its second, and so on; after the last, the request gets an error saying the
scenario has ended. Two kinds, found under the served folders:

- a folder that holds fixtures (a tape's folder, for one): its fixtures in name order, named by
  its path under the served folder (the served folder itself by its own name);
- a ``<name>.scenario.json`` file: ``{"description": "...", "turns": ["openai/valid_fragmented",
  "openai/text_only"]}``, each turn a fixture's name as ``/f/<name>/`` takes it (its path under
  the served folder, ``.json`` optional); named by its path under the served folder, without
  ``.scenario.json``.

The position of each scenario is the server's, shared by every connection: one agent run plays
a scenario once. ``POST /s/<name>/reset`` (or restarting ``serve``) starts it over, and
``GET /s/<name>/status`` tells a test where it stands: its turns, how many were served, and how
many requests came (those after its end too).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from callgate.cli.files import SCENARIO_SUFFIX, load_json
from callgate.reassemble.envelope import check
from callgate.reassemble.errors import InputError

#: The URL prefix of a scenario.
PREFIX = "/s/"
#: What follows a scenario's prefix to start it over.
RESET = "reset"
#: What follows a scenario's prefix to ask where it stands.
STATUS = "status"


@dataclass(frozen=True)
class Turn:
    """A turn to serve: the fixture's name, and whether it holds a tool call (a text turn is
    never mutated)."""

    fixture: str
    has_call: bool


@dataclass(frozen=True)
class Answer:
    """A request a scenario answers itself: its status and JSON body."""

    status: int
    body: dict[str, Any]


def scenario_files(root: Path) -> list[Path]:
    """The ``*.scenario.json`` files under ``root`` (or ``root`` itself), hidden ones skipped."""
    if not root.is_dir():
        return [root] if root.name.endswith(SCENARIO_SUFFIX) else []
    return sorted(
        path
        for path in root.rglob(f"*{SCENARIO_SUFFIX}")
        if not any(part.startswith(".") for part in path.relative_to(root).parts)
    )


def collect_scenarios(
    paths: Sequence[Path], fixtures: Mapping[str, Mapping[str, Any]], files: Mapping[str, Path]
) -> dict[str, list[str]]:
    """The scenarios under ``paths``: their fixture names, by scenario name. ``files``: the
    file of each fixture name. Raises ``InputError`` for a scenario file that cannot be read or
    names a fixture that is not served, and for two scenarios of one name."""
    found: dict[str, tuple[Path, list[str]]] = {}
    for root in paths:
        folders = _folders(root, files).items()
        listed = [
            (_listed_name(root, file), (file, _read_turns(file, fixtures)))
            for file in scenario_files(root)
        ]
        for name, (source, turns) in [*folders, *listed]:
            if name in found:
                raise InputError(
                    f"a second scenario {name!r} (the first: {found[name][0]})", source
                )
            found[name] = (source, turns)
    return {name: turns for name, (_, turns) in found.items()}


def _listed_name(root: Path, file: Path) -> str:
    name = file.relative_to(root) if root.is_dir() else Path(file.name)
    return name.as_posix().removesuffix(SCENARIO_SUFFIX)


def _folders(root: Path, files: Mapping[str, Path]) -> dict[str, tuple[Path, list[str]]]:
    """Each folder under ``root`` that holds fixtures, by scenario name: the folder and its
    fixture names in name order."""
    folders: dict[str, tuple[Path, list[str]]] = {}
    if not root.is_dir():
        return folders
    for fixture, path in sorted(files.items(), key=lambda item: item[1].name):
        if not path.is_relative_to(root):
            continue
        below = path.parent.relative_to(root).as_posix()
        name = root.resolve().name if below == "." else below
        folders.setdefault(name, (path.parent, []))[1].append(fixture)
    return folders


def _read_turns(file: Path, fixtures: Mapping[str, Any]) -> list[str]:
    document = load_json(file)
    turns = document.get("turns") if isinstance(document, dict) else None
    if (
        not isinstance(document, dict)
        or set(document) - {"description", "turns"}
        or not isinstance(document.get("description", ""), str)
        or not isinstance(turns, list)
        or not turns
        or not all(isinstance(turn, str) for turn in turns)
    ):
        raise InputError(
            'not a scenario: {"description": "...", "turns": ["<fixture>", ...]}', file
        )
    names = [turn.removesuffix(".json") for turn in turns]
    for name in names:
        if name not in fixtures:
            raise InputError(f"turn {name!r} is no served fixture", file)
    return names


class Scenarios:
    """The scenarios of one server and the position of each, shared by every connection."""

    def __init__(
        self, scenarios: Mapping[str, Iterable[str]], fixtures: Mapping[str, Mapping[str, Any]]
    ) -> None:
        has_call: dict[str, bool] = {}
        for turns in scenarios.values():
            for fixture in turns:
                if fixture not in has_call:
                    has_call[fixture] = check(fixtures[fixture]).applicable
        self._turns = {
            name: [Turn(fixture, has_call[fixture]) for fixture in turns]
            for name, turns in scenarios.items()
        }
        self._served = dict.fromkeys(self._turns, 0)
        #: Requests each scenario was asked to play since its start (or reset).
        self._requests = dict.fromkeys(self._turns, 0)
        #: Longest name first, so that a name that begins another's path is tried after it.
        self._longest_first = sorted(self._turns, key=len, reverse=True)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._turns)

    def play(self, path: str) -> Turn | Answer:
        """The turn to serve for a request at ``path`` (``/s/<name>/...``), or what to answer
        instead: 404 for an unknown scenario, 400 once it has ended, 200 for a reset."""
        name = self._name(path)
        if name is None:
            return self._unknown(path)
        turns = self._turns[name]
        with self._lock:
            if path == f"{PREFIX}{name}/{RESET}":
                self._served[name] = self._requests[name] = 0
                return Answer(200, self._status(name))
            served = self._served[name]
            self._served[name] = min(served + 1, len(turns))
            self._requests[name] += 1
        if served == len(turns):
            return _error(
                400,
                f"scenario {name} has ended: its {len(turns)} turns were served; "
                f"POST {PREFIX}{name}/{RESET} starts it over",
            )
        return turns[served]

    def turns_of(self, path: str) -> list[Turn] | None:
        """The turns of the scenario at ``path`` from its first, or None for no scenario (a
        WebSocket plays its own, whatever position the server's HTTP requests are at)."""
        name = self._name(path)
        return None if name is None else list(self._turns[name])

    def status(self, path: str) -> Answer:
        """What ``GET /s/<name>/status`` answers: where the scenario stands (404 for another
        path)."""
        name = self._name(path)
        if name is None or path != f"{PREFIX}{name}/{STATUS}":
            return self._unknown(path)
        with self._lock:
            return Answer(200, self._status(name))

    def _status(self, name: str) -> dict[str, Any]:
        turns, served = len(self._turns[name]), self._served[name]
        return {
            "scenario": name,
            "turns": turns,
            "served": served,
            "requests": self._requests[name],
            "ended": served == turns,
        }

    def _name(self, path: str) -> str | None:
        return next((n for n in self._longest_first if path.startswith(f"{PREFIX}{n}/")), None)

    def _unknown(self, path: str) -> Answer:
        known = ", ".join(sorted(self._turns)) or "none"
        return _error(404, f"no scenario at {path} (scenarios: {known})")


def _error(status: int, message: str) -> Answer:
    return Answer(status, {"error": {"message": message, "type": "callgate_serve"}})
