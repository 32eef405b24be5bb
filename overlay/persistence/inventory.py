"""The inventory in the store: the batch system's running jobs as the
leader's pass last observed them (``overlay.contract.backend.Inventory``),
so that every daemon answers ``conflict: avoid`` and QUERY from the same
one, read from its memory, and no use case asks the batch system.

The leader writes a job's row only when the job came, changed or went (a
gone job's row stays as a tombstone for TOMBSTONES revisions), under the
inventory's next revision, and says so on the store's channel; it renews
the time it observed them at every pass (one counter). Other daemons take
in the rows written after the revision they hold (``take``, at each word
of the change feed), so the cost follows what changed. On SQLite one daemon
serves the store: nothing is written, the inventory stays in memory.
"""

from __future__ import annotations

import threading
from typing import Iterable

from sqlalchemy import BigInteger, select, text, update
from sqlalchemy.dialects.postgresql import insert
from sqlmodel import Field, SQLModel

from overlay.contract.backend import Inventory, Job
from overlay.persistence.store import CounterRow, Store, database_errors

TOMBSTONES = 1000
"""Revisions a gone job's row is kept: a daemon further behind reads every row."""
_REVISION, _OBSERVED, _PRUNED = "inventory", "inventory_observed", "inventory_pruned"


class InventoryJobRow(SQLModel, table=True):
    __tablename__ = "inventory_job"

    id: str = Field(primary_key=True)
    owner: str
    nodes: str
    reservation: int | None = None
    start: int | None = Field(default=None, sa_type=BigInteger)
    limit_end: int | None = Field(default=None, sa_type=BigInteger)
    revision: int = Field(sa_type=BigInteger, index=True)
    gone: bool = False


_JOBS, _COUNTERS = InventoryJobRow.__table__, CounterRow.__table__
_READ_COUNTERS = select(_COUNTERS.c.name, _COUNTERS.c.value).where(
    _COUNTERS.c.name.in_([_REVISION, _OBSERVED, _PRUNED]))


def _row(job: Job, revision: int) -> dict:
    return dict(id=job.id, owner=job.owner, nodes=",".join(job.nodes),
                reservation=job.reservation, start=job.start, limit_end=job.runtime_limit_end,
                revision=revision, gone=False)


def _job(row) -> Job:
    return Job(row.id, row.owner, tuple(filter(None, row.nodes.split(","))), row.reservation,
               row.limit_end, row.start)


def _set_counter(connection, name: str, value: int) -> None:
    statement = insert(_COUNTERS).values(name=name, value=value)
    connection.execute(statement.on_conflict_do_update(index_elements=["name"],
                                                       set_={"value": value}))


class JobInventory:
    """This daemon's copy of the inventory (``current``), and the store's."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.current = Inventory()
        self.revision = 0                   # the store's inventory revision taken in
        self._lock = threading.Lock()

    def publish(self, jobs: Iterable[Job], observed_at: int) -> Inventory:
        """The leader observed ``jobs`` at ``observed_at``: store what changed,
        then hold it."""
        jobs = tuple(jobs)
        with self._lock:
            if not self.store.is_sqlite:
                self._write(jobs, observed_at)
            self.current = Inventory(jobs, observed_at)
            return self.current

    def _write(self, jobs: tuple[Job, ...], observed_at: int) -> None:
        with database_errors(self.store.url), self.store.engine.begin() as connection:
            counters = dict(connection.execute(_READ_COUNTERS).all())
            stored = counters.get(_REVISION, 0)
            if stored == self.revision:
                before = {job.id: job for job in self.current.jobs}
            else:                           # another leader wrote since: compare with the rows
                before = {row.id: _job(row) for row in connection.execute(
                    select(_JOBS).where(_JOBS.c.gone.is_(False)))}
            after = {job.id: job for job in jobs}
            written = [job for job_id, job in after.items() if before.get(job_id) != job]
            gone = sorted(before.keys() - after.keys())
            revision = stored
            if written or gone:
                revision = stored + 1
                if written:
                    upsert = insert(_JOBS)
                    connection.execute(upsert.on_conflict_do_update(
                        index_elements=["id"],
                        set_={name: upsert.excluded[name] for name in _row(written[0], 0)
                              if name != "id"}), [_row(job, revision) for job in written])
                if gone:
                    connection.execute(update(_JOBS).where(_JOBS.c.id.in_(gone))
                                       .values(gone=True, revision=revision))
                self._prune(connection, revision, counters.get(_PRUNED, 0))
                _set_counter(connection, _REVISION, revision)
                connection.execute(text("SELECT pg_notify(:channel, :what)"),
                                   {"channel": self.store.channel,
                                    "what": f"inventory {revision}"})
            _set_counter(connection, _OBSERVED, observed_at)
        self.revision = revision

    @staticmethod
    def _prune(connection, revision: int, pruned: int) -> None:
        """Drop tombstones TOMBSTONES revisions old, noting up to where."""
        last = revision - TOMBSTONES
        if last > pruned:
            connection.execute(_JOBS.delete().where(_JOBS.c.gone.is_(True),
                                                    _JOBS.c.revision <= last))
            _set_counter(connection, _PRUNED, last)

    def take(self) -> bool:
        """Take in what the leader published since this daemon last looked;
        whether anything changed (its time included)."""
        if self.store.is_sqlite:
            return False
        with self._lock:
            with database_errors(self.store.url), self.store.engine.connect() as connection:
                with connection.begin():
                    connection.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"))
                    counters = dict(connection.execute(_READ_COUNTERS).all())
                    revision, observed = counters.get(_REVISION, 0), counters.get(_OBSERVED)
                    if revision == self.revision:
                        if observed == self.current.observed_at:
                            return False
                        self.current = Inventory(self.current.jobs, observed)
                        return True
                    whole = counters.get(_PRUNED, 0) > self.revision
                    rows = connection.execute(select(_JOBS).where(
                        _JOBS.c.gone.is_(False) if whole else
                        _JOBS.c.revision > self.revision)).all()
            jobs = {} if whole else {job.id: job for job in self.current.jobs}
            for row in rows:
                if row.gone:
                    jobs.pop(row.id, None)
                else:
                    jobs[row.id] = _job(row)
            self.revision, self.current = revision, Inventory(tuple(jobs.values()), observed)
            return True
