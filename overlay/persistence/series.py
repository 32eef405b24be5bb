"""Recurring ARs in the store: a series (plus_reserve --repeat) is its
rule, exceptions, owner and the request each occurrence copies, and a
cursor: how many occurrences were handled (granted or refused), the next
one's start and when it falls due (its start less the depth granted
ahead).

Each step of the cursor is written in the transaction that grants the
occurrence (``Store.create``'s ``also``) or records its refusal, and only
from the value it was read at (compare and set): a daemon that lost the
lead, or two daemons racing, can never grant one occurrence twice nor skip
one, whatever restarts or failovers fall between two steps.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Mapping

from sqlalchemy import BigInteger, func, insert, update
from sqlmodel import Field, Session, SQLModel, select

from overlay.language.model import InvalidRequest, Request, Reservation
from overlay.language.recurrence import Recurrence
from overlay.persistence.store import CounterRow, Store, create_tables, next_id, put_events
from overlay.wire.codec import encode_request, stored_request

MAX_SERIES_ID = 9_999_999
KEPT_REFUSALS = 100
"""Refused occurrences a series lists (the latest); each was also told by
an event and a mail when it happened."""
ACTIVE, COMPLETE, CANCELLED = "active", "complete", "cancelled"
"""A series is active while occurrences are still to be granted, complete once
every one was granted or refused, cancelled by plus_cancel -series."""


class SeriesMoved(InvalidRequest):
    """The series' cursor moved since it was read (another daemon, or this
    one before a restart, handled that occurrence): nothing was written,
    and nothing is to be retried."""


class SeriesRow(SQLModel, table=True):
    __tablename__ = "ar_series"

    id: int = Field(primary_key=True)
    owner: str = Field(index=True)
    owner_group: str = ""
    rule: str
    zone: str
    first_start: int = Field(sa_type=BigInteger)
    exceptions: str = ""
    request: str
    state: str = Field(default=ACTIVE, index=True)
    handled: int = 0
    granted: int = 0
    next_start: int | None = Field(default=None, sa_type=BigInteger)
    next_due: int | None = Field(default=None, sa_type=BigInteger, index=True)
    refused: str = "[]"
    created: int = Field(sa_type=BigInteger)
    changed: int = Field(sa_type=BigInteger)
    revision: int = 0


@dataclass(frozen=True)
class Series:
    """A stored series; ``request`` is the template, at the first start."""

    id: int
    owner: str
    group: str
    recurrence: Recurrence
    request: Request
    state: str = ACTIVE
    handled: int = 0
    granted: int = 0
    next_start: int | None = None
    next_due: int | None = None
    refused: tuple[tuple[int, str], ...] = field(default=())
    created: int = 0
    revision: int = 0
    """How many times it was written: a write from an older copy is refused."""

    @property
    def duration(self) -> int:
        return self.request.duration

    def occurrence(self, start: int) -> Request:
        """The template's request moved to ``start``."""
        return replace(self.request, start=start, end=start + self.duration)


def _values(series: Series) -> dict:
    now = int(time.time())
    recurrence = series.recurrence
    return dict(id=series.id, owner=series.owner, owner_group=series.group,
                rule=recurrence.rule, zone=recurrence.zone, first_start=recurrence.first,
                exceptions=",".join(recurrence.exceptions),
                request=json.dumps(encode_request(series.request), separators=(",", ":")),
                state=series.state, handled=series.handled, granted=series.granted,
                next_start=series.next_start, next_due=series.next_due,
                refused=json.dumps([list(item) for item in series.refused]),
                created=series.created or now, changed=now, revision=series.revision)


def _from_row(row) -> Series:
    return Series(id=row.id, owner=row.owner, group=row.owner_group,
                  recurrence=Recurrence(row.rule, row.first_start, row.zone,
                                        tuple(filter(None, row.exceptions.split(",")))),
                  request=stored_request(json.loads(row.request)), state=row.state,
                  handled=row.handled, granted=row.granted, next_start=row.next_start,
                  next_due=row.next_due,
                  refused=tuple((int(at), str(why)) for at, why in json.loads(row.refused)),
                  created=row.created, revision=row.revision)


_SERIES = SeriesRow.__table__


class SeriesStore:
    """The series table of a store (its tables are created with the store's)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        create_tables(store.engine, store.url, SeriesRow.metadata)

    def new_id(self) -> int:
        """An id for a series about to be made (its own transaction: an id
        a refused series took is simply not used)."""
        with self.store._write() as session:
            found = next_id(session, CounterRow, "seriesseq", SeriesRow, MAX_SERIES_ID)
        if found is None:
            raise InvalidRequest(f"no series id is free: all up to {MAX_SERIES_ID} are in use")
        return found

    def inserted(self, series: Series) -> Callable[[Session, Reservation], None]:
        """``Store.create``'s ``also`` for a series' first occurrence: the
        series row goes in with it, or neither does."""
        def insert_row(session: Session, _made: Reservation) -> None:
            session.connection().execute(insert(_SERIES), [_values(series)])
        return insert_row

    @staticmethod
    def following(series: Series, **changes) -> Series:
        """``series`` with ``changes``, as its next write stores it."""
        return replace(series, revision=series.revision + 1, **changes)

    def stepped(self, series: Series, following: Series,
                events: Iterable[Mapping] = ()) -> Callable[[Session, Reservation | None], None]:
        """The write of ``following`` (made by ``following()``) over
        ``series``, refused (SeriesMoved) unless the row is still the one
        ``series`` was read as (its revision): never a step twice, nor a
        change of the template lost."""
        def step(session: Session, _made: Reservation | None = None) -> None:
            values = _values(following)
            del values["id"], values["created"]
            done = session.connection().execute(
                update(_SERIES).where(_SERIES.c.id == series.id,
                                      _SERIES.c.revision == series.revision).values(**values))
            if done.rowcount != 1:
                raise SeriesMoved(f"series {series.id} moved on meanwhile")
            put_events(session, events)
        return step

    def write(self, step: Callable[[Session, Reservation | None], None]) -> None:
        """A step of its own (a refusal, a cancel, a change of the template)."""
        with self.store._write() as session:
            step(session, None)

    def get(self, series_id: int) -> Series | None:
        with self.store.session() as session:
            row = session.get(SeriesRow, series_id)
            return None if row is None else _from_row(row)

    def listed(self, owner: str | None = None) -> list[Series]:
        """Every series (of ``owner``), by id."""
        query = select(SeriesRow).order_by(SeriesRow.id)
        if owner is not None:
            query = query.where(SeriesRow.owner == owner)
        with self.store.session() as session:
            return [_from_row(row) for row in session.exec(query).all()]

    def active_count(self, owner: str) -> int:
        with self.store.session() as session:
            return session.exec(select(func.count()).select_from(SeriesRow).where(
                SeriesRow.owner == owner, SeriesRow.state == ACTIVE)).one()

    def due(self) -> dict[int, int]:
        """The due time of every series with work ahead: an occurrence to
        grant, or (cancelled) open occurrences to cancel."""
        with self.store.session() as session:
            rows = session.exec(select(SeriesRow.id, SeriesRow.next_due).where(
                SeriesRow.next_due.is_not(None))).all()
        return {row[0]: row[1] for row in rows}

    def remove(self, series_id: int) -> None:
        """Forget a series that has ended or was cancelled (plus_destroy's)."""
        with self.store._write() as session:
            session.connection().execute(_SERIES.delete().where(_SERIES.c.id == series_id))
