"""A one-line JSON encoder's C encoder, built once.

``JSONEncoder.encode`` builds a C encoder for every value it is given, through two Python
calls. Where one set of options encodes many values (a long stream's events, every tool schema
an engine looks up), the C encoder is built once and called directly: ``"".join(pieces(value,
0))`` is ``encoder.encode(value)``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

#: What ``encoder_pieces`` gives: called with a value and 0, the pieces of its JSON text.
Pieces = Callable[[Any, int], Any]


def encoder_pieces(encoder: json.JSONEncoder) -> Pieces:
    """The C encoder with ``encoder``'s settings, for one that writes one line (no ``indent``)
    and looks for no cycle (``check_circular=False``: a value holding one recurses until
    ``RecursionError``); for any other, or where ``json`` has no C encoder, ``encoder.encode``
    giving its text as the one piece."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None or encoder.indent is not None or encoder.check_circular:
        return lambda value, _: (encoder.encode(value),)
    pieces: Pieces = make(
        None,  # no cycle is looked for
        encoder.default,
        json.encoder.encode_basestring_ascii
        if encoder.ensure_ascii
        else json.encoder.encode_basestring,
        None,  # one line
        encoder.key_separator,
        encoder.item_separator,
        encoder.sort_keys,
        encoder.skipkeys,
        encoder.allow_nan,
    )
    return pieces
