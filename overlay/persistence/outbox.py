"""The reporting outbox: reporting records wait in the store (its
``report_outbox`` table, ``Store.create/save/remove``'s ``reports``)
until the leader has appended them to the reporting file
(overlay.reporting.drain). Each record names its target, the file it goes
to: REPORTING, or a plugin's own (the native backend's accounting file),
drained apart, each in its own order.

A record goes in with the change it records, in one transaction, so a
change that is refused or rolled back leaves none, and one that commits
cannot lose its records to a crash. Every insert takes the store's write
lock, so records commit in ``seq`` order and the outbox is read in it.
The drain takes records out a batch at a time, noting first where the
batch goes in the file (``report_marks``, one per target): the note is how
a later leader knows whether a batch a crashed one was appending is in the
file. A plugin's change in tables of its own puts its records in with
``add_within``, and a plugin with an engine of its own makes sure the
outbox's tables exist with ``create_outbox_tables``.
"""

from __future__ import annotations

from typing import Iterable, Mapping, NamedTuple

from sqlalchemy import Engine, MetaData, delete, insert, select
from sqlmodel import Session

from overlay.persistence.store import (
    REPORTING,
    ReportMarkRow,
    ReportRow,
    create_tables,
    database_errors,
    hold_write_lock,
    locked_write,
    put_reports,
)

BATCH = 1000
"""Records appended in one write."""

_ROWS = ReportRow.__table__
_MARK = ReportMarkRow.__table__


class Mark(NamedTuple):
    """A batch being appended: the file (device:inode) and its length
    before the append, the batch's length in bytes, its last ``seq`` and
    the sha256 of its bytes."""

    file: str
    offset: int
    length: int
    last: int
    digest: str


def add_within(session: Session, url: str, reports: Mapping[str, Iterable[str]]) -> None:
    """Put records (by target) into the outbox in the transaction of a
    change a plugin writes to tables of its own in the store's database
    (the native scheduler's job that ended, with its acct records), so that
    both commit or neither: the store's write lock is taken there, after
    the plugin's own lock (always in that order), so records still commit
    in ``seq`` order. Without records, no lock is taken."""
    reports = {target: list(lines) for target, lines in reports.items()}
    if any(reports.values()):
        hold_write_lock(session, url)
        for target, lines in reports.items():
            put_reports(session, lines, target)


def create_outbox_tables(engine: Engine, url: str) -> None:
    """Make the outbox's tables where they are missing, for a plugin that
    puts records in through an engine of its own before (or without) the
    core's store making them."""
    metadata = MetaData()
    for table in (_ROWS, _MARK):
        table.to_metadata(metadata)
    create_tables(engine, url, metadata)


class Outbox:
    """The records for ``target``'s file in the outbox of the store at ``url``."""

    def __init__(self, engine: Engine, url: str, target: str = REPORTING) -> None:
        self.engine, self.url, self.target = engine, url, target
        self._rows = _ROWS.c.target == target
        self._mark = _MARK.c.target == target

    def add(self, lines: Iterable[str]) -> None:
        """Put records into the outbox, in a transaction of their own."""
        with locked_write(self.engine, self.url) as session:
            put_reports(session, lines, self.target)

    def look(self) -> tuple[Mark | None, list[tuple[int, str]]]:
        """The batch being appended, if one is noted, and the first BATCH
        records waiting, as (seq, line) in order: two small reads, whatever
        the file or the outbox has held before."""
        with database_errors(self.url), Session(self.engine) as session, session.begin():
            connection = session.connection()
            noted = connection.execute(select(_MARK).where(self._mark)).first()
            rows = connection.execute(select(_ROWS.c.seq, _ROWS.c.line).where(self._rows)
                                      .order_by(_ROWS.c.seq).limit(BATCH)).all()
        mark = None if noted is None else Mark(noted.file, noted.offset, noted.length,
                                               noted.last, noted.digest)
        return mark, [(row.seq, row.line) for row in rows]

    def through(self, last: int) -> list[str]:
        """The records up to ``last``: a noted batch (records leave the
        outbox only once their batch is in the file)."""
        with database_errors(self.url), self.engine.connect() as connection:
            return [row.line for row in connection.execute(
                select(_ROWS.c.line).where(self._rows, _ROWS.c.seq <= last)
                .order_by(_ROWS.c.seq))]

    def note(self, mark: Mark) -> None:
        """Note the batch about to be appended."""
        with database_errors(self.url), self.engine.begin() as connection:
            connection.execute(delete(_MARK).where(self._mark))
            connection.execute(insert(_MARK).values(target=self.target, **mark._asdict()))

    def done(self, mark: Mark) -> None:
        """The noted batch is in the file: its records and the note go."""
        with database_errors(self.url), self.engine.begin() as connection:
            connection.execute(delete(_ROWS).where(self._rows, _ROWS.c.seq <= mark.last))
            connection.execute(delete(_MARK).where(self._mark))

    def forget(self) -> None:
        """The noted batch is not in the file: its records wait on."""
        with database_errors(self.url), self.engine.begin() as connection:
            connection.execute(delete(_MARK).where(self._mark))
