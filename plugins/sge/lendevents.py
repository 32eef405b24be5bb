"""job.preempted events of Grid Engine's lent jobs, written by the leader
into the store's event table (as the native scheduler writes its own), so
the AR's owner and access list and the job's owner see them on the event
stream and webhooks. The engine is made at the first event only."""

from __future__ import annotations

from overlay.api.plugin import JobEventWriter, JobTransition, job_fields
from overlay_sge.ledger import Preemption


class PreemptionEvents:
    """Writes one job.preempted event per preemption, in its own transaction."""

    def __init__(self, url: str | None) -> None:
        self._writer = JobEventWriter(url) if url is not None else None

    def tell(self, preemption: Preemption, now: int) -> None:
        """The event of ``preemption`` at ``now`` (no store: nothing)."""
        if self._writer is None:
            return
        self._writer.write([JobTransition(True, now, preemption.ar_id, job_fields(
            preemption.job, preemption.owner, (preemption.host,), preemption.start)
            | {"preemptible": preemption.mode}, preempted=True)])

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
