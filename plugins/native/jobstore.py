"""Persistence of the native batch system's jobs, in the daemon's store
database (SQLite or PostgreSQL), so that a restart loses no job: pending
jobs wait on, and running ones are found again in their hosts' spools.
Several daemons on one PostgreSQL store share the jobs: the leader's
scheduler writes them, a standby reads them (plus_qstat) and leaves the
job commands it is given in ``native_request`` for the leader to carry
out (``overlay_native.relay``).

Each write takes the jobs' next revision (a counter advanced under the
jobs' write lock, so revisions follow the commits' order) and marks what
it writes with it; a removal leaves a tombstone. A standby keeps the jobs
as a cache and reads only what changed since the revision it has seen
(``changes_since``), as the core's store does for ARs. The leader also
publishes what its passes found and plus_qstat shows (a job's priority,
urgency and reasons; the hosts' loads; the open ARs' slots), written only
where it changed, so that plus_qstat answers the same at every daemon.

Fencing: a daemon taking the lead takes the next epoch (``take_epoch``),
under the same write lock, before it reads the jobs. Every write checks
under that lock that the epoch is still its own, so a leader that was
stopped and woke up after another took over writes nothing (``Fenced``):
whatever it wrote before the new leader's epoch, the new leader reads.
A job's end and its records, for the accounting file and the reporting
file (the store's outbox), commit in one transaction, so a crash leaves
both or neither, and a fenced leader leaves neither; so do a job of an
AR's start (its write as running) and end and their events. A job is started on its host only after
its write as being started (t, with its placement) committed under the
fence, so a fenced leader starts nothing more; a start whose write
committed just before another daemon took the epoch is refused by its host
once the new leader polled it (the spool's epoch: shepherd.epoch_fence).
What remains outside the store, a kill on a host, is guarded only by the
lease's check just before it.

The tables have a registry of their own (not the core's), so they exist
only where the native backend runs; ids run from 1 to 9,999,999 and wrap,
skipping ids in use, like Grid Engine's.
"""

from __future__ import annotations

import json
import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterable, Iterator, Mapping, NamedTuple

from sqlalchemy import BigInteger, func, text, update
from sqlalchemy.orm import registry
from sqlmodel import Field, Session, SQLModel, delete, select

from overlay.api.plugin import (
    JobTransition,
    StoreError,
    StoreUnavailable,
    add_reports_within,
    advance_counter,
    create_job_event_tables,
    create_outbox_tables,
    create_tables,
    database_errors,
    make_engine,
    next_id,
    put_job_events,
)
from overlay_native.acct import one_line
from overlay_native.jobs import MAX_JOB_ID, Job, JobState, Placement, Submission

log = logging.getLogger("plus.native")
_WRITE_LOCK = 0x504C534A  # "PLSJ": the jobs' own, apart from the ARs' write lock
TOMBSTONE_SECONDS = 86400
"""How long a removed job's tombstone is kept: a standby further behind reads every job again."""
_ADDED = {("native_job", "revision"): "BIGINT", ("native_job", "shown"): "VARCHAR"}

Reports = Mapping[str, Iterable[str]]
"""Records for the store's outbox by target (the file they go to)."""
"""Columns added since the first stores were made."""


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
    revision: int | None = Field(default=None, sa_type=BigInteger, index=True)
    shown: str | None = None     # JSON: the last pass's priority, urgency and reasons


class JobRemovedRow(_Base, table=True):
    """A job removed at a revision, for the standbys' caches; kept TOMBSTONE_SECONDS."""

    __tablename__ = "native_job_removed"

    id: int | None = Field(default=None, primary_key=True)
    revision: int = Field(sa_type=BigInteger, index=True)
    job_id: int
    removed_at: int = Field(sa_type=BigInteger, index=True)


class PublishedRow(_Base, table=True):
    """What the leader's passes found beside the jobs, as plus_qstat -f shows it."""

    __tablename__ = "native_published"

    name: str = Field(primary_key=True)
    value: str
    revision: int = Field(sa_type=BigInteger, index=True)


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
    shown: dict | None = None        # the last pass's priority, urgency, reasons


class Changes(NamedTuple):
    """What the store holds after a revision: the revision now, the jobs
    written since (as they are now), the ids of those removed since, and
    what was published since, by name."""

    revision: int
    jobs: list[StoredJob]
    removed: list[int] | None
    published: dict[str, str]


class Fenced(StoreUnavailable):
    """Another daemon took the lead (a later epoch): this one writes no job,
    and a command that met it is refused with nothing changed."""


class JobStore:
    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        self.epoch: int | None = None
        """This daemon's epoch since it took the lead (``take_epoch``); None: not checked."""
        create_tables(self.engine, url, _Base.metadata, _ADDED)
        create_outbox_tables(self.engine, url)     # a job's end puts its records there
        create_job_event_tables(self.engine, url)  # and a job of an AR its start's and end's events

    @property
    def shared(self) -> bool:
        """Whether other daemons may read these jobs (PostgreSQL; SQLite has one daemon)."""
        return not self.url.startswith("sqlite")

    def close(self) -> None:
        self.engine.dispose()

    def load(self) -> list[StoredJob]:
        """Every stored job."""
        return self.changes_since(None).jobs

    def changes_since(self, revision: int | None) -> Changes:
        """What was written after ``revision`` (None: everything), as one
        committed state; everything as well if the tombstones it would
        need are gone (then ``removed`` is None: every job not in ``jobs`` is gone)."""
        engine = self.engine.execution_options(isolation_level="REPEATABLE READ") \
            if self.shared else self.engine
        with database_errors(self.url), Session(engine) as session, session.begin():
            connection = session.connection()
            now = _counter(connection, "revision")
            if revision is not None and _counter(connection, "pruned") > revision:
                revision = None
            jobs, published = select(JobRow).order_by(JobRow.id), select(PublishedRow)
            removed: list[int] | None = None
            if revision is not None:
                jobs = jobs.where(JobRow.revision > revision)
                published = published.where(PublishedRow.revision > revision)
                removed = list(session.exec(select(JobRemovedRow.job_id).where(
                    JobRemovedRow.revision > revision).order_by(JobRemovedRow.revision)))
            stored = [_readable(row) for row in session.exec(jobs)]
            values = {row.name: row.value for row in session.exec(published)}
        return Changes(now, stored, removed, values)

    def take_epoch(self) -> None:
        """This daemon leads now: from this commit on, writes of any daemon
        that led before are refused (``Fenced``)."""
        with self._write(fenced=False) as session:
            self.epoch = advance_counter(session, JobCounterRow, "epoch")

    def create(self, job: Job) -> Job:
        """Store a new job under the next free id (1..MAX_JOB_ID, wrapping,
        skipping ids in use); the id is set on ``job``."""
        with self._write() as session:
            found = next_id(session, JobCounterRow, "jobseqnum", JobRow, MAX_JOB_ID)
            if found is None:
                raise StoreError(f"no job id is free: all ids up to {MAX_JOB_ID} are in use")
            job.id = found
            session.add(_row(job, self._advance(session)))
        return job

    def save(self, job: Job, reports: Reports | None = None,
             events: Iterable[JobTransition] = ()) -> None:
        """Store the job as it is now, and ``reports`` (records of the
        change by the outbox's target, as a job's end's accounting and
        reporting acct records) into the store's outbox and ``events`` (a
        job of an AR starting or ending) into the event table in the same
        transaction."""
        with self._write(reports=reports, events=events) as session:
            session.merge(_row(job, self._advance(session)))

    def remove(self, job_id: int, reports: Reports | None = None,
               events: Iterable[JobTransition] = ()) -> None:
        """Forget a job, leaving its tombstone (and dropping those older than
        TOMBSTONE_SECONDS); ``reports`` and ``events`` go in with it, as with ``save``."""
        with self._write(reports=reports, events=events) as session:
            session.exec(delete(JobRow).where(JobRow.id == job_id))
            now, revision = int(time.time()), self._advance(session)
            session.add(JobRemovedRow(revision=revision, job_id=job_id, removed_at=now))
            last = session.exec(select(func.max(JobRemovedRow.revision)).where(
                JobRemovedRow.removed_at < now - TOMBSTONE_SECONDS)).one()
            if last is not None:
                session.exec(delete(JobRemovedRow).where(JobRemovedRow.revision <= last))
                advance_counter(session, JobCounterRow, "pruned", last)

    def show(self, jobs: Iterable[Job]) -> None:
        """Publish what the last pass found of these jobs (priority, urgency,
        reasons), in one write."""
        with self._write() as session:
            revision = self._advance(session)
            for job in jobs:
                session.exec(update(JobRow).where(JobRow.id == job.id)
                             .values(shown=shown_of(job), revision=revision))

    def publish(self, name: str, value: str) -> None:
        """Publish ``value`` under ``name`` (what plus_qstat -f shows beside the jobs)."""
        with self._write() as session:
            session.merge(PublishedRow(name=name, value=value, revision=self._advance(session)))

    @contextmanager
    def _write(self, fenced: bool = True, reports: Reports | None = None,
               events: Iterable[JobTransition] = ()) -> Iterator[Session]:
        """A transaction holding the jobs' write lock; with ``fenced``, refused
        if another daemon took the lead since this one did; ``reports`` are
        put into the store's outbox and ``events`` into the event table
        last, committed with the write or not at all."""
        with database_errors(self.url), Session(self.engine) as session, session.begin():
            connection = session.connection()
            if self.shared:    # SQLite: BEGIN IMMEDIATE locks already
                connection.execute(text(f"SELECT pg_advisory_xact_lock({_WRITE_LOCK})"))
            if fenced and self.epoch is not None and _counter(connection, "epoch") != self.epoch:
                raise Fenced("another plus_scheduler took the lead: this one no longer writes "
                             "jobs; nothing was changed: try again")
            yield session
            add_reports_within(session, self.url, reports or {})
            put_job_events(session.connection(), self.url, events)

    @staticmethod
    def _advance(session: Session) -> int:
        return advance_counter(session, JobCounterRow, "revision")


def _counter(connection, name: str) -> int:
    return connection.execute(select(JobCounterRow.value).where(
        JobCounterRow.name == name)).scalar() or 0


def shown_of(job: Job) -> str:
    """What plus_qstat shows of the job's last pass, as stored."""
    return json.dumps({"priority": job.priority, "urgency": job.urgency,
                       "reasons": list(job.reasons)})


def _readable(row: JobRow) -> StoredJob:
    """The stored job; one whose record cannot be read comes back in error
    state (Eqw) saying why, so that it is seen and can be deleted while
    the others are restored."""
    try:
        return _stored(row)
    except Exception as error:    # a damaged record, or one of another version
        why = one_line(f"its stored record cannot be read: {error}")
        log.warning("job %s: %s", row.id, why)
        return StoredJob(row.id, str(row.owner), (), 0, Submission(()), JobState.ERROR,
                         None, None, why, False)


def _stored(row: JobRow) -> StoredJob:
    return StoredJob(
        row.id, row.owner, tuple(filter(None, row.groups.split(","))), row.submit_time,
        Submission.from_dict(json.loads(row.submission)), JobState(row.state),
        Placement.from_dict(json.loads(row.placement)) if row.placement else None,
        row.start_time, row.error, row.deleting, json.loads(row.shown) if row.shown else None)


def _row(job: Job, revision: int) -> JobRow:
    return JobRow(id=job.id, owner=job.owner, groups=",".join(job.groups),
                  submit_time=job.submit_time,
                  submission=job.submission.encoded,
                  state=job.state.value,
                  placement=json.dumps(job.placement.to_dict()) if job.placement else None,
                  start_time=job.start_time, error=job.error, deleting=job.deleting,
                  revision=revision, shown=shown_of(job))
