"""Strict RFC 8259 parsing of tool-call arguments.

How this works: the standard library's C scanner does the parsing, so it is fast and linear,
and hooks make it strict where it is lenient by default: ``parse_constant`` refuses NaN and
Infinity, ``parse_float``/``parse_int`` see every number literal (length limit, overflow to
infinity). That no object repeats a member name is proven from the text where it can be: the
scanner builds the objects and a hook counts their members, against the text's colons
(``member_count``); where that fails, ``object_pairs_hook`` sees every object's members in order
and the text is read again with it, which gives every error as it always has.
The scanner, called as ``raw_decode`` calls it, plus a whitespace check separates trailing data
from syntax errors. Lone surrogate escapes and nesting depth are checked after parsing, and
only when the raw text could hold them: a lone surrogate needs a ``\\uD8..``-``\\uDF..`` escape
whose backslash is not itself escaped (or a surrogate character) in the text, and then one
iterative walk over every value checks both; nesting deeper than the limit needs more
``[``/``{`` than the limit, and then a walk over the containers alone, a level at a time, checks
depth. The scanners are built once per ``Limits`` and reused. No well-kept library rejects both
duplicate names and lone surrogates, so this stays a thin layer over ``json`` rather than a
parser of its own.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Sized
from typing import Any, cast

from callgate.reassemble.codes import Code
from callgate.reassemble.errors import InputError
from callgate.reassemble.limits import DEFAULT_LIMITS, Limits
from callgate.reassemble.member_count import counting_hook, members_proven

_JSON_WHITESPACE = " \t\n\r"
_SURROGATE = re.compile("[\ud800-\udfff]")
_WHITESPACE = re.compile("[ \t\n\r]*")
_SURROGATE_ESCAPE = re.compile("\\\\u[dD][89abcdefABCDEF]")


class StrictJSONError(InputError):
    """Why a text is not strict JSON: ``code`` is an argument finding code, ``position`` the
    character offset (byte offset for ``loads_bytes`` decoding errors)."""

    def __init__(self, code: Code, message: str, position: int = 0) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.position = position


class _HookError(Exception):
    """Raised inside a hook; the C scanner lets it through untouched."""

    def __init__(self, code: Code, message: str) -> None:
        super().__init__(message)
        self.code = code


def loads(text: str, limits: Limits = DEFAULT_LIMITS, check_names: bool = True) -> Any:
    """Parse ``text`` as one strict JSON document; raise ``StrictJSONError`` otherwise.
    ``check_names=False`` leaves out one check, that no object repeats a member name (which
    costs a Python call per object), for a caller that proves it otherwise: were a name
    repeated, the value would keep its last member, as ``json.loads`` does, and what the
    others held would go unchecked."""
    # The live proxy parses every event with this: the steps a short event needs are written
    # out here rather than called (a call costs about what one of them does).
    if limits is DEFAULT_LIMITS:
        reader = _DEFAULT_READER
    else:
        reader = _READERS.get(id(limits))  # type: ignore[assignment]
        if reader is None or reader.limits is not limits:
            reader = _new_reader(limits)
    length = len(text)
    if length > reader.size_by_count:  # a shorter text fits, even at 4 UTF-8 bytes a character
        _check_size(text, limits)
    objects: int | None = None  # how many objects the scan built, when it counted them
    if length > reader.short:
        value, end, objects = _decode(text, reader, check_names)
    elif not check_names:
        # What ``_decode`` does for a short text (most events), without the call; a text that
        # fails, as one that starts with whitespace does here, is read again by ``_decode``,
        # which skips the whitespace and gives the error.
        try:
            value, end = reader.unnamed_scan(text, 0)
        except Exception:
            value, end, objects = _decode(text, reader, False)
    else:
        # A text whose scan fails or whose names the count cannot prove is read again by
        # ``_decode``, with every hook.
        proven = _tallied(text, 0, reader, True)
        value, end, objects = (
            proven if proven is not None else _decode(text, reader, True, tally=False)
        )
    if end != length:
        after = _WHITESPACE.match(text, end).end()  # type: ignore[union-attr]
        if after != length:
            raise StrictJSONError(
                Code.TRAILING_DATA, "more text follows a complete JSON value", after
            )
    # A lone surrogate needs a surrogate escape or a surrogate character in the text (substring
    # and ASCII tests first: far cheaper than a regular expression over every character).
    # Nesting deeper than the limit needs more ``[``/``{`` than the limit, and as many closing
    # brackets after them, so the text that parsed is over twice the limit long. A scan that
    # counted its objects has said how many ``{`` opened one: that text need not be searched.
    if ("\\u" in text and _escapes_a_surrogate(text)) or (
        not text.isascii() and _SURROGATE.search(text) is not None
    ):
        _walk(value, limits)
    elif (
        length > reader.depth_by_length
        and text.count("[") + (text.count("{") if objects is None else objects) > limits.max_depth
    ):
        _check_depth(value, limits)
    return value


def loads_bytes(data: bytes, limits: Limits = DEFAULT_LIMITS) -> Any:
    """Decode ``data`` as strict UTF-8, then ``loads`` it."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise StrictJSONError(
            Code.INVALID_UNICODE, f"not UTF-8: {error.reason} at byte {error.start}", error.start
        ) from None
    return loads(text, limits)


def _escapes_a_surrogate(text: str) -> bool:
    """Whether ``text`` holds a ``\\uD800``-``\\uDFFF`` escape. A backslash before the ``u``
    that an odd run of backslashes precedes is itself escaped, and the ``\\uD83D`` after it is
    plain text: a fixture holding argument text with an escaped emoji has many of those."""
    for match in _SURROGATE_ESCAPE.finditer(text):
        start = backslash = match.start()
        while backslash and text[backslash - 1] == "\\":
            backslash -= 1
        if (start - backslash) % 2 == 0:
            return True
    return False


def _check_size(text: str, limits: Limits) -> None:
    # Characters are 1 to 4 UTF-8 bytes: encode only when the count cannot decide.
    if (
        len(text) > limits.max_argument_bytes
        or len(text.encode("utf-8", "surrogatepass")) > limits.max_argument_bytes
    ):
        raise StrictJSONError(
            Code.LIMIT_EXCEEDED, f"text is longer than {limits.max_argument_bytes} bytes"
        )


_Scanner = Callable[[str, int], tuple[Any, int]]


class _Reader:
    """What parsing under one ``Limits`` needs, built once: the C scanner with every hook, one
    whose integers the scanner converts itself (see ``_decode``), both again with the objects
    they build tallied instead of their names checked (see ``_tallied``), and one without the
    member-name check."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        #: Up to this many characters, counting them decides the size limit (``_check_size``).
        self.size_by_count = limits.max_argument_bytes // 4
        #: A text this short holds no integer literal that breaks ``max_number_chars`` or
        #: ``int()``'s digit limit, which is never below this threshold unless it is off.
        self.short = min(limits.max_number_chars, sys.int_info.str_digits_check_threshold)
        #: A text up to this long that parsed nests no deeper than ``max_depth``.
        self.depth_by_length = 2 * limits.max_depth
        self.hooked_scan = self._scanner(plain_ints=False)
        self.plain_scan = self._scanner(plain_ints=True)
        #: ``plain_scan`` without the member-name check (``loads(check_names=False)``).
        self.unnamed_scan = self._scanner(plain_ints=True, check_names=False)
        #: How many members each object the tallying scans built kept; only the parse that
        #: holds the tally (``_TALLY``) fills it, and it empties it before letting go.
        self.sizes: list[int] = []
        count = counting_hook(self.sizes)
        self.tallied_hooked_scan = self._scanner(plain_ints=False, object_hook=count)
        self.tallied_plain_scan = self._scanner(plain_ints=True, object_hook=count)

    def _scanner(
        self,
        *,
        plain_ints: bool,
        check_names: bool = True,
        object_hook: Callable[[dict[str, Any]], Any] | None = None,
    ) -> _Scanner:
        decoder = json.JSONDecoder(
            object_hook=object_hook,
            object_pairs_hook=_unique_object if check_names and object_hook is None else None,
            parse_constant=_refuse_constant,
            parse_float=_number_hook(self.limits, float),
            parse_int=None if plain_ints else _number_hook(self.limits, int),
        )
        # The C scanner itself: JSONDecoder.raw_decode is a Python call around it.
        return cast(_Scanner, decoder.scan_once)  # type: ignore[attr-defined]


#: Readers by the id of their ``Limits`` (hashing the frozen dataclass on every parse cost more
#: than the parse of a short event); each entry keeps its ``Limits`` alive and is checked by it.
_READERS: dict[int, _Reader] = {}


def _new_reader(limits: Limits) -> _Reader:
    if len(_READERS) >= 16:  # callers use a handful of Limits; never grow without bound
        _READERS.clear()
    reader = _READERS[id(limits)] = _Reader(limits)
    return reader


def _long_number_run(longest: int) -> re.Pattern[str]:
    """A run of digits and minus signs longer than ``longest``, the longest integer literal
    the limits allow (``max_number_chars`` and ``int()``'s own digit limit): without one, no
    integer literal in the text can break either."""
    pattern = _RUNS.get(longest)
    if pattern is None:
        pattern = _RUNS[longest] = re.compile(f"[-0-9]{{{longest + 1}}}")
    return pattern


_RUNS: dict[int, re.Pattern[str]] = {}
_SAMPLED_RUN_LENGTH = 4
_SAMPLED_RUN = re.compile(f"[-0-9]{{{_SAMPLED_RUN_LENGTH}}}")


def _decode(
    text: str, reader: _Reader, check_names: bool, tally: bool = True
) -> tuple[Any, int, int | None]:
    """The value, where it ends, and how many objects it holds when the scan counted them
    (``_tallied``; else None). With no integer literal that could break a limit, the
    scanner converts integers itself; floats always have the hook, since ``1e400`` is short
    and overflows. Member names are proven by ``_tallied`` where it can (``tally``), else
    checked by the hook."""
    start = 0
    if text[:1] in _JSON_WHITESPACE:  # an empty text too: the regex then finds its end, 0
        start = _WHITESPACE.match(text).end()  # type: ignore[union-attr]
    if len(text) <= reader.short:
        plain_ints = True
    else:
        longest = int(min(reader.limits.max_number_chars, _int_digit_limit()))
        # Cheapest first. Take every ``step``-th character, ``step`` a quarter of ``longest +
        # 1``: a run of number characters longer than ``longest`` holds at least four of those
        # positions, one after another, so when the few characters taken show no four number
        # characters in a row there is no long run, and the whole text need not be searched.
        # (Four, not one: a single digit at one of those positions is common in any text.)
        step = (longest + 1) // _SAMPLED_RUN_LENGTH
        plain_ints = (
            len(text) <= longest
            or (step > 0 and _SAMPLED_RUN.search(text[step - 1 :: step]) is None)
            or _long_number_run(longest).search(text) is None
        )
    if check_names and tally:
        proven = _tallied(text, start, reader, plain_ints)
        if proven is not None:
            return proven
    try:
        scan = (
            reader.hooked_scan
            if not plain_ints
            else reader.plain_scan
            if check_names
            else reader.unnamed_scan
        )
        value, end = scan(text, start)
    except _HookError as error:
        raise StrictJSONError(error.code, str(error)) from None
    except StopIteration as error:  # no value where the text starts (raw_decode's message)
        raise _invalid(text, "Expecting value", error.value) from None
    except json.JSONDecodeError as error:
        raise _invalid(text, error.msg, error.pos) from None
    except RecursionError:
        raise StrictJSONError(
            Code.LIMIT_EXCEEDED, f"nesting is deeper than {reader.limits.max_depth}"
        ) from None
    return value, end, None


#: Holds ``_FREE`` while no parse is tallying: a parse takes it out (``dict.pop`` is one step,
#: which no other thread interleaves, and costs a tenth of ``Lock.acquire`` and ``release``)
#: and puts it back when its reader's ``sizes`` is empty again; a parse on another thread (or
#: a signal handler's) that finds it gone takes the hooked scan instead.
_TALLY: dict[str, bool] = {}
_FREE = "free"
_TALLY[_FREE] = True


def _tallied(
    text: str, start: int, reader: _Reader, plain_ints: bool
) -> tuple[Any, int, int] | None:
    """The value, where it ends and how many objects it holds, scanned without the member-name
    hook (the scanner builds each object itself, which the hook would do from a list of pairs,
    and the object hook counts them); None when another parse holds the tally, the scan fails
    (the hooked scan then gives the error the hooks give, in the order they give it), or the
    members kept do not prove that no name repeats (``members_proven``)."""
    if not _TALLY.pop(_FREE, False):
        return None
    sizes = reader.sizes
    try:
        value, end = (reader.tallied_plain_scan if plain_ints else reader.tallied_hooked_scan)(
            text, start
        )
        kept = sum(sizes)
        objects = len(sizes)  # the hook notes each object the scan builds, once
    except Exception:
        return None
    finally:
        sizes.clear()
        _TALLY[_FREE] = True
    colons = text.count(":")
    if kept == colons or members_proven(text, kept, colons):
        return value, end, objects
    return None


def _invalid(text: str, message: str, position: int) -> StrictJSONError:
    return StrictJSONError(
        Code.INVALID_ARGUMENTS_JSON,
        "empty text" if not text.strip(_JSON_WHITESPACE) else message,
        position,
    )


def _int_digit_limit() -> float:
    """How many digits ``int()`` converts here (``sys.set_int_max_str_digits``; 0: no limit)."""
    return sys.get_int_max_str_digits() or math.inf


def _unique_object(
    pairs: list[tuple[str, Any]],
    _dict: type[dict[str, Any]] = dict,
    _len: Callable[[Sized], int] = len,
) -> dict[str, Any]:
    # ``dict`` and ``len`` as locals: called from the C scanner once per object, this function
    # spent a sixth of its instructions looking the two builtins up by name.
    result = _dict(pairs)
    if _len(result) != _len(pairs):
        seen: set[str] = set()
        duplicate = next(key for key, _ in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]
        raise _HookError(Code.DUPLICATE_KEY, f"member name {duplicate[:40]!r} appears twice")
    return result


def _refuse_constant(name: str) -> Any:
    raise _HookError(Code.NON_FINITE_NUMBER, f"{name} is not a JSON number")


def _number_hook(limits: Limits, kind: type[int] | type[float]) -> Any:
    def convert(literal: str) -> int | float:
        if len(literal) > limits.max_number_chars:
            raise _HookError(
                Code.LIMIT_EXCEEDED,
                f"a number literal is longer than {limits.max_number_chars} characters",
            )
        try:
            value = kind(literal)
        except ValueError:
            # int's own digit limit (sys.set_int_max_str_digits) when max_number_chars is above it.
            raise _HookError(
                Code.LIMIT_EXCEEDED, "a number literal is longer than this interpreter converts"
            ) from None
        if isinstance(value, float) and math.isinf(value):
            raise _HookError(Code.NON_FINITE_NUMBER, f"{literal[:40]} overflows to infinity")
        return value

    return convert


def _walk(value: Any, limits: Limits) -> None:
    """Depth and lone surrogates, in one iterative pass (no recursion on hostile input)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            _check_string(item)
        elif isinstance(item, dict | list):
            if depth > limits.max_depth:
                raise StrictJSONError(
                    Code.LIMIT_EXCEEDED, f"nesting is deeper than {limits.max_depth}"
                )
            if isinstance(item, dict):
                stack.extend((key, depth) for key in item)
                stack.extend((child, depth + 1) for child in item.values())
            else:
                stack.extend((child, depth + 1) for child in item)


def _check_depth(value: Any, limits: Limits) -> None:
    """Depth alone, a level at a time over the containers (strings cannot nest, and when the
    text holds no surrogate they need no look)."""
    level = [value] if type(value) in (dict, list) else []
    depth = 0
    while level:
        depth += 1
        if depth > limits.max_depth:
            raise StrictJSONError(Code.LIMIT_EXCEEDED, f"nesting is deeper than {limits.max_depth}")
        below: list[Any] = []
        for container in level:
            below += [
                child
                for child in (container.values() if type(container) is dict else container)
                if type(child) in (dict, list)
            ]
        level = below


def _check_string(text: str) -> None:
    # The scanner pairs valid surrogate escapes into one character, so any surrogate code point
    # left in a decoded string came from a lone escape.
    if _SURROGATE.search(text):
        raise StrictJSONError(Code.INVALID_UNICODE, "a string holds a lone surrogate escape")


#: The reader of the limits most parses take, found without a look-up.
_DEFAULT_READER = _Reader(DEFAULT_LIMITS)
