"""PluS's self-scheduling mode for TORQUE (seed 004, 3.2): with the site's
pbs_sched switched off (``set server scheduling = False``), this overlay
decides which queued job starts where and starts it with ``qrun -H``.

Jobs go in PluS's JobSortKey order (the TORQUE fifo settings of 3.3 map
onto it), nodes in NodeSortKey order. An AR's jobs run only on its nodes
and only while its queue is started; a normal job never goes on a node of
an open window, nor where its walltime would run into a window ahead (a
job without walltime only where no window is ahead): so no foreign job has
to be held or requeued at a start unless it was there before the grant.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from overlay.api.plugin import (
    DEFAULT_JOB_ORDER,
    JobOrder,
    Node,
    order_jobs,
    read_orders,
    sort_nodes,
)
from overlay_torque import nodespec
from overlay_torque.ledger import Ledger
from overlay_torque.status import TorqueJob, TorqueNode, parse_queues, parse_server
from overlay_torque.torque import Torque, TorqueError

log = logging.getLogger("plus.torque.sched")


@dataclass(frozen=True)
class Window:
    ar_id: int
    nodes: tuple[str, ...]
    start: int
    end: int


@dataclass(frozen=True)
class Candidate:
    """A queued job as PluS's job order sees it."""

    id: str
    priority: float
    submit_time: int
    queue: str
    slots: int
    nodes: int
    time: int
    owner: str
    group: str
    host: str


def scheduling_orders(options: dict[str, Any], relative: Callable[[str], str]
                      ) -> tuple[JobOrder, tuple[str, ...]]:
    """JobSortKey with the owners' orders, and NodeSortKey (empty: the
    core's node_order), inline or from PluS's sched_conf; the default job
    order is TORQUE fifo's own (QueuePriority, ByQueue, JobPriority)."""
    orders = read_orders(options, "torque", lambda name: _read(relative(name)))
    jobs = JobOrder(keys=orders.get("JobSortKey") or DEFAULT_JOB_ORDER,
                    owners=orders.get("OwnersOrder", ()), groups=orders.get("GroupsOrder", ()),
                    hosts=orders.get("HostsOrder", ()))
    return jobs, orders.get("NodeSortKey", ())


def _read(path: str) -> tuple[str, str]:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read(), path
    except OSError as exc:
        raise ValueError(f"torque.sched_conf: cannot read {path}: {exc.strerror}") from None


class SelfScheduler:
    """One pass every ``interval`` seconds, and at once when woken, while
    this daemon leads: a daemon that stands by (another leads, or this one
    lost the lease) starts no job, and the lease (``fence``) is asked
    again before every ``qrun``."""

    def __init__(self, torque: Torque, ledger: Ledger, order: JobOrder,
                 node_order: tuple[str, ...], interval: int) -> None:
        self.torque = torque
        self.ledger = ledger
        self.order = order
        self.node_order = node_order
        self.interval = interval
        self.lock = threading.Lock()
        self._windows: dict[int, Window] = {}
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._warned = False
        self.standing_by = False
        """Another daemon on the store leads and schedules: no pass here."""
        self.fence: Callable[[], bool] = lambda: True
        """Whether this daemon still leads (its lease)."""

    def lead(self, fence: Callable[[], bool]) -> None:
        """This daemon leads (``fence`` says until when): passes run again."""
        self.fence, self.standing_by = fence, False
        self.wake()

    def stand_by(self) -> None:
        """Another daemon leads: start nothing until ``lead``."""
        self.standing_by = True

    def put_window(self, window: Window) -> None:
        with self.lock:
            self._windows[window.ar_id] = window

    def drop_window(self, ar_id: int) -> None:
        with self.lock:
            self._windows.pop(ar_id, None)

    def replace_windows(self, windows: list[Window]) -> None:
        with self.lock:
            self._windows = {w.ar_id: w for w in windows}

    def start(self) -> None:
        """Run passes from now on (one thread, however often called)."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._thread = threading.Thread(target=self._loop, name="torque-scheduler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def wake(self) -> None:
        self._wake.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_pass(int(time.time()))
            except TorqueError as exc:
                log.warning("scheduling pass failed: %s", exc)
            self._wake.wait(self.interval)
            self._wake.clear()

    def run_pass(self, now: int) -> list[tuple[str, tuple[str, ...]]]:
        """Start what can start now; the (job, hosts) started, in order.
        Nothing while standing by, and nothing more once the lease is lost."""
        if self.standing_by or not self.fence():
            return []
        printed = self.torque.print_server()
        queues = parse_queues(printed)
        if parse_server(printed).get("scheduling") == "True" and not self._warned:
            self._warned = True
            log.error("torque.scheduler is plus but pbs_sched is on (server scheduling = True): "
                      "switch it off with qmgr -c 'set server scheduling = False'")
        nodes = self._sorted([n for n in self.torque.nodes() if n.alive and not n.offline], now)
        free = {n.name: n.np - len(n.jobs) for n in nodes}
        with self.lock:
            windows = list(self._windows.values())
        queue_rank = tuple(queues)
        order = JobOrder(self.order.keys, self.order.owners, self.order.groups, self.order.hosts,
                         {q: int(a.get("Priority", 0) or 0) for q, a in queues.items()}, queue_rank)
        waiting = {job.id: job for job in self.torque.jobs() if job.state == "Q" and not job.held
                   and queues.get(job.queue, {}).get("started") == "True"}
        started = []
        for candidate in order_jobs([_candidate(job) for job in waiting.values()], order):
            job = waiting[candidate.id]
            hosts = self._place(job, nodes, free, windows, now)
            if hosts is None:
                continue
            if not self.fence():
                log.warning("lost the lead during a scheduling pass: no more jobs started")
                break
            slots = _slots_per_host(job)
            self.torque.start(job.id, [f"{host}:ppn={used}" if used > 1 else host
                                       for host, used in zip(hosts, slots, strict=True)])
            for host, used in zip(hosts, slots, strict=True):
                free[host] -= used
            started.append((job.id, hosts))
            log.info("started job %s of %s on %s", job.id, job.owner, "+".join(hosts))
        return started

    def _sorted(self, nodes: list[TorqueNode], now: int) -> list[TorqueNode]:
        by_name = {n.name: n for n in nodes}
        ordered = sort_nodes([Node(name=n.name, load=n.load, memory_mb=n.kb("physmem") // 1024)
                              for n in nodes], list(self.node_order), now)
        return [by_name[n.name] for n in ordered]

    def _place(self, job: TorqueJob, nodes: list[TorqueNode], free: dict[str, int],
               windows: list[Window], now: int) -> tuple[str, ...] | None:
        """Hosts for every part of the job's node spec, or None."""
        ar = next((w for w in windows if f"R{w.ar_id}" == job.queue), None)
        end = now + job.walltime if job.walltime else None
        chosen: list[str] = []
        spare = dict(free)
        for part in nodespec.parse(job.nodes_spec):
            for _ in range(part.count):
                host = next((n.name for n in nodes
                             if n.name not in chosen and part.host in (None, n.name)
                             and spare.get(n.name, 0) >= part.ppn
                             and all(p in n.properties for p in part.properties)
                             and self._allowed(n.name, ar, windows, now, end)), None)
                if host is None:
                    return None
                chosen.append(host)
                spare[host] -= part.ppn
        return tuple(chosen)

    @staticmethod
    def _allowed(host: str, ar: Window | None, windows: list[Window], now: int,
                 end: int | None) -> bool:
        if ar is not None:
            return host in ar.nodes and ar.start <= now < ar.end
        for window in windows:
            if host in window.nodes and window.end > now and (end is None or end > window.start):
                return False
        return True


def _candidate(job: TorqueJob) -> Candidate:
    return Candidate(id=job.id, priority=job.priority, submit_time=job.queued_since, queue=job.queue,
                     slots=nodespec.slots(job.nodes_spec), nodes=nodespec.node_count(job.nodes_spec),
                     time=job.walltime or 0, owner=job.owner, group=job.group, host="")


def _slots_per_host(job: TorqueJob) -> list[int]:
    """Slots on each host chosen, in the order _place chose them."""
    return [part.ppn for part in nodespec.parse(job.nodes_spec) for _ in range(part.count)]
