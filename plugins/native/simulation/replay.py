"""Replay of a workload trace through the scheduling pass, in virtual time:
no processes, the same decisions the daemon would take, and the figures
schedulers are compared by.

Jobs plan with their requested time (plus DURATION_OFFSET). ``overrun``
says what happens to a job that runs longer than it asked for: "kill" ends
it at the request (a batch system enforcing h_rt), "run" lets it finish.
A job that asked for no time plans with ``default_duration`` and is never
killed. A job still running past its plan is assumed to end soon: its
booking is extended by a minute, then by twice as long each time it
overruns again.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from overlay_native.scheduling.dispatch import Policy, SlotPool, dispatch
from overlay_native.simulation.swf import Trace

OVERRUN = ("kill", "run")
_FINISH, _EXTEND, _SUBMIT = 0, 1, 2
_PRUNE_EVERY = 512


@dataclass
class SimulatedJob:
    id: int
    submit: int
    run: int                  # how long it really runs (after any kill)
    slots: int
    duration: int             # what the scheduler plans with
    reserve: bool = True
    start: int = -1
    booked_until: int = 0
    step: int = 60


@dataclass(frozen=True)
class Report:
    policy: str
    overrun: str
    processors: int
    jobs: int
    dropped: int
    makespan: int
    utilization: float
    mean_wait: float
    max_wait: int
    mean_bounded_slowdown: float

    def lines(self) -> list[str]:
        return [f"policy {self.policy}, overrun {self.overrun}, {self.processors} processors",
                f"jobs                  {self.jobs} ({self.dropped} dropped: wider than the machine)",
                f"makespan              {self.makespan} s",
                f"utilization           {self.utilization:.4f}",
                f"mean wait             {self.mean_wait:.1f} s",
                f"max wait              {self.max_wait} s",
                f"mean bounded slowdown {self.mean_bounded_slowdown:.3f}"]


def _jobs(trace: Trace, overrun: str, default_duration: int, offset: int) -> list[SimulatedJob]:
    jobs = []
    for job in trace.jobs:
        asked = job.requested_time if job.requested_time > 0 else 0
        run = min(job.run, asked) if overrun == "kill" and asked else job.run
        jobs.append(SimulatedJob(job.id, job.submit, run, job.slots,
                                 (asked or default_duration) + offset))
    return jobs


def simulate(trace: Trace, policy: Policy, overrun: str = "kill", default_duration: int | None = None,
             duration_offset: int = 0, processors: int | None = None) -> Report:
    if overrun not in OVERRUN:
        raise ValueError(f"overrun: expected one of {', '.join(OVERRUN)}, got {overrun!r}")
    capacity = processors or trace.processors
    if default_duration is None:
        default_duration = max((j.requested_time for j in trace.jobs), default=3600) or 3600
    every = _jobs(trace, overrun, default_duration, duration_offset)
    jobs = [j for j in every if j.slots <= capacity]
    pool = SlotPool(capacity)
    events = [(job.submit, _SUBMIT, job.id, job) for job in jobs]
    heapq.heapify(events)
    pending: list[SimulatedJob] = []
    passes = 0
    while events:
        now = events[0][0]
        while events and events[0][0] == now:
            _, kind, _, job = heapq.heappop(events)
            if kind == _SUBMIT:
                pending.append(job)
            elif kind == _FINISH:
                pool.profile.add(now, job.booked_until, -job.slots)
            elif job.start + job.run > now:          # _EXTEND: still running past its plan
                job.booked_until = now + job.step
                pool.profile.add(now, job.booked_until, job.slots)
                heapq.heappush(events, (job.booked_until, _EXTEND, job.id, job))
                job.step *= 2
        if not pending:
            continue
        decisions = dispatch(pending, pool, now, policy)
        if decisions.started:
            for job, _ in decisions.started:
                job.start = now
                job.booked_until = now + job.duration
                end = now + job.run
                heapq.heappush(events, (end, _FINISH, job.id, job))
                if end > job.booked_until:
                    heapq.heappush(events, (job.booked_until, _EXTEND, job.id, job))
            pending = [job for job in pending if job.start < 0]
        passes += 1
        if passes % _PRUNE_EVERY == 0:
            pool.profile.prune(now)
    return _report(policy, overrun, capacity, jobs, len(every) - len(jobs))


def _report(policy: Policy, overrun: str, capacity: int, jobs: list[SimulatedJob],
            dropped: int) -> Report:
    if not jobs:
        return Report(policy.name, overrun, capacity, 0, dropped, 0, 0.0, 0.0, 0, 0.0)
    first = min(j.submit for j in jobs)
    last = max(j.start + j.run for j in jobs)
    makespan = max(last - first, 1)
    waits = [j.start - j.submit for j in jobs]
    slowdowns = [max(1.0, (w + j.run) / max(j.run, 10)) for w, j in zip(waits, jobs, strict=True)]
    return Report(policy.name, overrun, capacity, len(jobs), dropped, makespan,
                  sum(j.run * j.slots for j in jobs) / (capacity * makespan),
                  sum(waits) / len(jobs), max(waits), sum(slowdowns) / len(jobs))
