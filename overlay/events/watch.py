"""Waiting for the next event: the HTTP companion's streams ask once for
all of them (``event_head``) and are told as soon as an event commits here
(``notify``: the manager's ``reported``, the change feed's word of other
daemons' writes); the store is looked at again every RECHECK seconds for
events no word came of (a plugin's, a feed that lags)."""

from __future__ import annotations

import threading
import time

from overlay.persistence.events import EventLog

RECHECK = 1.0


class HeadWatch:
    """The last event's id, and a wait for it to pass one."""

    def __init__(self, events: EventLog) -> None:
        self.events = events
        self._changed = threading.Condition()
        self._generation = 0

    def notify(self) -> None:
        """Events may have committed: wake the waiters."""
        with self._changed:
            self._generation += 1
            self._changed.notify_all()

    def wait(self, after: int, seconds: float) -> int:
        """The last event's id once it is past ``after``, or after
        ``seconds`` whatever it is."""
        deadline = time.monotonic() + seconds
        while True:
            with self._changed:
                generation = self._generation
            head = self.events.head()
            left = deadline - time.monotonic()
            if head > after or left <= 0:
                return head
            with self._changed:
                if self._generation == generation:
                    self._changed.wait(min(left, RECHECK))
