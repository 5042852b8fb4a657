"""Vertex's streamed function-call arguments: an object rebuilt strictly from ``partialArgs``.

Each item is ``{jsonPath, stringValue|numberValue|boolValue|nullValue, willContinue}``: a value
for one path (``$.a.b[0]``), where a string may continue over later items of the same path.
``Rebuild`` places them (see there); a piece it cannot place is a ``Conflict`` carrying the
finding code the Gemini profile reports.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from callgate.reassemble.codes import Code

_VALUE_FIELDS = ("stringValue", "numberValue", "boolValue", "nullValue")
_PARTIAL_FIELDS = frozenset({"jsonPath", "willContinue", *_VALUE_FIELDS})
#: ``$`` then ``.name`` or ``[n]`` segments; names stop at ``.`` and ``[`` (no quoting seen).
_SEGMENT = re.compile(r"\.([^.\[\]]+)|\[(0|[1-9][0-9]*)\]")


def parse_json_path(path: str) -> list[str | int] | None:
    """``$.a.b[0]`` as ``["a", "b", 0]``; None when it is not in that form."""
    if not path.startswith("$"):
        return None
    segments: list[str | int] = []
    position = 1
    while position < len(path):
        match = _SEGMENT.match(path, position)
        if match is None:
            return None
        name, index = match.groups()
        segments.append(name if name is not None else int(index))
        position = match.end()
    return segments


class Conflict(Exception):
    """A partialArgs item that cannot be placed: ``code`` is the finding code to report."""

    def __init__(self, code: Code, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class Rebuild:
    """The object a streamed call's ``partialArgs`` describe, built strictly.

    Containers are created as paths need them, object members in order of arrival; an array
    element may only be appended (index = current length) or entered again. A path may be set
    once, except that a string sent with ``willContinue: true`` stays open and the following items
    for the same path add to it until one comes without ``willContinue``. A path whose place is
    taken (by a value, or by a container of the other kind), a gap in an array, an item for another
    path while a string is open, or ``willContinue`` on a non-string raises ``Conflict``.
    """

    root: dict[str, object] = field(default_factory=dict)
    open_path: tuple[str | int, ...] | None = None
    broken: bool = False

    def apply(self, item: object) -> None:
        path, value, more = self._read(item)
        if self.open_path is not None:
            self._continue(path, value, more)
            return
        if more and not isinstance(value, str):
            raise Conflict(
                Code.INVALID_ARGUMENTS_JSON, f"{show_path(path)}: only a string value can continue"
            )
        if not path:
            raise Conflict(
                Code.INVALID_ARGUMENTS_JSON,
                "a value for the root '$' would replace the arguments object",
            )
        parent = self._container(path)
        _place(parent, path, value)
        if more:
            self.open_path = path

    def _continue(self, path: tuple[str | int, ...], value: object, more: bool) -> None:
        if path != self.open_path:
            raise Conflict(
                Code.INVALID_ARGUMENTS_JSON,
                f"{show_path(path)} arrived while the string at "
                f"{show_path(self.open_path)} was still continuing",
            )
        if not isinstance(value, str):
            raise Conflict(
                Code.INVALID_ARGUMENTS_JSON,
                f"{show_path(path)}: a continuing string received a non-string piece",
            )
        parent = self._container(path)
        _put(parent, path[-1], f"{_get(parent, path, len(path) - 1)}{value}")
        if not more:
            self.open_path = None

    @staticmethod
    def _read(item: object) -> tuple[tuple[str | int, ...], object, bool]:
        if not isinstance(item, dict):
            raise Conflict(Code.UNSUPPORTED_EVENT, "a partialArgs item is not an object")
        unknown = sorted(set(item) - _PARTIAL_FIELDS)
        if unknown:
            raise Conflict(
                Code.UNSUPPORTED_EVENT, f"partialArgs field {unknown[0][:40]!r} is not known"
            )
        raw_path = item.get("jsonPath")
        path = parse_json_path(raw_path) if isinstance(raw_path, str) else None
        if path is None:
            raise Conflict(
                Code.UNSUPPORTED_EVENT, f"jsonPath {str(raw_path)[:60]!r} is not a '$.name[0]' path"
            )
        present = [key for key in _VALUE_FIELDS if key in item]
        if len(present) != 1:
            raise Conflict(
                Code.UNSUPPORTED_EVENT,
                f"{show_path(path)}: a partialArgs item needs "
                f"exactly one value field, not {len(present)}",
            )
        value = _value(present[0], item[present[0]], path)
        more = item.get("willContinue", False)
        if not isinstance(more, bool):
            raise Conflict(
                Code.UNSUPPORTED_EVENT, f"{show_path(path)}: willContinue is not a boolean"
            )
        return tuple(path), value, more

    def _container(self, path: tuple[str | int, ...]) -> dict[str, object] | list[object]:
        """The container the last segment of ``path`` lives in, creating what is missing."""
        node: dict[str, object] | list[object] = self.root
        for depth in range(len(path) - 1):
            child = _get(node, path, depth)
            wanted: type = list if isinstance(path[depth + 1], int) else dict
            if child is _ABSENT:
                child = wanted()
                _place(node, path[: depth + 1], child)
            elif not isinstance(child, wanted):
                raise Conflict(
                    Code.INVALID_ARGUMENTS_JSON,
                    f"{show_path(path)}: "
                    f"{show_path(path[: depth + 1])} already holds a "
                    f"{type(child).__name__}, not a {wanted.__name__}",
                )
            assert isinstance(child, dict | list)
            node = child
        return node


_ABSENT = object()


def show_path(path: Sequence[str | int] | None) -> str:
    text = "$" + "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in path or ())
    return text[:80]


def _value(kind: str, raw: object, path: list[str | int]) -> object:
    if kind == "nullValue":
        return None  # proto NullValue: "NULL_VALUE" or null, either way JSON null
    wanted = {"stringValue": str, "numberValue": int | float, "boolValue": bool}[kind]
    if not isinstance(raw, wanted) or (kind == "numberValue" and isinstance(raw, bool)):
        raise Conflict(
            Code.UNSUPPORTED_EVENT, f"{show_path(tuple(path))}: {kind} holds a {type(raw).__name__}"
        )
    return raw


def _get(node: dict[str, object] | list[object], path: tuple[str | int, ...], depth: int) -> object:
    segment = path[depth]
    if isinstance(node, dict):
        assert isinstance(segment, str)
        return node.get(segment, _ABSENT)
    assert isinstance(segment, int)
    if segment < len(node):
        return node[segment]
    if segment == len(node):
        return _ABSENT
    raise Conflict(
        Code.INVALID_ARGUMENTS_JSON,
        f"{show_path(path)}: {show_path(path[: depth + 1])} skips array positions "
        f"(the array has {len(node)})",
    )


def _place(
    node: dict[str, object] | list[object], path: tuple[str | int, ...], value: object
) -> None:
    """Set the last segment of ``path`` in ``node``; it must be free."""
    if _get(node, path, len(path) - 1) is not _ABSENT:
        raise Conflict(Code.INVALID_ARGUMENTS_JSON, f"{show_path(path)} is already set")
    _put(node, path[-1], value)


def _put(node: dict[str, object] | list[object], segment: str | int, value: object) -> None:
    if isinstance(node, dict):
        assert isinstance(segment, str)
        node[segment] = value
    elif isinstance(segment, int) and segment < len(node):
        node[segment] = value
    else:
        node.append(value)
