"""Check a tool call's reassembled arguments against the tool's JSON Schema, failing closed.

How this works: ``compile_schema`` copies the schema as plain JSON, picks the dialect from
``$schema`` (none means 2020-12), runs the dialect's metaschema, then walks every subschema
position and rejects any keyword outside an explicit allow-list. jsonschema silently ignores
keywords it does not know, so an unknown keyword (``requird``) would otherwise turn a
constraint into a no-op. ``$ref`` must be a local JSON pointer that lands on a subschema the
walk visited, and may not loop back to the same instance without descending. Only then is a
jsonschema validator built, once: formats asserted, nothing retrievable, and ``multipleOf``,
``uniqueItems`` and the ``regex`` format replaced where model-written arguments could crash or
stall jsonschema's own. ``ToolSchema.violations`` maps its errors to sorted ``Violation``s; for
arguments that plainly fit a schema of the common keywords it answers without jsonschema
(``callgate.reassemble.schema_subset``).

jsonschema is imported only when it is asked something: a schema outside the common keywords'
plain shapes is checked against its metaschema, or arguments do not plainly fit. Importing it
costs a command line start about 0.09 s, more than the rest of ``callgate check`` together.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from functools import cache, cached_property
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from callgate.reassemble.codes import Code
from callgate.reassemble.encoder_pieces import encoder_pieces
from callgate.reassemble.schema_subset import accepting, plainly_valid

if TYPE_CHECKING:
    from jsonschema import FormatChecker

MAX_MESSAGE_CHARS = 200

# `discriminator` is the OpenAPI annotation Pydantic puts next to `oneOf`. It asserts nothing
# here: the `oneOf` beside it does all the validating.
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
        "contentMediaType",
        "contentEncoding",
        "contentSchema",
        "discriminator",
    }
)
_SHARED = frozenset(
    {
        "$ref",
        "type",
        "enum",
        "const",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "maxItems",
        "minItems",
        "uniqueItems",
        "maxProperties",
        "minProperties",
        "required",
        "format",
        "properties",
        "patternProperties",
        "additionalProperties",
        "propertyNames",
        "items",
        "contains",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
    }
)
DRAFT7_KEYWORDS = _SHARED | _ANNOTATIONS | {"definitions", "additionalItems", "dependencies"}
DRAFT202012_KEYWORDS = (
    _SHARED
    | _ANNOTATIONS
    | {
        "$defs",
        "prefixItems",
        "dependentSchemas",
        "dependentRequired",
        "unevaluatedProperties",
        "unevaluatedItems",
        "minContains",
        "maxContains",
    }
)
# Draft 7 ignores every sibling of `$ref`; only these may stand there without being lost.
_DRAFT7_REF_SIBLINGS = _ANNOTATIONS | {"$ref", "definitions", "$schema"}

# Where subschemas sit. Everything else (enum, const, default, examples, required...) is data.
_MAP_POSITIONS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)
_LIST_POSITIONS = frozenset({"items", "prefixItems", "allOf", "anyOf", "oneOf"})
_SINGLE_POSITIONS = frozenset(
    {
        "items",
        "additionalItems",
        "not",
        "if",
        "then",
        "else",
        "contains",
        "propertyNames",
        "additionalProperties",
        "unevaluatedProperties",
        "unevaluatedItems",
        "contentSchema",
    }
)
# Applicators that evaluate the same instance: a $ref loop through only these never ends.
_SAME_INSTANCE = frozenset(
    {"allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "dependencies"}
)


@dataclass(frozen=True)
class SchemaProblem:  # the schema itself cannot be used
    code: Code  # UNSUPPORTED_SCHEMA_KEYWORD or INVALID_SCHEMA
    schema_path: str  # JSON pointer into the tool schema
    message: str


@dataclass(frozen=True)
class Violation:  # the arguments do not fit the schema
    keyword: str  # the failing keyword; "false" for a `false` subschema
    instance_path: str  # JSON pointer into the arguments, "" for the root
    schema_path: str  # JSON pointer to the failing keyword in the tool schema
    message: str


class _Reject(Exception):
    def __init__(self, code: Code, schema_path: str, message: str) -> None:
        super().__init__(message)
        self.problem = SchemaProblem(code, schema_path, message[:MAX_MESSAGE_CHARS])


def _escape(token: object) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def _pointer(path: Iterable[object]) -> str:
    return "".join("/" + _escape(token) for token in path)


def _compiles(text: object) -> bool:
    if isinstance(text, str):
        re.compile(text)
    return True


# jsonschema checks these with an Earley parser, slow enough per character that a model could
# stall validation with one long string. Refusing them is cheaper.
_SLOW_FORMATS = frozenset({"iri", "iri-reference"})


def _format_checker(base: Any) -> FormatChecker:
    from jsonschema import FormatChecker

    checker = FormatChecker(formats=())
    checker.checkers = {
        name: check
        for name, check in base.FORMAT_CHECKER.checkers.items()
        if name not in _SLOW_FORMATS
    }
    # jsonschema expects only re.error, but re.compile on model-written text can also overflow
    # ("a{4294967296}") or recurse ("((((..."): either would crash instead of failing.
    checker.checks("regex", raises=(re.error, OverflowError, RecursionError))(_compiles)
    return checker


def _multiple_of(validator: Any, divisor: Any, instance: Any, schema: Any) -> Iterator[Any]:
    # jsonschema divides before its own overflow guard, so a 400-digit integer against a float
    # divisor raises OverflowError instead of answering. Fractions are exact and cannot overflow.
    from jsonschema import Draft202012Validator, ValidationError

    try:
        yield from Draft202012Validator.VALIDATORS["multipleOf"](
            validator, divisor, instance, schema
        )
    except OverflowError:
        if (Fraction(instance) / Fraction(divisor)).denominator != 1:
            yield ValidationError(f"{instance!r} is not a multiple of {divisor}")


def _canonical(value: object) -> object:
    """A hashable stand-in, equal exactly when JSON Schema calls two values equal."""
    if isinstance(value, list):
        return ("array", tuple(_canonical(item) for item in value))
    if isinstance(value, dict):
        return ("object", frozenset((key, _canonical(item)) for key, item in value.items()))
    if isinstance(value, int | float) and not isinstance(value, bool):
        return ("number", value)  # 1 == 1.0 and hash(1) == hash(1.0), as JSON Schema wants
    return (type(value).__name__, value)


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[Any]:
    # jsonschema compares unsortable items (objects) pairwise: 16,000 small objects take minutes.
    if not unique or not validator.is_type(instance, "array"):
        return
    # Arguments are parsed JSON, so every item has a hashable stand-in.
    if len(set(map(_canonical, instance))) != len(instance):
        from jsonschema import ValidationError

        yield ValidationError(f"{instance!r} has non-unique elements")


class _Dialect:
    """A dialect's keywords, and jsonschema's classes for it, made when first asked for."""

    def __init__(
        self, name: str, base_name: str, keywords: frozenset[str], *keeps_false: str
    ) -> None:
        self.name, self._base_name, self.keywords = name, base_name, keywords
        #: Keywords that report their own `false` value with a path.
        self.keeps_false = frozenset(keeps_false)

    @cached_property
    def base(self) -> Any:
        """jsonschema's own class, whose metaschema checks the schema."""
        import jsonschema

        return getattr(jsonschema, self._base_name)

    @cached_property
    def validator_class(self) -> Any:
        from jsonschema import validators

        return validators.extend(
            self.base, {"multipleOf": _multiple_of, "uniqueItems": _unique_items}
        )

    @cached_property
    def formats(self) -> FormatChecker:
        return _format_checker(self.base)


_DRAFT7 = _Dialect(
    "draft-07", "Draft7Validator", DRAFT7_KEYWORDS, "additionalProperties", "additionalItems"
)
_DRAFT202012 = _Dialect(
    "2020-12",
    "Draft202012Validator",
    DRAFT202012_KEYWORDS,
    "additionalProperties",
    "items",
    "unevaluatedProperties",
    "unevaluatedItems",
)
_DIALECTS = {
    "https://json-schema.org/draft-07/schema": _DRAFT7,
    "https://json-schema.org/draft/2020-12/schema": _DRAFT202012,
}


@cache
def _offline() -> Any:
    """Only local refs survive the policy, and this makes sure nothing can be fetched anyway: a
    bare Registry refuses to retrieve, whereas jsonschema's default one would open remote URLs."""
    from referencing import Registry

    return Registry()


def _plain(value: object, pointer: str) -> object:
    """Copy as fresh JSON: no containers shared with the caller, nothing JSON cannot say."""
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise _Reject(Code.INVALID_SCHEMA, pointer, "object keys must be strings")
        return {key: _plain(item, f"{pointer}/{_escape(key)}") for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item, f"{pointer}/{index}") for index, item in enumerate(value)]
    if isinstance(value, float) and not math.isfinite(value):
        # NaN compares false with everything, so `maximum: NaN` would accept any number.
        raise _Reject(Code.INVALID_SCHEMA, pointer, "numbers must be finite")
    if value is None or isinstance(value, str | int | float):
        return value
    raise _Reject(Code.INVALID_SCHEMA, pointer, f"{type(value).__name__} is not a JSON value")


def _dialect_of(schema: object) -> _Dialect:
    if not isinstance(schema, dict) or "$schema" not in schema:
        return _DRAFT202012
    uri = schema["$schema"]
    if isinstance(uri, str):
        normal = re.sub(r"^http://", "https://", uri.removesuffix("#"))
        if normal in _DIALECTS:
            return _DIALECTS[normal]
    raise _Reject(
        Code.UNSUPPORTED_SCHEMA_KEYWORD,
        "/$schema",
        f"$schema {uri!r}: only draft-07 and 2020-12 are supported",
    )


class _Walk:
    """One pass over the schema positions: policy checks, and the facts refs and errors need."""

    def __init__(self, dialect: _Dialect) -> None:
        self.dialect = dialect
        self.locations: dict[int, str] = {}  # id(subschema object) -> JSON pointer
        self.false_nodes: set[int] = set()
        self.edges: dict[str, list[str]] = {}  # same-instance evaluation, by pointer
        self.refs: list[tuple[str, str, str]] = []  # ($ref pointer, owner pointer, value)

    def visit(self, node: object, pointer: str, keep_false: bool = False) -> object:
        self.edges.setdefault(pointer, [])
        if node is False and not keep_false:
            # jsonschema drops the instance path of errors from a `false` subschema; an
            # equivalent object keeps it, and violations() reports it as `false` again.
            node = {"not": {}}
            self.false_nodes.add(id(node))
            self.locations[id(node)] = pointer
            return node
        if isinstance(node, dict):
            self.locations[id(node)] = pointer
            for key in list(node):
                self._keyword(node, key, pointer)
        return node

    def _keyword(self, node: dict[str, Any], key: str, owner: str) -> None:
        here = f"{owner}/{_escape(key)}"
        self._allow(node, key, owner, here)
        value = node[key]
        same = key in _SAME_INSTANCE
        if key == "$ref":
            self.refs.append((here, owner, value))
        elif key in _MAP_POSITIONS:
            for name, child in value.items():
                if isinstance(child, dict | bool):  # draft-07 `dependencies` may hold arrays
                    value[name] = self._child(child, f"{here}/{_escape(name)}", owner, same)
        elif key in _LIST_POSITIONS and isinstance(value, list):
            for index, child in enumerate(value):
                value[index] = self._child(child, f"{here}/{index}", owner, same)
        elif key in _SINGLE_POSITIONS:
            keep = key in self.dialect.keeps_false
            node[key] = self._child(value, here, owner, same, keep)

    def _child(
        self, node: object, pointer: str, owner: str, same: bool, keep_false: bool = False
    ) -> object:
        if same:
            self.edges[owner].append(pointer)
        return self.visit(node, pointer, keep_false)

    def _allow(self, node: dict[str, Any], key: str, owner: str, here: str) -> None:
        unsupported = Code.UNSUPPORTED_SCHEMA_KEYWORD
        if key not in self.dialect.keywords and not (key == "$schema" and owner == ""):
            raise _Reject(
                unsupported,
                here,
                f"keyword {key!r} is not supported in {self.dialect.name} schemas",
            )
        if self.dialect is _DRAFT7 and "$ref" in node and key not in _DRAFT7_REF_SIBLINGS:
            raise _Reject(
                unsupported, here, f"draft-07 ignores {key!r} next to $ref; wrap the $ref in allOf"
            )
        if key == "format" and node[key] not in self.dialect.formats.checkers:
            raise _Reject(unsupported, here, f"format {node[key]!r} cannot be checked")

    def link_refs(self) -> None:
        targets = [self._target(here, ref) for here, _, ref in self.refs]
        for (_, owner, _), target in zip(self.refs, targets, strict=True):
            self.edges[owner].append(target)
        for (here, owner, ref), target in zip(self.refs, targets, strict=True):
            if self._reaches(target, owner):
                raise _Reject(
                    Code.INVALID_SCHEMA,
                    here,
                    f"$ref {ref!r} loops back to the same "
                    "instance without descending, so validation would never end",
                )

    def _target(self, here: str, ref: str) -> str:
        if ref != "#" and not ref.startswith("#/"):
            raise _Reject(
                Code.UNSUPPORTED_SCHEMA_KEYWORD,
                here,
                f"$ref {ref!r}: only '#' and '#/...' pointers into this schema are supported",
            )
        # RFC 6901 in a URI fragment: percent-decode, split, then ~1 -> / before ~0 -> ~. The
        # walk indexed every subschema by its canonical pointer, so resolving is a lookup, and a
        # pointer into data (enum, default, the `properties` map itself) resolves to nothing.
        tokens = [t.replace("~1", "/").replace("~0", "~") for t in unquote(ref[1:]).split("/")]
        target = _pointer(tokens[1:])
        if target not in self.edges:
            raise _Reject(
                Code.INVALID_SCHEMA, here, f"$ref {ref!r} does not resolve to a subschema"
            )
        return target

    def _reaches(self, start: str, goal: str) -> bool:
        seen: set[str] = set()
        todo = [start]
        while todo:
            pointer = todo.pop()
            if pointer == goal:
                return True
            if pointer not in seen:
                seen.add(pointer)
                todo.extend(self.edges[pointer])
        return False


class ToolSchema:
    """A schema that passed the policy; its validator is built once and reused."""

    def __init__(self, document: object, dialect: _Dialect, walk: _Walk) -> None:
        self._document, self._dialect = document, dialect
        self._locations = walk.locations
        self._false_nodes = frozenset(walk.false_nodes)
        self._plainly_fits = accepting(document)

    def violations(self, instance: object) -> list[Violation]:
        try:
            if self._plainly_fits is not None and self._plainly_fits(instance):
                return []
        except RecursionError:  # deeper than this stack allows: jsonschema decides
            pass
        found = [self._violation(error) for error in self._validator.iter_errors(instance)]
        return sorted(found, key=lambda v: (v.instance_path, v.schema_path, v.keyword, v.message))

    @cached_property
    def _validator(self) -> Any:
        # Built on first use, by one thread or two at once: the same validator either way.
        dialect = self._dialect
        return dialect.validator_class(
            self._document, format_checker=dialect.formats, registry=_offline()
        )

    def _violation(self, error: Any) -> Violation:
        # error.schema is the subschema holding the failing keyword; its location is a real
        # pointer into the tool schema even when reached through $ref (absolute_schema_path
        # omits the $ref hop, so it names places that do not exist).
        owner = self._locations.get(id(error.schema))
        keyword, message = str(error.validator), str(error.message)
        if id(error.schema) in self._false_nodes:
            keyword, message = "false", f"False schema does not allow {error.instance!r}"
        if owner is None:
            schema_path = _pointer(error.absolute_schema_path)
        else:
            schema_path = owner if keyword == "false" else f"{owner}/{_escape(keyword)}"
        return Violation(
            keyword, _pointer(error.absolute_path), schema_path, message[:MAX_MESSAGE_CHARS]
        )


def compile_schema(schema: object) -> ToolSchema | SchemaProblem:
    """Apply the keyword policy to a tool schema; a usable ToolSchema or the first problem."""
    if not isinstance(schema, dict | bool):
        return SchemaProblem(Code.INVALID_SCHEMA, "", "a schema must be an object or a boolean")
    try:
        return _compile(schema)
    except _Reject as reject:
        return reject.problem
    except RecursionError:
        return SchemaProblem(Code.INVALID_SCHEMA, "", "schema is nested too deeply")


def compiled_schema(schema: object) -> ToolSchema | SchemaProblem:
    """``compile_schema``, remembered: the same schema (the same JSON, member order included)
    is compiled once per process, across turns, engines and fixtures; the least recently used
    of more than ``SCHEMA_CACHE_SIZE`` are forgotten. A compiled schema is never changed after it
    is built, so one serves every engine and thread."""
    try:
        key = _cache_key(schema)
    except (TypeError, ValueError, RecursionError):  # not JSON: compile it, and let it fail
        return compile_schema(schema)
    with _CACHE_LOCK:
        found = _CACHE.get(key)
        if found is not None:
            _CACHE.move_to_end(key)
            return found
    found = compile_schema(schema)  # outside the lock: two threads may both compile, harmlessly
    with _CACHE_LOCK:
        _CACHE[key] = found
        if len(_CACHE) > SCHEMA_CACHE_SIZE:
            _CACHE.popitem(last=False)
    return found


_KEY_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False)
#: ``_KEY_ENCODER``'s C encoder, built once: every engine looks each schema it uses up. A
#: schema that holds a cycle recurses until ``RecursionError``, which ``compiled_schema`` takes
#: as it takes the encoder's own "circular reference" error.
_KEY_PIECES = encoder_pieces(_KEY_ENCODER)


def _cache_key(schema: object) -> str:
    """The cache's key: a schema's compact JSON."""
    return "".join(_KEY_PIECES(schema, 0))


#: Compiled schemas kept per process.
SCHEMA_CACHE_SIZE = 512
_CACHE: OrderedDict[str, ToolSchema | SchemaProblem] = OrderedDict()
_CACHE_LOCK = threading.Lock()


def shipped_schema_compiled(schema: dict[str, Any]) -> ToolSchema | SchemaProblem:
    """A schema callgate ships for a provider-defined tool, compiled without the metaschema's
    check: the tests hold every shipped schema to it (``test_builtin_tools.py``), and the check
    is most of a cold process's work on a turn of built-in calls (jsonschema walks its
    metaschema over the ``if``/``then`` of each action). Callgate's own policy still applies."""
    try:
        return _compile(schema, checked=True)
    except _Reject as reject:
        return reject.problem


def _compile(schema: object, *, checked: bool = False) -> ToolSchema:
    """``checked``: a schema known to pass its metaschema (``shipped_schema_compiled``)."""
    document = _plain(schema, "")
    dialect = _dialect_of(document)
    error = None if checked else _first_schema_error(document, dialect)
    if error is not None:
        raise _Reject(Code.INVALID_SCHEMA, _pointer(error.absolute_path), error.message)
    walk = _Walk(dialect)
    document = walk.visit(document, "")
    walk.link_refs()
    return ToolSchema(document, dialect, walk)


def _first_schema_error(document: object, dialect: _Dialect) -> Any:
    """What the metaschema says of ``document`` first, in document order (None: nothing).
    ``check_schema`` raises the first error jsonschema yields, and for a schema wrong in two
    places that order follows string hashing: the message (and so a fixture's report) changed
    from one process to the next. A schema of plain keywords in their plain shapes is one both
    metaschemas accept, told without jsonschema."""
    if plainly_valid(document):
        return None
    checker = dialect.base(dialect.base.META_SCHEMA, format_checker=dialect.formats)
    errors = list(checker.iter_errors(document))
    if not errors:
        return None
    order = {path: number for number, path in enumerate(_paths(document, ()))}
    return min(errors, key=lambda error: order.get(tuple(error.absolute_path), len(order)))


def _paths(value: object, here: tuple[str | int, ...]) -> Iterator[tuple[str | int, ...]]:
    """Every place in a JSON value, in document order (a container before what it holds)."""
    yield here
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*here, key))
    elif isinstance(value, list):
        for number, item in enumerate(value):
            yield from _paths(item, (*here, number))
