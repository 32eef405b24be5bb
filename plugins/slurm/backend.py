"""Enforces AR windows on Slurm with a Slurm reservation per AR.

At grant AR 123 gets reservation ``R123`` on exactly its nodes for its
window, for its users (overlay_slurm.reservations): from then on Slurm's
own scheduler starts no other job there that would run into the window,
and the AR's users' jobs (``sbatch --reservation=R123``) wait for it. At
the start Slurm opens the reservation itself; foreign jobs still running
on its nodes (started before the grant) are dealt with by the site's
conflict policy: requeued and held until the window ends, cancelled, or
never granted over (``avoid``). At the end Slurm ends the AR's jobs (after
the site's ResvOverRun), and the overlay cancels what is left, deletes the
reservation and releases the jobs it held. With ``lend_partition`` set, a
whole-node AR also lends its idle nodes to preemptible jobs through a
second reservation ``L123``, made, changed and removed with ``R123``
(overlay_slurm.reservations; followed by overlay_slurm.lending). Every step is idempotent; what
the store cannot tell (reservations made, jobs held) is in the ledger, so
a daemon killed between two commands converges. The lifecycle (memo,
ledger, reconcile) is the kit's (overlay.kit.queuekit); this module says
what each step is in Slurm's commands.
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
    kept_shut,
    runner_from_options,
)
from overlay_slurm import reservations, settings
from overlay_slurm.ledger import FOREIGN, SHUT, Ledger
from overlay_slurm.lending import LentJobs, Tell, store_events
from overlay_slurm.slurm import ReservationInUse, Slurm, SlurmError
from overlay_slurm.status import SlurmJob

log = logging.getLogger("plus.slurm")


class SlurmBackend(QueueBackend):
    """Slurm through scontrol/squeue/scancel/sbatch, locally or on the
    controller's host over SSH, as root or SlurmUser."""

    name = "slurm"
    delete_command = "scancel"
    slots_as_cores = True

    def __init__(self, slurm: Slurm, ledger: Ledger, config: settings.Settings,
                 tell: Tell | None = None) -> None:
        super().__init__(ledger)
        self.slurm = slurm
        self.settings = config
        self._cpus: dict[str, int] = {}
        self._observed: Recent[list[SlurmJob]] = Recent(self.slurm.jobs)
        self._lent = LentJobs(ledger, slurm, tell) if tell else None

    @classmethod
    def from_config(cls, config, options: dict) -> "SlurmBackend":
        chosen = settings.load({k: v for k, v in options.items() if k != "ssh"})
        runner = runner_from_options({k: v for k, v in options.items() if k == "ssh"},
                                     chosen.environment)
        ledger = Ledger(os.path.join(config.state_path, chosen.ledger))
        tell = store_events(config.store_url) if chosen.lend_partition else None
        return cls(Slurm(runner, chosen.bin, chosen.timeout), ledger, chosen, tell)

    def close(self) -> None:
        self.slurm.runner.close()

    # -- what Slurm has --------------------------------------------------------------------

    def ar_of(self, queue: str) -> int | None:
        return reservations.ar_id_of(queue)

    def jobs_now(self, fresh: bool = False) -> list[SlurmJob]:
        """squeue's jobs, at most a moment old."""
        return self._observed.get(fresh)

    def _changed(self) -> None:
        self._observed.forget()

    def nodes(self) -> list[Node]:
        """Nodes as scontrol shows them: features as properties (``-l
        feature=true``), partitions as queues, a node down, drained or
        failing not alive."""
        found = []
        for node in self.slurm.nodes():
            properties = {feature: "true" for feature in node.features}
            if node.gres not in ("", "(null)"):
                properties["gres"] = node.gres
            found.append(Node(name=node.name, slots=node.cpus, memory_mb=node.memory_mb,
                              ncpus=node.cpus, arch=node.arch, os=node.os,
                              properties=properties, queues=node.partitions,
                              alive=not node.problems, load=node.load))
        self._cpus = {node.name: node.slots for node in found}
        return found

    def running_jobs(self) -> list[Job]:
        jobs = []
        for job in self.jobs_now():
            if job.state != "RUNNING":
                continue
            ar_id = self.ar_of(job.reservation) if self.is_ar_queue(job.reservation) else None
            jobs.append(Job(job.id, job.user, job.nodes, ar_id, job.limit_end, job.start))
        return jobs

    def blocked_nodes(self, request: Request, inventory: Inventory) -> dict[str, str]:
        """With ``conflict: avoid``, nodes running a job outside ARs whose
        time limit runs past the start (or is UNLIMITED), as the leader's
        last pass saw them. A job started since is not seen: that is
        acceptable, Slurm starts no job that would run into a reservation
        once it exists."""
        if self.settings.conflict != "avoid":
            return {}
        return busy_hosts(inventory, request.start, "node busy", "time limit")

    def submit_hint(self, reservation: Reservation) -> str:
        return f"sbatch --reservation={reservations.name(reservation.id)} job.sh"

    def submit_claimed(self, reservation: Reservation, job: Mapping[str, Any]) -> dict:
        batch = batch_job(job, "Slurm")
        options = [f"--reservation={reservations.name(reservation.id)}"]
        for option, value in (("--job-name", batch.name), ("--chdir", batch.cwd),
                              ("--output", batch.stdout)):
            if value is not None:
                options.append(f"{option}={value}")
        if batch.stderr is not None and not batch.merge:
            options.append(f"--error={batch.stderr}")
        try:
            job_id = self.slurm.submit(options, batch.script, reservation.owner)
        except SlurmError as exc:
            raise ReservationError(f"Slurm refused the job: {exc}") from None
        self._changed()
        return {"id": job_id, "message": f"Submitted batch job {job_id}"}

    # -- grant: the reservation ------------------------------------------------------------

    def _wanted(self, ar: Reservation) -> reservations.Wanted:
        if not self._cpus:
            self.nodes()
        return reservations.wanted(ar, self._cpus, self.settings.partition,
                                   self.settings.lend_partition)

    def fingerprint(self, ar: Reservation) -> tuple:
        return (self._wanted(ar),)

    def create(self, ar: Reservation) -> None:
        """Make the reservation, or correct the one Slurm has; then the
        same for its lending reservation, or remove one it no longer has."""
        wanted = self._wanted(ar)
        now = int(time.time())
        started = ar.state in OPEN_STATES or ar.start <= now
        self._apply(wanted, now, started)
        if wanted.lend:
            self.ledger.note_lending(ar.id, True)
            self._apply(wanted.lending(), now, started)
        elif self.ledger.lends(ar.id):
            self._end_lending(ar.id)

    def _apply(self, wanted: reservations.Wanted, now: int, started: bool) -> None:
        current = self.slurm.reservation(wanted.name)
        if current is None:
            self._make(wanted, now)
        elif differences := wanted.differences(current, started, now):
            if wanted.cores or current.cores != sum(
                    self._cpus.get(node, 0) for node in current.nodes):
                self.slurm.delete_reservation(wanted.name)     # core-based: made anew
                self._make(wanted, now)
            else:
                fields = wanted.fields(now, started)
                del fields["ReservationName"]
                if "flags" in differences:
                    fields["Flags"] = wanted.flags
                self.slurm.update_reservation(wanted.name, fields)

    def _make(self, wanted: reservations.Wanted, now: int) -> None:
        fields = wanted.fields(now, started=False)
        fields["Flags"] = wanted.flags
        self.slurm.create_reservation(fields)

    # -- window open: others off the nodes ---------------------------------------------------

    def keep_others_off(self, ar: Reservation, hosts: list[str]) -> None:
        """Foreign jobs still running on the AR's nodes, by the conflict
        policy; while a hard error keeps the AR shut, its own pending jobs
        held."""
        own = (reservations.name(ar.id), reservations.lending_name(ar.id))
        name = own[0]
        jobs = self.jobs_now(fresh=True)
        wanted = set(hosts)
        foreign = [job.id for job in jobs if job.state == "RUNNING" and job.reservation not in own
                   and wanted & set(job.nodes)]
        if foreign and self.settings.conflict == "kill":
            log.info("cancelling job(s) %s on the nodes of AR %d", ", ".join(foreign), ar.id)
            self.slurm.cancel(foreign)
        elif foreign and self.settings.conflict == "requeue":
            self.ledger.note_held(foreign, ar.id, FOREIGN)
            log.info("requeued and held job(s) %s off the nodes of AR %d until its end",
                     ", ".join(foreign), ar.id)
            self.slurm.requeue_held(foreign)
            self.ledger.note_requeued(foreign, int(time.time()))
        if kept_shut(ar):
            waiting = [job.id for job in jobs if job.state == "PENDING" and job.reservation == name
                       and job.id not in self.ledger.held(ar.id, SHUT)]
            if waiting:
                self.ledger.note_held(waiting, ar.id, SHUT)
                self.slurm.hold(waiting)
        if foreign:
            self._changed()

    def open_queue(self, ar: Reservation, shut: bool) -> None:
        """Slurm opens the reservation at its start itself; an AR no longer
        shut gets back the jobs held while it was."""
        if not shut:
            self._release(self.ledger.held(ar.id, SHUT))

    def _release(self, jobs: list[str]) -> None:
        """Jobs this overlay held, released, and those it requeued told to
        start at once rather than 120 s after their requeue (Slurm's own
        delay), unless the requeue was too recent (ledger.REQUEUE_SETTLE:
        slurmd would refuse the launch and fail the job)."""
        if jobs:
            settled = self.ledger.settled(jobs, int(time.time()))
            self.slurm.release(jobs)
            if settled:
                self.slurm.start_now(settled)
            self.ledger.note_released(jobs)
            self._changed()

    # -- window closed, cancel, forget --------------------------------------------------------

    def _end(self, ar_id: int) -> None:
        """The AR's jobs cancelled (also those Slurm held when it ended the
        reservation itself: RESV_DEL_HOLD), its nodes given back (the
        reservation deleted once no job names it), the jobs held for it
        released."""
        name = reservations.name(ar_id)
        orphaned = f"Reservation_{name}_was_deleted"
        mine = [job.id for job in self.jobs_now(fresh=True)
                if job.reservation == name or job.reason == orphaned]
        if mine:
            log.info("cancelling job(s) %s of AR %d", ", ".join(mine), ar_id)
            self.slurm.cancel(mine)
        self.ledger.set_active(ar_id, None)
        if self.ledger.lends(ar_id):
            self._end_lending(ar_id)
        self._delete_when_unused(name)
        self._release(self.ledger.held(ar_id))
        self._changed()

    def _end_lending(self, ar_id: int) -> None:
        """The lending reservation gone: its lent jobs end with it (as at
        its end in Slurm), but a pending one that names other reservations
        too keeps those."""
        name = reservations.lending_name(ar_id)
        orphaned = f"Reservation_{name}_was_deleted"
        ending = []
        for job in self.jobs_now(fresh=True):
            named = job.reservation.split(",") if job.reservation else []
            if name in named and job.state == "PENDING" and len(named) > 1:
                self.slurm.name_reservations(job.id, [other for other in named if other != name])
            elif name in named or job.reason == orphaned:
                ending.append(job.id)
        if ending:
            log.info("cancelling lent job(s) %s of AR %d", ", ".join(ending), ar_id)
            self.slurm.cancel(ending)
        self._delete_when_unused(name)
        self.ledger.note_lending(ar_id, False)
        self._changed()

    def _delete_when_unused(self, name: str) -> None:
        """Slurm deletes no reservation a job still names: cancelled jobs
        take KillWait to go. Waits that long at most (bounded by
        ``timeout``), then leaves it to the next pass."""
        deadline = time.monotonic() + self.settings.timeout
        while True:
            try:
                self.slurm.delete_reservation(name)
                return
            except ReservationInUse:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def remove(self, ar_id: int) -> None:
        self._end(ar_id)

    def give_back(self, ar: Reservation) -> None:
        """plus_cancel: as at the end; the record stays in the store."""
        self._end(ar.id)

    def reconciled(self, reservations_now: list[Reservation]) -> None:
        """Release jobs held for ARs that are no longer open (a crash
        between the end's steps)."""
        open_now = {ar.id for ar in reservations_now if ar.state in OPEN_STATES}
        stale = [job for job, ar_id in self.ledger.held_for().items() if ar_id not in open_now]
        self._release(stale)

    # -- health --------------------------------------------------------------------------------

    def health(self, reservations_now: list[Reservation]) -> dict[int, str]:
        """A node of an AR down, drained or failing makes it W or E (seed
        000, 5.2.2.2.1); a reservation deleted or changed by hand is drift,
        mended at the next pass. The leader's pass asks: lent jobs are
        followed here too (overlay_slurm.lending)."""
        with self.lock:
            if self._lent:
                self._lent.observe(self.jobs_now(fresh=True), int(time.time()))
            nodes = {node.name: node for node in self.slurm.nodes()}
            self._cpus = {name: node.cpus for name, node in nodes.items()}
            made = {r.name: r for r in self.slurm.reservations()}
            now = int(time.time())
            problems = {}
            for ar in reservations_now:
                if self.ledger.owns(ar.id) and not self.released(ar.id):
                    wanted = self._wanted(ar)
                    started = ar.state in OPEN_STATES or ar.start <= now
                    if any(made.get(each.name) is None
                           or each.differences(made[each.name], started, now)
                           for each in ((wanted, wanted.lending()) if wanted.lend else (wanted,))):
                        self._applied.forget(ar.id)
                failures = [f"{name} {'+'.join(nodes[name].problems)}"
                            + (f" ({nodes[name].reason})" if nodes[name].reason else "")
                            for name in sorted(ar.node_names)
                            if name in nodes and nodes[name].problems]
                failures += [f"{name} unknown to Slurm" for name in sorted(ar.node_names)
                             if name not in nodes]
                if failures:
                    problems[ar.id] = "; ".join(failures)
            return problems
