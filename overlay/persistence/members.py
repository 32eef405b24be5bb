"""Who serves a store: each daemon's line (host, pid, leading or standing
by, since when, the store revision it has taken in), written as it takes
in changes, so that ``plus_scheduler --status`` at any daemon names them
all and how far each is behind the store. A line not renewed for FRESH
seconds is a daemon gone; old lines are dropped as others are written."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time

from sqlalchemy import BigInteger, delete
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlmodel import Field, Session, SQLModel, select

from overlay.persistence.store import Store, StoreUnavailable, database_errors

log = logging.getLogger("plus.daemon")

FRESH = 10
"""Seconds after which a daemon that wrote no line is taken for gone."""
_EVERY = 1.0
"""The least time between two lines of one daemon."""


class MemberRow(SQLModel, table=True):
    __tablename__ = "daemon_member"

    name: str = Field(primary_key=True)
    host: str
    pid: int
    leading: bool
    since: int = Field(sa_type=BigInteger)
    seen_revision: int = Field(sa_type=BigInteger)
    heard_at: int = Field(sa_type=BigInteger, index=True)


_TABLE = MemberRow.__table__


class Members:
    """This daemon's line in the store, and everyone's."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.host, self.pid = socket.gethostname(), os.getpid()
        self.name = f"{self.host}:{self.pid}"
        self.since = int(time.time())
        self._written = 0.0
        self._writing = threading.Lock()

    def report(self, leading: bool, seen_revision: int, force: bool = False) -> None:
        """Write this daemon's line (at most once a second unless ``force``).
        A store that cannot be written now is logged: the line is only news."""
        with self._writing:
            now = time.time()
            if not force and now - self._written < _EVERY:
                return
            self._written = now
            values = dict(name=self.name, host=self.host, pid=self.pid, leading=leading,
                          since=self.since, seen_revision=seen_revision, heard_at=int(now))
            upsert = (sqlite_insert if self.store.is_sqlite else postgresql_insert)(_TABLE)
            statement = upsert.values(**values).on_conflict_do_update(
                index_elements=["name"], set_={k: v for k, v in values.items() if k != "name"})
            try:
                with database_errors(self.store.url), self.store.engine.begin() as connection:
                    connection.execute(statement)
                    connection.execute(delete(_TABLE).where(
                        _TABLE.c.heard_at < int(now) - 30 * FRESH))
            except StoreUnavailable as exc:
                log.warning("could not write this daemon's line for plus_scheduler --status: %s",
                            exc)

    def listed(self) -> list[dict]:
        """The daemons heard from in the last FRESH seconds, each with its lag
        (revisions of the store it has not taken in yet)."""
        revision = self.store.revision()
        with database_errors(self.store.url), Session(self.store.engine) as session:
            rows = session.exec(select(MemberRow).where(
                MemberRow.heard_at >= int(time.time()) - FRESH).order_by(MemberRow.name)).all()
        return [{"name": row.name, "leading": row.leading, "since": row.since,
                 "lag": max(0, revision - row.seen_revision), "heard_at": row.heard_at,
                 "this": row.name == self.name} for row in rows]
