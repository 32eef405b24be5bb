"""QUERY on the native backend against the scheduler itself, in virtual
time (overlay_native.simulation.querycheck): how far the estimate is from
the start the job gets when jobs end before their h_rt (a random quarter
to all of it), and what an estimate costs on 1,000 hosts with 1,000 jobs
queued. When jobs end at their h_rt the estimate is exact
(tests/test_query_native.py asserts it); this prints that count too.

    /opt/plus-venv/bin/python scripts/bench_query.py [trials]
"""

from __future__ import annotations

import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from calibration import python_speed
from overlay.api.plugin import Request
from overlay_native.backend import ESTIMATE_SECONDS
from overlay_native.jobs import Submission
from overlay_native.simulation import querycheck

BIG = """\
    nodes: [{name: "n[0001-1000]", ncpus: 1}]
    queues: [{name: all.q, hostlist: ["n[0001-1000]"], slots: 1}]
    scheduler: {max_reservation: 0}
    """


def errors(trials: int) -> None:
    exact = sum(t.estimate == t.actual for t in map(querycheck.trial, range(trials)))
    print(f"jobs end at their h_rt: {exact} of {trials} estimates exact")
    found = [querycheck.trial(seed, early=True) for seed in range(trials)]
    late = sorted(t.error for t in found if t.error is not None)
    never = sum(t.estimate is None and t.actual is None for t in found)
    print(f"jobs end at 1/4 to 1/1 of their h_rt: {len(found)} trials, {never} never start "
          f"(both agree), {len(found) - len(late) - never} disagree on never")
    if not late:
        return
    waits = [t.actual - t.now for t in found if t.error is not None]
    cuts = statistics.quantiles(late, n=20, method="inclusive")
    print(f"  estimate minus start, s: exact {sum(e == 0 for e in late)}, "
          f"early {sum(e < 0 for e in late)}, late {sum(e > 0 for e in late)}")
    print(f"  min {late[0]}, p5 {cuts[0]:.0f}, p25 {cuts[4]:.0f}, median {cuts[9]:.0f}, "
          f"p75 {cuts[14]:.0f}, p95 {cuts[18]:.0f}, max {late[-1]}")
    print(f"  mean {statistics.mean(late):.0f} s against a mean wait of "
          f"{statistics.mean(waits):.0f} s")


def cost() -> None:
    rng = random.Random(1)
    with tempfile.TemporaryDirectory(prefix="plus-bench-query-") as folder:
        world = querycheck.World(Path(folder), BIG, 60)
        for _ in range(2000):
            world.submit(Submission(("sleeper", "7200"), hard=f"h_rt={rng.randrange(600, 7200)}"))
        world.scheduler.run_pass()
        outlook = world.scheduler.outlook()
        print(f"1,000 hosts x 1 slot, {len(outlook.running)} running, {len(outlook.waiting)} "
              f"queued (distinct h_rt each), max_reservation 0:")
        names = [f"n{i:04d}" for i in range(1, 1001)]
        budget = ESTIMATE_SECONDS
        for seconds, what in ((float("inf"), "to the end"), (budget, f"within {budget:g} s")):
            world.backend.estimate_seconds = seconds
            for nodes in (1, 8, 64):
                began = time.perf_counter()
                start, how = world.backend.job_start(
                    Request(world.clock.now, world.clock.now + 3600, nodes), names,
                    (querycheck.USER.user, querycheck.USER.groups))
                took = time.perf_counter() - began
                passes = re.search(r"(\d+) pass", how)
                print(f"  {what:<12} nodes={nodes:<3} "
                      f"{'no earlier than' if 'no earlier' in how else 'starts in':>15} "
                      f"{start - world.clock.now if start else None} s, "
                      f"{passes.group(1) if passes else '-'} passes, {took:.2f} s")
        world.close()


def main() -> None:
    print(python_speed())
    errors(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
    cost()


if __name__ == "__main__":
    main()
