"""A quick yes for arguments that plainly fit a plain schema; jsonschema for everything else.

jsonschema builds a validator object and a generator for every value it checks, even for
``{"type": "integer"}``, so each array item of a tool call's arguments costs it several Python
calls. Most tool schemas use a handful of keywords (types, properties, required, items, enum,
bounds); for those, ``accepting`` builds one predicate per subschema, once, that answers True only
when jsonschema would find no error (a property test holds the two together on generated schemas
and values, in both dialects). False means "ask jsonschema", which then names what is wrong: the
predicate never names a violation, so reports read the same either way.

``plainly_valid`` does the same for the schema itself: True only for a schema made of the
subset's keywords in the shapes both metaschemas (draft-07 and 2020-12) ask for, so that most tool
schemas are compiled without importing jsonschema at all.

Anything outside the subset (``$ref``, combinators, ``pattern``, ``format``, ``uniqueItems``,
``multipleOf``, tuple ``items``, ...) makes ``accepting`` return None: that schema always goes to
jsonschema. Values of a type JSON does not produce (a ``dict`` subclass, a ``Decimal``) make the
predicate say False, so they go to jsonschema too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Accepts = Callable[[Any], bool]

#: Keywords that assert nothing (draft-07 and 2020-12 alike).
_ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$comment",
    }
)
#: The types JSON parsing produces. Every test here is by exact type, so ``bool`` is no ``int``.
_JSON_TYPES = frozenset({dict, list, str, int, float, bool, type(None)})


def _is_integer(value: Any) -> bool:
    return type(value) is int or (type(value) is float and value.is_integer())


_TYPE_TESTS: dict[str, Accepts] = {
    "object": lambda value: type(value) is dict,
    "array": lambda value: type(value) is list,
    "string": lambda value: type(value) is str,
    "integer": _is_integer,
    "number": lambda value: type(value) is int or type(value) is float,
    "boolean": lambda value: type(value) is bool,
    "null": lambda value: value is None,
}


def accepting(schema: object) -> Accepts | None:
    """A predicate for ``schema`` (a compiled tool schema's document), or None when the schema
    uses anything outside the subset."""
    return _subschema(schema, root=True)


def _subschema(schema: object, *, root: bool = False) -> Accepts | None:
    if schema is True:
        return _anything
    if type(schema) is not dict:
        return None
    checks: list[Accepts] = []
    for key, value in schema.items():
        if key in _ANNOTATIONS or (root and key == "$schema"):
            continue
        build = _KEYWORDS.get(key)
        check = None if build is None else build(value, schema)
        if check is None:
            return None
        if check is not _anything:
            checks.append(check)
    if not checks:
        return _anything
    if len(checks) == 1:
        return checks[0]
    return lambda value: all(check(value) for check in checks)


def _anything(value: Any) -> bool:
    return True


def _type(names: object, schema: dict[str, Any]) -> Accepts | None:
    names = [names] if type(names) is str else names
    if type(names) is not list or not names or not all(name in _TYPE_TESTS for name in names):
        return None
    tests = [_TYPE_TESTS[name] for name in names]
    if len(tests) == 1:
        return tests[0]
    return lambda value: any(test(value) for test in tests)


def _same(member: Any, value: Any) -> bool:
    """``member == value`` as JSON Schema means it, for a scalar ``value``: numbers compare
    across int and float, booleans only with booleans. Containers are left to jsonschema."""
    kind = type(value)
    if kind is str or kind is bool:
        return type(member) is kind and member == value
    if value is None:
        return member is None
    if kind is int or kind is float:
        return (type(member) is int or type(member) is float) and member == value
    return False


def _enum(members: object, schema: dict[str, Any]) -> Accepts | None:
    if type(members) is not list:
        return None
    return lambda value: any(_same(member, value) for member in members)


def _const(member: object, schema: dict[str, Any]) -> Accepts | None:
    return lambda value: _same(member, value)


def _of_kind(kinds: tuple[type, ...], test: Accepts) -> Accepts:
    """``test`` for values of ``kinds``; other JSON values pass (the keyword does not apply to
    them), anything else is left to jsonschema."""

    def check(value: Any) -> bool:
        kind = type(value)
        return test(value) if kind in kinds else kind in _JSON_TYPES

    return check


_NUMBERS = (int, float)


def _bound(
    compare: Callable[[Any, Any], bool],
) -> Callable[[object, dict[str, Any]], Accepts | None]:
    def build(limit: object, schema: dict[str, Any]) -> Accepts | None:
        if type(limit) not in _NUMBERS:
            return None
        return _of_kind(_NUMBERS, lambda value: compare(value, limit))

    return build


def _size(
    kinds: tuple[type, ...], compare: Callable[[int, int], bool]
) -> Callable[[object, dict[str, Any]], Accepts | None]:
    def build(limit: object, schema: dict[str, Any]) -> Accepts | None:
        if type(limit) is not int:  # 1.0 is allowed there, and rare: jsonschema decides
            return None
        return _of_kind(kinds, lambda value: compare(len(value), limit))

    return build


def _properties(properties: object, schema: dict[str, Any]) -> Accepts | None:
    if type(properties) is not dict:
        return None
    checks = {}
    for name, subschema in properties.items():
        check = _subschema(subschema)
        if check is None:
            return None
        if check is not _anything:
            checks[name] = check
    if not checks:
        return _anything
    pairs = list(checks.items())
    return _of_kind(
        (dict,), lambda value: all(check(value[name]) for name, check in pairs if name in value)
    )


def _required(names: object, schema: dict[str, Any]) -> Accepts | None:
    if type(names) is not list:
        return None
    return _of_kind((dict,), lambda value: all(name in value for name in names))


def _additional_properties(subschema: object, schema: dict[str, Any]) -> Accepts | None:
    known = schema.get("properties", {})
    if type(known) is not dict:
        return None
    if subschema is False:
        return _of_kind((dict,), lambda value: all(name in known for name in value))
    check = _subschema(subschema)
    if check is None or check is _anything:
        return check
    return _of_kind(
        (dict,), lambda value: all(check(item) for name, item in value.items() if name not in known)
    )


def _items(subschema: object, schema: dict[str, Any]) -> Accepts | None:
    if subschema is False:  # 2020-12 keeps `items: false` (no prefixItems in the subset)
        return _of_kind((list,), lambda value: not value)
    check = _subschema(subschema)
    if check is None or check is _anything:
        return check
    return _of_kind((list,), lambda value: all(map(check, value)))


_KEYWORDS: dict[str, Callable[[Any, dict[str, Any]], Accepts | None]] = {
    "type": _type,
    "enum": _enum,
    "const": _const,
    "minimum": _bound(lambda value, limit: value >= limit),
    "maximum": _bound(lambda value, limit: value <= limit),
    "exclusiveMinimum": _bound(lambda value, limit: value > limit),
    "exclusiveMaximum": _bound(lambda value, limit: value < limit),
    "minLength": _size((str,), lambda length, limit: length >= limit),
    "maxLength": _size((str,), lambda length, limit: length <= limit),
    "minItems": _size((list,), lambda length, limit: length >= limit),
    "maxItems": _size((list,), lambda length, limit: length <= limit),
    "minProperties": _size((dict,), lambda length, limit: length >= limit),
    "maxProperties": _size((dict,), lambda length, limit: length <= limit),
    "properties": _properties,
    "required": _required,
    "additionalProperties": _additional_properties,
    "items": _items,
}


#: Annotations and the shape both metaschemas give their values (``default`` takes any value).
_ANNOTATION_SHAPES: dict[str, type] = {
    "title": str,
    "description": str,
    "$comment": str,
    "examples": list,
    "deprecated": bool,
    "readOnly": bool,
    "writeOnly": bool,
}
_BOUNDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
_SIZES = frozenset(
    {"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"}
)


def plainly_valid(schema: object, *, root: bool = True) -> bool:
    """True only for a schema the draft-07 and 2020-12 metaschemas both accept, told from the
    subset's keywords in their plain shapes (a test holds this to jsonschema on generated
    schemas); False means "ask the metaschema", which names what is wrong."""
    if type(schema) is bool:
        return True
    if type(schema) is not dict:
        return False
    for key, value in schema.items():
        if key in _ANNOTATION_SHAPES:
            if type(value) is not _ANNOTATION_SHAPES[key]:
                return False
        elif key in _BOUNDS:
            if type(value) is not int and type(value) is not float:
                return False
        elif key in _SIZES:
            if type(value) is not int or value < 0:
                return False
        elif key == "properties":
            if type(value) is not dict:
                return False
            for subschema in value.values():
                if not plainly_valid(subschema, root=False):
                    return False
        elif key in ("additionalProperties", "items"):
            if not plainly_valid(value, root=False):
                return False
        elif key == "type":
            names = [value] if type(value) is str else value
            if type(names) is not list or not names or len(set(map(str, names))) != len(names):
                return False
            for name in names:
                if type(name) is not str or name not in _TYPE_TESTS:
                    return False
        elif key == "required":
            if type(value) is not list or len(set(map(str, value))) != len(value):
                return False
            for name in value:
                if type(name) is not str:
                    return False
        elif key == "enum":
            if type(value) is not list:
                return False
        elif key == "$schema":  # its URI is the dialect's, read before this
            if not root or type(value) is not str:
                return False
        elif key != "const" and key != "default":
            return False
    return True
