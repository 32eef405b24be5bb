"""The native scheduler replaying real traces (../shared/traces, or paths
given): wall time, peak memory and the schedule's figures per policy.

    /opt/plus-venv/bin/python scripts/bench_sim.py [KTH.swf.gz LANL.swf.gz]

Targets: the KTH trace (28,476 jobs, 100 processors) under EASY in 3 s,
LANL (122,060 jobs, 1,024 processors) under EASY in 30 s, under 1 GiB.
Each replay runs in a child process, so each peak memory is its own.
"""

from __future__ import annotations

import multiprocessing
import resource
import sys
import time
from pathlib import Path

from calibration import python_speed
from overlay_native.scheduling import dispatch
from overlay_native.simulation import replay, swf

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"
RUNS = [("KTH-SP2-1996-2.1-cln.swf.gz", "easy", "kill", 3),
        ("KTH-SP2-1996-2.1-cln.swf.gz", "fcfs", "kill", None),
        ("KTH-SP2-1996-2.1-cln.swf.gz", "conservative", "kill", None),
        ("LANL-CM5-1994-4.1-cln.swf.gz", "easy", "kill", 30),
        ("LANL-CM5-1994-4.1-cln.swf.gz", "easy", "run", 30)]


def run_trace(path: str, policy: str, overrun: str, out) -> None:
    started = time.perf_counter()
    report = replay.simulate(swf.read(path), dispatch.POLICIES[policy], overrun)
    wall = time.perf_counter() - started
    out.send((report, wall, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))


def main() -> None:
    print(python_speed())
    paths = {Path(p).name: p for p in sys.argv[1:]}
    print(f"{'trace':<30} {'policy':<13} {'overrun':<8} {'wall s':>7} {'target':>6} {'MiB':>5} "
          f"{'jobs':>7} {'util':>6} {'mean wait s':>12} {'max wait s':>11} {'bsld':>8}")
    for name, policy, overrun, target in RUNS:
        path = paths.get(name, str(TRACES / name))
        if not Path(path).exists():
            print(f"{name:<30} missing: give its path")
            continue
        here, there = multiprocessing.Pipe()
        child = multiprocessing.Process(target=run_trace, args=(path, policy, overrun, there))
        child.start()
        report, wall, mib = here.recv()
        child.join()
        print(f"{name[:30]:<30} {policy:<13} {overrun:<8} {wall:7.2f} {target or '':>6} {mib:5.0f} "
              f"{report.jobs:7d} {report.utilization:6.3f} {report.mean_wait:12.1f} "
              f"{report.max_wait:11d} {report.mean_bounded_slowdown:8.2f}")


if __name__ == "__main__":
    main()
