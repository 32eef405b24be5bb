"""The native jobs as a standby daemon sees them: a cache of the store.

Several daemons serve one PostgreSQL store and only the leader runs the
scheduler. A standby answers plus_qstat, plus_status (which ARs still have
jobs) and the core's checks of running jobs from this cache: each read
takes in only what was written since the revision it has seen (the jobs,
their tombstones, and what the leader published), so a read costs what
changed, not how many jobs there are. When the standby takes the lead, the
scheduler takes the cache's jobs as its own.
"""

from __future__ import annotations

import threading
from typing import Callable

from overlay_native.jobs import Job
from overlay_native.jobstore import JobStore, StoredJob


class JobView:
    """The jobs and the leader's published figures, as last read from the store."""

    def __init__(self, store: JobStore, restore: Callable[[list[StoredJob]], list[Job]]) -> None:
        self.store, self.restore = store, restore
        self.revision: int | None = None       # None: nothing read yet
        self.published: dict[str, str] = {}
        self._jobs: dict[int, Job] = {}
        self._reading = threading.Lock()

    def read(self) -> list[Job]:
        """The jobs as the store holds them now. Jobs are replaced when they
        change, never changed in place: a reader may keep the ones it got."""
        with self._reading:
            changes = self.store.changes_since(self.revision)
            if changes.removed is None:       # read whole: at first, or too far behind
                self._jobs, self.published = {}, {}
            for job_id in changes.removed or ():
                self._jobs.pop(job_id, None)
            self._jobs.update((job.id, job) for job in self.restore(changes.jobs))
            self.published.update(changes.published)
            self.revision = changes.revision
            return list(self._jobs.values())
