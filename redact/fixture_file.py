"""The file a captured fixture is written to.

Its name is made of the provider, the profile and a hash of the fixture's bytes: nothing from
inside the recording (a model name, a prompt, an id) names a file, and the same fixture written
twice lands in one file. Its bytes are ``callgate.reassemble.envelope.fixture_bytes``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any


def fixture_name(envelope: Mapping[str, Any], data: bytes) -> str:
    """``<provider>-<profile>-<hash>.json`` for ``envelope`` stored as ``data``."""
    provider = re.sub(r"[^a-z0-9-]+", "-", str(envelope.get("provider") or "unknown").lower())
    return f"{provider[:40]}-{envelope['profile']}-{hashlib.sha256(data).hexdigest()[:12]}.json"
