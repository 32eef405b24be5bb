"""QUERY on the native cluster (seed 003: when would a job of this shape
start if submitted now): the scheduler's own passes, run ahead in virtual
time on a copy of its jobs.

The job asked about joins the waiting jobs as a submission now would (its
priority, its place in JobSortKey's order, behind the jobs already
queued). Then a pass runs now and at every instant something changes:
a job ends at its h_rt (a job without one never does, unless the
scheduler plans with a finite default_duration), an AR opens or ends, a
job's -a time comes. Each pass is the daemon's (priorities, order,
``dispatch`` with max_reservation, backfilling), on one model whose
bookings follow the passes' starts and the jobs' ends, on the hosts that
run jobs, beside the ARs. The answer is the pass that starts it: exact
while jobs run until their h_rt, early when some end sooner.

Each pass costs what a real one does, and a long queue on a large
cluster takes hundreds of them (seconds), so an estimate stops at its
``deadline``: the answer is then a lower bound, the instant the passes
had reached, said as such. A client cannot make one question cost more.
"""

from __future__ import annotations

import heapq
import itertools
import time
from dataclasses import dataclass, replace
from typing import Collection, Iterator

from overlay.api.plugin import order_jobs
from overlay_native.jobs import Job, JobState, Placement, Submission
from overlay_native.resources.cluster import ClusterConfig
from overlay_native.resources.reserved import Reservations
from overlay_native.resources.timeline import Baseline, ClusterResources
from overlay_native.scheduling.dispatch import Policy, dispatch
from overlay_native.scheduling.priority import priorities
from overlay_native.scheduling.scheduler import Outlook, enforced_h_rt, state_reason
from overlay_native.submit import make_job

_OPENED, _ENDED = "r", "ended"


@dataclass(frozen=True)
class Shape:
    """QUERY's job: ``count`` of the hosts ``among``, ``slots`` each (None:
    whole hosts), for ``duration`` seconds (its h_rt), owned by ``owner``."""

    among: frozenset[str]
    count: int
    slots: int | None
    duration: int
    owner: str
    groups: tuple[str, ...]


@dataclass(frozen=True)
class Estimate:
    """The start found (None: never), the passes it took, and with
    ``stopped`` the estimate ran out of time: no start before ``start``."""
    start: int | None
    passes: int
    stopped: bool = False


class _Model:
    """The pass's Resources, placing QUERY's job by its shape."""

    def __init__(self, resources: ClusterResources, probe: Job, shape: Shape) -> None:
        self.resources, self.probe, self.shape = resources, probe, shape

    def start_now(self, job: Job, now: int) -> Placement | None:
        if job is self.probe:
            return self.resources.place_on_hosts(job, self.shape.among, self.shape.count,
                                                 self.shape.slots, now)
        return self.resources.start_now(job, now)

    def earliest(self, job: Job, now: int) -> tuple[int, Placement] | None:
        return self.resources.earliest(job, now)

    def book(self, job: Job, placement: Placement, start: int) -> None:
        self.resources.book(job, placement, start)

    def unbook(self, job: Job, placement: Placement, start: int) -> None:
        self.resources.unbook(job, placement, start)

    def exhausted(self, now: int) -> bool:
        return self.resources.exhausted(now)


def probe_job(outlook: Outlook, shape: Shape) -> Job:
    """The job a submission of ``shape`` now would be: its h_rt, and its
    slots (for its urgency and JobSortKey) as a parallel job's."""
    config = outlook.config
    job = make_job(config, outlook.next_id, shape.owner, shape.groups, outlook.now,
                   Submission(command=(), name="QUERY", hard=f"h_rt={shape.duration}"),
                   is_manager=True)
    per_host = shape.slots or min((config.host_slots(h) for h in shape.among
                                   if h in config.hosts), default=1)
    job.submission = replace(job.submission, pe="", pe_range=((shape.count * per_host,) * 2,))
    return job


def estimate(outlook: Outlook, shape: Shape, offset: int, baseline: Baseline,
             deadline: float = float("inf")) -> Estimate:
    """When the scheduler's passes would start ``shape`` submitted at
    ``outlook.now``; None: never (too few hosts run jobs, or jobs
    without an end hold them). Past ``deadline`` (time.monotonic), the
    instant reached, as a lower bound."""
    config, now = outlook.config, outlook.now
    probe = probe_job(outlook, shape)
    windows = Reservations(outlook.windows)
    resources = ClusterResources(config, now, offset, outlook.reports, outlook.unavailable,
                                 windows, baseline)
    resources.book_running((job, job.placement, job.start_time) for job in outlook.running)
    model = _Model(resources, probe, shape)
    policy = Policy(config.scheduler.max_reservation)
    events = _Events()
    for job in outlook.running:
        events.ends(job, job.placement, job.start_time, _end(job, job.placement, job.start_time,
                                                            config, offset, now))
    for window in outlook.windows:
        if window.start > now:
            events.add(window.start, _OPENED, window)
        events.add(window.end, _ENDED, window)
    waiting = {job.id: job for job in outlook.waiting}
    for job in waiting.values():
        if job.submission.start_after is not None and job.submission.start_after > now:
            events.add(job.submission.start_after, "", None)
    running = {job.id: job for job in outlook.running}
    passes, at = 0, now
    while at is not None:
        for kind, what in events.due(at):
            _apply(kind, what, at, resources, windows, waiting, running)
        _release_holds(waiting, running)
        resources.advance(at)
        eligible = [job for job in waiting.values()
                    if job.state == JobState.QUEUED and not state_reason(job, at)]
        eligible.append(probe)
        for job_id, found in priorities(eligible, config.table, config.scheduler, at).items():
            (probe if job_id == probe.id else waiting[job_id]).priority = found.prio
        decisions = dispatch(order_jobs(eligible, config.scheduler.job_order), model, at, policy)
        passes += 1
        for job, placement in decisions.started:
            if job is probe:
                return Estimate(at, passes)
            waiting.pop(job.id)
            running[job.id] = job
            job.placement, job.start_time = placement, at
            events.ends(job, placement, at, _end(job, placement, at, config, offset, at))
        following = events.next()
        if following is not None and time.monotonic() > deadline:
            return Estimate(following, passes, stopped=True)
        at = following
    return Estimate(None, passes)


def _end(job: Job, placement: Placement, start: int, config: ClusterConfig, offset: int,
         now: int) -> int | None:
    """When a job holding slots ends: at its h_rt; now if it is being
    deleted; without h_rt, when the scheduler plans it to (never, with
    default_duration INFINITY)."""
    if job.deleting:
        return now
    h_rt = enforced_h_rt(job, placement, config)
    if h_rt is not None:
        return int(start + h_rt)
    planned = placement.duration - offset
    return None if planned == float("inf") else int(start + planned)


def _apply(kind: str, what, at: int, resources: ClusterResources, windows: Reservations,
           waiting: dict[int, Job], running: dict[int, Job]) -> None:
    """One change the clock brings: a job's end, an AR's opening or end
    (its jobs are deleted then), a -a time (nothing but a pass)."""
    if kind == "job":
        job, placement, start = what
        if running.pop(job.id, None) is not None:
            resources.unbook(job, placement, start)
    elif kind == _OPENED and what.id in windows:
        windows.put_all([replace(what, state="r")])
    elif kind == _ENDED:
        windows.remove(what.id)
        for job_id in [i for i, job in waiting.items() if job.ar == what.id]:
            del waiting[job_id]
        for job in [job for job in running.values() if job.ar == what.id]:
            del running[job.id]
            resources.unbook(job, job.placement, job.start_time)


def _release_holds(waiting: dict[int, Job], running: dict[int, Job]) -> None:
    """-hold_jid: a held job without a user hold waits no more once the
    jobs it waits for are gone."""
    for job in waiting.values():
        if job.state == JobState.HELD and not job.submission.hold and not any(
                int(h) in waiting or int(h) in running for h in job.submission.hold_jids):
            job.state = JobState.QUEUED


class _Events:
    """The instants at which a pass may decide something new, in order."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, str, object]] = []
        self._order = itertools.count()

    def add(self, at: int, kind: str, what: object) -> None:
        heapq.heappush(self._heap, (at, next(self._order), kind, what))

    def ends(self, job: Job, placement: Placement, start: int, end: int | None) -> None:
        if end is not None:
            self.add(end, "job", (job, placement, start))

    def due(self, at: int) -> Iterator[tuple[str, object]]:
        while self._heap and self._heap[0][0] <= at:
            _, _, kind, what = heapq.heappop(self._heap)
            yield kind, what

    def next(self) -> int | None:
        return self._heap[0][0] if self._heap else None


def eligible_hosts(names: Collection[str], outlook: Outlook) -> frozenset[str]:
    """The nodes QUERY may count that run jobs at all."""
    runs = {host for _, host in outlook.unavailable}
    return frozenset(name for name in names if name in outlook.config.hosts and name not in runs)
