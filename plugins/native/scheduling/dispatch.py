"""The scheduling pass (Grid Engine's dispatch_jobs, seed 001 section 4):
pending jobs in priority order; each starts now if its resources are free
for its planned duration, else, while ``max_reservation`` allows, gets a
reservation at its earliest start, which lower-priority jobs must then
respect: they start only where they end before it or use what it leaves
free (backfilling).

The pass is written once, against a ``Resources`` model, and serves both
the daemon's cluster and the trace simulator: FCFS, EASY and conservative
backfilling are policies of it (no reservation and strict order; one
reservation, for the queue head; a reservation for every job).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, Hashable, Protocol, Sequence, TypeVar

from overlay.api.plugin import Planner

Assignment = TypeVar("Assignment")


@dataclass(frozen=True)
class Policy:
    """How a pass treats jobs that cannot start now."""

    max_reservation: int            # reservations per pass (seed 001); 0: none
    strict: bool = False            # stop at the first job that cannot start (FCFS)
    name: str = "custom"


FCFS = Policy(0, strict=True, name="fcfs")
EASY = Policy(1, name="easy")
CONSERVATIVE = Policy(2 ** 31, name="conservative")
POLICIES = {policy.name: policy for policy in (FCFS, EASY, CONSERVATIVE)}


class Job(Protocol):
    """What a pass needs of a pending job."""

    id: Hashable
    slots: int
    duration: int        # planned: h_rt, s_rt or default_duration, plus DURATION_OFFSET
    reserve: bool        # -R y


class Resources(Protocol[Assignment]):
    """A time x resource model the pass books on."""

    def start_now(self, job: Job, now: int) -> Assignment | None:
        """Where ``job`` could run from ``now`` for its duration, if anywhere."""

    def earliest(self, job: Job, now: int) -> tuple[int, Assignment] | None:
        """Its earliest start and where, if it could ever run."""

    def book(self, job: Job, assignment: Assignment, start: int) -> None: ...

    def unbook(self, job: Job, assignment: Assignment, start: int) -> None: ...

    def exhausted(self, now: int) -> bool:
        """Nothing more can start now (a pass may stop early)."""


@dataclass
class Decisions(Generic[Assignment]):
    started: list[tuple[Job, Assignment]] = field(default_factory=list)
    reserved: list[tuple[Job, int, Assignment]] = field(default_factory=list)


def dispatch(jobs: Sequence[Job], resources: Resources, now: int, policy: Policy) -> Decisions:
    """One pass over ``jobs`` (already in priority order). Started jobs stay
    booked (the caller runs them); reservations are undone at the end, as
    Grid Engine plans them afresh each pass."""
    decisions: Decisions = Decisions()
    reservations = 0
    for job in jobs:
        if resources.exhausted(now) and reservations >= policy.max_reservation:
            break
        where = resources.start_now(job, now)
        if where is not None:
            resources.book(job, where, now)
            decisions.started.append((job, where))
            continue
        if policy.strict:
            break
        if job.reserve and reservations < policy.max_reservation:
            planned = resources.earliest(job, now)
            if planned is not None:
                start, where = planned
                resources.book(job, where, start)
                decisions.reserved.append((job, start, where))
                reservations += 1
    for job, start, where in decisions.reserved:
        resources.unbook(job, where, start)
    return decisions


class SlotPool:
    """Identical hosts seen as one pool of slots: exact for a homogeneous
    cluster without further resources, such as a replayed trace's machine,
    and as fast as a pass can be (one utilization diagram)."""

    def __init__(self, slots: int) -> None:
        self.profile = Planner(slots)
        self._free_at: tuple[int, float] | None = None

    def free(self, now: int) -> float:
        if self._free_at is None or self._free_at[0] != now:
            self._free_at = (now, self.profile.free(now))
        return self._free_at[1]

    def start_now(self, job: Job, now: int) -> int | None:
        if job.slots > self.free(now):
            return None
        return job.slots if self.profile.fits(job.slots, now, now + job.duration) else None

    def earliest(self, job: Job, now: int) -> tuple[int, int] | None:
        start = self.profile.earliest(job.slots, job.duration, now)
        return None if start is None else (start, job.slots)

    def book(self, job: Job, assignment: int, start: int) -> None:
        self.profile.add(start, start + job.duration, assignment)
        self._free_at = None

    def unbook(self, job: Job, assignment: int, start: int) -> None:
        self.profile.add(start, start + job.duration, -assignment)
        self._free_at = None

    def exhausted(self, now: int) -> bool:
        return self.free(now) <= 0
