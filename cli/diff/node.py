"""How ``callgate diff`` runs the Vercel AI SDK: ``adapters/vercel_ai.mjs`` under Node.

How this works: a Node adapter runs once per ``node_modules`` folder (``--node-modules``, which
may be given once per ``ai`` release to compare, else the current directory's, found as a bare
``import`` finds it), so each folder's ``ai`` release is a column of its own. The runner reads one
envelope per stdin line and prints one result line each, as the Python runner does; callgate
frames nothing for it (the profiles it reads stream SSE, which it frames itself).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from callgate.reassemble.errors import SetupError

RUNNER = Path(__file__).with_name("adapters") / "vercel_ai.mjs"
#: Seconds Node may take to find the packages.
PROBE_TIMEOUT = 60.0


def folders(node_modules: Sequence[Path]) -> list[str]:
    """The ``node_modules`` folders to run in: those given, else the current directory's."""
    return [str(folder.resolve()) for folder in node_modules] or [str(Path.cwd() / "node_modules")]


def command(adapter: str, packages: Sequence[str], folder: str) -> list[str]:
    """The runner for ``adapter`` with the packages of ``folder``; ``SetupError`` saying what to
    install when there is no ``node`` on PATH."""
    found = shutil.which("node")
    if found is None:
        raise SetupError(missing_message(adapter, packages, folder, node=False))
    return [found, str(RUNNER), adapter, "--node-modules", folder]


def lines(envelopes: Sequence[dict[str, Any]]) -> str:
    """What the runner reads: one envelope per line."""
    return "".join(json.dumps(envelope) + "\n" for envelope in envelopes)


def probe(adapter: str, packages: Sequence[str], folder: str) -> str:
    """``folder`` if Node finds ``packages`` from it. Raises ``SetupError`` with the one line
    that says what to install, when Node or a package is missing."""
    try:
        done = subprocess.run(
            [*command(adapter, packages, folder), "--probe"],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SetupError(f"cannot run node for --adapter {adapter}: {error}") from None
    if done.returncode == 3:
        raise SetupError(missing_message(adapter, packages, folder))
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise SetupError(f"the {adapter} runner failed (exit {done.returncode}): {last}")
    return folder


def missing_message(adapter: str, packages: Sequence[str], folder: str, node: bool = True) -> str:
    install = f"npm install {' '.join(packages)}"
    if not node:
        return (
            f"adapter {adapter} needs Node.js (node on PATH) and {install} "
            f"(apt-get install nodejs npm, or nodejs.org)"
        )
    return (
        f"adapter {adapter} finds no {' and '.join(packages)} from {folder}: {install} in your "
        f"project, or pass --node-modules with a node_modules folder that has them"
    )
