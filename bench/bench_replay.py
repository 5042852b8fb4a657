"""``callgate replay`` against the floor of reading and parsing the same files.

20 copies of the bundled conformance set, in a temporary folder. Side by side, each the best of
five rounds that take the rows in turn:

- floor: read each file and ``json.loads`` it, in one process, dropping each value;
- replay: ``callgate.cli.replay.runner.replay`` in this process, with 1 and with 2 worker
  processes (what ``--jobs`` chooses);
- the command: ``callgate replay FOLDER --report json --output FILE`` as a user runs it, start-up
  and the report included;
- the machine's ceiling for ``--jobs 2``: two whole one-process replays at once, this process
  and a forked one, timed until both are done. Two processes on two cores run slower each than
  one alone (shared caches and memory bandwidth, and on a virtual machine, a host's other
  guests), so ``2 x (one alone) / (two at once)`` is the most ``--jobs 2`` can gain here;
- the same measured as a user meets it, whole processes, start-up included: the command, with
  one process and with ``--jobs 2``, against a Python process that reads and parses the files
  (the floor), and two commands started at once against one (the ceiling).

Run: ``make bench`` (or ``python bench/bench_replay.py``).
"""

from __future__ import annotations

import json
import multiprocessing
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
#: The most one process may take, x the floor; the least ``--jobs 2`` may reach of the ceiling.
REPLAY_TARGET, JOBS_TARGET = 6.0, 0.85
#: The most the command may take, x a process that reads and parses the same files.
COMMAND_TARGET = 4.0
#: The floor as a process of its own.
FLOOR_PROCESS = (
    "import json, pathlib, sys\n"
    "for path in sorted(pathlib.Path(sys.argv[1]).rglob('*.json')):\n"
    "    json.loads(path.read_bytes())\n"
)


#: Rounds; each times every row once, in turn, and a row's figure is its best round. Taking
#: the rows in turn puts each row's best in the same spells of the machine's speed, which moves
#: by more than the differences measured here.
ROUNDS = 5


def best_in_turn(runs: list[Callable[[], object]]) -> list[float]:
    best = [float("inf")] * len(runs)
    for _ in range(ROUNDS):
        for row, run in enumerate(runs):
            start = time.perf_counter()
            run()
            best[row] = min(best[row], time.perf_counter() - start)
    return best


def at_once(run: Callable[[], object]) -> None:
    """``run`` here and in a forked process (which inherits the compiled schemas) at once."""
    other = multiprocessing.get_context("fork").Process(target=run)
    other.start()
    run()
    other.join()


def together(*commands: list[str]) -> None:
    """The commands started at once, until each has exited."""
    for running in [subprocess.Popen(command) for command in commands]:
        running.wait()


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "fixtures"
        for copy in range(COPIES):
            shutil.copytree(ROOT / "fixtures" / "conformance", root / f"copy{copy}")
        files = sorted(root.rglob("*.json"))
        command = [
            str(Path(sys.executable).with_name("callgate")),
            "replay",
            str(root),
            "--report",
            "json",
            "--output",
            str(Path(folder) / "report.json"),
        ]

        parallel = [*command[:-2], "--jobs", "2", "--output", str(Path(folder) / "report2.json")]
        floor_command = [sys.executable, "-c", FLOOR_PROCESS, str(root)]
        other = [*command[:-1], str(Path(folder) / "report3.json")]

        def floor_run() -> None:
            for path in files:
                json.loads(path.read_bytes())  # each value dropped, as a reader that moves on

        replay([root], 1)  # the first run compiles the tool schemas every later one reuses
        names = [
            "floor: read + json.loads",
            "replay, 1 process",
            "replay, --jobs 2",
            "callgate replay (command)",
            "two replays at once",
            "floor, a process",
            "command, --jobs 2",
            "two commands at once",
        ]
        seconds = best_in_turn(
            [
                floor_run,
                lambda: replay([root], 1),
                lambda: replay([root], 2),
                lambda: subprocess.run(command, check=False),
                lambda: at_once(lambda: replay([root], 1)),
                lambda: subprocess.run(floor_command, check=True),
                lambda: subprocess.run(parallel, check=False),
                lambda: together(command, other),
            ]
        )
        rows = list(zip(names, seconds, strict=True))
        floor = seconds[0]
    print(f"{len(files)} fixtures")
    print(f"{'':<28} {'seconds':>8} {'x floor':>8} {'target':>8}")
    for name, seconds in rows[:4]:
        target = f"<= {REPLAY_TARGET:.1f}" if name == "replay, 1 process" else ""
        print(f"{name:<28} {seconds:>8.3f} {seconds / floor:>8.1f} {target:>8}")
    print(f"{rows[4][0]:<28} {rows[4][1]:>8.3f}")  # two runs' work: no ratio to one floor
    one, jobs, both = rows[1][1], rows[2][1], rows[4][1]
    ceiling = 2 * one / both
    print(
        f"--jobs 2 is {one / jobs:.2f}x as fast as 1 process; two replays at once ran at "
        f"{ceiling:.2f}x the speed of one (the ceiling)"
    )
    print(f"--jobs 2 against the ceiling: {one / jobs / ceiling:.2f} (target >= {JOBS_TARGET:.2f})")
    print()
    print("whole processes, start-up included")
    named = dict(rows)
    floor_process = named["floor, a process"]
    print(f"{'':<28} {'seconds':>8} {'x floor':>8} {'target':>8}")
    for name in ("floor, a process", "callgate replay (command)", "command, --jobs 2"):
        target = f"<= {COMMAND_TARGET:.1f}" if name == "callgate replay (command)" else ""
        took = named[name]
        print(f"{name:<28} {took:>8.3f} {took / floor_process:>8.1f} {target:>8}")
    print(f"{'two commands at once':<28} {named['two commands at once']:>8.3f}")
    one, jobs, both = (
        named["callgate replay (command)"],
        named["command, --jobs 2"],
        named["two commands at once"],
    )
    ceiling = 2 * one / both
    print(
        f"the command with --jobs 2 against the ceiling: {one / jobs / ceiling:.2f} "
        f"(target >= {JOBS_TARGET:.2f})"
    )


if __name__ == "__main__":
    main()
