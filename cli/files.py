"""Reading fixture files: strict, and failing with one line that names the file and the problem."""

from __future__ import annotations

import operator
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from callgate.cli.tape import EXCHANGE_SUFFIX
from callgate.reassemble import EnvelopeError, strict_json, validate_envelope
from callgate.reassemble.errors import InputError
from callgate.reassemble.limits import DOCUMENT_LIMITS

#: The ending of a ``callgate serve`` scenario file: a list of fixtures, not a fixture.
SCENARIO_SUFFIX = ".scenario.json"


def load_json(path: Path) -> Any:
    """The strictly parsed JSON document in ``path`` (UTF-8, RFC 8259, no duplicate keys)."""
    try:
        with open(path, "rb") as file:  # not Path.read_bytes: two Python calls fewer a fixture
            data = file.read()
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror or error}", path) from None
    try:
        return strict_json.loads_bytes(data, DOCUMENT_LIMITS)
    except strict_json.StrictJSONError as error:
        raise InputError(f"not strict JSON ({error.code.value}): {error.message}", path) from None


def load_envelope(path: Path) -> dict[str, Any]:
    """The envelope in ``path``; ``InputError`` if it is unreadable, not JSON or not an envelope."""
    document = load_json(path)
    try:
        validate_envelope(document)
    except EnvelopeError as error:
        raise InputError(str(error), path) from None
    assert isinstance(document, dict)
    return document


def find_fixtures(paths: Sequence[Path]) -> list[Path]:
    """Every ``*.json`` file under ``paths`` (folders recursively, hidden entries, a tape's
    ``*.exchange.json`` records and ``serve``'s ``*.scenario.json`` lists skipped, links to
    folders not followed; a path may also be a file), sorted as paths sort and without repeats.
    A folder holding none stays in the list, so that replaying it reports the folder instead of
    silently judging nothing."""
    if len(paths) == 1 and paths[0].is_dir():  # the usual call: listed in order already
        return [path for _, path in _json_files(paths[0])] or [paths[0]]
    # By the path's text (hashing a Path costs more than the listing).
    found: dict[str, Path] = {}
    for path in paths:
        if not path.is_dir():
            found[str(path)] = path
            continue
        found.update(_json_files(path) or [(str(path), path)])
    return sorted(found.values(), key=_parts)


_parts = operator.attrgetter("parts")


def _json_files(top: Path) -> list[tuple[str, Path]]:
    """The fixture files under ``top``, sorted as paths sort: each file's ``Path`` beside the
    text it has."""
    # os.scandir, not Path.rglob: the directory entries already say what is a file or a folder,
    # so listing a tree needs no stat per file, no pattern matching and no Path per hidden
    # entry. Each Path is its folder's joined with the name, which costs less than parsing the
    # whole text again. Each folder's entries are taken in name order, and a folder's files as
    # its name comes: that is the order of the paths' parts, with nothing to sort after.
    found = []
    text = str(top)
    # Listing "." gives "./a.json", which a Path spells "a.json": keyed as the Path spells it,
    # a file named beside its folder is found once.
    cut = 2 if text == "." else 0
    folders, entries = [top], [_by_name(text)]
    while entries:
        for entry in entries[-1]:
            name = entry.name
            if name.startswith("."):
                continue
            if entry.is_dir(follow_symlinks=False):
                folders.append(folders[-1] / name)
                entries.append(_by_name(entry.path))
                break
            if (
                name.endswith(".json")
                and not name.endswith((EXCHANGE_SUFFIX, SCENARIO_SUFFIX))
                and entry.is_file()
            ):
                found.append((entry.path[cut:], folders[-1] / name))
        else:  # every entry of the folder taken
            folders.pop()
            entries.pop()
    return found


def _by_name(folder: str) -> Iterator[os.DirEntry[str]]:
    with os.scandir(folder) as entries:
        return iter(sorted(entries, key=_name))


_name = operator.attrgetter("name")
