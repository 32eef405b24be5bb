"""Who leads: the lease plus_scheduler holds on its store.

One daemon at a time enforces: it runs the clock, drives the backend and
runs the native scheduler. SQLite: one daemon per store, as ever: an flock
on ``<db>-lease`` beside the database, and a second daemon refuses to
start, naming the first. PostgreSQL: any number of daemons serve users;
the leader holds a session advisory lock (per schema) on a connection of
its own, which a heartbeat keeps busy every LEASE/3 seconds. That
connection has ``idle_session_timeout`` = LEASE, so the server ends the
session of a leader that was stopped (SIGSTOP), hangs, or lost its host or
its network, which frees the lock for a standby (trying every second) to
take. Before each enforcement step the leader checks that its session
still holds the lock (``holds``: fencing), so one that wakes up after
another took over touches nothing. When the heartbeat finds the lock's
session gone (the connection cut, PostgreSQL restarted, the leader woken
after a stop) it calls ``on_lost``: the daemon takes the lease again if
it is free, or stands by.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import threading
import time
from typing import Callable

from sqlalchemy import Connection, Engine, make_url, text

from overlay.persistence.store import StoreError, database_errors

_LEASE_CLASS = 0x504C5553  # "PLUS", the first key of the two-key advisory lock
_WAIT = 5.0
"""Seconds to wait for a lease whose holder may just have died (kill -9
and restart: PostgreSQL notices the dead session a moment later)."""
LEASE = 3
"""Seconds a PostgreSQL leader's lock session may stay silent before the
server ends it: the longest a stopped or cut-off leader blocks failover."""


class LeaseLost(StoreError):
    """Another daemon holds the store now."""


def _holder() -> dict:
    return {"host": socket.gethostname(), "pid": os.getpid(), "since": int(time.time())}


def describe(holder: dict | None) -> str:
    """The daemon holding a lease, as messages name it."""
    if not holder:
        return "another plus_scheduler"
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(holder.get("since", 0)))
    return f"plus_scheduler pid {holder.get('pid')} on {holder.get('host')} (since {since})"


class StoreLease:
    """Held from ``acquire()`` or a successful ``try_take()`` to ``release()``."""

    def __init__(self, url: str, engine: Engine) -> None:
        self.url = url
        self.engine = engine
        self.is_sqlite = url.startswith("sqlite")
        self.since: float | None = None
        self._file = None
        self._closed = False
        self._connection: Connection | None = None
        self._using = threading.Lock()       # the lock connection, one statement at a time
        self._heartbeat: threading.Thread | None = None
        self.on_lost: Callable[[], None] = lambda: None
        """Called by the heartbeat (in its thread) while this daemon should
        lead but its lock's session is gone."""

    @property
    def shared(self) -> bool:
        """Whether several daemons may serve this store (one leading)."""
        return not self.is_sqlite

    def try_take(self) -> bool:
        """Take the lease if nobody holds it; whether this daemon leads now."""
        if self._try():
            self.since = time.time()
            if not self.is_sqlite and self._heartbeat is None:
                self._heartbeat = threading.Thread(target=self._beat, name="plus-lease",
                                                   daemon=True)
                self._heartbeat.start()
            return True
        return False

    def holds(self) -> bool:
        """Whether this daemon still leads (one round trip on PostgreSQL)."""
        if self.is_sqlite:
            return self._file is not None
        with self._using:
            if self._connection is None:
                return False
            try:
                self._connection.execute(text("SELECT 1"))
                return True
            except Exception:
                self._close_connection()
                return False

    def leader(self) -> dict | None:
        """Who leads (host, pid, since), as it wrote when it took the lease."""
        return self._read_holder()

    def _beat(self) -> None:
        while not self._closed:
            time.sleep(LEASE / 3)
            if self.since is not None and not self.holds():
                self.on_lost()

    def acquire(self) -> None:
        """Take the lease, or raise StoreError naming the daemon that has it."""
        deadline = time.monotonic() + _WAIT
        while not self._try():
            if time.monotonic() >= deadline:
                raise StoreError(f"the store is in use by {describe(self._read_holder())}: one "
                                 "plus_scheduler per store; stop that one first, or give this one "
                                 "another store (-r)")
            time.sleep(0.2)

    def check(self) -> None:
        """Still ours? Take it again after a lost connection; LeaseLost if
        another daemon got it meanwhile."""
        if self.is_sqlite or self.holds():   # an flock lasts as long as the process
            return
        if not self._try():
            raise LeaseLost(f"lost the store to {describe(self._read_holder())}")

    def stand_down(self) -> None:
        """Stop leading: the lock's session (if any is left) ends, freeing it."""
        self.since = None
        with self._using:
            self._close_connection()

    def release(self) -> None:
        self._closed = True
        self.since = None
        if self._file is not None:
            self._file.close()
            self._file = None
        with self._using:
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
                    connection.execute(text(f"SET idle_session_timeout = '{LEASE}s'"))
                    connection.execute(text("CREATE TABLE IF NOT EXISTS plus_lease "
                                            "(id INTEGER PRIMARY KEY, holder TEXT NOT NULL)"))
                    connection.execute(text("DELETE FROM plus_lease"))
                    connection.execute(text("INSERT INTO plus_lease VALUES (1, :holder)"),
                                       {"holder": json.dumps(_holder())})
            except Exception:
                connection.invalidate()         # it may hold the lock: never back to the pool
                connection.close()
                raise
        if not taken:
            connection.close()
            return False
        with self._using:
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
        """Drop the lock connection, never back into the pool: its session
        ends when idle, which no other use of the store wants."""
        if self._connection is not None:
            try:
                self._connection.invalidate()
                self._connection.close()
            except Exception:
                pass  # a dead connection: closing it is all we wanted
            self._connection = None
