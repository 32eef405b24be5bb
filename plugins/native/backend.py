"""The native backend: the built-in batch system behind the reservation core.

The core grants ARs on the cluster file's hosts; this backend hands each AR
to the scheduler as a reserved window (its hosts, slots, users and state),
so that AR jobs run only inside it and other jobs stay off its slots, and
asks the scheduler to delete an AR's jobs when it ends or is cancelled.
Hosts the scheduler cannot reach count as down, so their ARs go to W or E.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from dataclasses import replace
from typing import Any, Callable, Iterable, Mapping

from overlay.api.plugin import (
    Allocation,
    Backend,
    Inventory,
    Job,
    JobBar,
    Node,
    Request,
    Reservation,
    ShownJob,
    settings,
)
from overlay_native import arplace, service
from overlay_native.execution.hosts import ExecutionHosts
from overlay_native.jobstore import JobStore
from overlay_native.relay import Relay, Relayed
from overlay_native.resources.cluster import Cluster, Containers
from overlay_native.resources.reserved import Reservations
from overlay_native.resources.timeline import Baseline, ClusterResources
from overlay_native.resources.window import ReservedWindow
from overlay_native.scheduling import estimate
from overlay_native.scheduling.scheduler import Scheduler

log = logging.getLogger("plus.native")

ESTIMATE_SECONDS = 1.0
"""How long one QUERY's passes may run (scheduling.estimate); then the
answer is a lower bound, said as such."""
DEFAULT_SPOOL = "/var/spool/plus"
CHECKS = {
    "cluster": settings.text("the cluster file's path (relative to the configuration's folder)"),
    "local_host": settings.FLAG,
    "ssh": settings.Check("a mapping of port, user, key, known_hosts, accept_unknown_host "
                          "(defaults for hosts with exec: ssh; the host is each node's name)",
                          lambda value: {} if value is None else value
                          if isinstance(value, dict) and "host" not in value else None),
    "spool_dir": settings.path(),
    "python": settings.text("the Python interpreter on the execution hosts"),
    "accounting_file": settings.text(),
}


def _planned_end(start: int, placement) -> int | None:
    return None if math.isinf(placement.duration) else int(start + placement.duration)


def _per_host(reservation: Reservation) -> dict[str, int]:
    slots: dict[str, int] = {}
    for allocation in reservation.allocations:
        slots[allocation.node] = slots.get(allocation.node, 0) + allocation.slots
    return slots


class NativeBackend(Backend):
    """The embedded cluster, its scheduler and its jobs."""

    name = "native"
    watches_drift = False      # the scheduler's windows change only through this backend
    writes_job_events = True   # the scheduler, in its writes of a job's start and end

    def __init__(self, cluster: Cluster, scheduler: Scheduler) -> None:
        self.cluster, self.scheduler = cluster, scheduler
        self.relay = Relay(scheduler.store)     # job commands given at a standby
        self._carried_out: dict[str, Callable] = {}
        self._placing = Baseline()       # qrsub placements', under the scheduler's lock
        self._held = Reservations()
        """Every AR holding resources as the store has it (``ars_changed``),
        at a standby as at the leader: what qrsub's placement keeps clear,
        the same at every daemon (the scheduler's windows are the leader's
        enforcement, and follow the store a pass later). Under the Manager's
        lock, as every call that reads or changes it."""
        self._containers: tuple[object, Containers] | None = None
        self._estimates = Baseline()        # QUERY's model, one estimate at a time
        self._estimating = threading.Lock()
        self.estimate_seconds = ESTIMATE_SECONDS

    def window(self, reservation: Reservation) -> ReservedWindow:
        """The AR as the scheduler holds it; a qrsub AR with its queue
        instances and what it holds of their consumables."""
        instances: dict[tuple[str, str], int] = {}
        users = tuple(reservation.acl)
        for a in reservation.allocations:
            if a.queue:
                instances[(a.queue, a.node)] = instances.get((a.queue, a.node), 0) + a.slots
        held = ()
        if instances:
            config = self.cluster.config()
            if self._containers is None or self._containers[0] is not config:
                self._containers = (config, config.containers())
            held = arplace.debits(config, self._containers[1], reservation.request,
                                  reservation.allocations)
            users = config.members(users)     # qrsub -u @name: an access list's members
        return ReservedWindow(
            reservation.id, reservation.start, reservation.end, _per_host(reservation),
            users, reservation.state.value, reservation.request.hard_error,
            reservation.submission_time, instances, held)

    def canonical(self, request: Request) -> Request:
        return replace(request, attributes=arplace.full_names(self.cluster.config(),
                                                              request.attributes))

    def place_slots(self, request: Request, owner: tuple[str, tuple[str, ...]],
                    users: list[tuple[str, tuple[str, ...]]],
                    ignore: int | None = None) -> tuple[list[Allocation], str]:
        config, scheduler = self.cluster.config(), self.scheduler
        job = arplace.ar_job(config, request, *owner, users, scheduler.now())
        running = scheduler.running_jobs()        # at a standby, the leader's, from the store
        with scheduler.lock:
            model = ClusterResources(config, scheduler.now(), scheduler.offset, scheduler.reports,
                                     None, self._held, self._placing, for_reservation=True)
            model.book_running((j, j.placement, j.start_time) for j in running)
            if ignore is not None and ignore in self._held:
                model.leave_out(self._held[ignore])
            return arplace.place(model, job, request)

    def ars_changed(self, written: Iterable[Reservation], removed: Iterable[int]) -> None:
        written = list(written)
        for ar_id in [*removed, *(ar.id for ar in written if not ar.holds_resources)]:
            self._held.remove(ar_id)
        self._held.put_all(self.window(ar) for ar in written if ar.holds_resources)

    @classmethod
    def from_config(cls, config, options: dict) -> "NativeBackend":
        values = settings.read_section("native", options, CHECKS)
        path = values.get("cluster")
        cluster = Cluster(config.relative(path) if path else None,
                          values.get("local_host", True), values.get("ssh", {}),
                          config.duration_offset)
        accounting = os.path.join(config.state_path, values.get("accounting_file", "accounting"))
        store = JobStore(config.store_url)
        try:
            scheduler = Scheduler(cluster, store, ExecutionHosts(
                values.get("spool_dir", DEFAULT_SPOOL), values.get("python", "python3")),
                accounting,
                os.path.join(config.state_path, "schedule"), config.duration_offset,
                reporting=True, min_uid=config.min_uid)
        except Exception:
            store.close()
            raise
        return cls(cluster, scheduler)

    def nodes(self) -> list[Node]:
        unreachable, reports = self.scheduler.unreachable, self.scheduler.reports
        return [node if node.name not in unreachable and node.name not in reports else
                replace(node, alive=node.alive and node.name not in unreachable,
                        load=reports.get(node.name, {}).get("load_avg", node.load))
                for node in self.cluster.nodes()]

    def running_jobs(self) -> list[Job]:
        return [Job(str(j.id), j.owner, tuple(j.placement.hosts), j.ar,
                    None if j.placement.h_rt is None else int(j.start_time + j.placement.h_rt),
                    int(j.start_time))
                for j in self.scheduler.running_jobs()]

    def job_start(self, request: Request, nodes: list[str],
                  user: tuple[str, tuple[str, ...]]) -> tuple[int | None, str] | None:
        """The scheduler's own passes run ahead in virtual time from its
        jobs as they are (``scheduling.estimate``), one estimate at a time
        on a model of its own; at a standby, None (the core estimates from
        the leader's inventory)."""
        if self.scheduler.standing_by:
            return None
        with self._estimating:
            outlook = self.scheduler.outlook()
            among = estimate.eligible_hosts(nodes, outlook)
            if len(among) < request.nodes:
                return None, (f"only {len(among)} of the {len(nodes)} node(s) matching the "
                              f"request run jobs (exec: none runs none); it needs "
                              f"{request.nodes}")
            shape = estimate.Shape(among, request.nodes, request.slots_per_node,
                                   request.duration, *user)
            found = estimate.estimate(outlook, shape, self.scheduler.offset, self._estimates,
                                      time.monotonic() + self.estimate_seconds)
        ahead = (f"{len(outlook.running)} running job(s) until their h_rt, "
                 f"{len(outlook.waiting)} waiting in its order, "
                 f"max_reservation {outlook.config.scheduler.max_reservation}, and the ARs")
        if found.stopped:
            return found.start, (f"no earlier than this: the native scheduler's passes run "
                                 f"ahead from now ({ahead}) had not started it after "
                                 f"{found.passes} pass(es), when the estimate's "
                                 f"{self.estimate_seconds:g} s were up")
        if found.start is None:
            return None, (f"no pass of the native scheduler would start it ({ahead}): jobs "
                          f"without h_rt, the ARs or the hosts' limits keep it out")
        return found.start, (f"the native scheduler's passes run ahead from now ({ahead}; "
                             f"{found.passes} pass(es)): exact while jobs run until their h_rt")

    def job_bars(self, now: int, inventory: Inventory) -> list[JobBar]:
        """Running jobs until their planned end (for ever without h_rt) and
        the resource reservations (-R y) of the jobs ahead, as planned; at a
        standby, the running jobs of the leader's inventory."""
        if self.scheduler.standing_by:
            return super().job_bars(now, inventory)
        bars = [JobBar(str(job.id), job.owner, "running", int(job.start_time),
                       _planned_end(int(job.start_time), job.placement),
                       tuple(job.placement.hosts)) for job in self.scheduler.running_jobs()]
        bars += [JobBar(str(plan.job), plan.owner, "reserved", plan.start,
                        _planned_end(plan.start, plan.placement), tuple(plan.placement.hosts))
                 for plan in self.scheduler.planned()]
        return bars

    def blocked_nodes(self, request: Request, inventory: Inventory) -> dict[str, str]:
        """Hosts whose running jobs (outside ARs) still hold, at the AR's
        start, slots the AR needs: jobs without h_rt hold them for ever
        (Grid Engine 6.2: no preemption, no conflicts). Asked of the
        scheduler in this process, which knows each job's slots
        (``inventory`` does not)."""
        busy: dict[str, tuple[int, str]] = {}
        offset = self.scheduler.offset
        for job in self.scheduler.running_jobs():
            h_rt = job.placement.h_rt
            if job.ar is not None or (h_rt is not None and
                                      job.start_time + h_rt + offset <= request.start):
                continue
            why = f"job {job.id} of {job.owner} " + ("has no h_rt" if h_rt is None
                                                     else "runs past the start")
            for _, host, slots in job.placement.tasks:
                held, _ = busy.get(host, (0, why))
                busy[host] = (held + slots, why)
        config = self.cluster.config()
        return {host: f"host busy: {why}" for host, (held, why) in busy.items()
                if host in config.hosts and
                config.host_slots(host) - held < request.slots_on(config.node(host))}

    def prepare(self, reservation: Reservation) -> None:
        self._leading().set_windows([self.window(reservation)])

    def activate(self, reservation: Reservation) -> None:
        self._leading().set_windows([self.window(reservation)])

    def teardown(self, reservation: Reservation) -> None:
        self._leading().reservation_over(reservation.id)

    def release(self, reservation: Reservation) -> None:
        self._leading().reservation_over(reservation.id)

    def modify(self, before: Reservation, after: Reservation) -> None:
        """The AR's window takes its new hosts, times and users; its jobs
        stay (releasing it first, as the other backends do, ended them)."""
        self._leading().set_windows([self.window(after)])

    def reconcile(self, reservations: list[Reservation]) -> None:
        self._leading().set_windows([self.window(ar) for ar in reservations if ar.holds_resources],
                                   complete=True)

    def health(self, reservations: list[Reservation]) -> dict[int, str]:
        """What every backend finds (hosts down; a qrsub AR's instances
        disabled, suspended or unknown), and reserved hosts no longer in
        the cluster file: no job can run there any more."""
        problems = super().health(reservations)
        known = {node.name for node in self.nodes()}
        for reservation in reservations:
            gone = [name for name in reservation.node_names if name not in known]
            if gone:
                which = f"node {gone[0]} is" if len(gone) == 1 else \
                    f"nodes {', '.join(gone)} are"
                problems[reservation.id] = "; ".join(filter(None, (
                    problems.get(reservation.id), f"{which} no longer in the cluster file")))
        return problems

    def lingering(self) -> set[int]:
        return self.scheduler.ars_with_jobs()

    def submit_hint(self, reservation: Reservation) -> str:
        return f"plus_qsub -ar {reservation.id} job.sh"

    def submit_claimed(self, reservation: Reservation, job: Mapping[str, Any]) -> dict:
        return service.submit_claimed(self.scheduler, self.relay, reservation, job)

    def jobs(self, now: int, inventory: Inventory) -> list[ShownJob]:
        """Every job, pending ones too, as plus_qstat -u '*' lists them."""
        return service.shown_jobs(self.scheduler)

    def delete_job(self, job_id: str, user: str, groups: tuple[str, ...],
                   manager: bool) -> list[str]:
        """As plus_qdel of that job id, by the leader."""
        return service.delete_job(self.scheduler, self.relay, job_id,
                                  Relayed(-1, user, groups, manager))

    def operations(self, ar_status: Callable[[int], list[Reservation]]) -> dict[str, Callable]:
        """The native commands' operations; ``ar_status`` is the core's AR
        query (the truth on ARs the scheduler does not hold yet)."""
        self._carried_out = service.carried_out(self.scheduler, ar_status)
        return service.operations(self.scheduler, self.relay, ar_status)

    def start(self) -> None:
        """Run the jobs, and from now on carry out the job commands that
        standbys relay."""
        self._leading().start()
        self.relay.serve(self._carried_out, self.fence)

    def stand_by(self) -> None:
        self.scheduler.stand_by()

    def _leading(self) -> Scheduler:
        """The scheduler, leading: a standby that took the lead takes the
        jobs from the store at the first call the leader makes (the first
        reconcile pass comes before ``start``)."""
        self.scheduler.lead(self.fence)
        return self.scheduler

    def close(self) -> None:
        self.relay.stop()
        self.scheduler.stop()
        self.scheduler.store.close()
