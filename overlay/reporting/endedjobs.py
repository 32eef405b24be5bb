"""Node-seconds of the jobs that ended inside each AR still in its window,
summed from the reporting file's acct records as they are appended (a
record counts one node, as /usage counts it): /metrics reads them at every
scrape, so a scrape costs the records appended since the last."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Collection

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
