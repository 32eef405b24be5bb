"""Persistence of ARs (sqlmodel): SQLite in WAL mode by default,
PostgreSQL by URL. The store is the single source of truth.

Every write runs in a transaction that first takes the store's write lock
(SQLite: BEGIN IMMEDIATE; PostgreSQL: a transaction-level advisory lock)
and re-checks node capacity against the database itself, so two daemons
on one database, or any number of concurrent requests, can never book the
same slots twice.

Each write of ARs takes the store's next revision (a counter advanced
under that lock, so revisions follow the commits' order), marks the rows
it writes with it, and leaves a tombstone for an AR it removes: a daemon
that has seen revision N asks ``changes_since(N)`` for everything after
it (PostgreSQL also says NOTIFY plus_store with the revision, so that
others need not poll). A write of an AR whose row is at another revision
than the AR it was derived from is refused (``Stale``): it would overwrite
a change it never saw.

The reporting records a change causes go into the outbox table in the same
transaction (``reports``): the leader appends them to the reporting file
(overlay.persistence.outbox, overlay.reporting.drain), so a change and its
records are committed together or not at all. So do its events (``events``,
the ``event`` table: overlay.persistence.events), which the event stream
and the webhooks carry.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import sqlite3
import time
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from functools import lru_cache
from typing import Callable, Iterable, Iterator, Mapping, NamedTuple

from sqlalchemy import (
    BigInteger,
    Connection,
    Engine,
    Index,
    Integer,
    MetaData,
    bindparam,
    event,
    func,
    insert,
    inspect,
    make_url,
    text,
    update,
)
from sqlalchemy.exc import DatabaseError, OperationalError
from sqlmodel import Field, Session, SQLModel, create_engine, delete, select

from overlay.language.model import (
    Allocation,
    Operation,
    Request,
    Reservation,
    ReservationError,
    State,
)
from overlay.language.request import MAX_AR_ID
from overlay.placement.planner import MultiPlanner, inside
from overlay.wire.codec import encode_request, stored_request

_ADVISORY_LOCK = 0x504C5553  # "PLUS"
NOTIFY_CHANNEL = "plus_store"
"""PostgreSQL's channel on which each write of ARs says its revision (with
the store's schema, ``channel_of``: notifications are per database)."""
TOMBSTONE_SECONDS = 7 * 86400
"""How long a removed AR's tombstone is kept: a daemon further behind than
that (stopped for a week) reads every AR again."""


class StoreError(Exception):
    """The database cannot serve as this version's store."""


class Stale(StoreError):
    """The AR was changed in the store since this copy of it was read."""


class Changes(NamedTuple):
    """What the store holds after a revision: the revision now, the ARs
    written since (as they are now), those removed since, as (id, the
    revision of the removal), and the usage those removals kept
    (``Store.remove``'s ``used``, by AR id)."""

    revision: int
    written: list[Reservation]
    removed: list[tuple[int, int]]
    used: dict[int, Reservation]


class Conflict(ReservationError):
    """The database shows the slots as taken (another request won the race)."""


class StoreUnavailable(ReservationError):
    """The database could not be read or written; nothing was changed."""


def _no_space(exc: BaseException, folder: str | None) -> bool:
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return True
    if "disk is full" in str(exc) or "No space left" in str(exc):
        return True
    try:
        return folder is not None and os.statvfs(folder).f_bavail == 0
    except OSError:
        return False


@contextmanager
def database_errors(url: str) -> Iterator[None]:
    """Turn a failure of the database into one line a user can act on,
    without SQL or passwords: a full disk says so and where."""
    try:
        yield
    except (OperationalError, DatabaseError) as exc:
        database = make_url(url).database if url.startswith("sqlite") else None
        folder = os.path.dirname(os.path.abspath(database)) if database else None
        if _no_space(exc.orig or exc, folder):
            where = f"in {folder}" if folder else "on the database server"
            raise StoreUnavailable(f"no space left {where}: the store could not be written; "
                                   "nothing was changed") from exc
        reason = (str(exc.orig) if exc.orig is not None else str(exc)).strip().splitlines()
        raise StoreUnavailable(f"the store {shown_url(url)} failed ({reason[0] if reason else 'no reason given'}); "
                               "nothing was changed") from exc


class ReservationRow(SQLModel, table=True):
    __tablename__ = "reservation"

    id: int = Field(primary_key=True)
    owner: str = Field(index=True)
    owner_group: str
    state: str = Field(index=True)
    submission_time: int = Field(sa_type=BigInteger)
    start_time: int = Field(index=True, sa_type=BigInteger)
    end_time: int = Field(index=True, sa_type=BigInteger)
    acl: str = ""
    account: str = ""
    message: str = ""
    request: str
    finished_time: int | None = Field(default=None, sa_type=BigInteger)
    pending: str | None = None
    pending_since: int | None = Field(default=None, sa_type=BigInteger)
    pending_request: str | None = None
    idempotency_key: str | None = Field(default=None, index=True)
    granted_pe: str | None = None
    revision: int | None = Field(default=None, sa_type=BigInteger, index=True)
    changed_time: int | None = Field(default=None, sa_type=BigInteger)
    window_set_time: int | None = Field(default=None, sa_type=BigInteger)
    approval_due: int | None = Field(default=None, sa_type=BigInteger)
    series_id: int | None = None


class AllocationRow(SQLModel, table=True):
    __tablename__ = "allocation"
    __table_args__ = (Index("ix_allocation_node_end", "node", "end_time"),)
    """The capacity re-check's bookings of some nodes after a start: ARs are
    mostly made later than those stored, so few end after theirs start
    (a series' leader grants them in time order), whatever is stored."""

    id: int | None = Field(default=None, primary_key=True)
    reservation_id: int = Field(index=True, foreign_key="reservation.id")
    node: str = Field(index=True)
    slots: int
    start_time: int = Field(index=True, sa_type=BigInteger)
    end_time: int = Field(index=True, sa_type=BigInteger)
    pending: bool = False
    held: bool = True  # False once the AR ended or was cancelled: a record, not a booking
    within_id: int | None = Field(default=None, index=True)  # the AR whose slots it uses
    queue: str | None = None    # the cluster queue of a qrsub AR's slots


class UsageRow(SQLModel, table=True):
    """An ended AR kept for the policies (usage caps, monthly quotas) after
    plus_status forgot it: its owner, window and nodes; ``usage_history``
    says how long."""

    __tablename__ = "usage"

    id: int | None = Field(default=None, primary_key=True)
    reservation_id: int
    owner: str = Field(index=True)
    owner_group: str
    end_time: int = Field(index=True, sa_type=BigInteger)
    request: str
    allocations: str


class ClaimRow(SQLModel, table=True):
    """A ResKey claim's nonce, kept until its timestamp is out of the claim
    window, so a replayed claim is refused (overlay.network.reskey)."""

    __tablename__ = "claim_nonce"

    nonce: str = Field(primary_key=True)
    reservation_id: int
    claimed_at: int = Field(index=True, sa_type=BigInteger)


class RemovedRow(SQLModel, table=True):
    """An AR removed at a revision: what daemons keeping the ARs in memory
    drop (``Store.changes_since``), and the usage row it left (which
    they add to the usage the policies read). Kept for ``TOMBSTONE_SECONDS``."""

    __tablename__ = "removed_reservation"

    id: int | None = Field(default=None, primary_key=True)
    revision: int = Field(sa_type=BigInteger, index=True)
    reservation_id: int
    removed_at: int = Field(sa_type=BigInteger, index=True)
    usage_id: int | None = None


REPORTING = "reporting"
"""The outbox's target for the reporting file."""


class ReportRow(SQLModel, table=True):
    """A reporting record waiting in the outbox for the leader to append it
    to the reporting file (overlay.persistence.outbox), inserted in the
    transaction of the change it records. Every insert takes the store's
    write lock, so records commit in ``seq`` order. ``target``: the file
    it goes to (REPORTING, or a plugin's own, as the native backend's
    accounting file)."""

    __tablename__ = "report_outbox"

    seq: int | None = Field(default=None, primary_key=True,
                            sa_type=BigInteger().with_variant(Integer, "sqlite"))
    target: str = Field(default=REPORTING)
    line: str


class ReportMarkRow(SQLModel, table=True):
    """The batch of the outbox being appended to a target's file (at most
    one per target): the file and offset it goes to, its length, digest
    and last ``seq``."""

    __tablename__ = "report_marks"

    target: str = Field(primary_key=True)
    file: str
    offset: int = Field(sa_type=BigInteger)
    length: int = Field(sa_type=BigInteger)
    last: int = Field(sa_type=BigInteger)
    digest: str


class EventRow(SQLModel, table=True):
    """An event (overlay.events.catalog), inserted in the transaction of the
    change it tells of, under the store's write lock: ids commit in order,
    so a reader that got to id N has seen every event up to N. ``key``
    makes an event the clock causes (an AR ending soon) happen once,
    whichever daemon leads; ``owner`` and ``acl`` say who may see it."""

    __tablename__ = "event"
    __table_args__ = {"sqlite_autoincrement": True}   # ids never reused after a prune

    id: int | None = Field(default=None, primary_key=True,
                           sa_type=BigInteger().with_variant(Integer, "sqlite"))
    time: int = Field(sa_type=BigInteger, index=True)
    type: str
    ar_id: int
    owner: str
    acl: str = ""
    data: str
    key: str | None = Field(default=None, unique=True)


class CounterRow(SQLModel, table=True):
    __tablename__ = "counter"

    name: str = Field(primary_key=True)
    value: int


def _encode_request(request: Request) -> str:
    return json.dumps(encode_request(request), separators=(",", ":"))


def _decode_request(raw: str) -> Request:
    return stored_request(json.loads(raw))


def _row_values(ar: Reservation) -> dict:
    """The AR's reservation row as plain values."""
    return dict(
        id=ar.id, owner=ar.owner, owner_group=ar.group, state=ar.state.value,
        submission_time=ar.submission_time, start_time=ar.start, end_time=ar.end,
        acl=",".join(ar.acl), account=ar.account, message=ar.message,
        request=_encode_request(ar.request), finished_time=ar.finished_time,
        pending=ar.pending.value if ar.pending else None, pending_since=ar.pending_since,
        pending_request=_encode_request(ar.pending_request) if ar.pending_request else None,
        idempotency_key=ar.idempotency_key, granted_pe=ar.granted_pe or None,
        revision=ar.revision, changed_time=ar.changed or None,
        window_set_time=ar.window_set or None, approval_due=ar.approval_due,
        series_id=ar.series)


def _to_row(ar: Reservation) -> ReservationRow:
    return ReservationRow(**_row_values(ar))


def _allocation_values(ar: Reservation) -> list[dict]:
    """The AR's allocation rows as plain values: a whole-cluster AR has
    thousands, and building ORM objects for them took a third of a second."""
    rows = [dict(reservation_id=ar.id, node=a.node, slots=a.slots, start_time=ar.start,
                 end_time=ar.end, pending=False, held=ar.holds_resources, within_id=a.within,
                 queue=a.queue or None)
            for a in ar.allocations]
    if ar.pending_request is not None:
        rows += [dict(reservation_id=ar.id, node=a.node, slots=a.slots,
                      start_time=ar.pending_request.start, end_time=ar.pending_request.end,
                      pending=True, held=True, within_id=a.within, queue=a.queue or None)
                 for a in ar.pending_allocations]
    return rows


_ALLOCATIONS = AllocationRow.__table__.c
_BOOKED = select(_ALLOCATIONS.reservation_id, _ALLOCATIONS.node, _ALLOCATIONS.start_time,
                 _ALLOCATIONS.end_time, _ALLOCATIONS.slots, _ALLOCATIONS.within_id).where(
    _ALLOCATIONS.node.in_(bindparam("nodes", expanding=True)),
    _ALLOCATIONS.start_time < bindparam("last"), _ALLOCATIONS.end_time > bindparam("first"),
    _ALLOCATIONS.held, _ALLOCATIONS.reservation_id != bindparam("own"))
"""The bookings of other ARs on some nodes over a span (Store._check_capacity),
built once, like the inserts below: SQLAlchemy works out the cache key of
each new statement it runs. Bookings inside other ARs are left out by the
caller: asked of the database, "within_id IS NULL" made SQLite walk its
within_id index, every allocation stored (75 ms at 200,000), rather than
ix_allocation_node_end (3 ms)."""
_OUTER = select(_ALLOCATIONS.start_time, _ALLOCATIONS.end_time, _ALLOCATIONS.slots).where(
    _ALLOCATIONS.reservation_id == bindparam("outer"), _ALLOCATIONS.node == bindparam("node"),
    _ALLOCATIONS.held, _ALLOCATIONS.pending.is_(False), _ALLOCATIONS.within_id.is_(None))
_INSIDE = select(_ALLOCATIONS.reservation_id, _ALLOCATIONS.start_time, _ALLOCATIONS.end_time,
                 _ALLOCATIONS.slots).where(
    _ALLOCATIONS.within_id == bindparam("outer"), _ALLOCATIONS.node == bindparam("node"),
    _ALLOCATIONS.held, _ALLOCATIONS.reservation_id != bindparam("own"))
"""What an AR holds on a node, and the bookings inside it there (ResAccess)."""
_INSERT_RESERVATION = insert(ReservationRow.__table__)
_COUNTER = select(CounterRow.__table__.c.value).where(
    CounterRow.__table__.c.name == bindparam("counter"))
_ROW_REVISION = select(ReservationRow.__table__.c.revision).where(
    ReservationRow.__table__.c.id == bindparam("id"))
_REMOVED_SINCE = select(RemovedRow.__table__.c.reservation_id, RemovedRow.__table__.c.revision,
                        RemovedRow.__table__.c.usage_id).where(
    RemovedRow.__table__.c.revision > bindparam("revision"))
_LAST_PRUNABLE = select(func.max(RemovedRow.__table__.c.revision)).where(
    RemovedRow.__table__.c.removed_at < bindparam("before"))
_INSERT_ALLOCATIONS = insert(AllocationRow.__table__)
_INSERT_REPORTS = insert(ReportRow.__table__)
_INSERT_EVENTS = insert(EventRow.__table__)


def put_reports(session: Session | Connection, lines: Iterable[str],
                target: str = REPORTING) -> None:
    """Put records for ``target``'s file into the outbox, in the transaction
    (holding the write lock) of the change they record."""
    rows = [{"target": target, "line": line} for line in lines]
    if rows:
        _connection(session).execute(_INSERT_REPORTS, rows)


def put_events(session: Session | Connection, events: Iterable[Mapping]) -> None:
    """Put events (EventRow's fields but the id) into the event table, in
    the transaction (holding the write lock) of the change they tell of."""
    rows = list(events)
    if rows:
        _connection(session).execute(_INSERT_EVENTS, rows)


def _connection(session: Session | Connection) -> Connection:
    return session.connection() if isinstance(session, Session) else session


def _insert_allocations(session: Session, ar: Reservation) -> None:
    rows = _allocation_values(ar)
    if rows:
        session.connection().execute(_INSERT_ALLOCATIONS, rows)


def _from_rows(row: ReservationRow, allocations: list[AllocationRow]) -> Reservation:
    return Reservation(
        id=row.id, owner=row.owner, group=row.owner_group, request=_decode_request(row.request),
        state=State(row.state), submission_time=row.submission_time,
        allocations=[Allocation(a.node, a.slots, a.within_id, a.queue or "")
                     for a in allocations if not a.pending],
        acl=tuple(filter(None, row.acl.split(","))), account=row.account, message=row.message,
        finished_time=row.finished_time,
        pending=Operation(row.pending) if row.pending else None, pending_since=row.pending_since,
        pending_request=_decode_request(row.pending_request) if row.pending_request else None,
        pending_allocations=[Allocation(a.node, a.slots, a.within_id, a.queue or "")
                             for a in allocations if a.pending],
        idempotency_key=row.idempotency_key, granted_pe=row.granted_pe or "",
        revision=row.revision or 0, changed=row.changed_time or row.submission_time,
        window_set=row.window_set_time or 0, approval_due=row.approval_due,
        series=row.series_id)


def _usage_row(used: Reservation) -> UsageRow:
    return UsageRow(reservation_id=used.id, owner=used.owner, owner_group=used.group,
                    end_time=used.end, request=_encode_request(used.request),
                    allocations=",".join(f"{a.node}:{a.slots}" for a in used.allocations))


def _from_usage_row(row: UsageRow) -> Reservation:
    allocations = [Allocation(node, int(slots)) for node, _, slots in
                   (item.rpartition(":") for item in filter(None, row.allocations.split(",")))]
    return Reservation(id=row.reservation_id, owner=row.owner, group=row.owner_group,
                       request=_decode_request(row.request), state=State.EXITED,
                       submission_time=0, allocations=allocations, finished_time=row.end_time)


CUT_OFF = {"connect_timeout": 5, "tcp_user_timeout": 5000, "keepalives": 1,
           "keepalives_idle": 5, "keepalives_interval": 2, "keepalives_count": 2}
"""libpq's bounds on a PostgreSQL server that stopped answering (its
host or the network gone; a URL's own values win): without them a
request, or the lead's heartbeat, waited for TCP's retransmissions, about
15 minutes, instead of failing (and being refused) in seconds."""


def make_engine(url: str) -> Engine:
    """An engine on the store's database: SQLite in WAL mode, every
    transaction taking the write lock at once (BEGIN IMMEDIATE), so that
    writers queue instead of failing; PostgreSQL with dead connections
    replaced and a server cut off found out in seconds (``CUT_OFF``).
    Plugins keeping tables of their own in the store use it too."""
    if not url.startswith("sqlite"):
        given = make_url(url).query
        return create_engine(url, pool_pre_ping=True, connect_args={
            name: value for name, value in CUT_OFF.items() if name not in given})
    database = make_url(url).database
    if database and database != ":memory:":
        os.makedirs(os.path.dirname(os.path.abspath(database)), exist_ok=True)
        _keep_private(database)
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
    event.listen(engine, "connect", _sqlite_connect)
    event.listen(engine, "begin", _sqlite_begin)
    return engine


def _keep_private(database: str) -> None:
    """The store holds job scripts and environments: the database and its
    WAL and shared-memory files are the daemon's alone (SQLite gives the
    latter two the database's mode). A new file is created 0600. An
    existing one is never opened here: closing a descriptor of a file drops
    every POSIX lock this process holds on it, SQLite's too, so a second
    engine on an open store (a plugin's) would leave the first one's
    connections unlocked, and the next process to close the store would
    take them for gone and delete the WAL they still write to."""
    try:
        os.close(os.open(database, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        if not os.access(database, os.R_OK | os.W_OK):     # as opening it would have said
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), database) from None
    for path in (database, database + "-wal", database + "-shm"):
        try:
            if os.stat(path).st_mode & 0o077:
                os.chmod(path, 0o600)
        except FileNotFoundError:
            pass


_ADDED_COLUMNS = {("allocation", "within_id"): "INTEGER",
                  ("reservation", "idempotency_key"): "VARCHAR",
                  ("allocation", "queue"): "VARCHAR", ("reservation", "granted_pe"): "VARCHAR",
                  ("reservation", "revision"): "BIGINT",
                  ("reservation", "changed_time"): "BIGINT",
                  ("reservation", "window_set_time"): "BIGINT",
                  ("reservation", "approval_due"): "BIGINT",
                  ("reservation", "series_id"): "INTEGER",
                  ("report_outbox", "target"): "VARCHAR NOT NULL DEFAULT 'reporting'",
                  ("inventory_node", "idle_since"): "BIGINT NOT NULL DEFAULT 0",
                  ("removed_reservation", "usage_id"): "INTEGER"}
"""Columns added since the first stores were made, nullable or with a
default: a store that lacks one gains it at the daemon's start."""


def create_tables(engine: Engine, url: str, metadata: MetaData,
                  added: Mapping[tuple[str, str], str] | None = None) -> None:
    """Create the tables that do not exist yet, and refuse a database whose
    tables lack columns (a store made by another version) other than those
    added since (``added``: a plugin's own, by table and column, with their
    SQL type). Under the write lock: daemons starting together on a fresh
    PostgreSQL database would otherwise race to create the same types."""
    added_columns = {**_ADDED_COLUMNS, **(added or {})}
    with engine.begin() as connection:
        if not url.startswith("sqlite"):
            connection.execute(text(f"SELECT pg_advisory_xact_lock({_ADVISORY_LOCK})"))
        metadata.create_all(connection)
        inspector = inspect(connection)
        for table in metadata.sorted_tables:
            present = {column["name"]: column for column in inspector.get_columns(table.name)}
            missing = [column.name for column in table.columns if column.name not in present]
            added = [column for column in missing if (table.name, column) in added_columns]
            if missing == added:
                for column in added:
                    connection.execute(text(f"ALTER TABLE {table.name} ADD COLUMN {column} "
                                            f"{added_columns[table.name, column]}"))
                missing = []
            if missing:
                raise StoreError(
                    f"the store {shown_url(url)} was made by another "
                    f"version: table {table.name} lacks {', '.join(missing)}; migrate it or "
                    "give plus_scheduler a new store (-r)")
            _widen_times(connection, table, present)
            _add_indexes(connection, table, inspector)


def _add_indexes(connection, table, inspector) -> None:
    """The indexes a table of a store made by an earlier version lacks
    (create_all makes only those of new tables)."""
    present = {index["name"] for index in inspector.get_indexes(table.name)}
    for index in table.indexes:
        if index.name not in present:
            index.create(connection)


def _widen_times(connection, table, present: dict) -> None:
    """Make the epoch columns of a store made before they were BIGINT wide
    enough for times after 2038 (PostgreSQL's INTEGER stops at 2**31 - 1;
    SQLite's integers are 64-bit anyway)."""
    if connection.dialect.name != "postgresql":
        return
    for column in table.columns:
        if isinstance(column.type, BigInteger) and \
                not isinstance(present[column.name]["type"], BigInteger):
            connection.execute(text(f'ALTER TABLE "{table.name}" ALTER COLUMN '
                                    f'"{column.name}" TYPE BIGINT'))


def channel_of(url: str) -> str:
    """The notification channel of the store at ``url``: one per schema
    (``options=-csearch_path=...``), since a channel is the database's."""
    options = make_url(url).query.get("options", "")
    if not options:
        return NOTIFY_CHANNEL
    return f"{NOTIFY_CHANNEL}_{hashlib.sha256(str(options).encode()).hexdigest()[:16]}"


def shown_url(url: str) -> str:
    """A store URL as logs and messages may show it: without its password."""
    return make_url(url).render_as_string(hide_password=True)


def next_id(session: Session, counters: type, name: str, rows: type, maximum: int) -> int | None:
    """Grid Engine's id sequence (arseqnum, jobseqnum): the id after the last
    one given, 1 to ``maximum`` and round again, skipping ids ``rows`` still
    holds; None when every id is taken. ``counters`` rows have name and value.
    Plain statements on the session's connection: ORM objects for the counter
    and each probe were most of a creation's cost."""
    read, probe, first, advance = _id_statements(counters, rows)
    connection = session.connection()
    value = connection.execute(read, {"counter": name}).scalar()
    candidate = value or 0
    for _ in range(maximum):
        candidate = candidate % maximum + 1
        if connection.execute(probe, {"candidate": candidate}).first() is None:
            connection.execute(first if value is None else advance,
                               {"counter": name, "next": candidate})
            return candidate
    return None


def advance_counter(session: Session, counters: type, name: str, to: int | None = None) -> int:
    """Set the counter ``name`` of ``counters`` (rows of name and value) to
    ``to``, or one past its value (1 for a new counter), in the session's
    transaction; the value set. Callers hold their write lock."""
    read, first, advance = _counter_statements(counters)
    connection = session.connection()
    value = connection.execute(read, {"counter": name}).scalar()
    set_to = (value or 0) + 1 if to is None else to
    connection.execute(first if value is None else advance, {"counter": name, "next": set_to})
    return set_to


@lru_cache(maxsize=None)
def _counter_statements(counters: type) -> tuple:
    """A counter's statements (read, first write, later writes), built once:
    SQLAlchemy works out a statement's cache key on each execution of a new
    one (a tenth of a creation)."""
    counter = counters.__table__
    return (select(counter.c.value).where(counter.c.name == bindparam("counter")),
            insert(counter).values(name=bindparam("counter"), value=bindparam("next")),
            update(counter).where(counter.c.name == bindparam("counter"))
            .values(value=bindparam("next")))


@lru_cache(maxsize=None)
def _id_statements(counters: type, rows: type) -> tuple:
    """next_id's statements: the counter's, and the probe of an id in use."""
    read, first, advance = _counter_statements(counters)
    taken = rows.__table__.c.id
    return read, select(taken).where(taken == bindparam("candidate")), first, advance


def refuse_truncated(url: str) -> None:
    """Before a daemon opens its store: a SQLite file of 0 bytes is a
    truncated one (SQLite writes its header with the first table), and
    starting on it would silently lose every AR."""
    if not url.startswith("sqlite"):
        return
    database = make_url(url).database
    if database and database != ":memory:" and os.path.exists(database) and \
            os.path.getsize(database) == 0 and not os.path.exists(database + "-wal"):
        raise StoreError(f"the store {database} is empty (0 bytes): it was truncated or lost; "
                         "restore it from a backup, or remove it to start with no ARs")


def _check_integrity(engine: Engine, url: str) -> None:
    """SQLite's quick_check at start: a damaged page is found now, not when
    a write fails later with SQL in its message."""
    try:
        with engine.connect() as connection:
            problems = [row[0] for row in connection.exec_driver_sql("PRAGMA quick_check(5)")]
    except DatabaseError as exc:
        problems = [str(exc.orig or exc).splitlines()[0]]
    if problems != ["ok"]:
        lines = [line for text in problems for line in text.splitlines()
                 if line and not line.startswith("***")]
        raise StoreError(f"the store {make_url(url).database} is damaged ({'; '.join(lines[:3])}); "
                         "restore it from a backup, or move it aside to start with no ARs")


def _sqlite_connect(dbapi_connection, _record) -> None:
    dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
    cursor = dbapi_connection.cursor()
    # Switching a new file to WAL can meet SQLITE_BUSY at once, without
    # the busy timeout, while other daemons open it too: retry a while.
    for attempt in range(300):
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            break
        except sqlite3.OperationalError:
            if attempt == 299:
                raise
            time.sleep(0.1)
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _sqlite_begin(connection) -> None:
    connection.exec_driver_sql("BEGIN IMMEDIATE")


@contextmanager
def locked_write(engine: Engine, url: str) -> Iterator[Session]:
    """A transaction holding the store's write lock until it ends (SQLite:
    BEGIN IMMEDIATE, make_engine's; PostgreSQL: a transaction-level
    advisory lock): writes of the store, in whichever process, one at a time."""
    with database_errors(url), Session(engine, expire_on_commit=False) as session:
        with session.begin():
            hold_write_lock(session, url)
            yield session


def hold_write_lock(session: Session | Connection, url: str) -> None:
    """Take the store's write lock in ``session``'s transaction (or a
    connection's) until it ends (SQLite: its BEGIN IMMEDIATE holds it already)."""
    if not url.startswith("sqlite"):
        _connection(session).execute(text(f"SELECT pg_advisory_xact_lock({_ADVISORY_LOCK})"))


class Store:
    """ARs in a database; one instance per daemon."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        self.channel = channel_of(url)
        with database_errors(url):
            self.engine = make_engine(url)
            if self.is_sqlite:
                _check_integrity(self.engine, url)
            self._create_tables()

    def _create_tables(self) -> None:
        create_tables(self.engine, self.url, SQLModel.metadata)

    def _write(self) -> AbstractContextManager[Session]:
        return locked_write(self.engine, self.url)

    def close(self) -> None:
        self.engine.dispose()

    # -- reading ---------------------------------------------------------------

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A plain session on the store's database, its failures said as the
        store's (StoreUnavailable): for the tables of the store's neighbours
        (feed tokens, events), which keep their own transactions."""
        with database_errors(self.url), Session(self.engine) as session:
            yield session

    @contextmanager
    def _read(self) -> Iterator[Session]:
        """A session that sees one committed state across its statements
        (PostgreSQL: REPEATABLE READ; SQLite reads see one snapshot anyway)."""
        engine = self.engine
        if not self.is_sqlite:
            engine = self.engine.execution_options(isolation_level="REPEATABLE READ")
        with database_errors(self.url), Session(engine, expire_on_commit=False) as session:
            with session.begin():
                yield session

    def load_all(self) -> list[Reservation]:
        """Every AR."""
        return self.snapshot()[1]

    def snapshot(self) -> tuple[int, list[Reservation]]:
        """The store's revision and every AR, as one committed state."""
        with self._read() as session:
            return self._revision(session), self._load(session, None)

    def changes_since(self, revision: int) -> Changes | None:
        """What was written after ``revision``, as one committed state; None
        if the tombstones it would need are gone (read everything again)."""
        with self._read() as session:
            connection = session.connection()
            now = self._revision(session)
            if now == revision:      # nothing written since (nor pruned: pruning writes)
                return Changes(now, [], [], {})
            if (connection.execute(_COUNTER, {"counter": "pruned"}).scalar() or 0) > revision:
                return None
            removed = connection.execute(_REMOVED_SINCE, {"revision": revision}).all()
            usage = [row.usage_id for row in removed if row.usage_id is not None]
            used = session.exec(select(UsageRow).where(UsageRow.id.in_(usage))).all() \
                if usage else []
            return Changes(now, self._load(session, revision),
                           sorted((row.reservation_id, row.revision) for row in removed),
                           {row.reservation_id: _from_usage_row(row) for row in used})

    def holds(self, ar_id: int) -> bool:
        """Whether the store holds AR ``ar_id`` (one lookup by primary key)."""
        with self._read() as session:
            return session.connection().execute(_ROW_REVISION, {"id": ar_id}).first() is not None

    def revision(self) -> int:
        """The store's revision now."""
        with self._read() as session:
            return self._revision(session)

    @staticmethod
    def _revision(session: Session) -> int:
        return session.connection().execute(_COUNTER, {"counter": "revision"}).scalar() or 0

    @staticmethod
    def _load(session: Session, since: int | None) -> list[Reservation]:
        """The ARs (written after revision ``since``, or all), read as plain
        rows: ORM objects for 100,000 ARs and their allocations took most
        of a daemon's start."""
        reservations, allocations = ReservationRow.__table__, AllocationRow.__table__
        connection = session.connection()
        chosen = select(reservations).order_by(reservations.c.id)
        held_query = select(allocations.c.reservation_id, allocations.c.node, allocations.c.slots,
                            allocations.c.pending, allocations.c.within_id, allocations.c.queue)
        if since is not None:
            chosen = chosen.where(reservations.c.revision > since)
            held_query = held_query.where(allocations.c.reservation_id.in_(
                select(reservations.c.id).where(reservations.c.revision > since)))
        rows = connection.execute(chosen).all()
        held: dict[int, list] = {}
        for alloc in connection.execute(held_query):
            held.setdefault(alloc.reservation_id, []).append(alloc)
        return [_from_rows(row, held.get(row.id, [])) for row in rows]

    def get(self, ar_id: int) -> Reservation | None:
        with self._read() as session:
            row = session.get(ReservationRow, ar_id)
            if row is None:
                return None
            allocs = session.exec(select(AllocationRow).where(AllocationRow.reservation_id == ar_id)).all()
            return _from_rows(row, list(allocs))

    # -- writing ---------------------------------------------------------------

    def create(self, ar: Reservation, capacity: Mapping[str, int],
               reports: Callable[[Reservation], Iterable[str]] | None = None,
               events: Callable[[Reservation], Iterable[Mapping]] | None = None,
               also: Callable[[Session, Reservation], None] | None = None,
               over: Iterable[int] = ()) -> Reservation:
        """Store a new AR under the next free id (1..9999999, wrapping,
        skipping ids in use), after checking its slots are still free; it
        gets its id and revision. ``reports`` and ``events``: the reporting
        records and events of its creation, made once it has its id, into
        the outbox and the event table in the same transaction; ``also``,
        more writes of that transaction (a series' step, which may refuse
        it: overlay.persistence.series); ``over``: ARs whose bookings it may
        overlap (a maintenance AR's --force)."""
        with self._write() as session:
            self._check_capacity(session, ar, capacity, own_id=None, over=frozenset(over))
            ar.id = self._next_id(session)
            ar.revision, ar.changed = self._advance(session), int(time.time())
            session.connection().execute(_INSERT_RESERVATION, [_row_values(ar)])
            _insert_allocations(session, ar)
            if reports is not None:
                put_reports(session, reports(ar))
            if events is not None:
                put_events(session, events(ar))
            if also is not None:
                also(session, ar)
        return ar

    def save(self, ar: Reservation, capacity: Mapping[str, int] | None = None,
             reports: Iterable[str] = (), events: Iterable[Mapping] = ()) -> None:
        """Replace a stored AR, which gets a new revision; with ``capacity``,
        re-check its slots first. Stale if another write changed or removed
        it since the copy ``ar`` was derived from. ``reports`` go into the
        outbox and ``events`` into the event table in the same transaction:
        committed with the change, or not at all."""
        with self._write() as session:
            self._check_fresh(session, ar)
            if capacity is not None:
                self._check_capacity(session, ar, capacity, own_id=ar.id)
            revision, changed = self._advance(session), int(time.time())
            session.merge(_to_row(replace(ar, revision=revision, changed=changed)))
            session.exec(delete(AllocationRow).where(AllocationRow.reservation_id == ar.id))
            _insert_allocations(session, ar)
            put_reports(session, reports)
            put_events(session, events)
        ar.revision, ar.changed = revision, changed

    def remove(self, ar: Reservation, used: Reservation | None = None,
               reports: Iterable[str] = (), events: Iterable[Mapping] = ()) -> int:
        """Forget an AR, leaving its tombstone; ``used``, the part of it that
        counts as use, stays in the usage table, and ``reports`` go into the
        outbox and ``events`` into the event table (in the same
        transaction). The revision of the removal. Stale, as ``save``, if
        another write changed or removed it since the copy ``ar``: a daemon
        behind the store never removes an AR over what it has not seen (a
        -T operation begun at another daemon)."""
        ar_id = ar.id
        with self._write() as session:
            self._check_fresh(session, ar)
            session.exec(delete(AllocationRow).where(AllocationRow.reservation_id == ar_id))
            session.exec(delete(ReservationRow).where(ReservationRow.id == ar_id))
            usage = None
            if used is not None:
                usage = _usage_row(used)
                session.add(usage)
                session.flush()                  # its id, for the tombstone
            now, revision = int(time.time()), self._advance(session)
            session.add(RemovedRow(revision=revision, reservation_id=ar_id, removed_at=now,
                                   usage_id=usage.id if usage is not None else None))
            self._prune_tombstones(session, now - TOMBSTONE_SECONDS)
            put_reports(session, reports)
            put_events(session, events)
        return revision

    def _advance(self, session: Session) -> int:
        """The store's next revision, taken under the write lock (and, on
        PostgreSQL, said on NOTIFY_CHANNEL when the transaction commits)."""
        revision = advance_counter(session, CounterRow, "revision")
        if not self.is_sqlite:
            session.connection().execute(text("SELECT pg_notify(:channel, :revision)"),
                               {"channel": self.channel, "revision": str(revision)})
        return revision

    @staticmethod
    def _check_fresh(session: Session, ar: Reservation) -> None:
        stored = session.connection().execute(_ROW_REVISION, {"id": ar.id}).first()
        if stored is None:
            raise Stale(f"AR {ar.id} was removed from the store meanwhile")
        if (stored.revision or 0) != ar.revision:
            raise Stale(f"AR {ar.id} was changed in the store meanwhile (revision "
                        f"{stored.revision or 0}, not {ar.revision})")

    @staticmethod
    def _prune_tombstones(session: Session, before: int) -> None:
        """Drop tombstones older than ``before``, noting the last revision
        dropped: a daemon behind it must read everything again."""
        connection = session.connection()
        last = connection.execute(_LAST_PRUNABLE, {"before": before}).scalar()
        if last is None:
            return
        connection.execute(delete(RemovedRow.__table__).where(RemovedRow.__table__.c.revision <= last))
        advance_counter(session, CounterRow, "pruned", last)

    def load_usage(self, since: int) -> list[Reservation]:
        """The kept usage of ARs that ended after ``since``, oldest end first."""
        with self._read() as session:
            rows = session.exec(select(UsageRow).where(UsageRow.end_time > since)
                                .order_by(UsageRow.end_time, UsageRow.id)).all()
        return [_from_usage_row(row) for row in rows]

    def forget_usage(self, before: int) -> None:
        """Drop the usage of ARs that ended at or before ``before``."""
        with self._write() as session:
            session.exec(delete(UsageRow).where(UsageRow.end_time <= before))

    def accept_claim(self, nonce: str, ar_id: int, at: int, forget_before: int) -> int | None:
        """Record a claim's nonce: None; or, if it was seen before, the AR
        whose claim it came with (this one's: a replay). Nonces dated
        before ``forget_before`` (out of the window, so refused anyway) are
        dropped in the same transaction."""
        with self._write() as session:
            session.exec(delete(ClaimRow).where(ClaimRow.claimed_at < forget_before))
            seen = session.get(ClaimRow, nonce)
            if seen is not None:
                return seen.reservation_id
            session.add(ClaimRow(nonce=nonce, reservation_id=ar_id, claimed_at=at))
        return None

    def _next_id(self, session: Session) -> int:
        found = next_id(session, CounterRow, "arseqnum", ReservationRow, MAX_AR_ID)
        if found is None:
            raise ReservationError(f"no AR id is free: all ids up to {MAX_AR_ID} are in use")
        return found

    def _check_capacity(self, session: Session, ar: Reservation, capacity: Mapping[str, int],
                        own_id: int | None, over: frozenset[int] = frozenset()) -> None:
        """Refuse if the AR's bookings would overfill a node in the database.
        Rows of ``own_id`` (the AR being changed) and of the ARs it is let
        ``over`` are not counted, and its current and pending bookings are
        alternatives, never summed."""
        wanted = [row for row in _allocation_values(ar) if row["held"]]
        own = 0 if own_id is None else own_id     # ids start at 1
        for row in wanted:
            if row["within_id"] is not None:
                self._check_inside(session, row, own)
        wanted = [row for row in wanted if row["within_id"] is None]
        if not wanted:
            return
        nodes = sorted({row["node"] for row in wanted})
        bounds = {"nodes": nodes, "first": min(row["start_time"] for row in wanted),
                  "last": max(row["end_time"] for row in wanted), "own": own}
        planner = MultiPlanner()
        for node in nodes:
            planner.set_capacity(node, capacity.get(node, 0))
        planner.book_many(tuple(row[:5]) for row in session.connection().execute(_BOOKED, bounds)
                          if row[5] is None and row[0] not in over)
        summed: dict[tuple, int] = {}   # a qrsub AR may hold two queues' slots on one node
        for row in wanted:
            key = (row["node"], row["start_time"], row["end_time"], row["pending"])
            summed[key] = summed.get(key, 0) + row["slots"]
        for (node, start, end, _), slots in summed.items():
            if not planner.fits(node, slots, start, end):
                raise Conflict(f"node {node} is no longer free for the requested window "
                               "(another reservation took it); try again")

    def _check_inside(self, session: Session, row: dict, own: int) -> None:
        """Refuse a booking inside another AR (ResAccess) that AR no longer
        holds the node for, or whose slots there the ARs inside it fill."""
        outer, node = row["within_id"], row["node"]
        connection = session.connection()
        held = connection.execute(_OUTER, {"outer": outer, "node": node}).first()
        if held is None:
            raise Conflict(f"AR {outer} no longer holds node {node}; try again")
        others = connection.execute(_INSIDE, {"outer": outer, "node": node, "own": own})
        planner = inside(held.slots, held.start_time, held.end_time, (tuple(r) for r in others))
        if not planner.fits(row["slots"], row["start_time"], row["end_time"]):
            raise Conflict(f"AR {outer} has no longer {row['slots']} slot(s) free on node {node} "
                           "for the requested window (another reservation inside it took "
                           "them); try again")
