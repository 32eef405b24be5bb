"""The lending queue kept as the open ARs say, and lent jobs ended as they
asked once an AR took their slots back (overlay_sge.lending says what the
objects are; overlay_sge.lendwatch is the thread that looks).

Everything it makes is in the ledger before the command that makes it:
the queue (removed if lending is turned off), each host's calendar, each
preemption until its job is requeued or killed, so a daemon killed at any
point converges after a restart. Called under the backend's lock.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from overlay.api.plugin import Reservation
from overlay_sge import lending, objects
from overlay_sge.gridengine import GridEngine, GridEngineError
from overlay_sge.ledger import Ledger, Preemption
from overlay_sge.lendevents import PreemptionEvents
from overlay_sge.lendwatch import LendWatch
from overlay_sge.settings import Settings
from overlay_sge.status import Observation

log = logging.getLogger("plus.sge")

Put = Callable[[str, str, dict], bool]


class Loans:
    """The lending side of the Grid Engine backend."""

    def __init__(self, engine: GridEngine, ledger: Ledger, config: Settings,
                 lock: threading.RLock, store_url: str | None) -> None:
        self.engine = engine
        self.ledger = ledger
        self.name = config.lend_queue
        self.complex = config.complex
        self.template_queue = config.template_queue
        self.lock = lock
        self.events = PreemptionEvents(store_url)
        self.watch = LendWatch(self.look, config.lend_watch)
        self.lenders: dict[int, lending.Lender] = {}
        self._template: dict[str, str] | None = None
        self._applied: dict[str, str] | None = None
        self._years: dict[str, str] = {}

    # -- what other parts of the backend ask --------------------------------------------

    def is_lending(self, queue: str | None) -> bool:
        """Whether ``queue`` is the lending queue (or one made before lending
        was turned off): never suspended, calendared or cleared as a normal one."""
        return queue is not None and queue in {self.name, self.ledger.lend_queue()} - {None}

    def subordinates(self, ar: Reservation) -> str:
        """The AR queue's subordinate_list: the lending queue slot-wise."""
        if self.name is None:
            return "NONE"
        return lending.subordinates(self.name, {a.node: a.slots for a in ar.allocations})

    # -- the queue ---------------------------------------------------------------------------

    def ready(self, put: Put) -> None:
        """The lending queue exists (no hosts until an AR opens), before any
        AR queue names it; one made under another name before goes."""
        self.retire()
        if self.name is None:
            return
        current = self.engine.show("queue", self.name)
        if current is not None and self.ledger.lend_queue() != self.name and \
                current.get("complex_values") != f"{self.complex}={self.name}":
            raise GridEngineError(f"queue {self.name} exists and is not this overlay's lending "
                                  "queue; set sge.lend_queue to a name no queue has")
        self._template = None
        self._applied = None
        self.ledger.note_lend_queue(self.name)
        if current is None:
            put("queue", self.name, lending.queue(self.name, self._template_file(), self.complex, {}))

    def retire(self) -> None:
        """A lending queue this overlay made under a name no longer configured
        goes (AR queues must no longer name it: tried again at the next pass
        until Grid Engine allows it)."""
        old = self.ledger.lend_queue()
        if old is None or old == self.name:
            return
        try:
            self.engine.set_attribute("queue", "hostlist", "NONE", old)
        except GridEngineError:
            pass                                     # gone already
        self.engine.delete("queue", old)
        if self.engine.show("queue", old) is not None:
            log.warning("lending queue %s is still referenced or running jobs: removed later", old)
            return
        self._drop_calendars(set())
        self.ledger.note_lend_queue(None)
        log.info("removed lending queue %s (sge.lend_queue changed)", old)

    def _template_file(self) -> dict[str, str]:
        """The template queue's settings, read once per lead."""
        if self._template is None:
            self._template = self.engine.show("queue", self.template_queue)
            if self._template is None:
                raise GridEngineError(f"template queue {self.template_queue} does not exist; set "
                                      "sge.template_queue to a queue whose settings the lending "
                                      "queue copies")
        return self._template

    def _put_queue(self, put: Put, slots: dict[str, int]) -> None:
        if self.name is None:
            return
        wanted = lending.queue(self.name, self._template_file(), self.complex, slots)
        if wanted == self._applied:
            return
        put("queue", self.name, wanted)
        self._applied = wanted

    # -- which hosts lend -----------------------------------------------------------------

    def lend(self, ar: Reservation) -> bool:
        """The open AR lends its hosts; True if that is news."""
        if self.name is None:
            return False
        lender = lending.Lender(ar.id, {a.node: a.slots for a in ar.allocations}, ar.end)
        if self.lenders.get(ar.id) == lender:
            return False
        self.lenders[ar.id] = lender
        return True

    def withdraw(self, ar_id: int) -> bool:
        """The AR is no longer open; True if it lent."""
        return self.lenders.pop(ar_id, None) is not None

    def follow(self, open_ars: list[Reservation]) -> None:
        """The lenders are exactly the open ARs (a reconcile pass, or after a restart)."""
        self.lenders = {}
        for ar in open_ars:
            self.lend(ar)

    def sync(self, observation: Observation, put: Put) -> None:
        """Calendars, then the queue on the lending hosts with their idle
        slots, then calendars no host needs go; the watch runs while any
        host lends."""
        if self.name is None:
            self.watch.want(False)
            return
        hosts = lending.hosts_of(self.lenders.values())
        now = int(time.time())
        for host, lent in hosts.items():
            wanted = lending.calendar(host, lent.end, now)
            if self._years.get(host) != wanted["year"]:
                self.ledger.note_lend_calendar(host, True)
                put("calendar", wanted["calendar_name"], wanted)
                self._years[host] = wanted["year"]
        self._put_queue(put, lending.idle_slots(hosts, observation, self._is_ar_queue))
        self._drop_calendars(set(hosts))
        self.watch.want(bool(hosts))

    def _drop_calendars(self, keep: set[str]) -> None:
        for host in self.ledger.lend_calendars() - keep:
            self.engine.delete("calendar", lending.calendar_name(host))
            self._years.pop(host, None)
            self.ledger.note_lend_calendar(host, False)

    @staticmethod
    def _is_ar_queue(queue: str) -> bool:
        return objects.ar_id_of(queue) is not None

    # -- the watch's look: preempted jobs ended as they asked -------------------------------

    def look(self) -> None:
        """One look (the watch's thread): the lending and open AR queues'
        instances and jobs, the idle slots followed, preempted jobs ended."""
        with self.lock:
            if not self.lenders:
                self.watch.want(False)
                return
            queues = [self.name] + [objects.queue_name(ar_id) for ar_id in self.lenders]
            observation = self.engine.observe(queues)
            self._put_queue(self._put_known, lending.idle_slots(
                lending.hosts_of(self.lenders.values()), observation, self._is_ar_queue))
            self.preempt(observation)

    def _put_known(self, kind: str, name: str, wanted: dict) -> bool:
        self.engine.put(kind, wanted, exists=True)
        return True

    def preempt(self, observation: Observation) -> None:
        """Each lent job Grid Engine suspended for an AR job is noted, told
        (job.preempted) and ended: requeued (qmod -rj) if rerunnable, killed
        (qdel) if not; preemptions a crash left half done are finished."""
        if self.name is None:
            return
        hosts = lending.hosts_of(self.lenders.values())
        known = self.ledger.preemptions()
        fresh = [job for job in lending.preempted(observation, self.name)
                 if job.id not in known and job.host in hosts]
        flags = self.engine.restart_flags(job.id for job in fresh)
        for job in fresh:
            if job.id in flags:
                self.ledger.note_preemption(Preemption(
                    job.id, lending.mode(flags[job.id]), hosts[job.host].ar_id, job.owner,
                    job.host or "", job.start))
        running = {job.id for job in observation.running if job.queue == self.name}
        for preemption in self.ledger.preemptions().values():
            self._finish(preemption, preemption.job in running)

    def _finish(self, preemption: Preemption, running: bool) -> None:
        if not preemption.told:
            self.events.tell(preemption, int(time.time()))
            preemption.told = True
            self.ledger.note_preemption(preemption)
        if preemption.mode == lending.REQUEUE and running:
            if not self.engine.reschedule(preemption.job):
                self.engine.delete_jobs([preemption.job])
        elif preemption.mode == lending.KILL:
            self.engine.delete_jobs([preemption.job])
        self.ledger.end_preemption(preemption.job)
        log.info("lent job %s of %s on %s %s: advance reservation %d wants its slots back",
                 preemption.job, preemption.owner, preemption.host,
                 "requeued" if preemption.mode == lending.REQUEUE else "killed", preemption.ar_id)

    def close(self) -> None:
        self.watch.close()
        self.events.close()
