"""Used node-hours on the backends whose accounting the overlay does not
read (Grid Engine, TORQUE, Slurm): each job the leader's published
inventory saw end in an AR becomes an ``ar_job`` reporting record, put
into the outbox in the transaction that writes the inventory's change and
the job's ``job.ended`` event, so it is written once whichever daemon
leads and however often one restarts, and asks the batch system nothing
more. Its precision is the pass's: the job's start is the batch system's,
its end the pass that no longer saw it (up to ``reconcile_interval``
late), and a job that started and ended between two passes is not seen.
"""

from __future__ import annotations

from typing import Iterable

from sqlalchemy import Connection, select

from overlay.events.jobs import JobTransition
from overlay.persistence.store import REPORTING, ReservationRow, put_reports
from overlay.reporting.accounting import ar_job_records

_ARS = ReservationRow.__table__.c


def put_ended_job_records(connection: Connection, transitions: Iterable[JobTransition]) -> None:
    """The ar_job records of the jobs ``transitions`` end, into the
    reporting outbox in ``connection``'s transaction (which holds the
    store's write lock: put_job_events took it). A job whose AR is no
    longer stored, or that never started, is left out."""
    ended = [t for t in transitions if t.ended and not t.preempted]
    if not ended:
        return
    submitted = dict(connection.execute(select(_ARS.id, _ARS.submission_time).where(
        _ARS.id.in_(sorted({t.ar_id for t in ended})))).all())
    lines = []
    for transition in ended:
        job, submission = transition.job, submitted.get(transition.ar_id)
        start = job.get("start") or 0
        if submission is not None and 0 < start < transition.time:
            lines += ar_job_records(transition.time, submission, transition.ar_id,
                                    str(job["id"]), str(job["owner"]), start, job["nodes"])
    put_reports(connection, lines, REPORTING)
