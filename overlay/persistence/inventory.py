"""The inventory in the store: the batch system's nodes and running jobs as
the leader's pass last observed them (``overlay.contract.backend.Inventory``),
so that every daemon places ARs, finds their nodes' problems and answers
plus_availnodes, ``conflict: avoid``, QUERY and the calendar from the same
one, read from its memory, and no daemon but the leader asks the batch
system (a standby starts without it).

The leader writes a row only for a node or job that came, changed or went
(a gone one's row stays as a tombstone for TOMBSTONES revisions), under the
inventory's next revision, and says so on the store's channel; it renews
the time it observed them at every pass (one counter). A node's load alone
rewrites its row only when it moved by LOAD_STEP and by LOAD_SHARE of the
load last written: a load moves at every pass, and the others need it only
to order nodes (LowestLoadAverage) and for policies' thresholds. Other
daemons take in the rows written after the revision they hold (``take``,
at each word of the change feed), so the cost follows what changed. On
SQLite one daemon serves the store: nothing is written, the inventory
stays in memory, unless the backend's jobs tell of jobs starting and ending
in ARs (below).

Job events: for a backend whose scheduler does not write them itself
(Grid Engine, TORQUE), a job of an AR's queue that came into the
published jobs started, and one that left them ended (``job.started``,
``job.ended``: overlay.events.jobs), written in the transaction that writes
the change, under the store's write lock taken before the rows are read,
so each is written once whichever daemon leads and however often it
restarted; with each job that ended, its ``ar_job`` reporting record
(overlay.reporting.observedjobs: the used node-hours plus_account shows).
Then SQLite's store is written too: a restarted daemon compares what it
observes with the rows, not with an empty memory. A job that started and
ended between two of the leader's passes is never seen.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable

from sqlalchemy import BigInteger, Table, select, text, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Field, SQLModel

from overlay.contract.backend import Inventory, Job
from overlay.events.jobs import JobTransition, end_fields, job_fields, put_job_events
from overlay.language.model import Node
from overlay.persistence.store import (
    CounterRow,
    Store,
    StoreUnavailable,
    database_errors,
    hold_write_lock,
)
from overlay.reporting.observedjobs import put_ended_job_records

TOMBSTONES = 1000
"""Revisions a gone row is kept: a daemon further behind reads every row."""
LOAD_STEP, LOAD_SHARE = 0.5, 0.1
"""A node's load alone is written again when it moved by both since it was last written."""
_REVISION, _OBSERVED, _PRUNED = "inventory", "inventory_observed", "inventory_pruned"


class NodesUnknown(StoreUnavailable):
    """No leader has published the batch system's nodes in the store yet."""


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


class InventoryNodeRow(SQLModel, table=True):
    __tablename__ = "inventory_node"

    id: str = Field(primary_key=True)       # the node's name
    slots: int
    memory_mb: int = Field(sa_type=BigInteger)
    ncpus: int
    arch: str
    os: str
    properties: str                         # JSON
    queues: str
    alive: bool
    load: float
    runs_jobs: bool
    queue_states: str                       # JSON
    idle_since: int = Field(default=0, sa_type=BigInteger)
    revision: int = Field(sa_type=BigInteger, index=True)
    gone: bool = False


@dataclass(frozen=True)
class _Kind:
    """One table of the inventory: its items as rows and back, and whether
    a stored item already says what an observed one does."""

    table: Table
    key: Callable[[Any], str]
    row: Callable[[Any], dict]
    item: Callable[[Any], Any]
    same: Callable[[Any, Any], bool]


def _job_row(job: Job) -> dict:
    return dict(id=job.id, owner=job.owner, nodes=",".join(job.nodes),
                reservation=job.reservation, start=job.start, limit_end=job.runtime_limit_end)


def _job(row) -> Job:
    return Job(row.id, row.owner, tuple(filter(None, row.nodes.split(","))), row.reservation,
               row.limit_end, row.start)


def _node_row(node: Node) -> dict:
    return dict(id=node.name, slots=node.slots, memory_mb=node.memory_mb, ncpus=node.ncpus,
                arch=node.arch, os=node.os, properties=json.dumps(node.properties),
                queues=",".join(node.queues), alive=node.alive, load=node.load,
                runs_jobs=node.runs_jobs, queue_states=json.dumps(node.queue_states),
                idle_since=node.idle_since)


def _node(row) -> Node:
    return Node(row.id, row.slots, row.memory_mb, row.ncpus, row.arch, row.os,
                json.loads(row.properties), tuple(filter(None, row.queues.split(","))),
                row.alive, row.load, runs_jobs=row.runs_jobs,
                queue_states=tuple(map(tuple, json.loads(row.queue_states))),
                idle_since=row.idle_since)


def _node_kept(stored: Node, observed: Node) -> bool:
    """Whether ``stored`` may stay for ``observed``: the same but for the
    load, which is within its step, and the job count, which every daemon
    counts from the published jobs. The idle time is stored: it changes
    only when the node's jobs do, and a daemon that came later could not
    tell it."""
    moved = abs(observed.load - stored.load)
    return ((moved < LOAD_STEP or moved < LOAD_SHARE * stored.load)
            and stored == replace(observed, load=stored.load, running_jobs=stored.running_jobs))


_JOBS = _Kind(InventoryJobRow.__table__, lambda job: job.id, _job_row, _job,
              lambda stored, observed: stored == observed)
_NODES = _Kind(InventoryNodeRow.__table__, lambda node: node.name, _node_row, _node, _node_kept)
_KINDS = (_NODES, _JOBS)
_COUNTERS = CounterRow.__table__
_READ_COUNTERS = select(_COUNTERS.c.name, _COUNTERS.c.value).where(
    _COUNTERS.c.name.in_([_REVISION, _OBSERVED, _PRUNED]))


def _upsert(connection, table: Table):
    """An INSERT that may update its row, in the store's dialect."""
    dialect = sqlite if connection.dialect.name == "sqlite" else postgresql
    return dialect.insert(table)


def _set_counter(connection, name: str, value: int) -> None:
    statement = _upsert(connection, _COUNTERS).values(name=name, value=value)
    connection.execute(statement.on_conflict_do_update(index_elements=["name"],
                                                       set_={"value": value}))


def job_transitions(before: Mapping[str, Job], after: Mapping[str, Job],
                    observed_at: int) -> list[JobTransition]:
    """The jobs of ARs that left (ended) and came into (started) the
    running jobs between two observations, in that order."""
    ended = [JobTransition(True, observed_at, job.reservation,
                           job_fields(job.id, job.owner, job.nodes, job.start)
                           | end_fields(observed_at, None, "gone"))
             for key, job in sorted(before.items()) if job.reservation is not None
             and (key not in after or after[key].reservation != job.reservation)]
    started = [JobTransition(False, job.start or observed_at, job.reservation,
                             job_fields(job.id, job.owner, job.nodes, job.start))
               for key, job in sorted(after.items()) if job.reservation is not None
               and (key not in before or before[key].reservation != job.reservation)]
    return ended + started


class PublishedInventory:
    """This daemon's copy of the inventory (``current``: at the leader what
    it observed, elsewhere what the store holds), and the store's."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.current = Inventory()
        self.revision = 0                   # the store's inventory revision taken in
        self._stored: dict[_Kind, dict[str, Any]] = {kind: {} for kind in _KINDS}
        self._lock = threading.Lock()

    def publish(self, nodes: Iterable[Node], jobs: Iterable[Job], observed_at: int,
                job_events: bool = False) -> Inventory:
        """The leader observed ``nodes`` and ``jobs`` at ``observed_at``:
        store what changed, with ``job_events`` the events of the jobs of
        ARs that started or ended since, then hold it."""
        nodes, jobs = tuple(nodes), tuple(jobs)
        with self._lock:
            if job_events or not self.store.is_sqlite:
                self._write({_NODES: nodes, _JOBS: jobs}, observed_at, job_events)
            self.current = Inventory(jobs, observed_at, nodes)
            return self.current

    def _write(self, observed: dict[_Kind, tuple], observed_at: int, job_events: bool) -> None:
        with database_errors(self.store.url), self.store.engine.begin() as connection:
            if job_events:            # the rows compared with are read under it
                hold_write_lock(connection, self.store.url)
            counters = dict(connection.execute(_READ_COUNTERS).all())
            stored = counters.get(_REVISION, 0)
            revision, changes = stored, {}
            for kind, items in observed.items():
                if stored == self.revision:
                    before = dict(self._stored[kind])
                else:                       # another leader wrote since: compare with the rows
                    before = {row.id: kind.item(row) for row in connection.execute(
                        select(kind.table).where(kind.table.c.gone.is_(False)))}
                after = {kind.key(item): item for item in items}
                written = {key: item for key, item in after.items()
                           if key not in before or not kind.same(before[key], item)}
                changes[kind] = (before, written, sorted(before.keys() - after.keys()))
                if job_events and kind is _JOBS:
                    transitions = job_transitions(before, after, observed_at)
                    put_job_events(connection, self.store.url, transitions)
                    put_ended_job_records(connection, transitions)
            if any(written or gone for _, written, gone in changes.values()):
                revision = stored + 1
                for kind, (_, written, gone) in changes.items():
                    self._write_kind(connection, kind, written, gone, revision)
                self._prune(connection, revision, counters.get(_PRUNED, 0))
                _set_counter(connection, _REVISION, revision)
                if not self.store.is_sqlite:
                    connection.execute(text("SELECT pg_notify(:channel, :what)"),
                                       {"channel": self.store.channel,
                                        "what": f"inventory {revision}"})
            _set_counter(connection, _OBSERVED, observed_at)
        for kind, (before, written, gone) in changes.items():
            before.update(written)
            for key in gone:
                del before[key]
            self._stored[kind] = before
        self.revision = revision

    @staticmethod
    def _write_kind(connection, kind: _Kind, written: dict[str, Any], gone: list[str],
                    revision: int) -> None:
        rows = [kind.row(item) | {"revision": revision, "gone": False}
                for item in written.values()]
        if rows:
            upsert = _upsert(connection, kind.table)
            connection.execute(upsert.on_conflict_do_update(
                index_elements=["id"],
                set_={name: upsert.excluded[name] for name in rows[0] if name != "id"}), rows)
        if gone:
            connection.execute(update(kind.table).where(kind.table.c.id.in_(gone))
                               .values(gone=True, revision=revision))

    @staticmethod
    def _prune(connection, revision: int, pruned: int) -> None:
        """Drop tombstones TOMBSTONES revisions old, noting up to where."""
        last = revision - TOMBSTONES
        if last > pruned:
            for kind in _KINDS:
                connection.execute(kind.table.delete().where(kind.table.c.gone.is_(True),
                                                             kind.table.c.revision <= last))
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
                        self.current = Inventory(self.current.jobs, observed, self.current.nodes)
                        return True
                    whole = counters.get(_PRUNED, 0) > self.revision
                    read = {kind: connection.execute(select(kind.table).where(
                        kind.table.c.gone.is_(False) if whole else
                        kind.table.c.revision > self.revision)).all() for kind in _KINDS}
            for kind, rows in read.items():
                items = {} if whole else self._stored[kind]
                for row in rows:
                    if row.gone:
                        items.pop(row.id, None)
                    else:
                        items[row.id] = kind.item(row)
                self._stored[kind] = items
            self.revision = revision
            self.current = Inventory(tuple(self._stored[_JOBS].values()), observed,
                                     tuple(self._stored[_NODES].values()))
            return True

    def nodes_known(self) -> None:
        """Raise NodesUnknown unless a leader (this daemon or another)
        observed the nodes: a placement on none would be a guess."""
        if self.current.observed_at is None:
            raise NodesUnknown(
                "the batch system's nodes are not known at this daemon yet: no leader has "
                "observed and published them (plus_scheduler --status shows who leads, and its "
                "log why not); try again once one has")
