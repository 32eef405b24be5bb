"""Early release: which open ARs have run no job for their idle time
(``idle_release``), or have seen their jobs all end
(``release_when_done``), and when each falls due.

Every backend's job starts and ends are in the store's events already
(job.started, job.ended: the native scheduler writes its own, the
leader's published inventory writes the others'), so the leader reads
the events after the last it read at each pass: no batch-system call,
and a pass costs the jobs that started or ended since the last one. A
new leader reads once the job events of the open ARs it watches (the
table holds a week of them), so a restart neither forgets that a job
ran nor starts an idle clock again. Before an AR is released, the
running jobs the leader last observed are asked too: a job whose start
event was pruned still keeps its AR.
"""

from __future__ import annotations

import json
from typing import Callable, Iterable

from overlay.events.catalog import JOB_ENDED, JOB_STARTED
from overlay.language.model import Reservation, State
from overlay.persistence.events import Event, EventLog

OPEN = (State.RUNNING, State.ERROR)
"""States of an AR whose window is open, which may be released."""
PAGE = 1000
"""Events read at a time."""


class IdleWatch:
    """The leader's memory of the jobs of open ARs, from their events."""

    def __init__(self, site_idle: Callable[[], int]) -> None:
        """``site_idle``: plus.yaml's idle_release now (it changes on HUP)."""
        self.site_idle = site_idle
        self._cursor: int | None = None
        self._running: dict[int, set[str]] = {}   # AR -> ids of its jobs running
        self._last: dict[int, int] = {}           # AR -> when a job of it last started or ended
        self._ran: set[int] = set()               # ARs in which a job has run
        self._not_before: dict[int, int] = {}     # AR -> seen busy by the inventory: wait till

    def idle_time(self, ar: Reservation) -> int:
        """Seconds the AR may run no job before it is released (0: never)."""
        own = ar.request.idle_release
        return self.site_idle() if own is None else own

    def watches(self, ar: Reservation) -> bool:
        return bool(self.idle_time(ar) or ar.request.release_when_done)

    def prime(self, events: EventLog, ars: Iterable[Reservation]) -> None:
        """A pass that looks at every AR (this daemon takes the lead): the
        job events of the open ARs it watches, read once."""
        self._running, self._last, self._ran, self._not_before = {}, {}, set(), {}
        head = events.head()
        watched = [ar.id for ar in ars if ar.state in OPEN and self.watches(ar)]
        self._take(events.of_ars(watched, (JOB_STARTED, JOB_ENDED), head))
        self._cursor = head

    def take(self, events: EventLog) -> set[int]:
        """The job events since the last read; the ARs whose jobs changed."""
        if self._cursor is None:
            return set()
        changed: set[int] = set()
        while True:
            page = events.after(self._cursor, PAGE)
            changed |= self._take(page)
            if len(page) < PAGE:
                return changed

    def _take(self, events: list[Event]) -> set[int]:
        changed = set()
        for event in events:
            self._cursor = max(self._cursor or 0, event.id)
            if event.type not in (JOB_STARTED, JOB_ENDED):
                continue
            job_id = str(json.loads(event.data).get("job", {}).get("id", ""))
            running = self._running.setdefault(event.ar_id, set())
            if event.type == JOB_STARTED:
                running.add(job_id)
                self._ran.add(event.ar_id)
            else:
                running.discard(job_id)
            self._last[event.ar_id] = max(self._last.get(event.ar_id, 0), event.time)
            self._not_before.pop(event.ar_id, None)
            changed.add(event.ar_id)
        return changed

    def due(self, ar: Reservation) -> int | None:
        """When the AR is to be released if no job of it starts meanwhile."""
        if ar.state not in OPEN or self._running.get(ar.id):
            return None
        times = []
        if ar.request.release_when_done and ar.id in self._ran:
            times.append(self._last.get(ar.id, ar.start))
        idle = self.idle_time(ar)
        if idle:
            times.append(max(ar.start, self._last.get(ar.id, 0)) + idle)
        if not times:
            return None
        return max(min(times), self._not_before.get(ar.id, 0))

    def why(self, ar: Reservation, now: int, busy: Callable[[int], bool],
            wait: int) -> str | None:
        """Why the AR is to be released now, or None; ``busy`` says whether
        the running jobs the leader observed hold one of the AR's (then it
        waits ``wait`` seconds before it is asked again)."""
        due = self.due(ar)
        if due is None or due > now:
            return None
        if busy(ar.id):
            self._not_before[ar.id] = now + wait
            return None
        if ar.request.release_when_done and ar.id in self._ran:
            return "its jobs have all ended (--release-when-done)"
        return f"no job ran in it for {self.idle_time(ar)} s (idle_release)"

    def forget(self, ar_id: int) -> None:
        """The AR is no longer open."""
        for memory in (self._running, self._last, self._not_before):
            memory.pop(ar_id, None)
        self._ran.discard(ar_id)
