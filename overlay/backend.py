"""The interface every backend implements (Grid Engine, TORQUE, native).

The store is the truth; a backend only makes the batch system match it.
Every method must be idempotent: the reconcile loop calls them again after
a crash, and calling ``prepare`` on a prepared AR or ``teardown`` on one
already gone must converge, not fail.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Mapping

from overlay.model import Allocation, InvalidRequest, Node, Request, Reservation


@dataclass(frozen=True)
class Job:
    """A job the batch system is running, as far as reservations care."""

    id: str
    owner: str
    nodes: tuple[str, ...]
    reservation: int | None = None
    runtime_limit_end: int | None = None


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
class Holding:
    """Slots a job holds, or is planned to hold, on a node, for QUERY's
    estimate: ``slots`` None is the whole node, ``end`` None no known end."""

    node: str
    slots: int | None
    start: int
    end: int | None


class Backend(ABC):
    """Enforces AR windows on one batch system."""

    name = "abstract"
    #: Whether every reconcile pass must see every AR (``health``, each AR's
    #: state applied again, ``reconcile``): a backend that watches a batch
    #: system for changes made behind its back (a queue deleted by hand).
    #: False: ARs only change through these methods and hosts' health only
    #: through ``nodes()``, so after the first pass a pass looks only at the
    #: ARs that changed, fell due, or hold hosts whose liveness changed.
    watches_drift = True

    @abstractmethod
    def nodes(self) -> list[Node]:
        """Every node that could be reserved, with current attributes."""

    def running_jobs(self) -> list[Job]:
        """Jobs running now: the core counts them per node (Node.running_jobs,
        idle_since) for the reservability policies and NodeSortKey."""
        return []

    @abstractmethod
    def prepare(self, reservation: Reservation) -> None:
        """At grant: create what the AR needs, unusable until the start."""

    @abstractmethod
    def activate(self, reservation: Reservation) -> None:
        """At the window's start: make the AR usable, keep others off its nodes."""

    @abstractmethod
    def teardown(self, reservation: Reservation) -> None:
        """At the end, or on destroy: remove the AR's jobs and objects."""

    @abstractmethod
    def release(self, reservation: Reservation) -> None:
        """On cancel: give the nodes back, keep the record's objects (PluS 3.1.5)."""

    def modify(self, before: Reservation, after: Reservation) -> None:
        """Apply a changed window, node set or access list to the live
        objects; the reconcile step that follows activates a running AR."""
        self.release(before)
        self.prepare(after)

    def blocked_nodes(self, request: Request) -> dict[str, str]:
        """Nodes an AR for ``request`` must not get, with the reason: for a
        backend that never preempts, hosts whose running jobs would still
        hold what the AR needs at its start (Grid Engine 6.2's rule)."""
        return {}

    def canonical(self, request: Request) -> Request:
        """A qrsub request as the batch system records it, before anything
        compares or stores it: 8.1.9's qmaster keeps -l under the
        complexes' full names (h=x is hostname=x in qrstat -ar)."""
        return request

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

    def reconcile(self, reservations: list[Reservation]) -> None:
        """With every AR the store holds, at the first pass (and after each
        pass if ``watches_drift``): undo what the backend did for ARs that
        are gone (a crash between the store and the batch system leaves
        such traces)."""

    def job_holdings(self, now: int) -> tuple[list[Holding], str]:
        """What jobs outside ARs hold or are planned to hold, for QUERY (seed
        003: when would a job start if submitted now), and how that was
        found (its OtherInfo). Here: each running job holds its nodes whole
        until its run time limit (h_rt, walltime) ends, or for ever without
        one; queued jobs are not known."""
        running = [job for job in self.running_jobs() if job.reservation is None]
        holdings = [Holding(node, None, now, job.runtime_limit_end)
                    for job in running for node in job.nodes]
        return holdings, (f"estimated from the run time limits of {len(running)} running "
                          f"job(s) and the ARs; queued jobs are not counted")

    def job_bars(self, now: int) -> list[JobBar]:
        """The jobs a calendar shows beside the ARs. Here: the running jobs,
        from now (their start is not known) to their run time limit."""
        return [JobBar(job.id, job.owner, "running", now, job.runtime_limit_end, job.nodes)
                for job in self.running_jobs()]

    def submit_hint(self, reservation: Reservation) -> str | None:
        """How users submit jobs into the AR, for plus_status -r."""
        return None

    def submit_claimed(self, reservation: Reservation, job: Mapping[str, Any]) -> dict:
        """Submit ``job`` (plus_qsub's fields) into the AR as its owner, for
        a ResKey claim (seed 003): ``{"id": job id, "message": the batch
        system's answer}``."""
        raise InvalidRequest(f"the {self.name} backend takes no jobs through a ResKey claim")

    def lingering(self) -> set[int]:
        """ARs whose jobs the batch system still holds, by id: a deleted AR
        is listed in state d until they are gone, as 8.1.9 keeps it (its
        jobs show dr meanwhile). Called outside the use cases' lock."""
        return set()

    def delays(self, reservation: Reservation) -> list[str]:
        """What keeps the AR's open window from being fully usable yet
        (a foreign job still leaving its nodes), for plus_status -r; read
        from what the backend keeps, without asking the batch system."""
        return []

    def health(self, reservations: list[Reservation]) -> dict[int, str]:
        """Why ARs cannot be honoured, by AR id; the ARs missing are healthy.
        One call per reconcile pass for all the ARs it looks at, so a
        backend can ask its batch system once. A node AR's hosts that are
        down; a qrsub AR's queue instances that are disabled, suspended or
        on a host down, one message each in 8.1.9's qmaster's words."""
        nodes = {node.name: node for node in self.nodes()}
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

    def start(self) -> None:
        """At daemon start, after the first reconcile pass: begin background
        work (the native backend's scheduler)."""

    def close(self) -> None:
        """Stop background work and release connections at daemon shutdown."""
