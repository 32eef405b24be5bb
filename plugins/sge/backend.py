"""Enforces AR windows on Grid Engine, PluS's queue-based way (seed 004, 3.1).

At grant the AR gets a hostgroup, a userset and a queue, suspended; at the
start the normal queue instances on its hosts are suspended, foreign jobs
there are dealt with by the site's conflict policy, and the AR queue is
resumed; at the end its jobs and objects go and the normal queues resume.
Every step is idempotent and derived from the store's state, and what the
store cannot tell (objects created, queues suspended, requeues half done)
is in the ledger, so a daemon killed between two commands converges. The
lifecycle (memo, ledger, reconcile) is the kit's (overlay.kit.queuekit); this
module says what each step is in Grid Engine's commands.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any, Mapping

from overlay.api.plugin import (
    OPEN_STATES,
    Inventory,
    Job,
    Node,
    QueueBackend,
    Recent,
    Request,
    Reservation,
    ReservationError,
    batch_job,
    busy_hosts,
    qsub_words,
    runner_from_options,
)
from overlay_sge import calendars, objects, settings
from overlay_sge.gridengine import GridEngine, GridEngineError
from overlay_sge.ledger import Ledger, Requeue
from overlay_sge.loans import Loans
from overlay_sge.status import GridJob, Observation

log = logging.getLogger("plus.sge")

_PROBLEM_STATES = {"u": "unknown (host down or execd unreachable)", "E": "in error",
                   "d": "disabled", "o": "orphaned"}

class SgeBackend(QueueBackend):
    """Grid Engine through qconf/qmod/qstat/qdel/qresub, locally or over SSH."""

    name = "sge"

    def __init__(self, engine: GridEngine, ledger: Ledger, config: settings.Settings,
                 duration_offset: int, store_url: str | None = None) -> None:
        super().__init__(ledger)
        self.engine = engine
        self.settings = config
        self.duration_offset = duration_offset
        self._complex_ready = False
        self._observed: Recent[Observation] = Recent(self.engine.observe)
        self._windows: dict[int, tuple[tuple[str, ...], int, int]] = {}
        self._calendar_years: dict[str, str] = {}
        self._warned: set[str] = set()
        self.loans = Loans(engine, ledger, config, self.lock, store_url)

    @classmethod
    def from_config(cls, config, options: dict) -> "SgeBackend":
        chosen = settings.load({k: v for k, v in options.items() if k != "ssh"})
        runner = runner_from_options({k: v for k, v in options.items() if k == "ssh"},
                                     chosen.environment)
        ledger_path = os.path.join(config.state_path, chosen.ledger)
        return cls(GridEngine(runner, chosen.timeout), Ledger(ledger_path), chosen,
                   config.duration_offset, config.store_url)

    def close(self) -> None:
        self.loans.close()
        self.engine.runner.close()

    def stand_by(self) -> None:
        """Another daemon leads: the lending watch stops until this one leads again."""
        super().stand_by()
        self.loans.watch.want(False)

    # -- what Grid Engine has ------------------------------------------------------

    def ar_of(self, queue: str) -> int | None:
        return objects.ar_id_of(queue)

    def observe(self, fresh: bool = False) -> Observation:
        """qstat -f of every queue instance and job, at most a moment old."""
        return self._observed.get(fresh)

    def _changed(self) -> None:
        self._observed.forget()

    def _normal(self, queue: str | None) -> bool:
        """A queue of the site's: neither an AR's nor the lending queue."""
        return not self.is_ar_queue(queue) and not self.loans.is_lending(queue)

    def nodes(self) -> list[Node]:
        """Execution hosts as qhost reports them; slots are those of the
        largest normal queue on the host, the queues exclude AR queues."""
        nodes = []
        for host in self.engine.hosts():
            queues = {q: s for q, s in host.queues.items() if self._normal(q)}
            nodes.append(Node(
                name=host.name, slots=max(queues.values(), default=0), memory_mb=host.memory_mb,
                ncpus=host.ncpus, arch=host.arch, os=host.os, properties=dict(host.resources),
                queues=tuple(sorted(queues)), alive=host.alive, load=host.load or 0.0))
        return nodes

    def running_jobs(self) -> list[Job]:
        jobs: dict[str, Job] = {}
        for job in self.observe().running:
            previous = jobs.get(job.id)
            hosts = (previous.nodes if previous else ()) + ((job.host,) if job.host else ())
            end = job.start + job.h_rt if job.start is not None and job.h_rt is not None else None
            jobs[job.id] = Job(job.id, job.owner, tuple(dict.fromkeys(hosts)),
                               self.ar_of(job.queue or "") if self.is_ar_queue(job.queue) else None,
                               end, job.start)
        return list(jobs.values())

    def blocked_nodes(self, request: Request, inventory: Inventory) -> dict[str, str]:
        """With ``conflict: avoid``, hosts running a normal job without h_rt
        or with one that ends after the start (Grid Engine 6.2's rule), as
        the inventory of the leader's last pass lists them: no qstat under
        the use cases' lock. A job started since that pass is not seen. That
        is acceptable: the hosts' calendars keep jobs that would overrun a
        window off them (in every conflict mode), and at the AR's start its hosts' normal queues are
        suspended whatever runs there, as for a job started after the grant."""
        if self.settings.conflict != "avoid":
            return {}
        return busy_hosts(inventory, request.start, "host busy", "h_rt")

    def submit_hint(self, reservation: Reservation) -> str:
        queue = objects.queue_name(reservation.id)
        return f"qsub -w e -q {queue} -l {self.settings.complex}={queue} job.sh"

    def submit_claimed(self, reservation: Reservation, job: Mapping[str, Any]) -> dict:
        batch = batch_job(job, "Grid Engine")
        queue = objects.queue_name(reservation.id)
        options = ["-w", "e", "-q", queue, "-l", f"{self.settings.complex}={queue}",
                   *qsub_words(batch, "-wd", ["-j", "y"])]
        try:
            job_id, answer = self.engine.submit(options, batch.script, reservation.owner)
        except GridEngineError as exc:
            raise ReservationError(f"Grid Engine refused the job: {exc}") from None
        return {"id": job_id, "message": answer}

    # -- grant: objects, queue suspended ---------------------------------------------

    def ready(self) -> None:
        """The FORCED complex that keeps every job without -l <complex>=R<id>
        out of AR queues (a userset alone would let any member's job in)."""
        if self._complex_ready:
            return
        text = self.engine.complexes()
        name = self.settings.complex
        for line in text.splitlines():
            fields = line.split()
            if fields and fields[0] == name:
                if fields[2:5] != ["STRING", "==", "FORCED"]:
                    raise GridEngineError(f"complex {name} exists but is not a FORCED STRING "
                                          f"with relop == ({line.strip()}); set sge.complex to "
                                          "another name")
                break
        else:
            self.engine.set_complexes(text.rstrip("\n") + f"\n{name} {name} STRING == FORCED NO NONE 0\n")
            log.info("added the FORCED complex %s that AR jobs request", name)
        self.loans.ready(self._put)
        self._complex_ready = True

    def _wanted(self, ar: Reservation, template: dict[str, str]) -> dict[str, dict[str, str]]:
        runtime = max(0, ar.request.duration - self.duration_offset)
        return {
            "hostgroup": objects.hostgroup(ar.id, ar.node_names),
            "userset": objects.userset(ar.id, ar.acl),
            "queue": objects.queue(ar.id, template, ar.allocations, self.settings.complex, runtime,
                                   self.loans.subordinates(ar)),
        }

    def _template(self) -> dict[str, str]:
        template = self.engine.show("queue", self.settings.template_queue)
        if template is None:
            raise GridEngineError(f"template queue {self.settings.template_queue} does not exist; "
                                  "set sge.template_queue to a queue whose settings AR queues copy")
        return template

    def fingerprint(self, ar: Reservation) -> tuple:
        """What the AR's objects are made from: a change means they need work."""
        return (tuple(sorted(ar.node_names)), ar.acl,
                tuple((a.node, a.slots) for a in ar.allocations), ar.end)

    def create(self, ar: Reservation) -> None:
        """Userset, hostgroup and queue, the queue suspended before the window."""
        wanted = self._wanted(ar, self._template())
        self._put("userset", objects.userset_name(ar.id), wanted["userset"])
        self._put_queue_and_hosts(ar, wanted)
        if ar.state not in OPEN_STATES:
            self.engine.qmod("-sq", [objects.queue_name(ar.id)])
        self._changed()

    def window_granted(self, ar: Reservation) -> None:
        self._windows[ar.id] = (tuple(ar.node_names), ar.start, ar.end)
        self._sync_calendars()

    def window_dropped(self, ar_id: int) -> None:
        self._windows.pop(ar_id, None)
        self._sync_calendars()
        self._changed()

    def _put(self, kind: str, name: str, wanted: dict[str, str]) -> bool:
        """Create or correct one object; True if it had to change."""
        current = self.engine.show(kind, name)
        if current is not None and all(current.get(k, "").replace(" ", "") == v.replace(" ", "")
                                       for k, v in wanted.items()):
            return False
        self.engine.put(kind, wanted, exists=current is not None)
        return True

    def _put_queue_and_hosts(self, ar: Reservation, wanted: dict[str, dict[str, str]]) -> None:
        """Hostgroup and queue such that no instance is ever usable early: a
        new instance (a new queue, or a host added) starts disabled
        (initial_state), is suspended, then enabled (a queue cannot be
        created suspended). Finding initial_state disabled means that
        sequence was cut short: it is finished now."""
        queue = objects.queue_name(ar.id)
        current = self.engine.show("queue", queue)
        group = self.engine.show("hostgroup", objects.hostgroup_name(ar.id))
        hosts_change = group is None or group.get("hostlist", "").split() != wanted["hostgroup"]["hostlist"].split()
        interrupted = current is not None and current.get("initial_state") == "disabled"
        new_instances = (current is None or interrupted
                         or (hosts_change and ar.state not in OPEN_STATES))
        if current is not None and new_instances and not interrupted:
            self.engine.set_attribute("queue", "initial_state", "disabled", queue)
        if hosts_change:
            self.engine.put("hostgroup", wanted["hostgroup"], exists=group is not None)
        queue_file = dict(wanted["queue"], initial_state="disabled" if new_instances else "default")
        if current is None:
            self.engine.put("queue", queue_file, exists=False)
        elif objects.differences(current, queue_file) or current.get("initial_state") != queue_file["initial_state"]:
            self.engine.put("queue", queue_file, exists=True)
        if new_instances:
            if ar.state not in OPEN_STATES:
                self.engine.qmod("-sq", [queue])
            self.engine.qmod("-e", [queue])
            self.engine.set_attribute("queue", "initial_state", "default", queue)

    # -- window open: others off the hosts, the AR queue resumed -----------------------

    def keep_others_off(self, ar: Reservation, hosts: list[str]) -> None:
        observation = self.observe()
        self._suspend_normal(observation, hosts)
        self._clear_hosts(observation, hosts)
        if self.loans.lend(ar):
            self.loans.sync(self.observe(), self._put)

    def open_queue(self, ar: Reservation, shut: bool) -> None:
        self.engine.qmod("-sq" if shut else "-usq", [objects.queue_name(ar.id)])
        self._changed()

    def _suspend_normal(self, observation: Observation, hosts: list[str]) -> None:
        """Suspend the normal queue instances on ``hosts``; those an
        administrator had already suspended are left for them to resume."""
        ours = self.ledger.suspended()
        targets = [i.name for i in observation.instances
                   if i.host in hosts and self._normal(i.queue)
                   and ("s" not in i.state or i.name in ours)]
        fresh = [name for name in targets if name not in ours or
                 "s" not in next(i.state for i in observation.instances if i.name == name)]
        if fresh:
            self.ledger.note_suspended(fresh)
            self.engine.qmod("-sq", fresh)
            self._changed()

    def _clear_hosts(self, observation: Observation, hosts: list[str]) -> None:
        """Foreign jobs still on the AR's hosts, by the conflict policy (lent
        jobs are not foreign: they run there by the AR's leave)."""
        foreign = {job.id: job for job in observation.running
                   if job.host in hosts and self._normal(job.queue)}
        if not foreign or self.settings.conflict == "avoid":
            return
        if self.settings.conflict == "kill":
            log.info("killing job(s) %s on reserved hosts", ", ".join(sorted(foreign)))
            self.engine.delete_jobs(foreign)
        else:
            for job in foreign.values():
                self._requeue(job, observation)
        self._changed()

    def _requeue(self, job: GridJob, observation: Observation) -> None:
        """PluS's way: suspend, resubmit as the owner (qresub makes a copy
        that belongs to whoever runs it), delete. The ledger records each
        step, so a crash after qresub does not make a second copy."""
        requeue = self.ledger.requeues().get(job.id)
        if requeue is None:
            requeue = Requeue(job.id, job.owner, int(time.time()))
            self.ledger.note_requeue(requeue)
        elif requeue.copy is None:
            requeue.copy = _find_copy(observation, job, requeue.since)
        self.engine.suspend_job(job.id)
        if requeue.copy is None:
            requeue.copy = self.engine.resubmit(job.id, job.owner)
            self.ledger.note_requeue(requeue)
        self.engine.delete_jobs([job.id])
        self.ledger.end_requeue(job.id)
        log.info("requeued job %s of %s from a reserved host as job %s", job.id, job.owner,
                 requeue.copy)

    # -- window closed, cancel, forget --------------------------------------------------

    def remove(self, ar_id: int) -> None:
        """Jobs first (qdel -f is immediate in the master), then the normal
        queues back, then queue, userset and hostgroup, in the order Grid
        Engine accepts (a referenced userset or hostgroup cannot go)."""
        self._delete_ar_jobs(ar_id)
        self.ledger.set_active(ar_id, None)
        self._resume_normal()
        self._stop_lending(ar_id)
        self.engine.delete("queue", objects.queue_name(ar_id))
        self.engine.delete("userset", objects.userset_name(ar_id))
        self.engine.delete("hostgroup", objects.hostgroup_name(ar_id))

    def give_back(self, ar: Reservation) -> None:
        """plus_cancel: the AR's jobs go and its queue's hostlist becomes NONE
        (PluS 3.1.5)."""
        self._delete_ar_jobs(ar.id)
        self.ledger.set_active(ar.id, None)
        self._resume_normal()
        self._stop_lending(ar.id)
        queue = objects.queue_name(ar.id)
        current = self.engine.show("queue", queue)
        if current is not None and current.get("hostlist") != "NONE":
            self.engine.set_attribute("queue", "hostlist", "NONE", queue)

    def _delete_ar_jobs(self, ar_id: int) -> None:
        queue = objects.queue_name(ar_id)
        observation = self.observe(fresh=True)
        jobs = [j.id for j in observation.running if j.queue == queue]
        jobs += [j.id for j in observation.pending
                 if j.requests.get(self.settings.complex) == queue or queue in j.queue_requests]
        if jobs:
            log.info("deleting job(s) %s of AR %d", ", ".join(sorted(set(jobs))), ar_id)
            self.engine.delete_jobs(jobs)

    def _resume_normal(self) -> None:
        """Resume the normal queue instances this overlay suspended on hosts
        that no open AR holds any more."""
        held = self.ledger.active_hosts()
        resume = [name for name in self.ledger.suspended() if name.split("@", 1)[1] not in held]
        if resume:
            self.engine.qmod("-usq", resume)
            self.ledger.note_resumed(resume)
            self._changed()

    def _stop_lending(self, ar_id: int) -> None:
        """The AR's hosts lend no more: their lending instances go (a lent job
        still running there runs on, its instance orphaned, to its h_rt)."""
        if self.loans.withdraw(ar_id):
            self.loans.sync(self.observe(fresh=True), self._put)

    def reconciled(self, reservations: list[Reservation]) -> None:
        """Resume what nothing holds; the open ARs' hosts lent; calendars for
        the windows ahead."""
        self._resume_normal()
        active = self.ledger.active_ids()
        self.loans.retire()
        self.loans.follow([ar for ar in reservations
                           if ar.id in active and ar.state in OPEN_STATES])
        observation = self.observe()
        self.loans.sync(observation, self._put)
        self.loans.preempt(observation)
        self._windows = {ar.id: (tuple(ar.node_names), ar.start, ar.end)
                         for ar in self.windows_ahead(reservations)}
        self._sync_calendars()

    # -- nodes cleared ahead: calendars -----------------------------------------------------

    def _sync_calendars(self) -> None:
        """Whatever the conflict policy, each host with AR windows ahead gets
        a calendar switching its normal queue instances off over them, so
        from the grant on the scheduler keeps jobs that would overrun a
        window (and jobs without h_rt) off the host, and the conflict
        policy finds nothing to do at the start but jobs started before
        the grant; hosts without windows get theirs back."""
        self._check_lookahead()
        windows: dict[str, list[tuple[int, int]]] = {}
        for hosts, start, end in self._windows.values():
            for host in hosts:
                windows.setdefault(host, []).append((start, end))
        attached = self.ledger.calendars()
        for instance in attached:
            if instance.split("@", 1)[1] not in windows:
                self.engine.purge_instance_attribute("calendar", instance)
                self.ledger.note_calendar(instance, None)
        for host in set(self._calendar_years) | {i.split("@", 1)[1] for i in attached}:
            if host not in windows:
                self.engine.delete("calendar", calendars.calendar_name(host))
                self._calendar_years.pop(host, None)
        now = int(time.time())
        for host, spans in windows.items():
            wanted = calendars.calendar(host, spans, now)
            if self._calendar_years.get(host) != wanted["year"]:
                self._put("calendar", wanted["calendar_name"], wanted)
                self._calendar_years[host] = wanted["year"]
            for instance in self.observe().instances:
                if instance.host == host and self.ar_of(instance.queue) is None \
                        and not self.loans.is_lending(instance.queue):
                    self._attach_calendar(instance.name, wanted["calendar_name"], attached)

    def _attach_calendar(self, instance: str, name: str, attached: dict[str, str]) -> None:
        if attached.get(instance) == name:
            return
        current = (self.engine.show("queue", instance) or {}).get("calendar", "NONE")
        if current not in ("NONE", name):
            if instance not in self._warned:
                self._warned.add(instance)
                log.warning("%s has calendar %s of its own: long jobs cannot be kept off "
                            "it before AR windows", instance, current)
            return
        self.ledger.note_calendar(instance, name)
        self.engine.set_instance_attribute("calendar", name, instance)

    def _check_lookahead(self) -> None:
        if "lookahead" in self._warned:
            return
        self._warned.add("lookahead")
        if self.engine.scheduler_setting("max_reservation") in (None, "0"):
            log.warning("max_reservation is 0 in the scheduler configuration, so "
                        "Grid Engine ignores calendars when it dispatches; set it above 0 "
                        "(qconf -msconf) to keep jobs that would overrun AR windows off their hosts")

    # -- health --------------------------------------------------------------------------

    def health(self, reservations: list[Reservation]) -> dict[int, str]:
        """A reserved host down or an AR queue instance in error, disabled or
        orphaned makes the AR W or E (seed 000, 5.2.2.2.1). Also notices
        drift (a queue deleted or resumed by hand) so the next apply fixes it."""
        with self.lock:
            observation = self.observe(fresh=True)
            instances = {i.name: i for i in observation.instances}
            problems = {}
            for ar in reservations:
                queue = objects.queue_name(ar.id)
                failures = []
                for host in sorted(ar.node_names):
                    instance = instances.get(f"{queue}@{host}")
                    if instance is None:
                        if self.ledger.owns(ar.id):
                            self._applied.forget(ar.id)
                        continue
                    bad = [text for letter, text in _PROBLEM_STATES.items() if letter in instance.state]
                    if bad:
                        failures.append(f"{instance.name} {', '.join(bad)}")
                    self._applied.notice(ar.id, "s" not in instance.state)
                if failures:
                    problems[ar.id] = "; ".join(failures)
            return problems


def _find_copy(observation: Observation, job: GridJob, since: int) -> str | None:
    """After a crash between qresub and the ledger: the copy qresub made, if
    any (same owner and name, newer id, submitted since)."""
    for candidate in observation.pending + observation.running:
        if (candidate.owner == job.owner and candidate.name == job.name
                and int(candidate.id) > int(job.id)):
            return candidate.id
    return None
