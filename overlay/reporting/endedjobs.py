"""Node-seconds of the jobs that ended inside each AR still in its window,
summed from the reporting file's acct records as they are appended (a
record counts one node, as /usage counts it): /metrics reads them at every
scrape, and the calendar's AR panel at each change, so a read costs the
records appended since the last. With the running jobs, what each AR in
its window has reserved and used so far (``so_far``)."""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from typing import Collection, Iterable, NamedTuple

from overlay.reporting.accounting import ReportingFollower


class EndedJobs:
    """Per AR: node-seconds of its ended jobs, and their starts (a job
    still in the inventory whose record is in is counted once)."""

    def __init__(self, follower: ReportingFollower) -> None:
        self.follower = follower
        self._lock = threading.Lock()
        self._reading: object = None
        self._seen = 0
        self.node_seconds: Counter = Counter()
        self.starts: dict[int, set[int]] = {}

    def update(self, open_ars: Collection[int]) -> None:
        """Take in the records appended since the last call; keep the sums
        of ``open_ars`` only (an AR that ended needs no more)."""
        with self._lock:
            reading, jobs = self.follower.jobs_after(self._seen, self._reading)
            if reading is not self._reading:
                self._reading, self._seen = reading, 0
                self.node_seconds.clear()
                self.starts.clear()
            self._seen += len(jobs)
            for job in jobs:
                if job.ar in open_ars:
                    self.node_seconds[job.ar] += max(0, job.end - job.start)
                    self.starts.setdefault(job.ar, set()).add(job.start)
            for ar_id in [ar_id for ar_id in self.starts if ar_id not in open_ars]:
                del self.starts[ar_id]
                self.node_seconds.pop(ar_id, None)


class SoFar(NamedTuple):
    """An AR in its window: node-seconds reserved since its start and used
    by its jobs, and how many of its nodes run its jobs now."""

    id: int
    owner: str
    nodes: int
    end: int
    reserved: int
    used: int
    busy: int


def so_far(ended: EndedJobs, ars: Iterable, jobs: Iterable, now: int) -> list[SoFar]:
    """Each of ``ars`` (in their window) by id: reserved is its nodes times
    the time since its start; used, its ended jobs' (the reporting file)
    and its running ``jobs``' so far (the inventory's)."""
    ars = sorted(ars, key=lambda ar: ar.id)
    open_ids = {ar.id for ar in ars}
    ended.update(open_ids)
    running = defaultdict(list)
    for job in jobs:
        if job.reservation in open_ids:
            running[job.reservation].append(job)
    rows = []
    for ar in ars:
        nodes = set(ar.node_names)
        used = ended.node_seconds.get(ar.id, 0)
        starts = ended.starts.get(ar.id, ())
        busy: set[str] = set()
        for job in running.get(ar.id, ()):
            busy.update(job.nodes)
            if job.start not in starts:
                used += len(set(job.nodes)) * max(0, now - max(job.start or ar.start, ar.start))
        rows.append(SoFar(ar.id, ar.owner, len(nodes), ar.end,
                          len(nodes) * max(0, min(now, ar.end) - ar.start), used,
                          len(busy & nodes)))
    return rows
