"""The interface every backend implements (Grid Engine, TORQUE, native).

The store is the truth; a backend only makes the batch system match it.
The lifecycle methods must be idempotent: the reconcile loop calls them
again after a crash, and calling ``prepare`` on a prepared AR or
``teardown`` on one already gone must converge, not fail.

Each method states, with ``@called``, how the core calls it (as Slurm's
plugin interfaces assert their locks): the lock held (``ENFORCER``: the
enforcer's, so no other call of the core's drives the backend meanwhile,
while commands go on: every call that asks or changes the batch system;
``MANAGER``: the Manager's, which every use case holds, so no command runs
meanwhile: answers read from what the backend keeps, without asking the
batch system; ``NONE``: none, so the call may run beside a command, a pass
or itself), from where, whether it must converge when called again, what
an error does, and whether it may run a batch-system command (``asks``:
only the ENFORCER's calls and a few of the service's may; a use case reads
the ``Inventory`` the leader's pass published instead). Methods marked
``optional`` have a default here; the others are abstract. ``CONTRACT``
lists them all. Backends that keep a queue per AR start from
overlay.kit.queuekit.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, TypeVar

from overlay.language.model import (
    Allocation,
    InvalidRequest,
    Node,
    Request,
    Reservation,
    Unsupported,
)


@dataclass(frozen=True)
class Job:
    """A job the batch system is running, as far as reservations care."""

    id: str
    owner: str
    nodes: tuple[str, ...]
    reservation: int | None = None
    runtime_limit_end: int | None = None
    start: int | None = None


@dataclass(frozen=True)
class Inventory:
    """The batch system's nodes and running jobs as the leader's lifecycle
    pass last observed them (``Backend.nodes``, ``Backend.running_jobs``),
    published in the store for every daemon: what a use case reads instead
    of asking the batch system under the Manager's lock, the same at every
    daemon (a node's load within overlay.persistence.inventory's step).
    ``observed_at`` None: not observed yet."""

    jobs: tuple[Job, ...] = ()
    observed_at: int | None = None
    nodes: tuple[Node, ...] = ()

    def age(self, now: int) -> str:
        """How old it is, as an answer says it."""
        if self.observed_at is None:
            return "not observed yet"
        return f"observed {max(0, now - self.observed_at)} s ago"


@dataclass(frozen=True)
class JobBar:
    """A job as a calendar draws it: ``kind`` "running", or "reserved" for
    the start a scheduler has planned for a job ahead (-R y); ``end`` None
    is no known end."""

    id: str
    owner: str
    kind: str
    start: int
    end: int | None
    nodes: tuple[str, ...]


@dataclass(frozen=True)
class ShownJob:
    """A job as GET /jobs lists it: what the backend knows of it, None
    where it knows nothing (Grid Engine's and TORQUE's inventory holds
    running jobs only). ``state``: the batch system's letters (qw, hqw, r,
    dr, ...); ``queue``: the master queue instance of a running job."""

    id: str
    owner: str
    state: str
    nodes: tuple[str, ...] = ()
    ar: int | None = None
    name: str | None = None
    slots: int | None = None
    queue: str | None = None
    priority: float | None = None
    submit_time: int | None = None
    start_time: int | None = None
    runtime_limit_end: int | None = None


@dataclass(frozen=True)
class Holding:
    """Slots a job holds, or is planned to hold, on a node, for QUERY's
    estimate: ``slots`` None is the whole node, ``end`` None no known end."""

    node: str
    slots: int | None
    start: int
    end: int | None


class Held(enum.Enum):
    """The lock the core holds when it calls a backend method."""

    ENFORCER = "Enforcer.lock"
    MANAGER = "Manager.lock"
    NONE = "none"


ENFORCER, MANAGER, NONE = Held.ENFORCER, Held.MANAGER, Held.NONE
COMMAND = "a use case, on the thread serving a command"
PASS = "the lifecycle's pass, on its scheduler's thread"
ENFORCING = "the enforcer, on its thread after a command, or in the lifecycle's pass"
SERVICE = "the daemon's service, outside the use cases (an answer's views, a claim, the calendar)"
DAEMON = "the daemon, at its start or stop"
RETRIED = "logged; the enforcer calls it again at the lifecycle's next pass"
FAILS_COMMAND = "fails the command, whose client gets the error"
PASS_SKIPPED = ("in a pass: the pass is logged and skipped, the next one retries; at the "
                "Manager's creation on SQLite: the daemon does not start (on a shared store "
                "a daemon starts from the nodes the leader published, asking nothing)")


@dataclass(frozen=True)
class Contract:
    """How the core calls one Backend method."""

    name: str
    held: Held
    by: tuple[str, ...]
    idempotent: bool
    raises: str
    optional: bool
    asks: bool


_Method = TypeVar("_Method", bound=Callable)
CONTRACT: dict[str, Contract] = {}
"""Every Backend method's contract, by name."""


def called(held: Held, *by: str, idempotent: bool, raises: str,
           optional: bool = False, asks: bool | None = None) -> Callable[[_Method], _Method]:
    """State how the core calls the method below (kept in ``CONTRACT``);
    ``asks``, whether it may run a batch-system command, is by default
    whether it is called under the ENFORCER's lock."""
    def mark(method: _Method) -> _Method:
        CONTRACT[method.__name__] = Contract(method.__name__, held, by, idempotent, raises,
                                             optional, held is ENFORCER if asks is None else asks)
        return method
    return mark


class Backend(ABC):
    """Enforces AR windows on one batch system."""

    name = "abstract"
    #: The batch system's own command that deletes a job, as refusals name it.
    delete_command = "qdel"
    #: Whether qrsub's slot requests are the batch system's cores, which the
    #: core fills up over the nodes' free ones (overlay.placement.cores), for
    #: a batch system without parallel environments (Slurm); else the
    #: backend's ``place_slots`` places them.
    slots_as_cores = False
    #: Whether every reconcile pass must see every AR (``health``, each AR's
    #: state applied again, ``reconcile``): a backend that watches a batch
    #: system for changes made behind its back (a queue deleted by hand).
    #: False: ARs only change through these methods and hosts' health only
    #: through ``nodes()``, so after the first pass a pass looks only at the
    #: ARs that changed, fell due, or hold hosts whose liveness changed.
    watches_drift = True
    #: Whether the backend writes the events of jobs starting and ending in
    #: ARs (``job.started``, ``job.ended``) itself, each in the store write
    #: of the job's start or end (the native scheduler). False: the core
    #: writes them as jobs of ARs come into and leave ``running_jobs`` (each
    #: ``Job.reservation`` set for a job of an AR's queue).
    writes_job_events = False
    #: Whether this daemon leads now: the daemon sets it to its store
    #: lease's check. Work a backend runs on its own (the native scheduler)
    #: asks it before acting, so that a daemon that lost the lead touches
    #: nothing.
    fence: Callable[[], bool] = staticmethod(lambda: True)

    @called(ENFORCER, PASS, DAEMON, idempotent=True, raises=PASS_SKIPPED)
    @abstractmethod
    def nodes(self) -> list[Node]:
        """Every node that could be reserved, with current attributes."""

    @called(ENFORCER, PASS, DAEMON, idempotent=True, raises=PASS_SKIPPED, optional=True)
    def running_jobs(self) -> list[Job]:
        """Jobs running now: the core counts them per node (Node.running_jobs,
        idle_since) for the reservability policies and NodeSortKey."""
        return []

    @called(ENFORCER, ENFORCING, idempotent=True, raises=RETRIED)
    @abstractmethod
    def prepare(self, reservation: Reservation) -> None:
        """At grant: create what the AR needs, unusable until the start."""

    @called(ENFORCER, ENFORCING, idempotent=True, raises=RETRIED)
    @abstractmethod
    def activate(self, reservation: Reservation) -> None:
        """At the window's start: make the AR usable, keep others off its nodes."""

    @called(ENFORCER, ENFORCING, idempotent=True,
            raises="logged; the enforcer calls it again at the next pass, and after a "
                   "restart the first reconcile undoes what is left")
    @abstractmethod
    def teardown(self, reservation: Reservation) -> None:
        """At the end, or on destroy: remove the AR's jobs and objects."""

    @called(ENFORCER, ENFORCING, idempotent=True, raises=RETRIED)
    @abstractmethod
    def release(self, reservation: Reservation) -> None:
        """On cancel: give the nodes back, keep the record's objects (PluS 3.1.5)."""

    @called(ENFORCER, ENFORCING, idempotent=True, optional=True, raises=RETRIED)
    def modify(self, before: Reservation, after: Reservation) -> None:
        """Apply a changed window, node set or access list to the live
        objects (``before``: the AR as last applied); prepare or activate
        follows at once."""
        self.release(before)
        self.prepare(after)

    @called(MANAGER, COMMAND, idempotent=True, raises=FAILS_COMMAND, optional=True)
    def blocked_nodes(self, request: Request, inventory: Inventory) -> dict[str, str]:
        """Nodes an AR for ``request`` must not get, with the reason: for a
        backend that never preempts, hosts whose running jobs would still
        hold what the AR needs at its start (Grid Engine 6.2's rule), as
        ``inventory`` lists them. A job started since the inventory was
        observed is not seen here: the site's conflict policy still acts
        at the AR's start, as for a job started after the grant."""
        return {}

    @called(MANAGER, COMMAND, idempotent=True, raises=FAILS_COMMAND, optional=True)
    def canonical(self, request: Request) -> Request:
        """A qrsub request as the batch system records it, before anything
        compares or stores it: 8.1.9's qmaster keeps -l under the
        complexes' full names (h=x is hostname=x in qrstat -ar)."""
        return request

    @called(MANAGER, COMMAND, DAEMON, idempotent=True, optional=True,
            raises="logged; the change stays committed and in the cache")
    def ars_changed(self, written: Iterable[Reservation], removed: Iterable[int]) -> None:
        """The ARs as this daemon's cache of the store takes them in, at
        every daemon, leader or standby: ``written`` stored or changed (here
        or, through the change feed, at another daemon), ``removed`` the
        ids gone; at the Manager's creation, every AR. For a backend whose
        answers to the use cases (``place_slots``) read the other ARs: it
        keeps what it needs in memory, the same at every daemon, and asks
        the batch system nothing. The enforcer's calls still drive the
        batch system."""

    @called(MANAGER, COMMAND, idempotent=True, optional=True,
            raises="InvalidRequest or NoCapacity for the client; any other error fails the "
                   "command")
    def place_slots(self, request: Request, owner: tuple[str, tuple[str, ...]],
                    users: list[tuple[str, tuple[str, ...]]],
                    ignore: int | None = None) -> tuple[list[Allocation], str]:
        """qrsub's request (``request.by_slots``) of ``owner`` (name,
        groups): the queue instances' slots its scheduler would give a job
        of that shape over the whole window, where every one of ``users``
        may run jobs (the access list as 8.1.9 checks it: qrsub -u's
        entries, or the owner if none; an ``@name`` entry with no groups is
        one of the batch system's access lists), and the parallel
        environment chosen ("" for none); InvalidRequest naming an unknown
        access list; NoCapacity with the scheduler's reasons when nothing
        fits. ``ignore``: an AR whose holdings are left out (the one a
        modify moves)."""
        raise InvalidRequest(f"-pe, -alloc, -q queue instances and -l resource requests "
                             f"(qrsub's ARs) need the native backend's scheduler; this site "
                             f"runs the {self.name} backend: reserve nodes with plus_reserve")

    @called(ENFORCER, PASS, idempotent=True, optional=True,
            raises="logged; called again at the next pass that looks at every AR")
    def reconcile(self, reservations: list[Reservation]) -> None:
        """With every AR the store holds, at the first pass (and after each
        pass if ``watches_drift``): undo what the backend did for ARs that
        are gone (a crash between the store and the batch system leaves
        such traces)."""

    @called(MANAGER, COMMAND, idempotent=True, raises=FAILS_COMMAND, optional=True)
    def job_holdings(self, now: int, inventory: Inventory) -> tuple[list[Holding], str]:
        """What jobs outside ARs hold or are planned to hold, for QUERY (seed
        003: when would a job start if submitted now), and how that was
        found (its OtherInfo). Here: each running job of ``inventory``
        holds its nodes whole until its run time limit (h_rt, walltime)
        ends, or for ever without one; queued jobs are not known."""
        running = [job for job in inventory.jobs if job.reservation is None]
        holdings = [Holding(node, None, now, job.runtime_limit_end)
                    for job in running for node in job.nodes]
        return holdings, (f"estimated from the run time limits of {len(running)} running "
                          f"job(s) ({inventory.age(now)}) and the ARs; queued jobs are not "
                          f"counted")

    @called(NONE, COMMAND, idempotent=True, raises=FAILS_COMMAND, optional=True)
    def job_start(self, request: Request, nodes: list[str], user: tuple[str, tuple[str, ...]]
                  ) -> tuple[int | None, str] | None:
        """QUERY answered by the batch system's own scheduler: when it
        would start a job of ``request``'s shape (its node count, slots per
        node or whole nodes, duration) on ``nodes`` (those matching the
        request) if ``user`` (name, groups) submitted it now, and how that
        was found (its OtherInfo; with no start, why). None: this backend
        has no such answer here, and the core estimates from
        ``job_holdings`` and the ARs."""
        return None

    @called(NONE, SERVICE, idempotent=True, raises=FAILS_COMMAND, optional=True)
    def job_bars(self, now: int, inventory: Inventory) -> list[JobBar]:
        """The jobs a calendar shows beside the ARs. Here: the running jobs
        of ``inventory``, from their start (now if not known) to their run
        time limit."""
        return [JobBar(job.id, job.owner, "running", now if job.start is None else job.start,
                       job.runtime_limit_end, job.nodes) for job in inventory.jobs]

    @called(NONE, SERVICE, idempotent=True, raises=FAILS_COMMAND, optional=True)
    def jobs(self, now: int, inventory: Inventory) -> list[ShownJob]:
        """The jobs GET /jobs lists, the same at every daemon, in the batch
        system's order. Here: the running jobs of ``inventory`` (state r);
        queued ones are not known."""
        return [ShownJob(job.id, job.owner, "r", job.nodes, job.reservation,
                         start_time=job.start, runtime_limit_end=job.runtime_limit_end)
                for job in inventory.jobs]

    @called(NONE, SERVICE, idempotent=False, optional=True, asks=True,
            raises="ReservationError: the batch system's refusal, for the client")
    def delete_job(self, job_id: str, user: str, groups: tuple[str, ...],
                   manager: bool) -> list[str]:
        """Delete job ``job_id`` (that id only) as ``user``
        would with the batch system's qdel, for DELETE /jobs/{id}; the core
        has checked that the user owns it or is a manager. The batch
        system's answer, a line each. Here: refused (Unsupported) naming
        the batch system's own command."""
        raise Unsupported(f"the {self.name} backend does not delete jobs for the overlay's "
                          f"clients: it sees jobs only as the leader's last look listed them, "
                          f"and a job is deleted by its owner with the batch system's own "
                          f"{self.delete_command}")

    @called(NONE, SERVICE, idempotent=True, raises=FAILS_COMMAND, optional=True)
    def submit_hint(self, reservation: Reservation) -> str | None:
        """How users submit jobs into the AR, for plus_status -r."""
        return None

    @called(NONE, SERVICE, idempotent=False, optional=True, asks=True,
            raises="ReservationError or InvalidRequest: the batch system's refusal, for the "
                   "claimant")
    def submit_claimed(self, reservation: Reservation, job: Mapping[str, Any]) -> dict:
        """Submit ``job`` (plus_qsub's fields) into the AR as its owner, for
        a ResKey claim (seed 003): ``{"id": job id, "message": the batch
        system's answer}``."""
        raise InvalidRequest(f"the {self.name} backend takes no jobs through a ResKey claim")

    @called(NONE, SERVICE, idempotent=True, raises=FAILS_COMMAND, optional=True)
    def lingering(self) -> set[int]:
        """ARs whose jobs the batch system still holds, by id: a deleted AR
        is listed in state d until they are gone, as 8.1.9 keeps it (its
        jobs show dr meanwhile)."""
        return set()

    @called(NONE, SERVICE, idempotent=True, raises=FAILS_COMMAND, optional=True)
    def delays(self, reservation: Reservation) -> list[str]:
        """What keeps the AR's open window from being fully usable yet
        (a foreign job still leaving its nodes), for plus_status -r; read
        from what the backend keeps, without asking the batch system."""
        return []

    @called(ENFORCER, PASS, idempotent=True, optional=True,
            raises="every AR asked goes into error with the message")
    def health(self, reservations: list[Reservation]) -> dict[int, str]:
        """Why ARs cannot be honoured, by AR id; the ARs missing are healthy.
        One call per reconcile pass for all the ARs it looks at, so a
        backend can ask its batch system once. A node AR's hosts that are
        down; a qrsub AR's queue instances that are disabled, suspended or
        on a host down, one message each in 8.1.9's qmaster's words."""
        return problems_on(reservations, {node.name: node for node in self.nodes()})

    @called(NONE, DAEMON, idempotent=True, raises="must not: the daemon stops", optional=True,
            asks=True)
    def start(self) -> None:
        """At daemon start, after the first reconcile pass, and whenever this
        daemon takes the lead: begin (or resume) background work (the
        native backend's scheduler)."""

    @called(NONE, DAEMON, idempotent=True, raises="must not: the daemon stops", optional=True)
    def stand_by(self) -> None:
        """At daemon start instead of ``start``, or after ``start`` when this
        daemon lost the lead: another daemon on the store leads and drives
        the batch system; refuse what only the leader may do and start
        nothing (``start`` follows if this one takes the lead again)."""

    @called(NONE, DAEMON, idempotent=False, optional=True,
            raises="must not: the daemon's stop ends there, its store left open")
    def close(self) -> None:
        """Stop background work and release connections at daemon shutdown."""


def problems_on(reservations: list[Reservation], nodes: Mapping[str, Node]) -> dict[int, str]:
    """Why ARs cannot be honoured on ``nodes`` as last seen, by AR id (what
    ``Backend.health`` finds by default, and what a grant finds without
    asking the batch system)."""
    problems = {}
    for reservation in reservations:
        found = [f"reserved queue {a.queue}@{a.node} is {state}"
                 for a in reservation.allocations if a.queue and a.node in nodes
                 for state in nodes[a.node].instance_states(a.queue)]
        failed = [a.node for a in reservation.allocations
                  if not a.queue and a.node in nodes and not nodes[a.node].alive]
        if failed:
            found.insert(0, f"reserved host(s) down: {', '.join(failed)}")
        if found:
            problems[reservation.id] = "; ".join(found)
    return problems
