"""Lent jobs followed: each preemption told, the requeued run again soon.

Slurm itself lends and reclaims (overlay_slurm.reservations: the AR's
``L<id>``, preempt/partition_prio): the AR's job preempts a lent one the
moment it is scheduled, and the preempted job is requeued, or ends in
state PREEMPTED when it was submitted with --no-requeue. What Slurm does
not do is tell: at each of the leader's passes, a lent job seen running at
the last one and now back to pending (Reason BeginTime) or PREEMPTED
(followed through COMPLETING) was preempted, and becomes a ``job.preempted``
event, the AR's and its owner's (overlay.events.jobs). A requeued
job would wait 120 s (Slurm's delay); it is told to start at once
REQUEUE_SETTLE seconds after it was seen requeued, and then runs as soon
as the AR's nodes are idle again. A lent job that ran and was preempted
between two passes is not told.
"""

from __future__ import annotations

import logging
import re
from typing import Callable, Iterable

from overlay.api.plugin import JobEventWriter, JobTransition, job_fields
from overlay_slurm.ledger import REQUEUE_SETTLE, Ledger
from overlay_slurm.slurm import Slurm
from overlay_slurm.status import SlurmJob

log = logging.getLogger("plus.slurm")
_LENDING = re.compile(r"^L([1-9][0-9]{0,8})$")
REQUEUED = "BeginTime"
"""The reason a requeued job waits under (its EligibleTime)."""

Tell = Callable[[list[JobTransition]], None]


def lender(reservation: str) -> int | None:
    """The AR whose lending reservation this is."""
    match = _LENDING.match(reservation)
    return int(match.group(1)) if match else None


def store_events(url: str) -> Tell:
    """Events written to the store at ``url``, each batch in a transaction
    of its own; one the store refuses is logged (the jobs run on)."""
    writer = JobEventWriter(url)

    def tell(transitions: list[JobTransition]) -> None:
        try:
            writer.write(transitions)
        except Exception:
            log.exception("job.preempted event(s) not written")
    return tell


def _waiting_again(job: SlurmJob | None) -> bool:
    return job is not None and job.state == "PENDING" and job.reason == REQUEUED


class LentJobs:
    """What the leader's pass does about lent jobs."""

    def __init__(self, ledger: Ledger, slurm: Slurm, tell: Tell) -> None:
        self.ledger, self.slurm, self.tell = ledger, slurm, tell

    def observe(self, jobs: Iterable[SlurmJob], now: int) -> None:
        """Compare the lent jobs running with those of the last pass."""
        listed = {job.id: job for job in jobs}
        running = {job.id: {"ar": ar, "owner": job.user, "nodes": list(job.nodes),
                            "start": job.start}
                   for job in listed.values() if job.state == "RUNNING"
                   and (ar := lender(job.reservation)) is not None and self.ledger.lends(ar)}
        before = self.ledger.lent()
        ending = {job_id: before[job_id] for job_id in before if job_id not in running
                  and job_id in listed and listed[job_id].state not in ("PENDING", "RUNNING")}
        gone = [job_id for job_id in sorted(before) if job_id not in running | ending]
        requeued = [job_id for job_id in gone if _waiting_again(listed.get(job_id))]
        killed = (self.slurm.preempted() & {job_id for job_id in gone if job_id not in listed}
                  if any(job_id not in listed for job_id in gone) else set())
        transitions = [JobTransition(True, now, before[job_id]["ar"], job_fields(
                           job_id, before[job_id]["owner"], before[job_id]["nodes"],
                           before[job_id]["start"])
                           | {"preemptible": "requeue" if job_id in requeued else "kill"},
                           preempted=True)
                       for job_id in gone if job_id in requeued or job_id in killed]
        if transitions:
            log.info("lent job(s) %s preempted", ", ".join(t.job["id"] for t in transitions))
            self.tell(transitions)
        self.ledger.note_lent(running | ending, {job_id: now for job_id in requeued})
        self._start_again(listed, now)

    def _start_again(self, listed: dict[str, SlurmJob], now: int) -> None:
        settled = [job_id for job_id, seen in self.ledger.requeued().items()
                   if seen <= now - REQUEUE_SETTLE]
        waiting = [job_id for job_id in settled if _waiting_again(listed.get(job_id))]
        if waiting:
            self.slurm.start_now(waiting)
        self.ledger.note_restarted(settled)
