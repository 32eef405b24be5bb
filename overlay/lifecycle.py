"""Time: window starts and ends, error states from the backend's health,
commit time-outs, expiry, and the reconcile with the backend.

A pass (``tick``) decides what the clock and the backend's health change
and asks the manager to make each change (store first, then memory and
events). Two apscheduler jobs run it: a periodic reconcile (PluS's
30-second check) that also catches whatever a down daemon missed, and one
date job set to the next instant an AR changes state, so transitions
happen on the second instead of up to an interval late.
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
from overlay.model import FINISHED_STATES, Reservation, State

log = logging.getLogger("plus.lifecycle")

_NEXT_JOB = "next-transition"
_RECONCILE_JOB = "reconcile"


class Lifecycle:
    """The clock's side of every AR, and the timers that run it."""

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
                self.tick()
            except Exception:
                log.exception("reconcile pass failed; the periodic reconcile retries")
                return
            self.schedule_next()

    def schedule_next(self) -> None:
        """Aim the date job at the next transition of all ARs (after a pass)."""
        self._aim(self.next_due())

    def notice(self, reservations: list[Reservation]) -> None:
        """ARs were created or changed: move the date job earlier if one of
        them is due sooner (no scan of every AR on each command)."""
        due = min((t for ar in reservations for t in self.due_times(ar)), default=None)
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

    # -- the pass ----------------------------------------------------------------

    def tick(self) -> int | None:
        """Bring every AR to the state the clock and the backend's health
        give it; returns the next time something is due, or None."""
        manager = self.manager
        with manager.lock:
            now = manager.now()
            manager.refresh_nodes()
            problems = self._health([ar for ar in manager.ars.values() if ar.holds_resources])
            for ar in list(manager.ars.values()):
                self._advance(ar, now, problems.get(ar.id))
            self._expire(now)
            for ar in list(manager.ars.values()):
                manager.apply(ar)
            try:
                manager.backend.reconcile(list(manager.ars.values()))
            except Exception as exc:
                log.warning("backend reconcile failed (will retry): %s", exc)
            return self.next_due()

    def _advance(self, ar: Reservation, now: int, reason: str | None) -> None:
        """One AR's transition, if the clock or its nodes' health call for one."""
        if ar.pending is not None and ar.pending_since + self.manager.config.commit_timeout <= now:
            ar = self.manager.time_out(ar)
            if ar.id not in self.manager.ars:
                return
        if ar.state in FINISHED_STATES or ar.state == State.PENDING:
            return
        if now >= ar.end:
            self.manager.end(ar)
            return
        target = ar.error_state(now) if reason else ar.window_state(now)
        if target != ar.state or (reason or "") != ar.message:
            self.manager.change_state(ar, target, reason)

    def _health(self, ars: list[Reservation]) -> dict[int, str]:
        try:
            return self.manager.backend.health(ars)
        except Exception as exc:
            return {ar.id: f"backend health check failed: {exc}" for ar in ars}

    def _expire(self, now: int) -> None:
        """Forget finished ARs after ``expiry`` seconds, and beyond the
        ``max_expired`` most recent ones; drop kept usage older than
        ``usage_history``."""
        config = self.manager.config
        done = sorted((ar for ar in self.manager.ars.values() if ar.state in FINISHED_STATES),
                      key=lambda ar: (ar.finished_time or 0, ar.id))
        surplus = len(done) - config.max_expired
        for index, ar in enumerate(done):
            if index < surplus or (ar.finished_time or 0) + config.expiry <= now:
                self.manager.forget(ar)
        self.manager.forget_usage(now - config.usage_history)

    def due_times(self, ar: Reservation) -> list[int]:
        """When the clock alone changes this AR: commit time-out, start, end, expiry."""
        config = self.manager.config
        times = []
        if ar.pending is not None:
            times.append(ar.pending_since + config.commit_timeout)
        if ar.state in (State.WAITING, State.WARNING):
            times.append(ar.start)
        if ar.state not in FINISHED_STATES:
            times.append(ar.end)
        elif ar.finished_time is not None:
            times.append(ar.finished_time + config.expiry)
        return times

    def next_due(self) -> int | None:
        """The next instant at which any AR changes state by the clock."""
        return min((t for ar in self.manager.ars.values() for t in self.due_times(ar)),
                   default=None)
