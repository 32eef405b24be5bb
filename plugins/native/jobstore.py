"""Persistence of the native batch system's jobs, in the daemon's store
database (SQLite or PostgreSQL), so that a restart loses no job: pending
jobs wait on, and running ones are found again in their hosts' spools.
Several daemons on one PostgreSQL store share the jobs: the leader's
scheduler writes them, a standby reads them (plus_qstat) and leaves the
job commands it is given in ``native_request`` for the leader to carry
out (``overlay_native.relay``).

The tables have a registry of their own (not the core's), so they exist
only where the native backend runs; ids run from 1 to 9,999,999 and wrap,
skipping ids in use, like Grid Engine's.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Iterator

from sqlalchemy.orm import registry
from sqlmodel import Field, Session, SQLModel, delete, select

from overlay.api.plugin import StoreError, create_tables, make_engine, next_id
from overlay_native.acct import one_line
from overlay_native.jobs import MAX_JOB_ID, Job, JobState, Placement, Submission

log = logging.getLogger("plus.native")


class _Base(SQLModel, registry=registry()):
    pass


class JobRow(_Base, table=True):
    __tablename__ = "native_job"

    id: int = Field(primary_key=True)
    owner: str = Field(index=True)
    groups: str
    submit_time: int
    submission: str
    state: str
    placement: str | None = None
    start_time: int | None = None
    error: str = ""
    deleting: bool = False


class JobCounterRow(_Base, table=True):
    __tablename__ = "native_counter"

    name: str = Field(primary_key=True)
    value: int


class JobRequestRow(_Base, table=True):
    """A job command given at a standby, until its caller has the leader's answer."""

    __tablename__ = "native_request"

    id: int | None = Field(default=None, primary_key=True)
    op: str
    caller: str                  # JSON: uid, user, groups, is_manager
    args: str                    # JSON
    created: int
    state: str = Field(default="new", index=True)    # new, taken, done
    reply: str | None = None     # JSON: {"data": ...} or {"error": kind, "message": ...}


@dataclass(frozen=True)
class StoredJob:
    """A job as stored: its requests are parsed again by the daemon, against
    the complexes of the day."""

    id: int
    owner: str
    groups: tuple[str, ...]
    submit_time: int
    submission: Submission
    state: JobState
    placement: Placement | None
    start_time: int | None
    error: str
    deleting: bool


class JobStore:
    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        create_tables(self.engine, url, _Base.metadata)

    def close(self) -> None:
        self.engine.dispose()

    def load(self) -> Iterator[StoredJob]:
        """Every stored job; one whose record cannot be read comes back in
        error state (Eqw) saying why, so that it is seen and can be deleted
        while the others are restored."""
        with Session(self.engine) as session:
            rows = session.exec(select(JobRow).order_by(JobRow.id)).all()
        for row in rows:
            try:
                stored = _stored(row)
            except Exception as error:    # a damaged record, or one of another version
                why = one_line(f"its stored record cannot be read: {error}")
                log.warning("job %s: %s", row.id, why)
                stored = StoredJob(row.id, str(row.owner), (), 0, Submission(()), JobState.ERROR,
                                   None, None, why, False)
            yield stored

    def create(self, job: Job) -> Job:
        """Store a new job under the next free id (1..MAX_JOB_ID, wrapping,
        skipping ids in use); the id is set on ``job``."""
        with Session(self.engine) as session, session.begin():
            found = next_id(session, JobCounterRow, "jobseqnum", JobRow, MAX_JOB_ID)
            if found is None:
                raise StoreError(f"no job id is free: all ids up to {MAX_JOB_ID} are in use")
            job.id = found
            session.add(_row(job))
        return job

    def save(self, job: Job) -> None:
        with Session(self.engine) as session, session.begin():
            session.merge(_row(job))

    def remove(self, job_id: int) -> None:
        with Session(self.engine) as session, session.begin():
            session.exec(delete(JobRow).where(JobRow.id == job_id))


def _stored(row: JobRow) -> StoredJob:
    return StoredJob(
        row.id, row.owner, tuple(filter(None, row.groups.split(","))), row.submit_time,
        Submission.from_dict(json.loads(row.submission)), JobState(row.state),
        Placement.from_dict(json.loads(row.placement)) if row.placement else None,
        row.start_time, row.error, row.deleting)


def _row(job: Job) -> JobRow:
    return JobRow(id=job.id, owner=job.owner, groups=",".join(job.groups),
                  submit_time=job.submit_time,
                  submission=job.submission.encoded,
                  state=job.state.value,
                  placement=json.dumps(job.placement.to_dict()) if job.placement else None,
                  start_time=job.start_time, error=job.error, deleting=job.deleting)
