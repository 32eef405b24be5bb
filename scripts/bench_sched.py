"""The native scheduler service draining a queue: how many jobs it schedules
per second of its own wall time, and how long a pass takes.

The whole service runs (the store on a SQLite file, priorities, JobSortKey,
the cluster model with its utilization diagrams, reservations, accounting);
only the jobs run in virtual time (overlay_native.simulation.simhosts), so the figures
are the scheduler's alone. For scale: OAR's Python scheduler manages about
11 jobs per second with 1,000 jobs queued on 100 resources.

    /opt/plus-venv/bin/python scripts/bench_sched.py
"""

from __future__ import annotations

import random
import statistics
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

from calibration import python_speed
from overlay_native.jobs import Submission
from overlay_native.jobstore import JobStore
from overlay_native.resources.cluster import Cluster
from overlay_native.scheduling.scheduler import Scheduler, Submitter
from overlay_native.simulation.simhosts import Clock, SimulatedHosts

ROOT = Submitter("root", ("root",), True)


@dataclass(frozen=True)
class Scenario:
    name: str
    cluster: str
    jobs: int
    kinds: tuple[str, ...]       # sequential, licensed, parallel


SCENARIOS = [
    Scenario("1,000 sequential jobs, 100 hosts x 1 slot, no reservations", """\
        nodes: [{name: "n[001-100]", ncpus: 1}]
        scheduler: {max_reservation: 0}
        """, 1000, ("sequential",)),
    Scenario("1,000 sequential jobs, 100 x 1, -R y, max_reservation 10", """\
        nodes: [{name: "n[001-100]", ncpus: 1}]
        scheduler: {max_reservation: 10}
        """, 1000, ("reserving",)),
    Scenario("1,000 mixed jobs (licenses, PEs 2-16, -R y), 100 hosts x 8", """\
        complexes: [{name: lic, type: INT, relop: "<=", consumable: YES, urgency: 100}]
        global: {complex_values: {lic: 200}}
        nodes: [{name: "n[001-100]", ncpus: 8}]
        pes: [{name: mpi, slots: 800, allocation_rule: $round_robin},
              {name: smp, slots: 800, allocation_rule: $pe_slots}]
        queues: [{name: all.q, hostlist: ["n[001-100]"], pe_list: [mpi, smp]}]
        scheduler: {max_reservation: 10}
        """, 1000, ("sequential", "licensed", "parallel")),
]


def submission(kind: str, rng: random.Random) -> Submission:
    runtime = rng.choice((60, 300, 900, 1800, 3600))
    hard = f"h_rt={runtime * 2}"
    if kind == "licensed":
        hard += f",lic={rng.randint(1, 4)}"
    if kind == "parallel":
        pe = rng.choice(("mpi", "smp"))
        slots = rng.choice((2, 4, 8, 16)) if pe == "mpi" else rng.choice((2, 4, 8))
        return Submission(("sleeper", str(runtime)), hard=hard, pe=pe, pe_range=((slots, slots),),
                          reserve=True)
    return Submission(("sleeper", str(runtime)), hard=hard, reserve=kind == "reserving")


def drain(scenario: Scenario) -> tuple[float, list[float], int, float]:
    """Submit every job at time 0, then pass at each job end until all ran:
    (wall seconds in passes, each pass's seconds, jobs, virtual makespan)."""
    folder = Path(tempfile.mkdtemp(prefix="plus-bench-sched-"))
    (folder / "cluster.yaml").write_text(textwrap.dedent(scenario.cluster))
    clock = Clock(0)
    hosts = SimulatedHosts(clock)
    scheduler = Scheduler(Cluster(str(folder / "cluster.yaml"), False, duration_offset=0),
                          JobStore(f"sqlite:///{folder / 'plus.db'}"), hosts,
                          str(folder / "accounting"),
                          str(folder / "schedule"), 0, clock)
    rng = random.Random(7)
    for index in range(scenario.jobs):
        scheduler.submit(ROOT, submission(scenario.kinds[index % len(scenario.kinds)], rng))
    passes: list[float] = []
    while scheduler.jobs:
        started = time.perf_counter()
        scheduler.run_pass()
        passes.append(time.perf_counter() - started)
        ends = [end for _, _, end, _ in hosts.jobs.values()]
        if ends:
            clock.now = min(ends)
        elif scheduler.jobs:
            raise RuntimeError("jobs wait but none runs: the scenario cannot drain")
    scheduler.store.close()
    return sum(passes), passes, scenario.jobs, clock.now


def main() -> None:
    print(python_speed())
    print(f"{'scenario':<62} {'jobs/s':>8} {'passes':>6} {'first ms':>9} "
          f"{'median ms':>9} {'max ms':>8} {'total s':>8}")
    for scenario in SCENARIOS:
        total, passes, jobs, _ = drain(scenario)
        print(f"{scenario.name:<62} {jobs / total:8.0f} {len(passes):6d} {passes[0] * 1000:9.1f} "
              f"{statistics.median(passes) * 1000:9.1f} {max(passes) * 1000:8.1f} {total:8.2f}")


if __name__ == "__main__":
    main()
