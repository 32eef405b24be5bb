"""job.preempted events of Grid Engine's lent jobs, written by the leader
into the store's event table (as the native scheduler writes its own), so
the AR's owner and access list and the job's owner see them on the event
stream and webhooks. The engine is made at the first event only."""

from __future__ import annotations

import threading

from overlay.api.plugin import (
    JobTransition,
    create_job_event_tables,
    database_errors,
    job_fields,
    make_engine,
    put_job_events,
)
from overlay_sge.ledger import Preemption


class PreemptionEvents:
    """Writes one job.preempted event per preemption, in its own transaction."""

    def __init__(self, url: str | None) -> None:
        self.url = url
        self._engine = None
        self._lock = threading.Lock()

    def tell(self, preemption: Preemption, now: int) -> None:
        """The event of ``preemption`` at ``now`` (no store: nothing)."""
        if self.url is None:
            return
        transition = JobTransition(True, now, preemption.ar_id, job_fields(
            preemption.job, preemption.owner, (preemption.host,), preemption.start)
            | {"preemptible": preemption.mode}, preempted=True)
        with self._lock:
            if self._engine is None:
                self._engine = make_engine(self.url)
                create_job_event_tables(self._engine, self.url)
            with database_errors(self.url), self._engine.begin() as connection:
                put_job_events(connection, self.url, [transition])

    def close(self) -> None:
        with self._lock:
            if self._engine is not None:
                self._engine.dispose()
                self._engine = None
