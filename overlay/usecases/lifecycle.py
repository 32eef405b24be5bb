"""Time: window starts and ends, error states from the backend's health,
commit time-outs, expiry, and the reconcile with the backend.

A pass (``tick``) decides what the clock and the backend's health change
and asks the manager to make each change (store first, then memory and
events). Two apscheduler jobs run it: a periodic reconcile (PluS's
30-second check) that also catches whatever a down daemon missed, and one
date job set to the next instant an AR changes state, so transitions
happen on the second instead of up to an interval late.

The first pass looks at every AR. After it, unless the backend watches a
batch system for drift (``Backend.watches_drift``), a pass looks only at
the ARs that changed since the last one, fell due (a heap of due times),
hold hosts whose liveness changed, carry a health problem, or failed to
apply: its cost follows what changed, not how many ARs are stored, and
commands wait on it for no longer.

An AR awaiting a manager's approval lapses at its due time
(overlay/usecases/approval.py), told as a deny is.

An AR whose node went down is repaired in the pass that finds it, when
its -repair mode and a free node allow (overlay/usecases/repair.py).

An open AR that ran no job for its idle time, or whose jobs all ended
with --release-when-done, is released in the pass at its due time
(overlay/usecases/idle.py reads its jobs' events; the due times include
its release).

Recurring series (overlay.usecases.series) have due times of their own,
in a heap beside the ARs': a series falls due when its next occurrence
comes within the depth granted ahead; the pass grants it then. The heap
is primed from the store at a full pass and each series re-read only when
one of its occurrences changed or a command made it.

An AR tells, once each, that it is starting soon and ending soon at its
notice leads and the site's ``ending_soon`` leads (overlay.usecases.notices;
its due times include them): the event is put once by its key, and only
the daemon that put it tells the plugins (the mail), so a new leader
repeating a pass repeats none.
"""

from __future__ import annotations

import datetime as dt
import heapq
import logging
import threading
import time
from typing import Callable

from apscheduler.schedulers.background import BackgroundScheduler

from overlay.events.catalog import nodes_busy_event, reservation_event
from overlay.language.limits import HORIZON
from overlay.language.model import FINISHED_STATES, Reservation, State
from overlay.log.ratelog import RateLimitedLog, RateLimitFilter
from overlay.persistence.events import EventLog
from overlay.persistence.store import Stale
from overlay.usecases import approval, maintenance
from overlay.usecases.idle import IdleWatch
from overlay.usecases.manager import Manager
from overlay.usecases.notices import CLEAR, Notice, jobs_in_the_way, notices
from overlay.usecases.repair import Repairs
from overlay.usecases.series import SeriesCases

log = logging.getLogger("plus.lifecycle")
# Clients at other daemons cause these (by changing ARs as fast as they
# can): one line a minute, whichever AR it is about, with a count.
_CONTENDED = RateLimitedLog(log)

# APScheduler's own lines about the timers: while a pass hangs (on a store
# cut off, for seconds), each timer that falls due says "maximum number of
# running instances reached", every interval and at every date job aimed
# by a command. The line says a pass is stuck, worth once a minute with a
# count; skipping the timers ourselves instead (coalesce already keeps one
# run) would also hide that.
_TIMERS_LOG = logging.getLogger("apscheduler.scheduler.lifecycle")
_TIMERS_LOG.addFilter(RateLimitFilter(burst=1))

_SERIES_PER_PASS = 100
"""Occurrences of one series a pass grants at most (and
series.ALLOCATIONS_AT_ONCE nodes): a series of thousands falling due at
once is granted over passes aimed one after the other, so no pass holds
up the others' transitions for long."""
_NEXT_JOB = "next-transition"
_RECONCILE_JOB = "reconcile"


class Lifecycle:
    """The clock's side of every AR, and the timers that run it."""

    def __init__(self, manager: Manager, interval: int,
                 before_pass: Callable[[], bool] | None = None) -> None:
        """``before_pass`` runs before every pass; if it says False (this
        daemon does not lead now), the pass is skipped."""
        self.manager = manager
        self.interval = interval
        self.before_pass = before_pass
        self.scheduler = BackgroundScheduler(timezone=dt.timezone.utc, logger=_TIMERS_LOG)
        self._run_lock = threading.Lock()
        self._aim_lock = threading.RLock()
        self._aimed: int | None = None
        self._stopping = False
        self._due = _DueTimes()
        self._finished: dict[int, tuple[int, int]] = {}   # finished ARs: (finished time, id)
        self._finished_heap: list[tuple[int, int]] = []
        self._changed: set[int] = set()      # ARs changed since the last pass
        self._problems: dict[int, str] = {}  # ARs' last known health problems
        self._announced: dict[int, set[tuple[str, int, int]]] = {}  # notices told: Notice.told
        self._events: EventLog | None = None
        self._primed = False
        self._repairs = Repairs(manager)
        self._idle = IdleWatch(lambda: self.manager.config.idle_release)
        self.series: SeriesCases | None = None     # set by the daemon: series are granted ahead
        self._series_due = _DueTimes()
        self._series_told: set[int] = set()        # series whose occurrences a command made

    def start(self) -> None:
        """Run the timers, and a pass now; after ``pause``, the pass looks at
        every AR (what others did while this daemon stood by)."""
        if self.scheduler.running:
            self.scheduler.resume()
            self.look_at_all()
            return
        self.scheduler.add_job(self.run, "interval", seconds=self.interval, id=_RECONCILE_JOB,
                               max_instances=1, coalesce=True)
        self.scheduler.start()
        self.run()

    def pause(self) -> None:
        """Another daemon leads: no pass until ``start``."""
        self.scheduler.pause()

    def stop(self) -> None:
        """Wait for a pass under way; APScheduler's shutdown holds the lock
        that add_job takes, so a pass must not aim the date job any more."""
        with self._aim_lock:
            self._stopping = True
        if self.scheduler.running:
            self.scheduler.shutdown(wait=True)

    def look_at_all(self) -> None:
        """A pass now over every AR, timing each anew (commit_timeout,
        expiry or max_expired changed)."""
        with self.manager.lock:
            self._primed = False
        self.run()

    def run(self) -> None:
        """One reconcile pass, then aim the date job at the next transition."""
        with self._run_lock:
            try:
                if self.before_pass is not None and not self.before_pass():
                    return
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
        made = {ar.series for ar in reservations if ar.series is not None}
        if made:
            with self.manager.lock:
                self._series_told |= made
            due = self.manager.now()           # the pass grants the rest within the depth
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
        """Bring the ARs to the state the clock and the backend's health give
        them (all of them at the first pass, or each pass for a backend that
        watches drift); returns the next time something is due, or None.
        The backend is asked and driven outside the use cases' lock, so a
        slow batch system stalls no command."""
        manager = self.manager
        began, cpu = time.perf_counter(), time.thread_time()
        manager.catch_up()                    # what other daemons wrote, should the feed lag
        moved = manager.refresh_nodes(publish=True)  # the inventory every daemon reads
        if not self._primed:
            with manager.lock:
                ars = list(manager.ars.values())
            self._idle.prime(self.events, ars)
        jobs_moved = self._idle.take(self.events)
        with manager.lock:
            now = manager.now()
            self._absorb()
            commanded, self._changed = self._changed, set()
            full = not self._primed or manager.backend.watches_drift
            if full:
                looked = checked = set(manager.ars)
            else:
                checked = commanded | manager.ars_on(moved) | self._problems.keys()
                looked = checked | set(self._due.pop_due(now)) | (jobs_moved & manager.ars.keys())
            asked = [manager.ars[i] for i in sorted(checked) if i in manager.ars]
        holding = [ar for ar in asked if ar.holds_resources]
        found = self._health(holding)
        with manager.lock:
            found = maintenance.adjusted(found, holding, manager.tally.maintenance())
            self._keep_health(checked, found)
            for ar_id in sorted(looked):
                self._advance_fresh(ar_id, now)
            self._expire(now, looked)
            self._absorb()
            for ar_id in looked - self._changed:     # due and unchanged: due again later
                self._track(ar_id)
            self._changed = set()
            self._primed = True
            picture = manager.all_enforced() if full else None
            stored = len(manager.ars)
        if picture is not None:
            manager.enforcer.reconcile(picture)
            manager.enforcer.want(looked)
        self._grant_series(now, commanded, full)
        manager.enforcer.settle()
        log.debug("reconcile pass: %d of %d ARs looked at, %.1f ms CPU, %.1f ms wall",
                  len(looked), stored, (time.thread_time() - cpu) * 1000,
                  (time.perf_counter() - began) * 1000)
        return self.next_due()

    def _grant_series(self, now: int, changed: set[int], full: bool) -> None:
        """Grant the occurrences of the series that fell due (outside the
        use cases' lock: each grant takes it), after taking in the due
        times of the series whose occurrences changed (of all, at a full pass)."""
        cases = self.series
        if cases is None:
            return
        if full:
            self._series_due = _DueTimes()
            for series_id, due in cases.due().items():
                self._series_due.set(series_id, due)
        with self.manager.lock:
            ars = self.manager.ars
            touched = {ars[i].series for i in changed if i in ars and ars[i].series is not None}
            touched |= self._series_told
            self._series_told = set()
        for series_id in touched:
            self._series_due.set(series_id, self._series_due_time(series_id))
        for series_id in self._series_due.pop_due(now):
            try:
                cases.extend(series_id, limit=_SERIES_PER_PASS)
            except Exception:
                log.exception("series %d: granting its occurrences failed; the next pass "
                              "tries again", series_id)
            self._series_due.set(series_id, self._series_due_time(series_id))

    def _series_due_time(self, series_id: int) -> int | None:
        found = self.series.table.get(series_id) if self.series is not None else None
        return found.next_due if found is not None else None

    def _absorb(self) -> None:
        """Take the manager's changes since the last look into the due
        times and the finished ARs, and keep their ids for the pass."""
        changed = self.manager.take_changed()
        for ar_id in changed:
            self._track(ar_id)
        self._changed |= changed

    def _track(self, ar_id: int) -> None:
        """One AR's next due time and place among the finished ones."""
        ar = self.manager.ars.get(ar_id)
        self._due.set(ar_id, min(self.due_times(ar), default=None) if ar else None)
        if ar is None or ar.state in FINISHED_STATES:
            self._announced.pop(ar_id, None)
            self._idle.forget(ar_id)
        if ar is None or ar.state not in FINISHED_STATES:
            self._finished.pop(ar_id, None)
            return
        rank = (ar.finished_time or 0, ar.id)
        if self._finished.get(ar_id) != rank:
            self._finished[ar_id] = rank
            heapq.heappush(self._finished_heap, rank)
            if len(self._finished_heap) > 2 * len(self._finished) + 1024:
                self._finished_heap = sorted(self._finished.values())

    def _keep_health(self, ids: set[int], found: dict[int, str]) -> None:
        """Keep what the backend said of the ARs among ``ids`` (those it was
        not asked about, or that are gone, have no problem)."""
        for ar_id in ids:
            if ar_id in found and ar_id in self.manager.ars:
                self._problems[ar_id] = found[ar_id]
            else:
                self._problems.pop(ar_id, None)
                self._repairs.forget(ar_id)

    def _advance_fresh(self, ar_id: int, now: int) -> None:
        """One AR's transition; if another daemon changed the AR meanwhile,
        on the copy it wrote."""
        for _ in range(2):
            ar = self.manager.ars.get(ar_id)
            if ar is None:
                return
            try:
                self._advance(ar, now, self._problems.get(ar_id))
                self._announce(ar_id, now)
                return
            except Stale:
                self.manager.catch_up()
        _CONTENDED.warning("contended", "AR %s changed at other daemons during two passes at "
                           "it; the next pass tries again", ar_id)

    def _advance(self, ar: Reservation, now: int, reason: str | None) -> None:
        """One AR's transition, if the clock or its nodes' health call for one."""
        if ar.pending is not None and ar.pending_since + self.manager.config.commit_timeout <= now:
            ar = self.manager.time_out(ar)
            if ar.id not in self.manager.ars:
                return
        if ar.state is State.AWAITING:
            if now >= approval.lapse_time(ar):
                self.manager.lapse(ar, now)
            return
        if ar.state in FINISHED_STATES or ar.state == State.PENDING:
            return
        if now >= ar.end:
            self.manager.end(ar)
            return
        why = self._idle.why(ar, now, self._busy, self.interval)
        if why:
            self.manager.release(ar, why)
            return
        if reason:
            reason = self._repairs.attempt(ar, now, reason)
            if reason is None:             # repaired: healthy on its new nodes
                self._problems.pop(ar.id, None)
                return
            ar = self.manager.ars[ar.id]
        target = ar.error_state(now) if reason else ar.window_state(now)
        if target != ar.state or (reason or "") != ar.message:
            self.manager.change_state(ar, target, reason)

    @property
    def events(self) -> EventLog:
        """The store's events, where ending-soon events go."""
        if self._events is None:
            self._events = EventLog(self.manager.store)
        return self._events

    def _announce(self, ar_id: int, now: int) -> None:
        """The AR's notices whose lead time has come, each once; the
        plugins hear of those its users are told, from the daemon that
        put the event."""
        ar = self.manager.ars.get(ar_id)
        if ar is None:
            return
        told = self._announced.setdefault(ar_id, set())
        for notice in self._untold(ar):
            if notice.due > now:
                continue
            told.add(notice.told)     # given now, or never (its moment came first)
            if not notice.open_for(ar, now):
                continue
            if notice.moment == CLEAR:
                self._clear_ahead(ar, notice, now)
                continue
            marks = {"notice": True} if notice.asked else {}
            event = reservation_event(notice.kind, now, ar, notice.key(ar), lead=notice.lead,
                                      **marks)
            if self.events.add_once(event):
                self.manager.reported()
                if notice.asked:
                    self.manager.notify(ar, notice.moment, notice.lead)

    def _clear_ahead(self, ar: Reservation, notice: Notice, now: int) -> None:
        """A clear-notice lead came: the jobs still on the AR's nodes past
        its start, as the inventory of this pass saw them, told once (event,
        and the plugins mail their owners); none, nothing."""
        jobs = jobs_in_the_way(ar, self.manager.inventory.jobs)
        if jobs and self.events.add_once(nodes_busy_event(now, ar, notice.key(ar),
                                                          notice.lead, jobs)):
            self.manager.reported()
            self.manager.nodes_busy(ar, notice.lead, jobs)

    def _untold(self, ar: Reservation) -> list[Notice]:
        """The AR's notices whose moment is still to come, not told yet."""
        config = self.manager.config
        told = self._announced.get(ar.id, set())
        return [notice for notice in notices(ar, config.notice.start, config.notice.end,
                                             config.ending_soon, config.clear_notice)
                if notice.told not in told and notice.ahead(ar)]

    def _busy(self, ar_id: int) -> bool:
        """Whether AR ``ar_id`` is in use all the same: the running jobs the
        leader last observed hold one of its, or open ARs are inside it
        (ResAccess: their own jobs are theirs)."""
        return (any(job.reservation == ar_id for job in self.manager.inventory.jobs)
                or any(i in self.manager.ars and self.manager.ars[i].holds_resources
                       for i in self.manager.inner_ars(ar_id)))

    def _health(self, ars: list[Reservation]) -> dict[int, str]:
        """The backend's word on ``ars`` (asked outside the use cases' lock)."""
        if not ars:
            return {}
        try:
            with self.manager.enforcer.lock:
                return self.manager.backend.health(ars)
        except Exception as exc:
            return {ar.id: f"backend health check failed: {exc}" for ar in ars}

    def _expire(self, now: int, ids: set[int]) -> None:
        """Forget the finished ARs among ``ids`` ``expiry`` seconds after they
        ended, and the oldest beyond the ``max_expired`` most recent ones;
        drop kept usage older than ``usage_history``."""
        manager, config = self.manager, self.manager.config
        self._absorb()
        for ar_id in sorted(ids & self._finished.keys()):
            ar = manager.ars[ar_id]
            if (ar.finished_time or 0) + config.expiry <= now:
                if not self._forgotten(ar):
                    return
                self._finished.pop(ar_id)
        while len(self._finished) > config.max_expired:
            rank = heapq.heappop(self._finished_heap)
            if self._finished.get(rank[1]) == rank:
                if not self._forgotten(manager.ars[rank[1]]):
                    heapq.heappush(self._finished_heap, rank)
                    return
                del self._finished[rank[1]]
        manager.forget_usage(now - config.usage_history)

    def _forgotten(self, ar: Reservation) -> bool:
        """Forget a finished AR; False if another daemon changed or removed
        it meanwhile: its change is taken in, and the next pass, having
        absorbed it, looks again."""
        try:
            self.manager.forget(ar)
            return True
        except Stale:
            self.manager.catch_up()
            return False

    def due_times(self, ar: Reservation) -> list[int]:
        """When the clock alone changes this AR: commit time-out, approval
        lapse, start, end, expiry, and its notices not told yet."""
        config = self.manager.config
        times = []
        if ar.pending is not None:
            times.append(ar.pending_since + config.commit_timeout)
        if ar.state in (State.WAITING, State.WARNING):
            times.append(ar.start)
        if ar.state is State.AWAITING:
            times.append(approval.lapse_time(ar))
        elif ar.state not in FINISHED_STATES:
            times.append(ar.end)
            if ar.state != State.PENDING:
                times += [notice.due for notice in self._untold(ar)]
            release = self._idle.due(ar)
            if release is not None:
                times.append(release)
        else:
            times.append((ar.finished_time or 0) + config.expiry)
        return times

    def next_due(self) -> int | None:
        """The next instant at which any AR changes state by the clock (from
        the due times kept since the first pass, before it from every AR)."""
        with self.manager.lock:
            if not self._primed:
                return min((t for ar in self.manager.ars.values() for t in self.due_times(ar)),
                           default=None)
            self._absorb()
            return min((due for due in (self._due.first(), self._series_due.first())
                        if due is not None), default=None)


class _DueTimes:
    """Each AR's next due time, and a heap of them: the next instant and
    the ARs due by now are found without a scan of every AR. Entries a
    change made stale stay in the heap until they surface, and the heap is
    rebuilt when they outnumber the live ones."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int]] = []
        self._at: dict[int, int] = {}

    def set(self, ar_id: int, when: int | None) -> None:
        if when is None:
            self._at.pop(ar_id, None)
        elif self._at.get(ar_id) != when:
            self._at[ar_id] = when
            heapq.heappush(self._heap, (when, ar_id))
        if len(self._heap) > 2 * len(self._at) + 1024:
            self._heap = [(when, ar_id) for ar_id, when in self._at.items()]
            heapq.heapify(self._heap)

    def pop_due(self, now: int) -> list[int]:
        """The ARs due at or before ``now``, taken out until set again."""
        due, heap = [], self._heap
        while heap and heap[0][0] <= now:
            when, ar_id = heapq.heappop(heap)
            if self._at.get(ar_id) == when:
                del self._at[ar_id]
                due.append(ar_id)
        return due

    def first(self) -> int | None:
        heap = self._heap
        while heap and self._at.get(heap[0][1]) != heap[0][0]:
            heapq.heappop(heap)
        return heap[0][0] if heap else None
