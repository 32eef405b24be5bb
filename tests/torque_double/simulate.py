"""Virtual time. There is no daemon: every command (and every API call) first
replays, in time order, what the server, the moms and pbs_sched would have
done since the last one: jobs ending, requeued jobs queued again, jobs
reaching their Execution_Time (queued, for the next cycle), completed jobs
purged, moms reporting in, the periodic scheduling cycle."""

from __future__ import annotations

import random
import time

from . import jobs, nodes, sched, values

JOB_END, REQUEUED, WAIT_OVER, PURGE, MOM_REPORT, CYCLE, KICKED = range(7)
SUBMIT_CYCLE_DELAY = (0.25, 0.6)
"""Seconds from a qsub's return to the cycle it kicked: pbs_sched is another
process, and a real 6.1 server was seen to start a job that long after qsub
exited, the job 'Q' until then (issue 14)."""
RERUN_STEP = (0.02, 0.03)
"""Seconds each of a rerun's two steps takes once the epilogue has run: the
kill to E, and E to queued again. A real 6.1 server took 40 to 60 ms from
qrerun's return to H (issue 14)."""


def now(state: dict) -> float:
    """Real time moved on by ``advance``, or the frozen clock's time."""
    frozen = state.get("frozen_at")
    return time.time() + state["offset"] if frozen is None else frozen


def scheduling(state: dict) -> bool:
    return values.is_true(state["server"].get("scheduling"))


def iteration(state: dict) -> int:
    return max(1, int(state["server"].get("scheduler_iteration", "600")))


def kick(state: dict, at: float) -> None:
    """A cycle triggered by qrls or 'set server scheduling=true'."""
    if scheduling(state):
        sched.cycle(state, at)


def kick_later(state: dict, at: float) -> None:
    """The cycle a qsub triggers, a moment after qsub returns."""
    if scheduling(state):
        due = at + random.uniform(*SUBMIT_CYCLE_DELAY)
        state["kicked_at"] = min(state.get("kicked_at") or due, due)


def catch_up(state: dict, until: float) -> None:
    """Play every event due up to ``until``, earliest first (a job's end
    before a cycle at the same time)."""
    while True:
        event = _next_event(state, until)
        if event is None:
            return
        at, kind, key = event
        if kind == JOB_END:
            job = state["jobs"][key]
            if job["ending"] == "rerun":
                jobs.begin_requeue(job, at, at + random.uniform(*RERUN_STEP))
            else:
                jobs.complete(state, job, at, job["end_status"])
        elif kind == REQUEUED:
            jobs.requeue(state["jobs"][key], at)
        elif kind == WAIT_OVER:
            jobs.set_state(state["jobs"][key], jobs.QUEUED, at)
        elif kind == PURGE:
            jobs.purge(state, state["jobs"][key])
        elif kind == MOM_REPORT:
            nodes.mom_report(state, key, at)
        elif kind == KICKED:
            state["kicked_at"] = None
            sched.cycle(state, at)
        else:
            sched.cycle(state, at)
            state["next_cycle"] = at + iteration(state)


def _next_event(state: dict, until: float) -> tuple[float, int, str] | None:
    events = []
    for job in state["jobs"].values():
        if job["state"] == jobs.RUNNING and job["end_at"] <= until:
            events.append((job["end_at"], JOB_END, job["id"]))
        elif job["state"] == jobs.EXITING and job["requeue_at"] <= until:
            events.append((job["requeue_at"], REQUEUED, job["id"]))
        elif job["state"] == jobs.WAITING and job["execution_time"] <= until:
            events.append((job["execution_time"], WAIT_OVER, job["id"]))
        elif job["state"] == jobs.COMPLETE and job["purge_at"] <= until:
            events.append((job["purge_at"], PURGE, job["id"]))
    for name, node in state["nodes"].items():
        if node["report_at"] is not None and node["report_at"] <= until:
            events.append((node["report_at"], MOM_REPORT, name))
    if scheduling(state) and state["next_cycle"] <= until:
        events.append((state["next_cycle"], CYCLE, ""))
    if scheduling(state) and state.get("kicked_at") is not None and state["kicked_at"] <= until:
        events.append((state["kicked_at"], KICKED, ""))
    return min(events) if events else None
