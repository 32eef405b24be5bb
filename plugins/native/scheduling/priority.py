"""Grid Engine's dispatch priority (sge_priority(5)):

    prio = weight_priority * npprior + weight_urgency * nurg + weight_ticket * ntckts

with each raw value normalized to 0..1 over the pending jobs (0.5 when they
are all equal). The urgency is the resource request contribution (urgency
of each requested complex x the assumed slot count x the amount for numbers,
the urgency alone for strings; ``slots`` counts for every job) plus the
waiting time times weight_waiting_time. There is no ticket policy, so
every job's ntckts is 0.5. Seed 001's license example comes out as the
seed prints it: 1.08000, 0.10500, 0.00500.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from overlay_native.jobs import Job
from overlay_native.resources.complexes import NUMERIC, ComplexTable
from overlay_native.scheduling.schedconf import SchedulerConfig


@dataclass(frozen=True)
class Priority:
    """One job's figures, as qstat -pri and -urg show them."""

    prio: float
    npprior: float
    nurg: float
    ntckts: float
    urgency: float
    rrcontr: float
    wtcontr: float


def _normalized(value: float, low: float, high: float) -> float:
    return 0.5 if high == low else (value - low) / (high - low)


def resource_contribution(job: Job, table: ComplexTable) -> float:
    """rrcontr: every hard request's urgency, numbers weighted by amount and
    (per slot) by the job's assumed slot count, its smallest."""
    slots = job.slots
    total = table.find("slots").urgency * slots
    for request in job.hard.values():
        cx = request.complex
        if cx.type in NUMERIC or cx.type == "BOOL":
            per_slot = slots if cx.consumable != "JOB" else 1
            total += cx.urgency * per_slot * float(request.value)
        else:
            total += cx.urgency
    return total


def priorities(jobs: Sequence[Job], table: ComplexTable, config: SchedulerConfig,
               now: int) -> dict[object, Priority]:
    """Each pending job's priority, normalized over ``jobs``."""
    raw = {}
    for job in jobs:
        rrcontr = resource_contribution(job, table)
        wtcontr = max(now - job.submit_time, 0) * config.weight_waiting_time
        raw[job.id] = (job.submission.priority, rrcontr + wtcontr, rrcontr, wtcontr)
    if not raw:
        return {}
    low_p, high_p = min(v[0] for v in raw.values()), max(v[0] for v in raw.values())
    low_u, high_u = min(v[1] for v in raw.values()), max(v[1] for v in raw.values())
    result = {}
    for job_id, (posix, urgency, rrcontr, wtcontr) in raw.items():
        npprior, nurg, ntckts = _normalized(posix, low_p, high_p), _normalized(urgency, low_u, high_u), 0.5
        prio = (config.weight_priority * npprior + config.weight_urgency * nurg
                + config.weight_ticket * ntckts)
        result[job_id] = Priority(prio, npprior, nurg, ntckts, urgency, rrcontr, wtcontr)
    return result
