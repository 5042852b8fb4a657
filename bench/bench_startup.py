"""How long ``callgate check FILE`` takes from a cold process, beside ``python -c pass``.

A pre-commit hook or a CI step that checks one fixture pays the start-up every time, so this is
the figure users feel for small inputs: the interpreter, the imports ``check`` needs, one small
fixture. Both commands run alternately, ``RUNS`` times each; the medians and their difference
are printed. ``import callgate`` alone is measured too: the pytest plugin pays it in every test
run of a project that has callgate installed.

Run: ``make bench`` (or ``python bench/bench_startup.py``).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "fixtures" / "conformance" / "openai" / "valid_fragmented.json"
CALLGATE = Path(sys.executable).with_name("callgate")
RUNS = 21
COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "python -c 'import callgate'": [sys.executable, "-c", "import callgate"],
    "callgate check FILE": [str(CALLGATE), "check", str(FIXTURE)],
}


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def main() -> None:
    samples: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(RUNS):
        for name, command in COMMANDS.items():
            samples[name].append(timed(command))
    floor = statistics.median(samples["python -c pass"])
    print(f"{'command':<30} {'median s':>9} {'p90 s':>7} {'over python':>12}")
    for name, times in samples.items():
        median = statistics.median(times)
        p90 = statistics.quantiles(times, n=10)[-1]
        print(f"{name:<30} {median:>9.3f} {p90:>7.3f} {median - floor:>12.3f}")


if __name__ == "__main__":
    main()
