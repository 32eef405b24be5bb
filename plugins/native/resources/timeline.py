"""The cluster's time x resource model for one scheduling pass: the
``Resources`` that ``scheduling.dispatch`` books on for real hosts.

Every consumable of every container (global, host, queue instance) has a
resource utilization diagram (an ``overlay.placement.planner.Planner``, seed 001)
holding the running jobs and the pass's reservations; a question about
window [t, t + d) sets each container's ``used`` to the diagram's peak over
that window, and seed 002's matching (``overlay_native.resources.matching``) does the
rest. Besides the complexes, three diagrams per pass:

- per host, the slots of non-AR jobs plus the slots ARs hold there (the
  AR guard): a job outside an AR never uses reserved slots, and a job
  without h_rt (held for ever) none that an AR holds at any later time,
  but the host's other slots are its to take (Grid Engine 8.1.9);
- per AR and host, the slots its own jobs use, up to what it reserved;
- per parallel environment, its slots.

Preemptible jobs (plus_qsub -preemptible) may besides run on the idle
slots of open ARs (``lend_now``). What they take is counted in ``lent``
per AR and host, against the AR's idle slots alone: no other diagram
holds it, so the AR's own jobs see those slots free and take them, and
``overdrawn`` then says where lent jobs must give them back.

Seed 001, section 4: a sequential job takes the first queue instance (in
soft-request, then queue sort order) where it fits; a parallel job takes,
among the PEs matching its request, the largest slot count its range and
the PE's allocation rule allow; the earliest start is the first time,
among now and the instants where some diagram drops, at which it fits.
Results that depend only on the job's category (seed 002: same requests,
owner, PE and queue lists) are computed once per pass; so is a category's
failure to start now, since a pass only ever takes resources away.

Why a job cannot start is kept in ``reasons``, in Grid Engine's words.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Container, Iterable, Iterator, Mapping, Sequence

from overlay.api.plugin import INFINITY, Planner, sort_nodes, wildcard_match
from overlay_native.jobs import Job, Placement
from overlay_native.resources.cluster import ClusterConfig, Containers, ParallelEnvironment
from overlay_native.resources.matching import (
    ResourceContainer,
    assignment_debits,
    category_key,
    mismatch,
    slots_fit,
    soft_violations,
)
from overlay_native.resources.reserved import Reservations
from overlay_native.resources.window import ReservedWindow

_MANY = 10 ** 9          # "as many as fit"


@dataclass(frozen=True)
class Debit:
    """One resource a placed job takes, as the schedule file records it:
    level P (PE), G (global), H (host) or Q (queue instance)."""

    level: str
    object: str
    resource: str
    amount: float


class _WindowUsage(Mapping[str, float]):
    """A container's ``used``: each consumable's peak over the model's window."""

    def __init__(self, model: ClusterResources, label: str) -> None:
        self.model, self.label = model, label

    def get(self, name: str, default: float = 0.0) -> float:
        return self.model.usage(self.label, name, default)

    def __getitem__(self, name: str) -> float:
        return self.get(name)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


@dataclass
class _Category:
    """What one job category may use: queue instances in preference order,
    the PEs it may take, and why the others were dropped."""

    instances: list[tuple[str, str]]
    pes: list[ParallelEnvironment]
    reasons: list[str]
    failed_now: list[str] | None = None     # why it cannot start now, once it could not


class Baseline:
    """What holds from pass to pass while the cluster file is unchanged: the
    containers with their configured values, and static matching results
    (but those of jobs asking for a load value that changed)."""

    def __init__(self) -> None:
        self.config: ClusterConfig | None = None
        self.containers: Containers | None = None
        self.mismatches: dict[tuple, dict[tuple[str, str], str | None]] = {}

    def update(self, config: ClusterConfig, reports: Mapping[str, Mapping[str, float]]) -> None:
        if config is not self.config:
            self.config, self.mismatches = config, {}
            self.containers = config.containers(reports)
            return
        changed = config.set_reports(self.containers, reports)
        if changed:
            self.mismatches = {key: found for key, found in self.mismatches.items()
                               if not changed & {name for name, _ in key[0]}}


class ClusterResources:
    """The cluster at one pass: what running jobs, ARs and the pass's own
    decisions hold over time. A scheduler passes its Baseline so that what
    the cluster file alone decides is not done again each pass."""

    def __init__(self, config: ClusterConfig, now: int, duration_offset: int,
                 reports: Mapping[str, Mapping[str, float]] | None = None,
                 unavailable: Mapping[tuple[str, str], str] | None = None,
                 reservations: Reservations | Sequence[ReservedWindow] = (),
                 baseline: Baseline | None = None, for_reservation: bool = False) -> None:
        self.config, self.now, self.offset = config, now, duration_offset
        self.default_duration = config.scheduler.default_duration
        self.unavailable = {**self._configured_states(config, for_reservation),
                            **(unavailable or {})}
        baseline = baseline or Baseline()
        baseline.update(config, reports or {})
        self.containers = baseline.containers
        self._memo: dict[tuple[str, str], float] = {}
        self._window = (now, now + 1)
        self._static = False
        for container in self._all_containers():
            container.used = _WindowUsage(self, container.label)
        if not isinstance(reservations, Reservations):
            reservations = Reservations(reservations)
        self.reservations = reservations
        self._profiles: dict[tuple[str, str], Planner] = {
            key: planner.snapshot(0) for key, planner in reservations.consumed.items()}
        self.ar_consumed: dict[tuple[int, str, str], Planner] = {}
        self._holding: ReservedWindow | None = None     # the qrsub AR whose job is weighed
        self._by_label: dict[str, ResourceContainer] | None = None
        held = reservations.held
        self.guard = {host: held[host].snapshot(config.host_slots(host)) if host in held
                      else Planner(config.host_slots(host)) for host in config.hosts}
        self.ar_use: dict[tuple[int, str], Planner] = {}
        self.pe_use = {name: Planner(pe.slots) for name, pe in config.pes.items()}
        self.lent: dict[tuple[int, str], int] = {}      # (AR, host): slots its lent jobs hold
        self._lending: ReservedWindow | None = None     # the AR whose idle slots are weighed
        self._open_hosts = reservations.open_hosts()
        self.order = self._instance_order(reports or {})
        self.reasons: dict[object, list[str]] = {}
        self._categories: dict[tuple, _Category] = {}
        self._mismatches = baseline.mismatches
        self._drops: dict[int, list[int]] = {}       # by id(profile), until a booking
        self._exhausted: tuple[int, bool] | None = None

    @staticmethod
    def _configured_states(config: ClusterConfig,
                           for_reservation: bool) -> dict[tuple[str, str], str]:
        """Instances the cluster file takes out of jobs' way: disabled,
        suspended, or on a host marked down (Grid Engine: "temporarily not
        available"). An AR may take every one of them (seed 000, 5.2.2.1.3:
        "disabled, unknown or suspended queues are considered as suited"),
        and is in W or E while it holds one."""
        states: dict[tuple[str, str], str] = {}
        if for_reservation:
            return states
        for queue in config.queues.values():
            for host in queue.hosts:
                if host in queue.disabled:
                    states[(queue.name, host)] = "disabled"
                elif host in queue.suspended or not config.hosts[host].alive:
                    states[(queue.name, host)] = "temporarily not available"
        return states

    # -- usage over the current window -------------------------------------------------

    def _all_containers(self) -> Iterator[ResourceContainer]:
        yield self.containers.global_
        yield from self.containers.hosts.values()
        yield from self.containers.instances.values()

    def usage(self, label: str, name: str, default: float = 0.0) -> float:
        """Peak use of ``name`` in the container ``label`` over the window
        (nothing while matching statically)."""
        if self._static:
            return default
        key = (label, name)
        value = self._memo.get(key)
        if value is None:
            if self._holding is not None:
                value = self._memo[key] = self._held_usage(label, name)
            else:
                profile = self._profiles.get(key)
                value = self._memo[key] = default if profile is None else profile.peak(*self._window)
        return value

    def _held_usage(self, label: str, name: str) -> float:
        """For a job of a qrsub AR: what makes the container offer only what
        the AR holds there, less what the AR's running jobs use (seed 000,
        5.3.2.1.1: AR jobs use only the reserved resources)."""
        if self._by_label is None:
            self._by_label = {c.label: c for c in self._all_containers()}
        ar = self._holding
        held = sum(amount for where, what, amount in ar.debits if (where, what) == (label, name))
        own = self.ar_consumed.get((ar.id, label, name))
        self._static = True
        try:
            capacity = self._by_label[label].available(name)
        finally:
            self._static = False
        return capacity - held + (own.peak(*self._window) if own is not None else 0.0)

    def _weigh(self, job: Job) -> None:
        """Make the containers show what ``job`` may use: all but what others
        hold, or (a job of a qrsub AR) only what its AR holds."""
        ar = self.reservations.get(job.ar) if job.ar is not None else None
        holding = ar if ar is not None and ar.instances else None
        if holding is not self._holding:
            self._holding = holding
            self._memo.clear()

    def _set_window(self, start: int, end: float) -> None:
        window = (start, int(min(end, INFINITY)))
        if window != self._window:
            self._window = window
            self._memo.clear()

    def _peak(self, profile: Planner) -> float:
        return profile.peak(*self._window)

    # -- order of queue instances --------------------------------------------------------

    def _instance_order(self, reports: Mapping[str, Mapping[str, float]]) -> list[tuple[str, str]]:
        """queue_sort_method: seqno (seq_no, then host) or load (host, then
        seq_no); hosts by NodeSortKey if set, else by np_load_avg."""
        scheduler, hosts = self.config.scheduler, self.config.hosts
        if scheduler.node_order:
            nodes = sort_nodes(self.config.nodes(), list(scheduler.node_order), self.now)
            rank = {node.name: index for index, node in enumerate(nodes)}
        else:
            by_load = sorted(hosts, key=lambda h: (reports.get(h, {}).get(
                "load_avg", hosts[h].current_load()) / max(hosts[h].ncpus, 1), h))
            rank = {host: index for index, host in enumerate(by_load)}

        def key(instance: tuple[str, str]) -> tuple:
            queue, host = instance
            seq_no = self.config.queues[queue].seq_no
            if scheduler.queue_sort_method == "seqno":
                return (seq_no, rank[host], queue)
            return (rank[host], seq_no, queue)
        return sorted(self.containers.instances, key=key)

    # -- what a job may use at all ----------------------------------------------------------

    @staticmethod
    def label(job: Job) -> str:
        """The job's hard requests as Grid Engine prefixes a reason, by name:
        (-l arch=sol,h_rt=100), or (-l NONE)."""
        requests = ",".join(f"{name}={job.hard[name].text}" for name in sorted(job.hard))
        return f"(-l {requests or 'NONE'})"

    def _category(self, job: Job) -> _Category:
        spec = job.submission
        key = (category_key(job.hard, job.soft, (spec.pe, spec.pe_range, spec.master_queues),
                            spec.queues, job.owner, job.ar), job.groups, job.access, spec.now,
               spec.ckpt)
        category = self._categories.get(key)
        if category is None:
            category = self._categories[key] = self._classify(job)
        return category

    def _classify(self, job: Job) -> _Category:
        reasons: list[str] = []
        eligible: list[tuple[str, str]] = []
        self._static = True
        try:
            for queue, host in self.order:
                reason = self._static_reason(job, queue, host)
                if reason:
                    reasons.append(reason)
                else:
                    eligible.append((queue, host))
            violations = {i: soft_violations(job.soft, self.containers.instances[i])
                          for i in eligible} if job.soft else {}
        finally:
            self._static = False
        eligible.sort(key=lambda i: violations.get(i, 0))
        pes = self._pes(job, eligible, reasons) if job.is_parallel else []
        return _Category(eligible, pes, reasons)

    def _static_reason(self, job: Job, queue_name: str, host: str) -> str | None:
        config, spec = self.config, job.submission
        queue, where = config.queues[queue_name], f"{queue_name}@{host}"
        state = self.unavailable.get((queue_name, host))
        if state:
            return f'queue instance "{where}" dropped because it is {state}'
        if spec.now and "INTERACTIVE" not in queue.qtype:
            return f'cannot run in queue "{where}" because it is not of type interactive'
        if not spec.now and "BATCH" not in queue.qtype:
            return f'cannot run in queue "{where}" because it is not a serial (batch or transfer) queue'
        if spec.queues and not config.queue_matches(spec.queues, queue_name, host):
            return f'cannot run in queue "{where}" because it is not contained in its hard queue list (-q)'
        if spec.ckpt and spec.ckpt not in queue.ckpt_list:
            return f'cannot run in queue "{where}" because it is not in the queue list of ' \
                   f'checkpointing environment "{spec.ckpt}"'
        for user, groups in job.access:
            if not config.has_access(user, groups, queue.user_lists, queue.xuser_lists):
                return f'has no permission for cluster queue "{queue_name}"' + (
                    f" (user {user} of the access list)" if user != job.owner else "")
        if job.ar is not None:
            ar = self.reservations.get(job.ar)
            if ar is None or host not in ar.slots or ar.instances and \
                    (queue_name, host) not in ar.instances:
                return f'cannot run in queue "{where}" because it is not reserved by advance ' \
                       f'reservation {job.ar}'
            if not ar.admits(job.owner, job.groups):
                return f"has no permission for advance reservation {job.ar}"
        reason = self._static_mismatch(job, (queue_name, host))
        return f"{self.label(job)} {reason}" if reason else None

    def _static_mismatch(self, job: Job, instance: tuple[str, str]) -> str | None:
        """mismatch() of the job's hard requests, ignoring usage; the same for
        every job with these requests, whoever owns it, so computed once."""
        found = self._mismatches.setdefault((job.hard_key, job.is_parallel), {})
        if instance not in found:    # JOB consumables: the master's chain alone
            found[instance] = mismatch(job.hard, self.containers.instances[instance],
                                       master=not job.is_parallel)
        return found[instance]

    def _pes(self, job: Job, eligible: list[tuple[str, str]],
             reasons: list[str]) -> list[ParallelEnvironment]:
        """The PEs matching the job's -pe request that it may use."""
        config, pattern = self.config, job.submission.pe
        if job.alloc is not None:      # qrsub -alloc: a rule and a range, in any queue
            return [job.alloc]
        matching = [pe for name, pe in config.pes.items() if wildcard_match(name, pattern)]
        if not matching:
            reasons.append("no matching pe found")
        usable = []
        for pe in matching:
            if not all(config.has_access(user, groups, pe.user_lists, pe.xuser_lists)
                       for user, groups in job.access):
                reasons.append(f'cannot run because no access to pe "{pe.name}"')
            elif not any(pe.name in config.queues[q].pe_list for q, _ in eligible):
                reasons.append(f'cannot run in any queue because none is in the queue list of '
                               f'PE "{pe.name}"')
            elif not self._in_range(job, pe.slots):
                reasons.append(f'cannot run because requested amount of slots is not supported '
                               f'by pe "{pe.name}"')
            else:
                usable.append(pe)
        return usable

    @staticmethod
    def _in_range(job: Job, most: int) -> int | None:
        """The largest slot count of the job's range not above ``most``."""
        best = None
        for first, last in job.submission.pe_range:
            if first <= most:
                best = min(last, most)
        return best

    # -- the job's window at a start time ----------------------------------------------------

    def _window_for(self, job: Job, start: int) -> tuple[float, float | None] | None:
        """(seconds held, h_rt to enforce) for a start at ``start``, or None
        if the job cannot start then: an AR job runs inside its AR only,
        ending DURATION_OFFSET before it (seed 000, 5.2.2.1.1)."""
        if job.ar is None:
            runtime = job.planned_runtime(self.default_duration)
            return runtime + self.offset, job.limit("h_rt")
        ar = self.reservations.get(job.ar)
        if ar is None or ar.blocked or start < ar.start:
            return None
        latest = ar.end - self.offset
        h_rt = job.limit("h_rt")
        if h_rt is None:
            h_rt = latest - start
            if h_rt <= 0:
                return None
        elif start + h_rt > latest:
            return None
        return h_rt + self.offset, h_rt

    def _ar_reason(self, job: Job) -> str | None:
        """Why an AR job cannot start now, if the AR itself is the cause."""
        ar = self.reservations.get(job.ar)
        if ar is None:
            return f"cannot run because advance reservation {job.ar} does not exist any more"
        if ar.blocked:
            return f"cannot run because advance reservation {job.ar} is in error state " \
                   f"({ar.state}, hard error handling)"
        if not ar.open:
            return f"cannot run because advance reservation {job.ar} has not started"
        h_rt = job.limit("h_rt")
        if h_rt is not None and self.now + h_rt > ar.end - self.offset:
            return (f"cannot run because its h_rt ({int(h_rt)} s) reaches beyond the end of "
                    f"advance reservation {job.ar} minus DURATION_OFFSET ({self.offset} s)")
        return None

    # -- fitting ----------------------------------------------------------------------------

    def _host_room(self, job: Job, host: str) -> float:
        """Slots the job may still take on ``host`` over the window: its AR's
        slots, or what the AR guard leaves; for a job weighed for an AR's
        idle slots, what the AR's own jobs and its lent jobs leave of them."""
        if self._lending is not None:
            ar = self._lending
            own = self.ar_use.get((ar.id, host))
            return ar.slots.get(host, 0) - (self._peak(own) if own else 0) - \
                self.lent.get((ar.id, host), 0)
        if job.ar is not None:
            ar = self.reservations[job.ar]
            profile = self.ar_use.get((job.ar, host))
            return ar.slots.get(host, 0) - (self._peak(profile) if profile else 0)
        profile = self.guard[host]
        return profile.capacity - self._peak(profile)

    def _lendable(self, instance: tuple[str, str]) -> bool:
        """Whether the instance may take a job on the weighed AR's idle
        slots (a qrsub AR's: only its own instances); always, otherwise."""
        ar = self._lending
        return ar is None or not ar.instances or instance in ar.instances

    def _fits_one(self, job: Job, instance: tuple[str, str]) -> bool:
        if not self._lendable(instance) or self._host_room(job, instance[1]) < 1:
            return False
        return all(slots_fit(job.hard, c, 1) >= 1
                   for c in self.containers.instances[instance].chain())

    def _place(self, job: Job, start: int) -> Placement | None:
        window = self._window_for(job, start)
        if window is None:
            return None
        return self._place_for(job, start, *window)

    def static_reasons(self, job: Job) -> list[str]:
        """Why queue instances and PEs are out for ``job`` whatever is free."""
        self._weigh(job)
        return list(self._category(job).reasons)

    def reservation_reasons(self, job: Job, start: int, end: int) -> list[str]:
        """Why no AR of ``job``'s shape fits [start, end), what decided
        first: the eligible instances and PEs lacking slots or consumables
        over the window, and instances the job may not use (permission,
        state, resources), before those it did not ask for (-q, type)."""
        self._weigh(job)
        category = self._category(job)
        self._set_window(start, end)
        short = []
        for queue, host in category.instances:
            if self._host_room(job, host) < 1:
                short.append(f'{self.label(job)} cannot run in queue "{queue}@{host}" because '
                             "it offers only qc:slots=0.000000")
                continue
            why = mismatch(job.hard, self.containers.instances[(queue, host)])
            if why:
                short.append(f"{self.label(job)} {why}")
        for pe in category.pes:
            used = self.pe_use.get(pe.name)
            offered = pe.slots - (self._peak(used) if used is not None else 0)
            short.append(f'cannot run in PE "{pe.name}" because it only offers {int(offered)} '
                         'slots')
        return list(dict.fromkeys(short + sorted(category.reasons, key=_unrequested)))

    def leave_out(self, window: ReservedWindow) -> None:
        """Take an AR's holdings out of this model (a modify moves it)."""
        for host, slots in window.slots.items():
            if host in self.guard:
                self.guard[host].remove(window.start, window.end, slots)
        for label, name, amount in window.debits:
            if (label, name) in self._profiles:
                self._profiles[(label, name)].remove(window.start, window.end, amount)
        self._memo.clear()
        self._drops.clear()

    def reserve(self, job: Job, start: int, end: int) -> Placement | None:
        """Where an AR of ``job``'s shape (its -l, -pe, -q, -masterq, -ckpt,
        -now and access list) would hold slots over [start, end), as the
        job would be placed there (seed 000, 5.2.2.1.3); None if nowhere."""
        self._weigh(job)
        return self._place_for(job, start, end - start, None)

    def _place_for(self, job: Job, start: int, held: float, h_rt: float | None) -> Placement | None:
        self._set_window(start, start + held)
        category = self._category(job)
        if not job.is_parallel:
            for instance in category.instances:
                if self._fits_one(job, instance):
                    return Placement(((*instance, 1),), None, h_rt, held)
            return None
        best: tuple[int, list[tuple[str, str, int]], str] | None = None
        for pe in category.pes:
            tasks = self._parallel(job, pe, category.instances)
            if tasks and (best is None or sum(n for *_, n in tasks) > best[0]):
                best = (sum(n for *_, n in tasks), tasks, pe.name)
        if best is None:
            return None
        return Placement(tuple(best[1]), best[2], h_rt, held)

    def _parallel(self, job: Job, pe: ParallelEnvironment,
                  eligible: list[tuple[str, str]]) -> list[tuple[str, str, int]] | None:
        """Seed 001, 4c: slots per host (the host's own limit against the sum
        of its queue instances), global and PE limits, then the allocation
        rule; the largest count of the job's range that fits."""
        used = self.pe_use.get(pe.name)
        pe_room = pe.slots - (self._peak(used) if used is not None else 0)
        top = self.containers.global_
        most = min(pe_room, slots_fit(job.hard, top, _MANY, master=False))
        hosts, per_host = self._host_rooms(job, [
            i for i in eligible if pe is job.alloc or pe.name in self.config.queues[i[0]].pe_list])
        if job.submission.master_queues or self._job_consumables(job):
            hosts = self._master_first(job, hosts, per_host)
        rule = pe.allocation_rule
        if rule == "$pe_slots":
            possible = max((room for _, room in hosts), default=0)
        elif isinstance(rule, int):
            possible = rule * sum(room >= rule for _, room in hosts)
        else:
            possible = sum(room for _, room in hosts)
        count = self._count(job, min(possible, most), rule)
        if count is None:
            return None
        spread = _spread(hosts, count, rule)
        if spread is None:
            return None
        tasks = _tasks(spread, per_host)
        if not self._master_fits(job, *tasks[0][:2]):
            return None
        return tasks

    def _host_rooms(self, job: Job, instances: Iterable[tuple[str, str]]) -> tuple[
            list[tuple[str, int]], dict[str, list[tuple[str, str, int]]]]:
        """Over the window, the slots ``job`` may take on each host of
        ``instances`` (its own limit against the sum of its instances'),
        in order, and each instance's slots by host."""
        per_host: dict[str, list[tuple[str, str, int]]] = {}
        for queue, host in filter(self._lendable, instances):
            room = slots_fit(job.hard, self.containers.instances[(queue, host)], _MANY, master=False)
            if room > 0:
                per_host.setdefault(host, []).append((queue, host, room))
        hosts: list[tuple[str, int]] = []
        for host, found in per_host.items():
            room = min(self._host_room(job, host), sum(n for *_, n in found),
                       slots_fit(job.hard, self.containers.hosts[host], _MANY, master=False))
            if room >= 1:
                hosts.append((host, int(room)))
        return hosts, per_host

    def place_on_hosts(self, job: Job, among: Container[str], count: int, slots: int | None,
                       start: int) -> Placement | None:
        """QUERY's job (seed 003: nodes, slots per node, a run time):
        ``count`` hosts of ``among``, each with ``slots`` free (None: every
        slot of the host) for the job's window from ``start``, taken in
        queue instance order as a fixed allocation rule takes them."""
        window = self._window_for(job, start)
        if window is None:
            return None
        self._weigh(job)
        self._set_window(start, start + window[0])
        hosts, per_host = self._host_rooms(
            job, [i for i in self._category(job).instances if i[1] in among])
        chosen = [host for host, room in hosts
                  if room >= (self.config.host_slots(host) if slots is None else slots)][:count]
        if len(chosen) < count:
            return None
        tasks = _tasks([(host, self.config.host_slots(host) if slots is None else slots)
                        for host in chosen], per_host)
        return Placement(tuple(tasks), "", window[1], window[0])

    # -- lending idle reserved slots ------------------------------------------------------

    def lend(self, lent: Iterable[tuple[Job, Placement, int]]) -> None:
        """Count lent jobs (each with its placement on AR ``placement.lent``
        and its start) against their ARs' idle slots; what else they take
        (memory, licences) is held as any job's."""
        for job, placement, start in lent:
            for host, slots in placement.per_host.items():
                key = (placement.lent, host)
                self.lent[key] = self.lent.get(key, 0) + slots
            end = int(min(start + placement.duration, INFINITY))
            for key, amount in self._container_debits(job, placement).items():
                if key[1] != "slots":
                    self._planner("container", key).add(start, max(end, self.now + 1), amount)
        self._memo.clear()
        self._drops.clear()
        self._exhausted = None

    def give_back(self, ar_id: int, placement: Placement) -> None:
        """A lent job preempted: its slots are its AR's again."""
        for host, slots in placement.per_host.items():
            self.lent[(ar_id, host)] -= slots

    def overdrawn(self) -> dict[tuple[int, str], int]:
        """Where the AR's own jobs (running, or started by this pass) and
        the jobs it lends hold more than the AR's slots now: (AR, host) ->
        the slots to take back from lent jobs there."""
        self._set_window(self.now, self.now + 1)
        found = {}
        for (ar_id, host), lent in self.lent.items():
            ar = self.reservations.get(ar_id)
            own = self.ar_use.get((ar_id, host))
            excess = lent + (self._peak(own) if own else 0) - (ar.slots.get(host, 0) if ar else 0)
            if lent > 0 and excess > 0:
                found[(ar_id, host)] = excess
        return found

    def lend_now(self, job: Job, now: int) -> Placement | None:
        """Where a preemptible job could run now on the idle slots of an
        open AR (the first by id with room for its whole planned run, which
        must end before the AR does: a lent job never outlives its lender),
        counted as lent at once; None if no AR has such room."""
        held = job.planned_runtime(self.default_duration) + self.offset
        self._weigh(job)
        for ar in sorted(self.reservations.started(), key=lambda w: w.id):
            if not ar.open or now + held > ar.end:
                continue
            self._lending = ar
            try:
                placement = self._place_for(job, now, held, job.limit("h_rt"))
            finally:
                self._lending = None
            if placement is not None:
                placement = replace(placement, lent=ar.id)
                self.lend([(job, placement, now)])
                return placement
        return None

    def advance(self, now: int) -> None:
        """The next pass of a model kept from pass to pass (an estimate
        running passes ahead): at ``now``, its bookings as they are, what
        one pass learnt forgotten, and the ARs open now open."""
        self.now = now
        for category in self._categories.values():
            category.failed_now = None
        self.reasons = {}
        self._open_hosts = self.reservations.open_hosts()
        self._memo.clear()
        self._drops.clear()
        self._exhausted = None

    def _count(self, job: Job, possible: float, rule: str | int) -> int | None:
        """The largest count in the job's range up to ``possible`` (for a
        fixed allocation rule, a multiple of it)."""
        step = rule if isinstance(rule, int) else 1
        for first, last in reversed(job.submission.pe_range):
            high = min(last, int(possible)) // step * step
            if high >= first:
                return high
        return None

    def _job_consumables(self, job: Job) -> bool:
        """Whether the job takes a per-job (JOB) consumable, asked for or by default."""
        return any(cx.consumable == "JOB" and (cx.name in job.hard or cx.default is not None)
                   for cx in self.config.table)

    def _master_first(self, job: Job, hosts: list[tuple[str, int]],
                      per_host: dict[str, list[tuple[str, str, int]]]) -> list[tuple[str, int]]:
        """Hosts with a queue instance that can take the master task come
        first, that instance first on its host, so the first task lands there."""
        for instances in per_host.values():
            instances.sort(key=lambda i: not self._master_fits(job, i[0], i[1]))
        return sorted(hosts, key=lambda h: not self._master_fits(job, *per_host[h[0]][0][:2]))

    def _master_fits(self, job: Job, queue: str, host: str) -> bool:
        """The master task's queue must be in -masterq, and its chain must
        hold the job's per-job (JOB) consumables."""
        masters = job.submission.master_queues
        if masters and not self.config.queue_matches(masters, queue, host):
            return False
        return all(slots_fit(job.hard, c, 1, master=True) >= 1
                   for c in self.containers.instances[(queue, host)].chain())

    # -- the Resources protocol -----------------------------------------------------------

    def start_now(self, job: Job, now: int) -> Placement | None:
        self._weigh(job)
        category = self._category(job)
        if category.failed_now is None:
            placement = self._place(job, now)
            if placement is not None:
                return placement
            category.failed_now = category.reasons + self._dynamic_reasons(job, category)
        self.reasons[job.id] = category.failed_now
        return None

    def earliest(self, job: Job, now: int) -> tuple[int, Placement] | None:
        """Seed 001, 4b and 4c: a sequential job's earliest start is the
        earliest of its queue instances' (each tried where its own diagrams
        drop); a parallel job's, the first instant it fits at all."""
        self._weigh(job)
        if job.is_parallel:
            for start in self._candidate_times(job, now, self._all_profiles()):
                placement = self._place(job, start)
                if placement is not None:
                    return start, placement
            return None
        best: tuple[int, Placement] | None = None
        for instance in self._category(job).instances:
            for start in self._candidate_times(job, now, self._profiles_of(job, instance)):
                if best is not None and start >= best[0]:
                    break
                window = self._window_for(job, start)
                if window is None:
                    continue
                self._set_window(start, start + window[0])
                if self._fits_one(job, instance):
                    best = (start, Placement(((*instance, 1),), None, window[1], window[0]))
                    break
            if best is not None and best[0] == now:
                break
        return best

    def _all_profiles(self) -> list[Planner]:
        return [*self._profiles.values(), *self.guard.values(), *self.ar_use.values(),
                *self.pe_use.values(), *self.ar_consumed.values()]

    def _profiles_of(self, job: Job, instance: tuple[str, str]) -> list[Planner]:
        """The diagrams a sequential job on ``instance`` depends on."""
        host = instance[1]
        found = [self.ar_use.get((job.ar, host)) if job.ar is not None else self.guard.get(host)]
        own = self._holding.id if self._holding is not None else None
        for container in self.containers.instances[instance].chain():
            found += [self.ar_consumed.get((own, container.label, cx.name)) if own is not None
                      else self._profiles.get((container.label, cx.name))
                      for cx in container._consumables()]
        return [profile for profile in found if profile is not None]

    def could_run(self, job: Job) -> list[str]:
        """Why ``job`` cannot run here even at its best start (now, or its
        AR's start), for qsub -w on a model without running jobs; [] when
        it can."""
        self._weigh(job)
        start = self.now
        if job.ar in self.reservations:
            start = max(start, self.reservations[job.ar].start)
        if self._place(job, start) is not None:
            return []
        category = self._category(job)
        reasons = list(category.reasons) + self._held_reasons(job, category, start)
        if job.ar is None:        # the slots that the ARs in its way hold (seed 000, 5.2.2.1.3)
            reasons += self._instance_reasons(job, category, self._window_for(job, start)[0])
        if category.pes:
            reasons.append("parallel job requires more slots than available")
        return reasons or ["no suitable queues"]

    def _held_reasons(self, job: Job, category: _Category, start: int) -> list[str]:
        """For a job of a qrsub AR: which of its AR's instances lack what it
        asks, since it may use only what the AR holds there."""
        window = self._window_for(job, start)
        if self._holding is None or window is None:
            return []
        self._set_window(start, start + window[0])
        found = (mismatch(job.hard, self.containers.instances[instance])
                 for instance in category.instances if instance in self._holding.instances)
        return [f"{self.label(job)} {why}" for why in found if why]

    def _candidate_times(self, job: Job, now: int, profiles: list[Planner]) -> list[int]:
        """Now and every later instant at which one of the diagrams goes down:
        a job that does not fit at one instant can only fit after something
        ends."""
        times = {now}
        for profile in profiles:
            found = self._drops.get(id(profile))
            if found is None:    # lists: these are short, numpy's set operations are not
                found = self._drops[id(profile)] = profile.drops(now).tolist()
            times.update(found)
        if job.ar is not None and job.ar in self.reservations:
            times.add(max(now, self.reservations[job.ar].start))
        return sorted(t for t in times if t < INFINITY)

    def book(self, job: Job, placement: Placement, start: int) -> None:
        self._add(job, placement, start, 1)

    def unbook(self, job: Job, placement: Placement, start: int) -> None:
        self._add(job, placement, start, -1)

    def book_running(self, running: Iterable[tuple[Job, Placement, int]]) -> None:
        """The jobs running at the pass's start, (job, placement, start) each,
        booked at once; one past its planned end is assumed to hold its
        resources DURATION_OFFSET longer (at least a second)."""
        bookings: dict[tuple, list[tuple[int, int, float]]] = {}
        for job, placement, start in running:
            if start + placement.duration <= self.now:
                placement = Placement(placement.tasks, placement.pe, placement.h_rt,
                                      self.now + max(self.offset, 1) - start)
            end = int(min(start + placement.duration, INFINITY))
            for target, amount in self._targets(job, placement):
                bookings.setdefault(target, []).append((start, end, amount))
        for (kind, key), entries in bookings.items():
            self._planner(kind, key).add_many(entries)
        self._memo.clear()
        self._drops.clear()
        self._exhausted = None

    def _planner(self, kind: str, key: object) -> Planner:
        """The diagram ``key`` of one kind, made empty if the pass has none yet."""
        table = {"container": self._profiles, "guard": self.guard, "ar": self.ar_use,
                 "pe": self.pe_use, "ar_consumed": self.ar_consumed}[kind]
        planner = table.get(key)
        if planner is None:
            planner = table[key] = Planner(0)
        return planner

    def _targets(self, job: Job, placement: Placement) -> Iterator[tuple[tuple, float]]:
        """Every diagram a placed job uses, as ((kind, key), amount); a qrsub
        AR's job takes its consumables from what its AR holds."""
        ar = self.reservations.get(job.ar) if job.ar is not None else None
        for key, amount in self._container_debits(job, placement).items():
            if ar is not None and ar.instances:
                yield ("ar_consumed", (ar.id, *key)), amount
            else:
                yield ("container", key), amount
        for host, slots in placement.per_host.items():
            if job.ar is not None:
                yield ("ar", (job.ar, host)), slots
            elif host in self.guard:
                yield ("guard", host), slots
        if placement.pe in self.pe_use:
            yield ("pe", placement.pe), placement.slots

    def _add(self, job: Job, placement: Placement, start: int, sign: int) -> None:
        end = int(min(start + placement.duration, INFINITY))
        for (kind, key), amount in self._targets(job, placement):
            self._planner(kind, key).add(start, end, sign * amount)
        self._memo.clear()
        self._drops.clear()
        self._exhausted = None

    def _container_debits(self, job: Job, placement: Placement) -> dict[tuple[str, str], float]:
        assignment = [(self.containers.instances[(q, h)], n) for q, h, n in placement.tasks
                      if (q, h) in self.containers.instances]
        totals: dict[tuple[str, str], float] = {}
        for container, name, amount in assignment_debits(job.hard, assignment):
            key = (container.label, name)
            totals[key] = totals.get(key, 0.0) + amount
        return totals

    def debits(self, job: Job, placement: Placement) -> list[Debit]:
        """What the job takes, per PE and container, for the schedule file."""
        found = [Debit("P", placement.pe, "slots", placement.slots)] if placement.pe else []
        letters = {"global": "G", "host": "H", "queue": "Q"}
        for (label, name), amount in self._container_debits(job, placement).items():
            level, _, object_name = label.partition(" ")
            found.append(Debit(letters[level], object_name or "global", name, amount))
        return found

    def exhausted(self, now: int) -> bool:
        """No queue instance has a free slot now (then a pass may stop)."""
        if self._exhausted is None or self._exhausted[0] != now:
            self._set_window(now, now + 1)
            self._exhausted = (now, not any(
                self.containers.instances[i].available("slots") >= 1 and
                (self.guard[i[1]].capacity - self._peak(self.guard[i[1]]) >= 1 or
                 i[1] in self._open_hosts)
                for i in self.order if i not in self.unavailable))
        return self._exhausted[1]

    # -- reasons ---------------------------------------------------------------------------

    def _dynamic_reasons(self, job: Job, category: _Category) -> list[str]:
        """Why the eligible instances and PEs did not take the job now, in
        Grid Engine's words."""
        self._weigh(job)
        if job.ar is not None:
            reason = self._ar_reason(job)
            if reason:
                return [reason]
        window = self._window_for(job, self.now)
        if window is None:
            return []
        reasons = self._instance_reasons(job, category, window[0])
        for pe in category.pes:
            self._set_window(self.now, self.now + window[0])
            used = self.pe_use.get(pe.name)
            offered = pe.slots - (self._peak(used) if used is not None else 0)
            reasons.append(f'cannot run in PE "{pe.name}" because it only offers {int(offered)} slots')
        return reasons

    def _instance_reasons(self, job: Job, category: _Category, held: float) -> list[str]:
        """Why each eligible instance cannot take the job now for ``held``
        seconds; 'due to a reservation' where it would fit at this instant
        but not for the whole run."""
        reasons = []
        instant, whole = (self.now, self.now + 1), (self.now, self.now + held)
        for instance in category.instances:
            queue, host = instance
            container = self.containers.instances[instance]
            self._set_window(*instant)
            if container.available("slots") < 1:
                reasons.append(f'queue instance "{queue}@{host}" dropped because it is full')
                continue
            room_now = self._host_room(job, host)
            self._set_window(*whole)
            if self._host_room(job, host) < 1:
                suffix = " due to a reservation" if room_now >= 1 else ""
                reasons.append(f'{self.label(job)} cannot run in queue "{queue}@{host}" because it '
                               f'offers only qc:slots=0.000000{suffix}')
                continue
            why = mismatch(job.hard, container)
            if why:
                self._set_window(*instant)
                suffix = " due to a reservation" if mismatch(job.hard, container) is None else ""
                reasons.append(f"{self.label(job)} {why}{suffix}")
        return reasons


_UNREQUESTED = ("not contained in its hard queue list", "is not of type", "is not a serial",
                "not in the queue list of checkpointing")
"""Reasons of instances the request did not ask for: the least telling."""


def _unrequested(reason: str) -> bool:
    return any(words in reason for words in _UNREQUESTED)


def _tasks(spread: list[tuple[str, int]],
           per_host: dict[str, list[tuple[str, str, int]]]) -> list[tuple[str, str, int]]:
    """Each host's slots of ``spread`` over its queue instances, in order."""
    tasks = []
    for host, slots in spread:
        for queue, _, room in per_host[host]:
            take = min(room, slots)
            if take:
                tasks.append((queue, host, take))
                slots -= take
    return tasks


def _spread(hosts: list[tuple[str, int]], count: int,
            rule: str | int) -> list[tuple[str, int]] | None:
    """``count`` slots over hosts (in order, each with its room) by the PE's
    allocation rule (sge_pe(5))."""
    if rule == "$pe_slots":
        host = next((h for h, room in hosts if room >= count), None)
        return None if host is None else [(host, count)]
    if isinstance(rule, int):
        chosen = [h for h, room in hosts if room >= rule][:count // rule]
        return [(h, rule) for h in chosen] if len(chosen) * rule == count else None
    taken = {h: 0 for h, _ in hosts}
    left = count
    if rule == "$fill_up":
        for host, room in hosts:
            taken[host] = min(room, left)
            left -= taken[host]
    else:                                  # $round_robin: one each in turn
        rooms = dict(hosts)
        while left:
            progress = False
            for host, _ in hosts:
                if left and taken[host] < rooms[host]:
                    taken[host] += 1
                    left -= 1
                    progress = True
            if not progress:
                break
    if left:
        return None
    return [(h, n) for h, n in taken.items() if n]
