"""How long ``callgate check FILE`` takes from a cold process, beside ``python -c pass``.

A pre-commit hook or a CI step that checks one fixture pays the start-up every time, so this is
the figure users feel for small inputs: the interpreter, the imports ``check`` needs, one small
fixture. The commands run alternately, ``RUNS`` times each; the medians and their difference
are printed. ``import callgate`` alone is measured too: the pytest plugin pays it in every test
run of a project that has callgate installed.

callgate is measured as a user installs it: a new virtual environment and ``pip install`` of
this checkout (from the package index, as ``make`` builds its own), not the project's editable
install, whose import hook costs every start of that environment some milliseconds more.

Run: ``make bench`` (or ``python bench/bench_startup.py``).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "fixtures" / "conformance" / "openai" / "valid_fragmented.json"
RUNS = 21
#: The most ``callgate check FILE`` may take, median seconds.
TARGET = 0.15


def user_install(folder: Path) -> Path:
    """A new environment in ``folder`` with callgate installed from this checkout as ``pip``
    installs it for a user; its ``bin`` folder."""
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    bin_folder = folder / "bin"
    done = subprocess.run(
        [str(bin_folder / "pip"), "install", "--quiet", "--disable-pip-version-check", str(ROOT)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"pip install of {ROOT} failed:\n{done.stderr}")
    return bin_folder


def commands(bin_folder: Path) -> dict[str, list[str]]:
    python = str(bin_folder / "python")
    return {
        "python -c pass": [python, "-c", "pass"],
        "python -c 'import callgate'": [python, "-c", "import callgate"],
        "callgate check FILE": [str(bin_folder / "callgate"), "check", str(FIXTURE)],
        "callgate --help": [str(bin_folder / "callgate"), "--help"],
    }


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="callgate-startup-") as folder:
        runs = commands(user_install(Path(folder) / "venv"))
        samples: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(RUNS):
            for name, command in runs.items():
                samples[name].append(timed(command))
    floor = statistics.median(samples["python -c pass"])
    print(f"{'command':<30} {'median s':>9} {'p90 s':>7} {'over python':>12} {'target':>8}")
    for name, times in samples.items():
        median = statistics.median(times)
        p90 = statistics.quantiles(times, n=10)[-1]
        target = f"<= {TARGET:.2f}" if name == "callgate check FILE" else ""
        print(f"{name:<30} {median:>9.3f} {p90:>7.3f} {median - floor:>12.3f} {target:>8}")


if __name__ == "__main__":
    main()
