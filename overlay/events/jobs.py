"""Jobs starting and ending in an AR, as events, written in the
transaction of the change that tells of them: the native scheduler's
write of the job as running or ended (overlay_native.jobstore), or the
leader's published inventory gaining or losing a job of an AR's queue
(overlay.persistence.inventory). Either is written once, by the leader,
whichever daemon leads, so its event is too.

Each names its AR as the store holds it in that transaction (owner, name,
access list), so the event is seen as the AR's are, and by the job's owner.
"""

from __future__ import annotations

import json
import threading
from typing import Iterable, Mapping, NamedTuple

from sqlalchemy import Connection, Engine, MetaData, select

from overlay.events.catalog import JOB_ENDED, JOB_PREEMPTED, JOB_STARTED, job_event
from overlay.persistence.store import (
    EventRow,
    ReservationRow,
    create_tables,
    database_errors,
    hold_write_lock,
    make_engine,
    put_events,
)

HOWS = ("exited", "signalled", "limit", "deleted", "lost", "failed", "gone")
"""How a job ended, as its end event's ``how`` says it: by itself (its
``exit_status``), by a signal, at its run-time limit, deleted (by its
owner, a manager or its AR's end), lost by its host, its run failed, or
gone from the batch system's running jobs (Grid Engine and TORQUE: the
exit status is in the batch system's accounting)."""

_ARS = ReservationRow.__table__.c


class JobTransition(NamedTuple):
    """A job of AR ``ar_id`` started (``ended`` False) or ended at ``time``:
    ``job`` its id, owner, nodes and start, and at its end, ``end``,
    ``exit_status`` (None: not known) and ``how`` (one of HOWS). With
    ``preempted``, a job lent AR ``ar_id``'s idle slots that the AR took
    back at ``time`` (``job``'s ``preemptible`` says whether it is
    requeued or killed)."""

    ended: bool
    time: int
    ar_id: int
    job: Mapping[str, object]
    preempted: bool = False

    @property
    def kind(self) -> str:
        """The event type it is told as."""
        return JOB_PREEMPTED if self.preempted else JOB_ENDED if self.ended else JOB_STARTED


def job_fields(job_id: object, owner: str, nodes: Iterable[str], start: int | None) -> dict:
    """What a job event tells of the job at its start."""
    return {"id": str(job_id), "owner": owner, "nodes": list(nodes), "start": start}


def end_fields(end: int, exit_status: int | None, how: str) -> dict:
    """What a job event adds at the job's end."""
    if how not in HOWS:
        raise ValueError(f"how a job ended: {how!r} is none of {', '.join(HOWS)}")
    return {"end": end, "exit_status": exit_status, "how": how}


def put_job_events(connection: Connection, url: str,
                   transitions: Iterable[JobTransition]) -> None:
    """Put the events of ``transitions`` into the event table in
    ``connection``'s transaction, the change's: the store's write lock is
    taken first (after a plugin's own, always in that order), so ids still
    commit in order, and each AR is read under it. Without transitions,
    nothing is taken."""
    transitions = list(transitions)
    if not transitions:
        return
    hold_write_lock(connection, url)
    wanted = sorted({t.ar_id for t in transitions})
    ars = {row.id: {"owner": row.owner, "acl": row.acl,
                    "name": json.loads(row.request).get("name", "")}
           for row in connection.execute(select(_ARS.id, _ARS.owner, _ARS.acl, _ARS.request)
                                         .where(_ARS.id.in_(wanted)))}
    put_events(connection, [job_event(t.kind, t.time, ars.get(t.ar_id), t.ar_id, t.job)
                            for t in transitions])


def create_job_event_tables(engine: Engine, url: str) -> None:
    """Make the event table, and the ARs' it reads, where they are missing,
    for a plugin that writes job events through an engine of its own."""
    metadata = MetaData()
    for table in (EventRow.__table__, ReservationRow.__table__):
        table.to_metadata(metadata)
    create_tables(engine, url, metadata)


class JobEventWriter:
    """Job events a backend finds by itself (a lent job preempted), each
    batch in a transaction of its own on an engine made at the first batch
    (a site that never lends opens none). Thread-safe."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._engine: Engine | None = None
        self._lock = threading.Lock()

    def write(self, transitions: list[JobTransition]) -> None:
        """Store the events of ``transitions``; StoreError if the store refuses."""
        with self._lock:
            if self._engine is None:
                self._engine = make_engine(self.url)
                create_job_event_tables(self._engine, self.url)
            with database_errors(self.url), self._engine.begin() as connection:
                put_job_events(connection, self.url, transitions)

    def close(self) -> None:
        with self._lock:
            if self._engine is not None:
                self._engine.dispose()
                self._engine = None
