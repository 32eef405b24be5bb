"""The reclaim bound of lending idle reserved slots: on the native backend
with many hosts, a running AR whose every slot is lent to preemptible jobs
(plus_qsub -preemptible requeue), the wall time from the AR's own job's
submission to its start, which needs a lent job preempted first; median
and worst over many trials.

The whole scheduler service runs on its own thread as in plus_scheduler
(the store on a SQLite file, the wake-up and flush delay after a
submission, the pass, the preemption's store write and kill, the start);
only the jobs run in virtual time (overlay_native.simulation.simhosts), as
in bench_sched.py. The rest of the cluster is busy with ordinary jobs and
has a queue waiting, so each pass weighs a full cluster. Between trials the
AR's job is deleted and the requeued job runs again on the slot it left,
so every trial meets an AR whose slots are all lent.

    /opt/plus-venv/bin/python scripts/bench_lend.py [trials] [hosts] [ar_hosts]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from calibration import python_speed
from overlay_native.jobs import JobState, Submission
from overlay_native.jobstore import JobStore
from overlay_native.resources.cluster import Cluster
from overlay_native.resources.window import ReservedWindow
from overlay_native.scheduling.scheduler import Scheduler, Submitter
from overlay_native.simulation.simhosts import Clock, SimulatedHosts

SLOTS = 4                      # per host
NOW = 1_800_000_000
OWNER = Submitter("alice", ("staff",), False)
BORROWER = Submitter("bob", ("bob",), False)
OTHERS = Submitter("carol", ("carol",), False)


def wait_for(condition, what: str, timeout: float = 60.0) -> float:
    """Seconds until ``condition()`` holds (polled every millisecond)."""
    began = time.perf_counter()
    while not condition():
        if time.perf_counter() - began > timeout:
            raise SystemExit(f"bench_lend: {what} did not happen within {timeout} s")
        time.sleep(0.001)
    return time.perf_counter() - began


def world(hosts: int, ar_hosts: int) -> tuple[Scheduler, list[int]]:
    """A scheduler running on its thread: AR 7 open on the first
    ``ar_hosts`` hosts, every slot of it lent, the other hosts busy with
    ordinary jobs and as many again waiting; the lent jobs' ids."""
    folder = Path(tempfile.mkdtemp(prefix="plus-bench-lend-"))
    (folder / "cluster.yaml").write_text(
        f'nodes: [{{name: "n[0001-{hosts:04d}]", ncpus: {SLOTS}}}]\n'
        "scheduler: {schedule_interval: 15, NodeSortKey: [NodeName]}\n")
    clock = Clock(NOW)
    scheduler = Scheduler(Cluster(str(folder / "cluster.yaml"), False, duration_offset=60),
                          JobStore(f"sqlite:///{folder / 'plus.db'}"), SimulatedHosts(clock),
                          str(folder / "accounting"), str(folder / "schedule"), 60, clock)
    scheduler.lead(lambda: True)
    names = [f"n{number:04d}" for number in range(1, hosts + 1)]
    scheduler.set_windows([ReservedWindow(7, NOW, NOW + 86400, {n: SLOTS for n in names[:ar_hosts]},
                                          ("alice",), "r")])
    busy = (hosts - ar_hosts) * SLOTS
    for _ in range(2 * busy):
        scheduler.submit(OTHERS, Submission(("sleeper", "80000"), hard="h_rt=80000"))
    lent = [scheduler.submit(BORROWER, Submission(("sleeper", "80000"), hard="h_rt=80000",
                                                  preemptible="requeue"))["id"]
            for _ in range(ar_hosts * SLOTS)]
    scheduler.run_pass()
    running = sum(j.state == JobState.RUNNING for j in scheduler.jobs.values())
    assert running == hosts * SLOTS, f"{running} running of {hosts * SLOTS} slots"
    assert all(scheduler.jobs[j].placement.lent == 7 for j in lent)
    scheduler.start()
    return scheduler, lent


def trial(scheduler: Scheduler, lent: list[int]) -> tuple[float, float]:
    """(seconds from the AR job's submission to its start, seconds until the
    preempted job ran again after the AR job was deleted)."""
    began = time.perf_counter()
    job = scheduler.submit(OWNER, Submission(("sleeper", "80000"), ar=7))["id"]
    wait_for(lambda: scheduler.jobs[job].state == JobState.RUNNING, "the AR job's start")
    reclaim = time.perf_counter() - began
    preempted = [j for j in lent if scheduler.jobs[j].reclaimed or
                 scheduler.jobs[j].state != JobState.RUNNING]
    assert len(preempted) == 1, f"{len(preempted)} lent jobs preempted for one slot"
    scheduler.delete(OWNER, [str(job)])
    refill = wait_for(lambda: job not in scheduler.jobs and all(
        scheduler.jobs[j].state == JobState.RUNNING and not scheduler.jobs[j].reclaimed
        for j in lent), "the preempted job's return")
    return reclaim, refill


def main() -> None:
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    hosts = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    ar_hosts = int(sys.argv[3]) if len(sys.argv) > 3 else 60
    print(python_speed())
    print(f"{hosts} hosts x {SLOTS} slots, AR on {ar_hosts} hosts ({ar_hosts * SLOTS} slots, all "
          f"lent), {(hosts - ar_hosts) * SLOTS} ordinary jobs running and as many waiting")
    scheduler, lent = world(hosts, ar_hosts)
    try:
        results = [trial(scheduler, lent) for _ in range(trials)]
    finally:
        scheduler.stop()
    reclaims, refills = [r for r, _ in results], [r for _, r in results]
    print(f"reclaim bound, submission -> AR job running ({trials} trials): median "
          f"{statistics.median(reclaims) * 1000:.0f} ms, worst {max(reclaims) * 1000:.0f} ms")
    print("  (of which the daemon's flush delay after a submission: 200 ms)")
    print(f"the preempted job running again after the AR job's end: median "
          f"{statistics.median(refills) * 1000:.0f} ms, worst {max(refills) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
