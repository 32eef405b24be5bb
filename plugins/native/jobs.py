"""Jobs of the native batch system: what plus_qsub asked for (a Submission),
the job the daemon keeps (a Job), its states and where it runs (a Placement).

A Submission is plain data, as the thin client sends it and the store
keeps it; the daemon turns it into a Job by parsing its resource requests
against the current complex table (``overlay_native.submit``).
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any, Mapping

from overlay.api.plugin import DEFAULT_ACCOUNT
from overlay_native.resources.complexes import Request

MAX_JOB_ID = 9_999_999
PREEMPT_MODES = ("requeue", "kill")
"""plus_qsub -preemptible: what becomes of a job running on an AR's idle
slots when the AR's own jobs want them back."""


class JobState(str, Enum):
    """qstat's state letters; deletion under way shows as a leading d (dr, dt)."""

    QUEUED = "qw"
    HELD = "hqw"            # -h or -hold_jid: on hold, or waiting for other jobs
    TRANSFERRING = "t"      # being started on its host
    RUNNING = "r"
    ERROR = "Eqw"           # could not be started; stays until plus_qdel


PENDING_STATES = frozenset({JobState.QUEUED, JobState.HELD, JobState.ERROR})


@dataclass(frozen=True)
class Submission:
    """qsub's options for one job, as plus_qsub sends them."""

    command: tuple[str, ...]                  # script arguments, or the command with -b y
    script: str | None = None                 # the script's text (None with -b y)
    script_path: str = ""                     # where it was read, for qstat -j
    name: str = ""
    binary: bool = False                      # -b y
    cwd: str | None = None                    # -cwd / -wd; None: the owner's home
    env: Mapping[str, str] = field(default_factory=dict)    # -v, -V
    shell: str | None = None                  # -S
    stdout: str | None = None                 # -o
    stderr: str | None = None                 # -e
    merge: bool = False                       # -j y
    hard: str = ""                            # -l (hard), name=value,... as written
    soft: str = ""                            # -soft -l
    pe: str | None = None                     # -pe name (wildcards allowed)
    pe_range: tuple[tuple[int, int], ...] = ()
    queues: tuple[str, ...] = ()              # -q
    master_queues: tuple[str, ...] = ()       # -masterq
    reserve: bool = False                     # -R y
    ar: int | None = None                     # -ar
    ar_submitted: int = 0                     # that AR's submission time, for accounting
    priority: int = 0                         # -p
    now: bool = False                         # -now y: interactive queues only
    ckpt: str | None = None                   # -ckpt: queues with this checkpointing environment
    start_after: int | None = None            # -a
    hold_jids: tuple[str, ...] = ()           # -hold_jid
    hold: bool = False                        # -h (plus_qhold, plus_qrls): a user hold
    verify: str = "n"                         # -w e|w|n|v
    account: str = DEFAULT_ACCOUNT            # -A
    submit_host: str = ""
    preemptible: str | None = None            # -preemptible requeue|kill: may run on idle AR slots

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @functools.cached_property
    def encoded(self) -> str:
        """As JSON, for the store (once per submission, not per save)."""
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Submission:
        data = dict(data)
        for key in ("command", "queues", "master_queues", "hold_jids"):
            data[key] = tuple(data.get(key) or ())
        data["pe_range"] = tuple(tuple(pair) for pair in data.get("pe_range") or ())
        return cls(**data)


@dataclass(frozen=True)
class Placement:
    """Where a job runs: its PE (or None) and (queue, host, slots), master
    first; ``h_rt`` is the run time limit enforced (an AR job's may be
    shorter than it asked), ``duration`` the seconds it is planned to hold
    its resources (with DURATION_OFFSET). A preemptible job running on an
    AR's idle slots has ``lent`` its AR's id, and ``reclaimed`` once the
    AR's own jobs took them back and this run is being ended."""

    tasks: tuple[tuple[str, str, int], ...]
    pe: str | None = None
    h_rt: float | None = None
    duration: float = math.inf
    lent: int | None = None
    reclaimed: bool = False

    @property
    def slots(self) -> int:
        return sum(n for _, _, n in self.tasks)

    @property
    def master(self) -> tuple[str, str]:
        return self.tasks[0][0], self.tasks[0][1]

    @property
    def hosts(self) -> list[str]:
        return list(dict.fromkeys(host for _, host, _ in self.tasks))

    @property
    def per_host(self) -> dict[str, int]:
        """Slots by host, master's host first."""
        slots: dict[str, int] = {}
        for _, host, count in self.tasks:
            slots[host] = slots.get(host, 0) + count
        return slots

    def to_dict(self) -> dict[str, Any]:
        data = {"tasks": [list(t) for t in self.tasks], "pe": self.pe, "h_rt": self.h_rt,
                "duration": None if math.isinf(self.duration) else self.duration}
        if self.lent is not None:
            data.update(lent=self.lent, reclaimed=self.reclaimed)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Placement:
        duration = data.get("duration")
        return cls(tuple((q, h, int(n)) for q, h, n in data["tasks"]), data.get("pe"),
                   data.get("h_rt"), math.inf if duration is None else duration,
                   data.get("lent"), bool(data.get("reclaimed")))


@dataclass
class Job:
    """A job the daemon knows: pending, starting or running."""

    id: int
    owner: str
    group: str
    groups: tuple[str, ...]                   # every group of the owner, for access lists
    submit_time: int
    submission: Submission
    hard: Mapping[str, Request]
    soft: Mapping[str, Request]
    state: JobState = JobState.QUEUED
    placement: Placement | None = None
    start_time: int | None = None
    error: str = ""                           # why it is in Eqw
    deleting: bool = False                    # plus_qdel asked; killing under way
    priority: float = 0.0                     # Grid Engine's, from the last pass
    urgency: float | None = None              # from the last pass's priorities (qstat -j)
    reasons: tuple[str, ...] = ()             # why it did not start in the last pass
    users: tuple[tuple[str, tuple[str, ...]], ...] = ()   # set: an AR being placed, its access list
    alloc: Any = None                         # qrsub -alloc: the ParallelEnvironment it stands for

    @property
    def name(self) -> str:
        return self.submission.name

    @functools.cached_property
    def hard_key(self) -> tuple:
        """The hard requests by value (1G equals 1024M), for caches."""
        return tuple(sorted((name, r.value) for name, r in self.hard.items()))

    @property
    def ar(self) -> int | None:
        return self.submission.ar

    @property
    def access(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """(user, groups) of everyone who must be allowed in a queue or PE
        it takes: its owner, or for an AR being placed its whole access list."""
        return self.users or ((self.owner, self.groups),)

    @property
    def reserve(self) -> bool:
        """-R y; never for immediate jobs (-now y)."""
        return self.submission.reserve and not self.submission.now

    @property
    def is_parallel(self) -> bool:
        return self.submission.pe is not None

    @property
    def slots(self) -> int:
        """The fewest slots the job can run with (1 for a sequential job)."""
        return self.submission.pe_range[0][0] if self.is_parallel else 1

    # what PluS's JobSortKey orders by (overlay_native.ordering.Orderable)

    @property
    def queue(self) -> str:
        """The cluster queue the job asked for first (-q), or ""."""
        return self.submission.queues[0].partition("@")[0] if self.submission.queues else ""

    @property
    def nodes(self) -> int:
        """A Grid Engine job asks for slots, not nodes: always 1."""
        return 1

    @property
    def time(self) -> int:
        """The run time it asked for (h_rt), 0 if none."""
        return int(self.limit("h_rt") or 0)

    @property
    def host(self) -> str:
        return self.submission.submit_host

    def limit(self, name: str) -> float | None:
        """A requested run time limit (h_rt, s_rt) in seconds, or None."""
        request = self.hard.get(name)
        return None if request is None else float(request.value)

    def planned_runtime(self, default_duration: float) -> float:
        """Grid Engine's assumed run time: the larger of h_rt and s_rt, else
        default_duration (seed 001, max_reservation)."""
        limits = [v for v in (self.limit("h_rt"), self.limit("s_rt")) if v is not None]
        return max(limits) if limits else default_duration

    @property
    def reclaimed(self) -> bool:
        """Its run on an AR's idle slots is being ended: the AR wants them."""
        return self.placement is not None and self.placement.reclaimed

    @property
    def state_letters(self) -> str:
        """qstat's letters: d while being deleted (or preempted to be
        killed), R while being preempted to run again (Grid Engine's
        rescheduled)."""
        if self.reclaimed and not self.deleting:
            return ("R" if self.submission.preemptible == "requeue" else "d") + self.state.value
        return ("d" if self.deleting else "") + self.state.value
