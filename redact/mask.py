"""Masks that hide content but keep everything a verdict depends on.

- ``mask_text``: model output and other free text. Same length, whitespace kept, so empty stays
  empty and non-empty stays non-empty.
- ``mask_arguments``: tool-call argument text, possibly split across fragments. A small lexer
  walks the whole text of one call and masks JSON string *values* character for character
  (keys, numbers, booleans, null, punctuation and whitespace stay); escapes keep their shape so
  the decoded length is unchanged; lone surrogate escapes, control characters and broken escapes
  stay as they are, because they decide ``invalid_unicode`` and syntax findings. Text that does
  not lex as JSON is masked letter for letter and digit for digit. The masked text is cut back at
  the original fragment boundaries.
- ``mask_free_text``: free-form tool input (shell commands, patches, custom tools' text):
  letters and digits masked, punctuation, white space and a patch's structure kept.
- ``media_stand_in``: base64 audio and other media (a voice session's sound): replaced whole
  by its length and digest, so no sound is written and a long session's fixture stays small.
- ``Pseudonyms``: provider ids replaced by stable stand-ins, equal for equal ids, idempotent.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from itertools import accumulate

_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_LITERALS = ("true", "false", "null", "NaN", "Infinity")
_STRUCTURE = frozenset(" \t\n\r{}[]:,")
_ID_PREFIX = re.compile(r"^[A-Za-z]+[-_]")
#: The rest of a string after its opening quote, through its closing quote. Possessive: a
#: string never closed is one pass over the text, not a search backing up through it.
_STRING_REST = re.compile(r'[^"\\]*+(?:\\.[^"\\]*+)*+"', re.DOTALL)
#: A run of characters a string mask replaces: all but ``/``, ``"``, ``\\``, control characters
#: and surrogates (``_kept`` says why).
_MASKED = r'[^/"\\\x00-\x1f\ud800-\udfff]+'
_MASKED_RUN = re.compile(_MASKED)
#: In a string's body: a ``\u`` escape, another escape (or a backslash that ends the text),
#: or a run of characters the mask replaces. Characters matched by none are kept.
_STRING_PIECE = re.compile(r"\\u[0-9A-Fa-f]{4}|\\.?|" + _MASKED, re.DOTALL)

#: Text that masking leaves as it is, in one step where the tokens it holds took one each:
#: runs of ASCII digits, ``.``, ``+`` and ``-``, each ending in whitespace or punctuation.
#: Every token such a run holds lies inside it (a number ends before the punctuation; only a
#: letter or a non-ASCII digit could continue it) and is kept: numbers, punctuation and
#: whitespace, and ``.``, ``+`` or ``-`` alone, which is neither a letter nor a digit.
_KEPT_RUN = re.compile(r"(?:[0-9.+\-]*[ \t\n\r{}\[\]:,])+")

# Strings are masked by the runs and escapes these patterns find, not character by character
# in Python: one Python step per run of characters, not one per character.


#: How a media stand-in begins: one already in place is kept, so redacting twice changes nothing.
MEDIA_OMITTED = "[media omitted: "


def media_stand_in(value: str) -> str:
    """Base64 media text as its length and SHA-256 digest (a stand-in stays as it is)."""
    if value.startswith(MEDIA_OMITTED):
        return value
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{MEDIA_OMITTED}{len(value)} characters, sha256 {digest}]"


def mask_text(text: str) -> str:
    """Every character but whitespace becomes ``x``."""
    # Character by character: in prose the runs are words, and a call per word cost more.
    return "".join(c if c.isspace() else "x" for c in text)


def mask_arguments(
    fragments: Sequence[str], keep: frozenset[str] = frozenset(), mask: str = "x"
) -> list[str]:
    """Mask one call's argument fragments as one text; string values in ``keep`` stay. String
    characters become ``mask``."""
    text = "".join(fragments)
    masked = _mask_json_text(text, keep, mask)
    if masked == text:  # nothing to hide (numbers, kept values): the fragments as they were
        return list(fragments)
    ends = list(accumulate(map(len, fragments)))
    return [masked[start:end] for start, end in zip([0, *ends], ends, strict=False)]


def _mask_json_text(text: str, keep: frozenset[str], mask: str) -> str:
    out: list[str] = []
    i, length = 0, len(text)
    while i < length:
        kept = _KEPT_RUN.match(text, i)
        if kept is not None:
            out.append(kept.group())
            i = kept.end()
            if i == length:
                break
        end, piece = _token(text, i, keep, mask)
        out.append(piece)
        i = end
    return "".join(out)


def _token(text: str, i: int, keep: frozenset[str], mask: str) -> tuple[int, str]:
    """(end, masked text) of the token that starts at ``i``."""
    char = text[i]
    if char in _STRUCTURE:
        return i + 1, char
    if char == '"':
        end, closed = _string_end(text, i)
        literal = text[i:end]
        if _is_key(text, end) or _decoded(literal) in keep:
            return end, literal
        return end, _mask_string(literal, closed, mask)
    number = _NUMBER.match(text, i)
    if number:
        return number.end(), number.group()
    for literal in _LITERALS:
        if text.startswith(literal, i):
            return i + len(literal), literal
    return i + 1, _mask_char(char)


def _mask_char(char: str) -> str:
    if char.isdigit():
        return "0"
    return "x" if char.isalpha() else char


def _string_end(text: str, start: int) -> tuple[int, bool]:
    """(index just past the closing quote, True) of the string at ``start``, or (the text's end,
    False) when it is never closed."""
    rest = _STRING_REST.match(text, start + 1)
    return (rest.end(), True) if rest else (len(text), False)


def _is_key(text: str, end: int) -> bool:
    rest = text[end : end + 64].lstrip(" \t\n\r")
    return rest.startswith(":")


def _decoded(literal: str) -> str | None:
    try:
        value = json.loads(literal)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def _mask_string(literal: str, closed: bool, mask: str) -> str:
    body_end = len(literal) - 1 if closed else len(literal)

    def masked(piece: re.Match[str]) -> str:
        """An escape or a run of the body, masked to the same length and shape."""
        text = piece.group()
        if text[0] != "\\":
            return mask * len(text)
        if len(text) == 6:  # \uXXXX
            return text if _kept(chr(int(text[2:], 16))) else f"\\u{ord(mask):04x}"
        return text  # \n, \" ... and broken escapes keep their shape

    return '"' + _STRING_PIECE.sub(masked, literal[1:body_end]) + literal[body_end:]


def _kept(char: str) -> bool:
    """Characters a string mask keeps, however they are encoded: those that simple escapes
    stand for (so ``\\n`` and a raw control character mask alike) and surrogates, which decide
    ``invalid_unicode``. Keeping the rule at the level of decoded characters makes masking
    commute with re-encoding: a stated input object and its streamed text mask to equal values.
    The characters are those ``_MASKED`` leaves out, stated once."""
    return _MASKED_RUN.match(char) is None


#: Lines of a V4A patch (OpenAI's apply_patch, as a diff or a custom tool's input) that are its
#: structure, kept whole; and line openings kept before the path or anchor they introduce.
_PATCH_LINES = frozenset({"*** Begin Patch", "*** End Patch", "*** End of File"})
_PATCH_OPENINGS = (
    "*** Add File: ",
    "*** Update File: ",
    "*** Delete File: ",
    "*** Move to: ",
    "@@",
)
_WORD_CHARACTERS = re.compile(r"[^\W_]+")


def mask_free_text(
    fragments: Sequence[str], keep: frozenset[str] = frozenset(), mask: str = "x"
) -> list[str]:
    """Mask one free-form input (a shell command, a diff, a custom tool's input), possibly split
    across fragments, as one text: letters become ``mask`` and digits a digit of the mask's own
    (``0`` for ``x``, ``1`` for another), punctuation and white space stay, and so do a patch's
    structural lines and line openings, so that a diff's hunks, a command's shape and most
    grammars' literals survive. A whole text in ``keep`` stays. Cut back at the fragments'
    boundaries."""
    text = "".join(fragments)
    if not text or text in keep:
        return list(fragments)
    digit = "0" if mask == "x" else "1"
    masked = "".join(_masked_line(line, mask, digit) for line in text.splitlines(keepends=True))
    ends = list(accumulate(map(len, fragments)))
    return [masked[start:end] for start, end in zip([0, *ends], ends, strict=False)]


def _masked_line(line: str, mask: str, digit: str) -> str:
    body = line.rstrip("\r\n")
    if body in _PATCH_LINES:
        return line
    opening = next((o for o in _PATCH_OPENINGS if body.startswith(o)), "")
    rest = line[len(opening) :]
    return opening + _WORD_CHARACTERS.sub(
        lambda run: "".join(digit if c.isdigit() else mask for c in run.group()), rest
    )


def mask_free_value(value: object, keep: frozenset[str] = frozenset(), mask: str = "x") -> object:
    """Every string in ``value`` masked as ``mask_free_text`` masks a whole text."""
    if isinstance(value, str):
        return mask_free_text([value], keep, mask)[0]
    if isinstance(value, dict):
        return {key: mask_free_value(child, keep, mask) for key, child in value.items()}
    if isinstance(value, list):
        return [mask_free_value(child, keep, mask) for child in value]
    return value


def mask_value(value: object, keep: frozenset[str] = frozenset(), mask: str = "x") -> object:
    """Mask the strings of an already parsed argument value the way ``mask_arguments`` masks
    their JSON text: keys stay, string values become ``mask`` but for kept characters."""
    if isinstance(value, str):
        return (
            value if value in keep else _MASKED_RUN.sub(lambda run: mask * len(run.group()), value)
        )
    if isinstance(value, dict):
        return {key: mask_value(child, keep, mask) for key, child in value.items()}
    if isinstance(value, list):
        return [mask_value(child, keep, mask) for child in value]
    return value


class Pseudonyms:
    """Stable stand-ins for ids: ``call_F9Za…`` becomes ``call_redacted1``, the same id always the
    same stand-in, ``""`` stays ``""``; applying it to its own output changes nothing."""

    def __init__(self) -> None:
        self._names: dict[str, str] = {}

    def __call__(self, value: str) -> str:
        if not value:
            return value
        if value not in self._names:
            match = _ID_PREFIX.match(value)
            prefix = match.group() if match else ""
            self._names[value] = f"{prefix}redacted{len(self._names) + 1}"
        return self._names[value]
