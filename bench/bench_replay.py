"""``callgate replay`` against the floor of reading and parsing the same files.

3,500 fixtures: 20 copies of the bundled conformance set, in a temporary folder. Side by side,
best of three:

- floor: read each file and ``json.loads`` it, in one process, dropping each value;
- replay: ``callgate.cli.replay.runner.replay`` in this process, with 1 and with 2 worker
  processes (what ``--jobs`` chooses);
- the command: ``callgate replay FOLDER --report json --output FILE`` as a user runs it, start-up
  and the report included.

Run: ``make bench`` (or ``python bench/bench_replay.py``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from callgate.cli.replay.runner import replay

ROOT = Path(__file__).resolve().parents[1]
COPIES = 20


def best_of_three(run: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "fixtures"
        for copy in range(COPIES):
            shutil.copytree(ROOT / "fixtures" / "conformance", root / f"copy{copy}")
        files = sorted(root.rglob("*.json"))
        command = [str(Path(sys.executable).with_name("callgate")), "replay", str(root),
                   "--report", "json", "--output", str(Path(folder) / "report.json")]
        def floor_run() -> None:
            for path in files:
                json.loads(path.read_bytes())  # each value dropped, as a reader that moves on

        floor = best_of_three(floor_run)
        rows = [("floor: read + json.loads", floor),
                ("replay, 1 process", best_of_three(lambda: replay([root], 1))),
                ("replay, --jobs 2", best_of_three(lambda: replay([root], 2))),
                ("callgate replay (command)",
                 best_of_three(lambda: subprocess.run(command, check=False)))]
    print(f"{len(files)} fixtures")
    print(f"{'':<28} {'seconds':>8} {'x floor':>8}")
    for name, seconds in rows:
        print(f"{name:<28} {seconds:>8.3f} {seconds / floor:>8.1f}")
    print(f"--jobs 2 is {rows[1][1] / rows[2][1]:.2f}x as fast as 1 process")


if __name__ == "__main__":
    main()
