"""The change feed: a daemon hears that another wrote to the store.

Each write of ARs on PostgreSQL says its revision on the store's channel
(``Store.channel``). The feed listens on a connection of its own and calls
``on_change`` for each burst of notifications, and every ``poll`` seconds
anyway, so that a notification lost with a broken connection costs at most
that long; a lost connection is opened again, with a pause that grows to
``poll``. ``on_change`` takes in what changed (``Manager.catch_up``): the
feed only says when to look, never what, so a notification for another
store or a duplicate costs one query and changes nothing.
"""

from __future__ import annotations

import logging
import select
import threading
import time
from typing import Callable

import psycopg
from sqlalchemy import make_url

from overlay.persistence.store import CUT_OFF

log = logging.getLogger("plus.feed")


def libpq_url(url: str) -> str:
    """A SQLAlchemy PostgreSQL URL as libpq takes it (options and all)."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


class ChangeFeed:
    """A thread calling ``on_change`` when the store at ``url`` changed."""

    def __init__(self, url: str, channel: str, on_change: Callable[[], object],
                 poll: float = 2.0) -> None:
        self.url = libpq_url(url)
        self.channel = channel
        self.on_change = on_change
        self.poll = poll
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.heard = 0
        """Notifications heard so far (for plus_scheduler --status and tests)."""

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="plus-feed", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=2 * self.poll + 5)

    def _run(self) -> None:
        pause = 0.1
        while not self._stopping.is_set():
            try:
                with psycopg.connect(self.url, autocommit=True, **CUT_OFF) as connection:
                    connection.execute(f'LISTEN "{self.channel}"')
                    pause = 0.1
                    self._take()                      # whatever came while not listening
                    self._listen(connection)
            except Exception as exc:
                if self._stopping.is_set():
                    return
                log.warning("change feed: %s; listening again in %.1f s", exc, pause)
                self._stopping.wait(pause)
                pause = min(self.poll, pause * 2)

    def _listen(self, connection: psycopg.Connection) -> None:
        last = time.monotonic()
        while not self._stopping.is_set():
            ready, _, _ = select.select([connection.fileno()], [], [], self.poll)
            heard = list(connection.notifies(timeout=0)) if ready else []
            if heard or time.monotonic() - last >= self.poll:
                self.heard += len(heard)
                last = time.monotonic()
                self._take()
            elif ready:
                connection.execute("SELECT 1")        # the connection said something else: alive?

    def _take(self) -> None:
        try:
            self.on_change()
        except Exception:
            log.exception("change feed: taking in the store's changes failed; trying again "
                          "at the next change")
