"""A soak of the proxy: many turns through one mitmdump with the callgate addon, observing.

The upstream, the clients and the mitmdump process are ``bench_proxy``'s. ``TURNS`` turns of 50
events go through one proxy from ``CLIENTS`` clients at once; every ``SAMPLE`` turns the proxy's
resident memory and open file descriptors are read from ``/proc`` (for mitmdump and for the
fixture writer it started), with the CPU time spent since the last sample. At the end: every
body reached its client byte for byte (``bench_proxy.client`` checks each), one fixture per turn
and each turn's own (the arguments are kept, and every turn's first argument is its number, so a
fixture written from another turn's stream, or twice, shows), and the slope of memory and of
descriptors per 1,000 turns over the second half (the first half holds the warm-up: caches,
the writer's start).

Every client's first turn is held open by the upstream until all clients have theirs open, so
that ``CLIENTS`` streams pass through the proxy at once (the count is printed).

Run: ``make soak`` (``TURNS=10000 CLIENTS=8`` by default) or ``python bench/soak_proxy.py``;
``TURNS=2000 CLIENTS=200`` for 200 streams at once.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_proxy import Upstream, client, cpu_seconds, mitmdump

from callgate import check

TURNS = int(os.environ.get("TURNS", 10_000))
CLIENTS = int(os.environ.get("CLIENTS", 8))
SAMPLE = int(os.environ.get("SAMPLE", 500))
EVENTS = 50
PAGE = os.sysconf("SC_PAGE_SIZE")


def children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def resident_mb(pid: int) -> float:
    return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE / 2**20


def descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def slope(points: list[tuple[int, float]]) -> float:
    """Least-squares change of the value per 1,000 turns."""
    xs, ys = [x for x, _ in points], [y for _, y in points]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    spread = sum((x - mean_x) ** 2 for x in xs) or 1.0
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread * 1000


def main() -> int:
    # Every client's first turn is held open until all clients' are: CLIENTS streams at once.
    upstream = Upstream(hold_first=CLIENTS)
    with tempfile.TemporaryDirectory() as folder_name:
        folder = Path(folder_name)
        # Arguments kept, so that each fixture shows which turn it came from.
        process, port = mitmdump(
            "observe", upstream.url, folder, "--set", "callgate_arguments=keep"
        )
        done = 0
        lock = threading.Lock()
        samples: list[dict[str, float]] = []
        print(
            f"{TURNS} turns of {EVENTS} events from {CLIENTS} clients through one proxy; "
            f"a sample every {SAMPLE} turns",
            flush=True,
        )
        print(
            f"{'turns':>6} {'proxy MB':>9} {'writer MB':>9} {'proxy fds':>9} {'writer fds':>10} "
            f"{'CPU ms/turn':>11}",
            flush=True,
        )
        cpu_before, turns_before = cpu_seconds(process.pid), 0

        def take_sample() -> None:
            nonlocal cpu_before, turns_before
            writers = children(process.pid)
            cpu = sum(cpu_seconds(pid) for pid in [process.pid, *writers])
            sample = {
                "turns": done,
                "proxy_mb": resident_mb(process.pid),
                "writer_mb": sum(resident_mb(pid) for pid in writers),
                "proxy_fds": descriptors(process.pid),
                "writer_fds": sum(descriptors(pid) for pid in writers),
                "cpu_ms": (cpu - cpu_before) / max(1, done - turns_before) * 1000,
            }
            cpu_before, turns_before = cpu, done
            samples.append(sample)
            print(
                f"{done:>6} {sample['proxy_mb']:>9.1f} {sample['writer_mb']:>9.1f} "
                f"{sample['proxy_fds']:>9.0f} {sample['writer_fds']:>10.0f} "
                f"{sample['cpu_ms']:>11.2f}",
                flush=True,
            )

        errors: list[str] = []

        def worker(number: int) -> None:
            nonlocal done
            try:
                for seed in range(number, TURNS, CLIENTS):
                    client(port, f"c{number}", range(seed, seed + 1), EVENTS, "bench", [])
                    with lock:
                        done += 1
                        if done % SAMPLE == 0:
                            take_sample()
            except Exception as error:  # reported below: the run fails
                errors.append(f"client {number}: {error}")

        start = time.monotonic()
        threads = [threading.Thread(target=worker, args=(n,)) for n in range(CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - start
        deadline = time.monotonic() + 300
        fixtures = folder / "fixtures"
        while len(list(fixtures.glob("*.json"))) < TURNS and time.monotonic() < deadline:
            time.sleep(0.2)
        process.terminate()
        process.wait(30)
        seeds = []
        for path in fixtures.glob("*.json"):
            report = check(json.loads(path.read_text()))
            seeds.append(json.loads(report.calls[0].arguments)["v"][0])
    lost = sorted(set(range(TURNS)) - set(seeds))
    doubled = len(seeds) - len(set(seeds))
    half = [s for s in samples if s["turns"] > TURNS / 2]
    print(
        f"\n{TURNS} turns in {elapsed:.0f} s, at most {upstream.peak_streams} streams open at "
        f"once; {len(seeds)} fixtures, {len(lost)} turns without one, {doubled} written twice"
    )
    for key, unit in (
        ("proxy_mb", "MB"),
        ("writer_mb", "MB"),
        ("proxy_fds", "fds"),
        ("writer_fds", "fds"),
    ):
        points = [(int(s["turns"]), s[key]) for s in half]
        print(
            f"{key:<11} {half[0][key]:8.1f} -> {half[-1][key]:8.1f} {unit}; slope over the "
            f"second half {slope(points):+.2f} {unit} per 1,000 turns"
        )
    cpu = [s["cpu_ms"] for s in samples[1:]]
    print(
        f"CPU per turn: first sample {samples[0]['cpu_ms']:.2f} ms, later min "
        f"{min(cpu):.2f} / median {statistics.median(cpu):.2f} / max {max(cpu):.2f} ms"
    )
    for error in errors:
        print(error)
    return 1 if lost or doubled or errors else 0


if __name__ == "__main__":
    sys.exit(main())
