"""Benchmark of the reservation core on a 1,000-node embedded cluster.

Prints medians over repeated runs, for 1,000, 10,000 and 100,000 existing ARs:
  plus_reserve and plus_status end to end (process start to exit),
  plus_availnodes over a one-day window,
  the planner's earliest-start query alone.
Targets (at 10,000 ARs): reserve and status <= 60 ms, availnodes <= 100 ms,
earliest start <= 2 ms.

Run as root after scripts/install.sh:  /opt/plus-venv/bin/python scripts/bench_core.py
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sqlmodel import Session

from overlay.model import Request
from overlay.planner import MultiPlanner
from overlay.store import AllocationRow, CounterRow, ReservationRow, Store, _encode_request

NODES = 1000
SLOTS = 8
HOUR = 3600
BIN = Path(sys.executable).parent


def generate(count: int, now: int, seed: int = 1) -> list[tuple[int, int, int, list[int]]]:
    """(id, start, end, node indexes) of ``count`` ARs that never overlap on
    a node: each takes 1-8 neighbouring nodes after their last booking."""
    rng = random.Random(seed)
    free_at = [now + HOUR] * NODES
    ars = []
    for ar_id in range(1, count + 1):
        width = rng.randint(1, 8)
        first = rng.randrange(NODES - width)
        nodes = list(range(first, first + width))
        start = max(free_at[n] for n in nodes) + rng.randint(0, 12) * HOUR
        end = start + rng.randint(1, 12) * HOUR
        for n in nodes:
            free_at[n] = end
        ars.append((ar_id, start, end, nodes))
    return ars


def fill_store(url: str, ars, now: int) -> None:
    store = Store(url)
    with Session(store.engine) as session:
        for ar_id, start, end, nodes in ars:
            request = Request(start=start, end=end, nodes=len(nodes), users=("root",))
            session.add(ReservationRow(id=ar_id, owner="root", owner_group="root", state="w",
                                       submission_time=now, start_time=start, end_time=end,
                                       acl="root", request=_encode_request(request)))
        session.flush()
        for ar_id, start, end, nodes in ars:
            session.add_all(AllocationRow(reservation_id=ar_id, node=f"node{n + 1:04d}", slots=SLOTS,
                                          start_time=start, end_time=end) for n in nodes)
        session.add(CounterRow(name="arseqnum", value=len(ars)))
        session.commit()
    store.close()


def timed(argv: list[str], env: dict, runs: int) -> float:
    """Median wall time of a command, in milliseconds."""
    samples = []
    for _ in range(runs):
        began = time.perf_counter()
        result = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        samples.append((time.perf_counter() - began) * 1000)
        if result.returncode != 0:
            raise SystemExit(f"{argv[0]} failed: {result.stderr.decode()}")
    return statistics.median(samples)


def planner_figures(ars, now: int, runs: int) -> dict[str, float]:
    """The earliest-start query alone (16 whole nodes for 4 h, and a hard
    one: 600 nodes for 12 h), and the index rebuild that follows a booking."""
    planner = MultiPlanner()
    names = [f"node{n + 1:04d}" for n in range(NODES)]
    for name in names:
        planner.set_capacity(name, SLOTS)
    for ar_id, start, end, nodes in ars:
        for n in nodes:
            planner.book(ar_id, names[n], start, end, SLOTS)
    figures = {}
    for label, count, hours in (("planner earliest start", 16, 4),
                                ("  ... 600 nodes x 12 h", 600, 12)):
        samples = []
        for _ in range(runs):
            began = time.perf_counter()
            planner.earliest_start(names, None, count, hours * HOUR, now)
            samples.append((time.perf_counter() - began) * 1000)
        figures[label] = statistics.median(samples)
    samples = []
    for run in range(runs):
        planner.book(("bench", run), names[run], now, now + HOUR, SLOTS)
        began = time.perf_counter()
        planner.earliest_start(names, None, 16, 4 * HOUR, now)
        samples.append((time.perf_counter() - began) * 1000)
    figures["  ... first after a booking"] = statistics.median(samples)
    return figures


def measure(count: int, runs: int) -> dict[str, float]:
    now = int(time.time())
    ars = generate(count, now)
    work = Path(tempfile.mkdtemp(prefix="plus-bench-"))
    try:
        (work / "cluster.yaml").write_text(f"nodes:\n  - {{name: 'node[0001-{NODES:04d}]', slots: {SLOTS}}}\n")
        (work / "plus.yaml").write_text("state_dir: state\nmax_expired: 1000000\n"
                                        "native: {cluster: cluster.yaml, local_host: false}\n")
        fill_store(f"sqlite:///{work}/state/plus.db", ars, now)
        env = {**os.environ, "PLUS_CONF": str(work / "plus.yaml")}
        daemon = subprocess.Popen([str(BIN / "plus_scheduler"), "--log-level", "WARNING"], env=env)
        try:
            deadline = time.time() + 300
            while subprocess.run([str(BIN / "plus_status"), "-r", "1"], env=env,
                                 capture_output=True).returncode != 0:
                if time.time() > deadline or daemon.poll() is not None:
                    raise SystemExit("plus_scheduler did not start")
                time.sleep(0.2)
            figures = {
                "plus_reserve": timed([str(BIN / "plus_reserve"), "-s", "now+1h", "-D", "2h", "-n", "2"],
                                      env, runs),
                "plus_status -r": timed([str(BIN / "plus_status"), "-r", str(count // 2)], env, runs),
                "plus_status (all)": timed([str(BIN / "plus_status")], env, max(3, runs // 4)),
                "plus_availnodes 1 day": timed([str(BIN / "plus_availnodes"), "-s", "now+2d",
                                                "-e", "now+3d"], env, runs),
                "python -c pass": timed([sys.executable, "-c", "pass"], env, runs),
            }
        finally:
            daemon.terminate()
            daemon.wait()
        figures.update(planner_figures(ars, now, runs))
        return figures
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="1000,10000,100000", help="numbers of existing ARs")
    parser.add_argument("--runs", type=int, default=15, help="runs per figure (median)")
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    results = {count: measure(count, args.runs) for count in counts}
    names = list(next(iter(results.values())))
    print(f"{'median ms, ' + str(NODES) + ' nodes':<28}" + "".join(f"{c:>12,} ARs" for c in counts))
    for name in names:
        print(f"{name:<28}" + "".join(f"{results[c][name]:>16.2f}" for c in counts))


if __name__ == "__main__":
    main()
