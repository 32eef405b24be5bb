"""Enforces AR windows on TORQUE with a queue per AR and a node property.

At grant the AR gets an execution queue ``R<id>``, enabled but not started,
with the AR's users as its ACL, a default walltime that fits the window and
keep_completed 0; its nodes get the property ``R<id>`` and the queue's jobs
are bound to it (``-l nodes=...:R<id>``), so they can only run there. At
the start, foreign jobs on those nodes are dealt with by the site's
conflict policy, normal jobs are kept off them, the queue is started and a
scheduling cycle triggered. At the end the queue is stopped, its jobs
deleted, the queue deleted, and only then the property removed: pbs_sched
deletes queued jobs whose property no node has. Every step is idempotent;
what the store cannot tell is in the ledger, so a daemon killed between two
commands converges. The lifecycle (memo, ledger, reconcile) is the kit's
(overlay.kit.queuekit); this module says what each step is in TORQUE's commands.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from typing import Any, Mapping

from overlay.api.plugin import (
    OPEN_STATES,
    Inventory,
    Job,
    Node,
    QueueBackend,
    Request,
    Reservation,
    ReservationError,
    State,
    batch_job,
    busy_hosts,
    qsub_words,
    runner_from_options,
    with_members,
)
from overlay_torque import nodespec, settings, windows
from overlay_torque.ledger import Ledger
from overlay_torque.selfsched import SelfScheduler, Window, scheduling_orders
from overlay_torque.status import TorqueJob, TorqueNode, duration
from overlay_torque.torque import NodeBroken, QueueBusy, Torque, TorqueError

log = logging.getLogger("plus.torque")

_AR_NAME = re.compile(r"^R(\d+)$")


def queue_name(ar_id: int) -> str:
    """The AR's queue, and the node property its jobs require."""
    return f"R{ar_id}"


class TorqueBackend(QueueBackend):
    """TORQUE through qmgr/pbsnodes/qstat/qalter/qhold/qrerun/qrun/qdel,
    locally or on the server host over SSH."""

    name = "torque"

    def __init__(self, torque: Torque, ledger: Ledger, config: settings.Settings,
                 duration_offset: int, scheduler: SelfScheduler | None = None,
                 windows_path: str | None = None) -> None:
        super().__init__(ledger)
        self.torque = torque
        self.settings = config
        self.duration_offset = duration_offset
        self.scheduler = scheduler
        self.windows_path = windows_path          # pbs_sched mode: for plus_torque_filter
        self._open: dict[int, tuple[int, tuple[str, ...]]] = {}   # AR id -> (end, nodes)
        self._published: list[dict] | None = None
        self._started = False
        self._closing = threading.Event()
        self._watcher: threading.Thread | None = None

    @classmethod
    def from_config(cls, config, options: dict) -> "TorqueBackend":
        chosen = settings.load({k: v for k, v in options.items() if k not in settings.ORDER_KEYS})
        runner = runner_from_options({k: v for k, v in options.items() if k == "ssh"},
                                     chosen.environment)
        torque = Torque(runner, chosen.bin, chosen.timeout)
        ledger = Ledger(os.path.join(config.state_path, chosen.ledger))
        order = {k: v for k, v in options.items() if k in settings.ORDER_KEYS}
        scheduler = None
        if chosen.scheduler == "plus":
            jobs, nodes = scheduling_orders(order, config.relative)
            scheduler = SelfScheduler(torque, ledger, jobs, nodes or tuple(config.node_order),
                                      chosen.schedule_interval)
        elif order:
            raise ValueError(f"torque.{sorted(order)[0]}: job order settings need "
                             "torque.scheduler: plus (pbs_sched orders jobs by its own sched_config)")
        published = None if scheduler else os.path.join(config.state_path, chosen.windows_file)
        return cls(torque, ledger, chosen, config.duration_offset, scheduler, published)

    def start(self) -> None:
        """This daemon leads: the self-scheduler runs (one thread, kept
        across a stand-down) and the jobs asked to leave are watched (a
        watch stops when the lead is lost)."""
        if self.scheduler is not None:
            self.scheduler.lead(self.fence)
            if not self._started:
                self.scheduler.start()
        with self.lock:
            self._started = True
            self._watch_departures()

    def stand_by(self) -> None:
        """Another daemon leads: the self-scheduler starts no job here (and
        the kit reads the shared ledger again when this one leads)."""
        super().stand_by()
        if self.scheduler is not None:
            self.scheduler.stand_by()

    def close(self) -> None:
        self._closing.set()
        watcher = self._watcher
        if watcher is not None:
            watcher.join(timeout=5)
        if self.scheduler is not None:
            self.scheduler.stop()
        self.torque.runner.close()

    # -- what TORQUE has ---------------------------------------------------------------

    def ar_of(self, queue: str) -> int | None:
        match = _AR_NAME.match(queue)
        return int(match.group(1)) if match else None

    def _ours(self, prop: str) -> bool:
        return prop == self.settings.keep_property or self.is_ar_queue(prop)

    def nodes(self) -> list[Node]:
        """Nodes as pbsnodes reports them; a node an administrator took
        offline cannot be reserved, one this overlay drained can."""
        nodes = []
        for node in self.torque.nodes():
            uname = node.status.get("uname", "").split()
            ours = self.ledger.offline.get(node.name) == node.note
            nodes.append(Node(
                name=node.name, slots=node.np, memory_mb=node.kb("physmem") // 1024,
                ncpus=int(node.status["ncpus"]) if node.status.get("ncpus", "").isdigit() else node.np,
                arch=uname[-1] if uname else "", os=node.status.get("opsys", ""),
                properties={p: "true" for p in node.properties if not self._ours(p)},
                alive=node.alive and (not node.offline or ours), load=node.load))
        return nodes

    def running_jobs(self) -> list[Job]:
        jobs = []
        for job in self.torque.jobs():
            if not job.running:
                continue
            end = job.start_time + job.walltime if job.start_time and job.walltime else None
            jobs.append(Job(job.id, job.owner, job.exec_hosts,
                            self.ar_of(job.queue) if self.is_ar_queue(job.queue) else None, end,
                            job.start_time))
        return jobs

    def blocked_nodes(self, request: Request, inventory: Inventory) -> dict[str, str]:
        """With ``conflict: avoid``, nodes running a normal job without a
        walltime or with one that ends after the start, as the inventory of
        the leader's last pass lists them: no qstat under the use cases'
        lock. A job started since is not seen; the start's conflict policy
        deals with it, as with one started after the grant."""
        if self.settings.conflict != "avoid":
            return {}
        return busy_hosts(inventory, request.start, "node busy", "walltime")

    def submit_hint(self, reservation: Reservation) -> str:
        queue = queue_name(reservation.id)
        return f"qsub -q {queue} -l nodes=1:{queue} job.sh"

    def submit_claimed(self, reservation: Reservation, job: Mapping[str, Any]) -> dict:
        batch = batch_job(job, "TORQUE")
        queue = queue_name(reservation.id)
        options = ["-q", queue, "-l", f"nodes=1:{queue}", *qsub_words(batch, "-d", ["-j", "oe"])]
        try:
            job_id = self.torque.submit(options, batch.script, reservation.owner)
        except TorqueError as exc:
            raise ReservationError(f"TORQUE refused the job: {exc}") from None
        return {"id": job_id, "message": job_id}

    # -- grant: the queue, not started; the property on the nodes ----------------------------

    def fingerprint(self, ar: Reservation) -> tuple:
        """What the AR's queue and properties are made from."""
        return (tuple(sorted(ar.node_names)), ar.acl, ar.owner, ar.request.duration)

    def create(self, ar: Reservation) -> None:
        self._put_queue(ar)
        self._tag(ar)
        self._bind(ar, self.torque.jobs())

    def window_granted(self, ar: Reservation) -> None:
        if self.scheduler is not None:
            self.scheduler.put_window(_window(ar))

    def window_dropped(self, ar_id: int) -> None:
        if self.scheduler is not None:
            self.scheduler.drop_window(ar_id)

    def _queue_attributes(self, ar: Reservation, started: bool) -> list[tuple[str, str]]:
        """In the order the recording sets them, as print server shows them;
        a job submitted without a node spec gets one bound to the AR's
        property at once (one with a spec of its own is bound at the next
        pass)."""
        users = _users(ar)
        runtime = max(1, ar.request.duration - self.duration_offset)
        return [("enabled", "True"), ("started", "True" if started else "False"),
                ("acl_user_enable", "True"), ("acl_users", ",".join(users)),
                ("resources_default.walltime", duration(runtime)), ("keep_completed", "0"),
                ("resources_default.nodes", f"1:{queue_name(ar.id)}")]

    def _put_queue(self, ar: Reservation, started: bool | None = None) -> None:
        """Create the queue or correct what differs; a queue is never
        started before its window (``started`` None keeps an open AR's)."""
        queue = queue_name(ar.id)
        current = self.torque.queues().get(queue)
        if current is None:
            self.torque.create_queue(queue)
            current = {}
        if started is None:
            started = current.get("started") == "True" and ar.state in OPEN_STATES
        for key, value in self._queue_attributes(ar, started):
            if current.get(key) != value:
                self.torque.set_queue(queue, key, value)

    def _tag(self, ar: Reservation) -> None:
        """The property on the AR's nodes, and off the nodes it left."""
        prop = queue_name(ar.id)
        nodes = self._node_map()
        for name in ar.node_names:
            node = nodes.get(name)
            if node is None:
                raise TorqueError(f"node {name} of AR {ar.id} is not known to TORQUE")
            self.ledger.note_tag(name, ar.id, True)
            if prop not in node.properties:
                self._change(node, lambda name=name: self.torque.add_property(name, prop))
        for name in self.ledger.tagged(ar.id) - set(ar.node_names):
            self._untag(nodes.get(name), name, ar.id)

    def _untag(self, node: TorqueNode | None, name: str, ar_id: int) -> None:
        """Remove the AR's property, never leaving the list empty (TORQUE
        6.1 then refuses every later change to the node): the keeper
        property goes on first when the AR's is the last one."""
        prop = queue_name(ar_id)
        if node is not None and prop in node.properties:
            keep = self.settings.keep_property
            if set(node.properties) <= {prop}:
                self._change(node, lambda: self.torque.add_property(name, keep))
            self._change(node, lambda: self.torque.remove_property(name, prop))
        self.ledger.note_tag(name, ar_id, False)

    def _change(self, node: TorqueNode, change) -> None:
        """A change to a node; a node broken by an emptied property list
        (by hand, or by an older version) is re-created first if no job
        runs on it."""
        try:
            change()
        except NodeBroken:
            if node.jobs:
                raise TorqueError(
                    f"node {node.name} refuses every change (TORQUE 6.1 bug: its property list "
                    f"was emptied) and jobs run on it, so it cannot be re-created now; after they "
                    f"end: qmgr -c 'delete node {node.name}'; qmgr -c 'create node {node.name} "
                    f"np={node.np}'") from None
            log.warning("node %s refuses every change (its property list was emptied, a TORQUE "
                        "6.1 bug): re-creating it with np=%d and property %s", node.name, node.np,
                        self.settings.keep_property)
            self.torque.recreate_node(TorqueNode(node.name, node.states, node.np,
                                                 (self.settings.keep_property,), ()))
            change()

    def _bind(self, ar: Reservation, jobs: list[TorqueJob]) -> bool:
        """Queued jobs of the AR's queue get its property in their node
        spec, so they can run only on its nodes; True if any had to."""
        prop = queue_name(ar.id)
        bound = False
        for job in jobs:
            if job.queue == prop and not job.running and not nodespec.is_bound(job.nodes_spec, prop):
                self.torque.alter_nodes(job.id, nodespec.bound(job.nodes_spec, prop))
                bound = True
        return bound

    # -- window open -------------------------------------------------------------------

    def keep_others_off(self, ar: Reservation, hosts: list[str]) -> None:
        """Foreign jobs off the nodes, normal jobs kept off, the window
        published, drained nodes back."""
        jobs = self.torque.jobs()
        self._note_departed(jobs)
        self._bind(ar, jobs)
        nodes = self._node_map()
        self._open[ar.id] = (ar.end, tuple(hosts))
        self._publish(nodes)
        self._keep_others_off(ar, jobs, nodes)
        self._undrain(ar)

    def open_queue(self, ar: Reservation, shut: bool) -> None:
        self._put_queue(ar, started=not shut)

    def opened(self, ar: Reservation, shut: bool) -> None:
        if not shut:
            self._run_now()

    def _run_now(self) -> None:
        """The AR's jobs start now, not at the next periodic cycle."""
        if self.scheduler is not None:
            self.scheduler.wake()
        else:
            self.torque.kick()

    def _node_map(self) -> dict[str, TorqueNode]:
        return {node.name: node for node in self.torque.nodes()}

    def _keep_others_off(self, ar: Reservation, jobs: list[TorqueJob],
                         nodes: dict[str, TorqueNode]) -> None:
        """Foreign jobs running on the AR's nodes go by the conflict policy,
        each run asked once (an epilogue keeps a job running a while after
        it was told; asking again would only repeat the order); with
        pbs_sched, queued foreign jobs that could land there are held for
        the window (pbs_sched keeps no job off a node by itself)."""
        hosts = set(ar.node_names)
        if self.settings.conflict in ("kill", "requeue"):
            for job in jobs:
                if (job.state == "R" and not self.is_ar_queue(job.queue)
                        and hosts & set(job.exec_hosts) and not self._asked(job)):
                    self._send_away(job, ar.id, sorted(hosts & set(job.exec_hosts)))
        if self.scheduler is None:
            for job in jobs:
                if (job.state == "Q" and not job.held and not self.is_ar_queue(job.queue)
                        and nodespec.could_land(job.nodes_spec, [nodes[h] for h in hosts if h in nodes])):
                    self.ledger.note_held(job.id, ar.id)
                    self.torque.hold(job.id)
                elif job.id in self.ledger.held:
                    self.ledger.note_held(job.id, ar.id)

    def _asked(self, job: TorqueJob) -> bool:
        """Whether this run of ``job`` was already asked to leave."""
        departure = self.ledger.leaving.get(job.id)
        return departure is not None and departure["run"] == job.start_time

    def _send_away(self, job: TorqueJob, ar_id: int, hosts: list[str]) -> None:
        """Kill or requeue a foreign job, noted first, then watched until it
        has left, when the AR's jobs are started at once."""
        how = self.settings.conflict
        self.ledger.note_leaving(job.id, {"ar": ar_id, "run": job.start_time, "how": how,
                                          "asked": int(time.time()), "owner": job.owner,
                                          "hosts": hosts})
        try:
            if how == "kill":
                log.info("killing job %s of %s on nodes of AR %d", job.id, job.owner, ar_id)
                self.torque.delete_jobs([job.id])
            else:
                self._requeue(job, ar_id)
        except TorqueError:
            self.ledger.left([job.id])
            raise
        self._watch_departures()

    def _requeue(self, job: TorqueJob, ar_id: int) -> None:
        """PluS's way, in TORQUE's words: hold, then rerun (a held job goes
        back to the queue held; qhold alone does not stop it). A job
        submitted not rerunnable is made rerunnable first and given its
        setting back when it is released."""
        if not job.rerunnable:
            self.ledger.note_made_rerunnable(job.id)
            self.torque.set_rerunnable(job.id, True)
        self.ledger.note_held(job.id, ar_id)
        self.torque.hold(job.id)
        if not self.torque.rerun(job.id):
            raise TorqueError(f"qrerun {job.id} refused: the job is not rerunnable")
        log.info("requeued job %s of %s from nodes of AR %d", job.id, job.owner, ar_id)
        if self.scheduler is not None:
            self._release_jobs([job.id])

    def _note_departed(self, jobs: list[TorqueJob]) -> None:
        """Jobs asked to leave that no longer run the run asked have left."""
        running = {job.id: job.start_time for job in jobs if job.running}
        self._departed([job for job, departure in list(self.ledger.leaving.items())
                        if running.get(job, -1) != departure["run"]])

    def _departed(self, jobs: list[str]) -> None:
        """``jobs`` have left: the AR's jobs start where they were, now
        rather than at the next scheduling cycle."""
        if jobs:
            self.ledger.left(jobs)
            self._run_now()

    def _watch_departures(self) -> None:
        """Once the daemon runs: watch the jobs asked to leave, unless a
        watch is on."""
        if self._started and self._watcher is None and self.ledger.leaving:
            self._watcher = threading.Thread(target=self._await_departures,
                                             name="torque-departures", daemon=True)
            self._watcher.start()

    def _await_departures(self) -> None:
        """Poll which jobs still run (one qselect), quickly at first, until
        every job asked to leave has: each time some have, the AR's jobs
        are started at once rather than at the next scheduling cycle."""
        pause = 0.05
        while not self._closing.wait(pause):
            if not self.fence():
                break           # another daemon leads, and watches; ``start`` watches again
            asked = dict(self.ledger.leaving)
            try:
                on_nodes = set(self.torque.on_nodes())
            except TorqueError as exc:
                log.warning("watching jobs asked to leave reserved nodes: %s", exc)
                on_nodes = set(asked)
            with self.lock:
                self._departed([job for job in asked if job not in on_nodes
                                and self.ledger.leaving.get(job) == asked[job]])
                if not self.ledger.leaving:
                    self._watcher = None
                    return
            pause = min(pause * 2, 2.0)
        with self.lock:
            self._watcher = None
            if not self._closing.is_set() and self.fence():
                self._watch_departures()        # the lead came back as this watch stopped

    def delays(self, reservation: Reservation) -> list[str]:
        """Foreign jobs asked to leave the AR's nodes and still there (a
        long epilogue keeps a job running after it was told)."""
        now = int(time.time())
        return [f"job {job} of {departure['owner']} still on {','.join(departure['hosts'])}: "
                f"{'killed' if departure['how'] == 'kill' else 'requeued'} "
                f"{max(0, now - departure['asked'])} s ago, it leaves when its epilogue has run; "
                "the AR's jobs start there then"
                for job, departure in sorted(dict(self.ledger.leaving).items())
                if departure["ar"] == reservation.id]

    def _release_jobs(self, jobs: list[str]) -> None:
        for job in jobs:
            if job in self.ledger.made_rerunnable:
                self.torque.set_rerunnable(job, False)
            self.torque.release(job)
            self.ledger.end_hold(job)

    def _drain(self, ar: Reservation, nodes: dict[str, TorqueNode]) -> None:
        """``drain`` seconds before the start: the nodes go offline, so
        pbs_sched starts nothing new there that the window would cut."""
        note = f"reserved for {queue_name(ar.id)}"
        names = [name for name in ar.node_names if name in nodes and not nodes[name].offline]
        for name in names:
            self.ledger.note_offline(name, note)
        self.torque.set_offline(names, note)

    def _undrain(self, ar: Reservation) -> None:
        """At the start the drained nodes come back, noted as the AR's."""
        drained = f"reserved for {queue_name(ar.id)}"
        names = [name for name in ar.node_names if self.ledger.offline.get(name) == drained]
        if not names:
            return
        current = {node.name: node.note for node in self.torque.nodes()}
        note = f"{queue_name(ar.id)} active"
        for name in names:
            self.ledger.note_offline(name, note if current.get(name) == drained else None)
        self.torque.clear_offline([name for name in names if current.get(name) == drained], note)

    def _forget_notes(self, ar_id: int) -> None:
        """At the end: the nodes this AR drained or noted lose our note (and
        their offline state); a node whose note someone else has since
        changed is theirs."""
        ours = {f"reserved for {queue_name(ar_id)}", f"{queue_name(ar_id)} active"}
        noted = {name for name, note in self.ledger.offline.items() if note in ours}
        if not noted:
            return
        current = {node.name: node.note for node in self.torque.nodes()}
        self.torque.clear_offline([n for n in noted if current.get(n) == self.ledger.offline[n]])
        for name in noted:
            self.ledger.note_offline(name, None)

    # -- window closed, cancel, forget ---------------------------------------------------

    def remove(self, ar_id: int) -> None:
        """Stop the queue, delete its jobs, delete it (retrying while TORQUE
        still counts a job), then the property off the nodes, then the held
        foreign jobs released, and only then the window closed (the jobs
        the filter deferred to its end queued, pbs_sched run): the jobs
        requeued from its nodes were there first and get them back first."""
        queue = queue_name(ar_id)
        self._close_queue(queue)
        self._delete_queue(queue)
        self.ledger.set_active(ar_id, None)
        self._untag_all(ar_id)
        self._forget_notes(ar_id)
        self._release_jobs(self.ledger.unhold(ar_id))
        self._close_window(ar_id)

    def _close_queue(self, queue: str) -> None:
        current = self.torque.queues().get(queue)
        if current is None:
            return
        for key in ("enabled", "started"):
            if current.get(key) != "False":
                self.torque.set_queue(queue, key, "False")
        jobs = self.torque.select(queue)
        if jobs:
            log.info("deleting job(s) %s of %s", ", ".join(jobs), queue)
            self.torque.delete_jobs(jobs)

    def _delete_queue(self, queue: str) -> None:
        deadline = time.monotonic() + self.settings.queue_timeout
        pause = 0.05
        while True:
            try:
                self.torque.delete_queue(queue)
                return
            except QueueBusy:
                if time.monotonic() >= deadline:
                    raise TorqueError(f"queue {queue} still counts jobs after "
                                      f"{self.settings.queue_timeout} s; retrying at the next "
                                      "pass") from None
                time.sleep(pause)
                pause = min(pause * 2, 1.0)
                self.torque.delete_jobs(self.torque.select(queue))

    def _untag_all(self, ar_id: int) -> None:
        tagged = self.ledger.tagged(ar_id)
        if not tagged:
            return
        nodes = self._node_map()
        for name in sorted(tagged):
            self._untag(nodes.get(name), name, ar_id)

    def give_back(self, ar: Reservation) -> None:
        """plus_cancel: the AR's jobs go and its nodes are given back; the
        queue stays, closed."""
        self._close_window(ar.id)
        self._close_queue(queue_name(ar.id))
        self.ledger.set_active(ar.id, None)
        self._untag_all(ar.id)
        self._forget_notes(ar.id)
        self._release_jobs(self.ledger.unhold(ar.id))

    def modify(self, before: Reservation, after: Reservation) -> None:
        """The kit's (prepare() corrects the queue and the node properties,
        the reconcile step after it opens or closes the window and
        publishes it again); jobs deferred to the old end wait for the new one."""
        with self.lock:
            self._applied.forget(after.id)
            if self.windows_path and after.id in self._open and before.end != after.end:
                for job in self._deferred_to(before.end, self.torque.jobs()):
                    self.torque.defer(job.id, after.end)
            super().modify(before, after)

    # -- the open windows, for the submit filter -------------------------------------------

    def _publish(self, nodes: dict[str, TorqueNode]) -> None:
        """Write the open windows for plus_torque_filter, if they changed."""
        if self.windows_path is None:
            return
        shown = [{"queue": queue_name(ar_id), "end": end,
                  "nodes": [{"name": name, "np": nodes[name].np,
                             "properties": list(nodes[name].properties)}
                            for name in hosts if name in nodes]}
                 for ar_id, (end, hosts) in sorted(self._open.items())]
        if shown != self._published:
            windows.publish(self.windows_path, shown)
            self._published = shown

    def _close_window(self, ar_id: int) -> None:
        """The window is no longer published; jobs the filter deferred to
        its end are queued now if it ended early, and pbs_sched runs them
        at once either way."""
        window = self._open.pop(ar_id, None)
        if window is None or self.windows_path is None:
            return
        self._publish(self._node_map())
        deferred = self._deferred_to(window[0], self.torque.jobs())
        now = int(time.time())
        for job in deferred:
            if job.state == "W" and now < window[0]:
                self.torque.defer(job.id, now)
        if deferred:
            self._run_now()

    def _deferred_to(self, end: int, jobs: list[TorqueJob]) -> list[TorqueJob]:
        """Foreign jobs the filter deferred to ``end`` (waiting, or queued
        since that time came)."""
        return [job for job in jobs if job.execution_time == end and job.state in ("W", "Q")
                and not self.is_ar_queue(job.queue)]

    # -- every pass ------------------------------------------------------------------------

    def reconciled(self, reservations: list[Reservation]) -> None:
        """Drain nodes before starts, keep binding new AR jobs and keeping
        foreign jobs off open windows."""
        now = int(time.time())
        live = [ar for ar in reservations if self.ledger.owns(ar.id) and not self.released(ar.id)]
        jobs = self.torque.jobs() if live else []
        nodes = self._node_map() if live else {}
        if live:
            self._note_departed(jobs)
        active = self.ledger.active_ids()
        self._open = {ar.id: (ar.end, tuple(sorted(ar.node_names))) for ar in live
                      if ar.id in active}
        self._publish(nodes)
        for ar in live:
            bound = self._bind(ar, jobs)
            if ar.id in self.ledger.active_ids():
                self._keep_others_off(ar, jobs, nodes)
                if bound:
                    self._run_now()
            elif self.settings.drain and ar.state == State.WAITING and \
                    ar.start - self.settings.drain <= now < ar.start:
                self._drain(ar, nodes)
        if self.scheduler is not None:
            self.scheduler.replace_windows([_window(ar) for ar in self.windows_ahead(reservations)])

    # -- health ----------------------------------------------------------------------------

    def health(self, reservations: list[Reservation]) -> dict[int, str]:
        """A reserved node down or taken offline by someone else makes the
        AR W or E; a queue deleted or started by hand is noticed, so the
        next apply fixes it."""
        with self.lock:
            nodes = self._node_map()
            queues = self.torque.queues()
            problems = {}
            for ar in reservations:
                failures = []
                for name in sorted(ar.node_names):
                    node = nodes.get(name)
                    if node is None:
                        failures.append(f"node {name} unknown to TORQUE")
                    elif not node.alive:
                        failures.append(f"node {name} {','.join(sorted(node.states))}")
                    elif node.offline and self.ledger.offline.get(name) != node.note:
                        failures.append(f"node {name} offline" + (f" ({node.note})" if node.note else ""))
                if failures:
                    problems[ar.id] = "; ".join(failures)
                queue = queues.get(queue_name(ar.id))
                self._applied.notice(ar.id, None if queue is None
                                     else queue.get("started") == "True")
            return problems


def _window(ar: Reservation) -> Window:
    return Window(ar.id, tuple(ar.node_names), ar.start, ar.end)


def _users(ar: Reservation) -> list[str]:
    """The queue's ACL: the owner and the AR's users, each @group replaced
    by its members (TORQUE checks user and group lists separately, and a
    job would have to pass both)."""
    return sorted({ar.owner} | {e for e in with_members(ar.acl) if not e.startswith("@")})
