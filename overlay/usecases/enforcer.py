"""Enforcement: the backend made to match the stored ARs, apart from the
use cases that decide them.

A use case validates, places and commits, then answers; it never calls
the backend. It names the ARs it changed (``want``) and this room makes
the batch system follow, in a thread of its own and outside the use
cases' lock, so that a slow batch system (a ``qconf`` taking seconds, a
command over SSH) stalls nobody's ``plus_status`` or ``plus_reserve``.

What is enforced is read from the use cases when it is applied (``desired``),
never from the order of the changes: several changes to one AR before
the enforcer gets to it come down to one call, and a change made while a
call runs is applied again after it. The backend calls are idempotent, so
this converges. One call drives the backend at a time (``lock``: the
lifecycle's inventory and health checks take it too). Every AR the
enforcer applied is remembered as applied, so that it knows when to ask
``Backend.modify`` (the window, users or nodes changed) and what to tear
down once the AR is gone from the store; a failure is logged and retried
at the next ``settle`` (the lifecycle's pass calls it).
"""

from __future__ import annotations

import logging
import threading
from typing import Callable, Iterable

from overlay.contract.backend import Backend
from overlay.language.model import Reservation, State

log = logging.getLogger("plus.enforcer")

Desired = Callable[[Iterable[int]], dict[int, Reservation | None]]
"""The ARs as the backend is to enforce them now, by id; None: gone."""


def _reshaped(before: Reservation, after: Reservation) -> bool:
    """Whether the AR's window, users or nodes changed since it was applied."""
    return (before.start, before.end, before.acl, before.allocations) != \
        (after.start, after.end, after.acl, after.allocations)


class Enforcer:
    """The one driver of the backend's per-AR calls."""

    def __init__(self, backend: Callable[[], Backend], desired: Desired) -> None:
        """``backend``: the running backend, asked at each call (as the Placer does)."""
        self.backend = backend
        self.desired = desired
        self.lock = threading.RLock()
        self._wanted: set[int] = set()
        self._wake = threading.Condition()
        self._applied: dict[int, Reservation] = {}
        self._gone: dict[int, Reservation] = {}
        self._failed: set[int] = set()
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._standing_by = False
        self.fence: Callable[[], bool] = lambda: True
        """Whether this daemon may drive the backend now (it leads), asked
        before each round of calls: one that lost the lead touches nothing."""

    def want(self, ids: Iterable[int], gone: Reservation | None = None) -> None:
        """ARs to enforce anew (``gone``: one that left the store, as it was
        enforced, should nothing of it have been applied here yet). A
        standby keeps nothing: the pass that makes it leader looks at all."""
        if self._standing_by:
            return
        with self._wake:
            if gone is not None:
                self._gone[gone.id] = gone
            self._wanted.update(ids)
            self._wake.notify()

    def stand_by(self) -> None:
        """Another daemon leads: keep no wish until ``start``, and forget
        what was applied (the leader changes the backend meanwhile; the
        pass that makes this daemon lead again reconciles everything)."""
        self._standing_by = True
        with self.lock, self._wake:
            self._wanted, self._gone, self._failed = set(), {}, set()
            self._applied = {}

    def lead(self) -> None:
        """This daemon leads: keep wishes again (before the pass that takes
        the lead, which wants every AR and applies them itself)."""
        self._standing_by = False

    def start(self) -> None:
        """Enforce in a thread of its own from now on (the same thread
        when this daemon takes the lead again)."""
        self.lead()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="plus-enforcer", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Finish the call under way and stop the thread."""
        with self._wake:
            self._stopping = True
            self._wake.notify()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._wanted and not self._stopping:
                    self._wake.wait()
                if self._stopping:
                    return
            try:
                self.settle(retry=False)
            except Exception:
                log.exception("enforcing ARs failed; the next reconcile pass retries")
            if self._wanted and not self.fence():    # not leading: no busy loop meanwhile
                with self._wake:
                    self._wake.wait(1.0)

    def settle(self, retry: bool = True) -> set[int]:
        """Enforce every AR wanted (and, with ``retry``, those that failed
        before) now, in the calling thread; the ids that failed."""
        with self.lock:
            if not self.fence():
                return set(self._failed)          # the wanted ARs wait for a leader's pass
            with self._wake:
                ids, self._wanted = self._wanted, set()
                if retry:
                    ids |= self._failed
                gone, self._gone = self._gone, {}
            desired = self.desired(ids)
            for ar_id in sorted(ids):
                target = desired.get(ar_id)
                last = self._applied.get(ar_id, gone.get(ar_id))
                if self._enforce(ar_id, target, last):
                    self._failed.discard(ar_id)
                else:
                    self._failed.add(ar_id)
                    if target is None and last is not None:
                        self._gone.setdefault(ar_id, last)
            return set(self._failed)

    def reconcile(self, reservations: list[Reservation]) -> None:
        """The backend's whole-picture pass (objects of ARs the store no
        longer has removed); a failure is logged and the next pass retries."""
        with self.lock:
            try:
                self.backend().reconcile(reservations)
            except Exception as exc:
                log.warning("backend reconcile failed (will retry): %s", exc)

    def _enforce(self, ar_id: int, target: Reservation | None, last: Reservation | None) -> bool:
        """One AR's calls; whether they all succeeded."""
        try:
            if target is None:
                if last is not None:
                    self.backend().teardown(last)
                self._applied.pop(ar_id, None)
                return True
            if last is not None and target.holds_resources and _reshaped(last, target):
                self.backend().modify(last, target)
            self._apply_state(target)
        except Exception as exc:
            state = target.state.value if target is not None else "gone"
            log.warning("backend could not apply state %s of AR %s (will retry): %s",
                        state, ar_id, exc)
            return False
        self._applied[ar_id] = target
        return True

    def _apply_state(self, ar: Reservation) -> None:
        if ar.state in (State.WAITING, State.WARNING):
            self.backend().prepare(ar)
        elif ar.state in (State.RUNNING, State.ERROR):
            self.backend().prepare(ar)
            self.backend().activate(ar)
        elif ar.state == State.EXITED:
            self.backend().teardown(ar)
        elif ar.state == State.DELETED:
            self.backend().release(ar)
