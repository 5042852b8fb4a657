"""What the ``[proxy]`` extra adds, and the one line that says how to get it."""

from __future__ import annotations

from importlib.util import find_spec

PROXY_EXTRA = "pip install 'callgate[proxy]' (or pipx install 'callgate[proxy]')"


def has_mitmproxy() -> bool:
    return find_spec("mitmproxy") is not None
