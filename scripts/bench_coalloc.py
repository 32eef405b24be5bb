"""Benchmark of co-allocation: three sites on loopback, each a daemon on
1,000 nodes holding 10,000 ARs, and the coordinator (overlay.coalloc) in
this process with its log in SQLite. For each run it co-allocates 4 nodes
at every site for one hour and prints the median end-to-end time, and its
split by step: RESQUERY at every site (and the log's first writes), the
prepares, the commits, and the log writes between them.

Run as root after scripts/install.sh:
  /opt/plus-venv/bin/python scripts/bench_coalloc.py [--sites 3] [--ars 10000] [--runs 30]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from bench_ggf import api_site
from calibration import python_speed
from overlay.coalloc.coordinator import Coordinator
from overlay.coalloc.log import Log
from overlay.coalloc.sites import Site

HOUR = 3600


def run(sites: dict[str, Site], log: Log, runs: int) -> dict[str, list[float]]:
    """Per run: the end-to-end and per-step milliseconds."""
    split: dict[str, list[float]] = {"end to end": [], "RESQUERY at every site": [],
                                     "prepare at every site": [], "commit at every site": [],
                                     "log writes between": []}
    count = len(sites)
    for index in range(runs):
        marks: list[float] = []
        coordinator = Coordinator(sites, log, on_step=lambda step, marks=marks:
                                  marks.append(time.perf_counter()))
        began = time.perf_counter()
        earliest = int(time.time()) + 3 * 86400 + index * 2 * HOUR
        coordinator.reserve(HOUR, earliest, earliest + 7 * 86400,
                            {name: "nodes=4" for name in sites})
        done = time.perf_counter()
        # steps: created, preparing, prepared x count, committing, committed x count, finished
        created, preparing = marks[0], marks[1]
        prepared, committing = marks[1 + count], marks[2 + count]
        committed = marks[2 + 2 * count]
        split["end to end"].append((done - began) * 1000)
        split["RESQUERY at every site"].append((preparing - created) * 1000)
        split["prepare at every site"].append((prepared - preparing) * 1000)
        split["commit at every site"].append((committed - committing) * 1000)
        split["log writes between"].append(((created - began) + (committing - prepared)
                                            + (done - committed)) * 1000)
    return split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sites", type=int, default=3, help="sites on loopback")
    parser.add_argument("--ars", type=int, default=10_000, help="ARs in each site's store")
    parser.add_argument("--runs", type=int, default=30, help="co-allocations (median)")
    args = parser.parse_args()
    print(python_speed(), flush=True)
    now = int(time.time())
    folder = Path(tempfile.mkdtemp(prefix="plus-coalloc-bench-"))
    try:
        with ExitStack() as stack:
            sites = {}
            for index in range(args.sites):
                _, api, token = stack.enter_context(api_site(args.ars, now, seed=index + 1))
                name = "ABCDEFGHIJ"[index]
                sites[name] = Site(name, f"http://127.0.0.1:{api.port}", token, "root")
            log = Log(f"sqlite:///{folder}/coalloc.db")
            split = run(sites, log, args.runs)
            log.close()
        print(f"{args.sites} sites of 1,000 nodes with {args.ars:,} ARs each, 4 nodes per site "
              f"for 1 h, medians of {args.runs} co-allocations, ms:")
        for name, samples in split.items():
            print(f"  {name:<40}{statistics.median(samples):>10.1f}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
