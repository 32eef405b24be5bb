"""Time: window starts and ends, commit time-outs and expiry (apscheduler).

Two jobs drive the manager's tick: a periodic reconcile (PluS's 30-second
check) that also catches whatever a down daemon missed, and one date job
set to the next instant an AR changes state, so transitions happen on the
second instead of up to an interval late.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from typing import Callable

from apscheduler.schedulers.background import BackgroundScheduler

from overlay.limits import HORIZON
from overlay.manager import Manager
from overlay.model import Reservation

log = logging.getLogger("plus.lifecycle")

_NEXT_JOB = "next-transition"
_RECONCILE_JOB = "reconcile"


class Lifecycle:
    def __init__(self, manager: Manager, interval: int,
                 before_pass: Callable[[], None] | None = None) -> None:
        """``before_pass`` runs before every pass; if it raises, the pass is skipped."""
        self.manager = manager
        self.interval = interval
        self.before_pass = before_pass
        self.scheduler = BackgroundScheduler(timezone=dt.timezone.utc)
        self._run_lock = threading.Lock()
        self._aim_lock = threading.RLock()
        self._aimed: int | None = None
        self._stopping = False

    def start(self) -> None:
        self.scheduler.add_job(self.run, "interval", seconds=self.interval, id=_RECONCILE_JOB,
                               max_instances=1, coalesce=True)
        self.scheduler.start()
        self.run()

    def stop(self) -> None:
        """Wait for a pass under way; APScheduler's shutdown holds the lock
        that add_job takes, so a pass must not aim the date job any more."""
        with self._aim_lock:
            self._stopping = True
        self.scheduler.shutdown(wait=True)

    def run(self) -> None:
        """One reconcile pass, then aim the date job at the next transition."""
        with self._run_lock:
            try:
                if self.before_pass is not None:
                    self.before_pass()
                self.manager.tick()
            except Exception:
                log.exception("reconcile pass failed; the periodic reconcile retries")
                return
            self.schedule_next()

    def schedule_next(self) -> None:
        """Aim the date job at the next transition of all ARs (after a pass)."""
        self._aim(self.manager.next_due())

    def notice(self, reservations: list[Reservation]) -> None:
        """ARs were created or changed: move the date job earlier if one of
        them is due sooner (no scan of every AR on each command)."""
        due = min((t for ar in reservations for t in self.manager.due_times(ar)), default=None)
        with self._aim_lock:
            if due is not None and (self._aimed is None or due < self._aimed):
                self._aim(due)

    def _aim(self, due: int | None) -> None:
        with self._aim_lock:
            if self._stopping:
                return
            self._aimed = due
            if due is None:
                if self.scheduler.get_job(_NEXT_JOB):
                    self.scheduler.remove_job(_NEXT_JOB)
                return
            # a hair after the second, so that the tick's whole-second clock has reached it;
            # never past the horizon (an AR stored before times were bounded may lie
            # beyond the years datetime can hold): the periodic pass aims again
            due = min(due, int(time.time()) + HORIZON)
            when = dt.datetime.fromtimestamp(due + 0.05, dt.timezone.utc)
            self.scheduler.add_job(self.run, "date", run_date=when, id=_NEXT_JOB,
                                   replace_existing=True, misfire_grace_time=None)
