"""One daemon per store: the lease plus_scheduler holds on its database.

Each daemon keeps its ARs and a planner in memory and drives a backend;
two daemons on one store would each act on a stale copy of the other's
changes (and both enforce windows on one batch system). So the second
refuses to start, naming the first. SQLite: an flock on ``<db>-lease``
beside the database. PostgreSQL: a session advisory lock on a connection
held open for the daemon's life, per schema; if that connection is lost,
``check()`` takes the lock again or reports that another daemon has it.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time

from sqlalchemy import Connection, Engine, make_url, text

from overlay.persistence.store import StoreError, database_errors

_LEASE_CLASS = 0x504C5553  # "PLUS", the first key of the two-key advisory lock
_WAIT = 5.0
"""Seconds to wait for a lease whose holder may just have died (kill -9
and restart: PostgreSQL notices the dead session a moment later)."""


class LeaseLost(StoreError):
    """Another daemon holds the store now."""


def _holder() -> dict:
    return {"host": socket.gethostname(), "pid": os.getpid(), "since": int(time.time())}


def _describe(holder: dict | None) -> str:
    if not holder:
        return "another plus_scheduler"
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(holder.get("since", 0)))
    return f"plus_scheduler pid {holder.get('pid')} on {holder.get('host')} (since {since})"


class StoreLease:
    """Held from ``acquire()`` to ``release()``."""

    def __init__(self, url: str, engine: Engine) -> None:
        self.url = url
        self.engine = engine
        self.is_sqlite = url.startswith("sqlite")
        self._file = None
        self._connection: Connection | None = None

    def acquire(self) -> None:
        """Take the lease, or raise StoreError naming the daemon that has it."""
        deadline = time.monotonic() + _WAIT
        while not self._try():
            if time.monotonic() >= deadline:
                raise StoreError(f"the store is in use by {_describe(self._read_holder())}: one "
                                 "plus_scheduler per store; stop that one first, or give this one "
                                 "another store (-r)")
            time.sleep(0.2)

    def check(self) -> None:
        """Still ours? Take it again after a lost connection; LeaseLost if
        another daemon got it meanwhile."""
        if self.is_sqlite:
            return  # an flock lasts as long as the process
        try:
            with database_errors(self.url):
                self._connection.execute(text("SELECT 1"))
            return
        except Exception:
            self._close_connection()
        if not self._try():
            raise LeaseLost(f"lost the store to {_describe(self._read_holder())}")

    def release(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self._close_connection()

    def _try(self) -> bool:
        return self._try_file() if self.is_sqlite else self._try_advisory()

    def _try_file(self) -> bool:
        path = make_url(self.url).database + "-lease"
        handle = open(os.open(path, os.O_RDWR | os.O_CREAT, 0o600), "r+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            return False
        handle.truncate()
        handle.write(json.dumps(_holder()))
        handle.flush()
        self._file = handle
        return True

    def _try_advisory(self) -> bool:
        with database_errors(self.url):
            connection = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            try:
                taken = connection.execute(text(
                    "SELECT pg_try_advisory_lock(:cls, hashtext(current_schema()))"),
                    {"cls": _LEASE_CLASS}).scalar()
                if taken:
                    connection.execute(text("CREATE TABLE IF NOT EXISTS plus_lease "
                                            "(id INTEGER PRIMARY KEY, holder TEXT NOT NULL)"))
                    connection.execute(text("DELETE FROM plus_lease"))
                    connection.execute(text("INSERT INTO plus_lease VALUES (1, :holder)"),
                                       {"holder": json.dumps(_holder())})
            except Exception:
                connection.close()
                raise
        if not taken:
            connection.close()
            return False
        self._connection = connection
        return True

    def _read_holder(self) -> dict | None:
        try:
            if self.is_sqlite:
                with open(make_url(self.url).database + "-lease") as handle:
                    return json.loads(handle.read() or "null")
            with self.engine.connect() as connection:
                raw = connection.execute(text("SELECT holder FROM plus_lease")).scalar()
            return json.loads(raw) if raw else None
        except Exception:
            return None  # the refusal still stands; only its detail is missing

    def _close_connection(self) -> None:
        if self._connection is not None:
            try:
                self._connection.close()
            except Exception:
                pass  # a dead connection: closing it is all we wanted
            self._connection = None
