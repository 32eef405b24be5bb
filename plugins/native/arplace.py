"""qrsub's ARs on the native cluster: where the scheduler would hold their
slots, and what they hold of each container over their window.

An AR request (overlay.language.model.Request with ``by_slots``) is turned into the
job it stands for: its -l requests, -pe or -alloc range, -q, -masterq,
-ckpt and -now, and its whole access list, since only queue instances and
PEs every user of the list may use can be reserved (seed 000, 5.2.2.1.3).
The scheduler's own model (overlay_native.resources.timeline) places that
job over the AR's window, among the running jobs (those without h_rt hold
their slots for ever) and what the other ARs hold, taking disabled and
suspended instances too. What the placement debits (slots of queue
instances, consumables at the global, host and queue levels) is what the
AR holds; its jobs get exactly that.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from overlay.api.plugin import MAX_SLOTS, Allocation, InvalidRequest, NoCapacity, Request, shown
from overlay_native.jobs import Job, Submission
from overlay_native.resources.cluster import ClusterConfig, Containers, ParallelEnvironment
from overlay_native.resources.complexes import ComplexError, parse_requests
from overlay_native.resources.matching import assignment_debits
from overlay_native.resources.timeline import ClusterResources
from overlay_native.submit import SubmitError, make_job

Users = Sequence[tuple[str, tuple[str, ...]]]
MAX_REASONS = 5
"""Reasons quoted in a refusal, what decided first (qrsub -w v prints all)."""


def ar_job(config: ClusterConfig, request: Request, owner: str, groups: tuple[str, ...],
           users: Users, now: int) -> Job:
    """The job an AR request stands for, or InvalidRequest naming what the
    cluster does not know, in qrsub's words (qsub's checks of -pe, -q, -l
    and -masterq, as Grid Engine's qrsub runs them)."""
    for name, _ in users:
        if name.startswith("@") and name[1:] not in config.userlists:
            raise InvalidRequest(f'Userset "{shown(name[1:])}" does not exist')
    if request.ckpt and not any(request.ckpt in q.ckpt_list for q in config.queues.values()):
        raise InvalidRequest(f'job rejected: the requested checkpointing environment '
                             f'"{shown(request.ckpt)}" does not exist')
    submission = Submission(
        command=(), name="AR", hard=request.resource_list, pe=request.pe or None,
        pe_range=request.pe_range if request.pe else (), queues=request.queues,
        master_queues=() if request.alloc_rule else request.master_queues,
        now=request.interactive, ckpt=request.ckpt or None, verify="e")
    try:
        job = make_job(config, 0, owner, groups, now, submission, is_manager=True)
    except SubmitError as error:
        raise InvalidRequest(str(error)) from None
    job.users = tuple(users)
    if request.alloc_rule:
        rule = request.alloc_rule
        job.alloc = ParallelEnvironment("", MAX_SLOTS, int(rule) if rule.isdigit() else rule)
        job.submission = Submission(
            command=(), name="AR", hard=submission.hard, pe="", pe_range=request.pe_range,
            queues=request.queues, master_queues=request.master_queues,
            now=request.interactive, ckpt=submission.ckpt, verify="e")
    return job


def full_names(config: ClusterConfig,
                attributes: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """-l requests under their complexes' names (h=x is hostname=x); a name
    the cluster does not know stays, for the placement to refuse."""
    named = []
    for name, value in attributes:
        try:
            named.append((config.table.find(name).name, value))
        except ComplexError:
            named.append((name, value))
    return tuple(named)


def place(model: ClusterResources, job: Job, request: Request) -> tuple[list[Allocation], str]:
    """The AR's slots per queue instance (the master's first) and its PE,
    or NoCapacity with the scheduler's reasons."""
    placement = model.reserve(job, request.start, request.end)
    if placement is None:
        reasons = model.reservation_reasons(job, request.start, request.end)
        more = len(reasons) - MAX_REASONS
        quoted = reasons[:MAX_REASONS] + ([f"{more} more alike"] if more > 0 else [])
        raise NoCapacity(f"no suitable queues ({'; '.join(quoted)})", reasons)
    return [Allocation(host, slots, queue=queue) for queue, host, slots in placement.tasks], \
        placement.pe or ""


def debits(config: ClusterConfig, containers: Containers, request: Request,
           allocations: Iterable[Allocation]) -> tuple[tuple[str, str, float], ...]:
    """What an AR holds of each container's consumables (label, complex,
    amount): its -l requests debited as its placement would debit them."""
    try:
        hard = parse_requests(config.table, request.resource_list) if request.attributes else {}
    except ComplexError:
        hard = {}      # the complex is gone from the cluster file: its slots remain
    assignment = [(containers.instances[(a.queue, a.node)], a.slots) for a in allocations
                  if (a.queue, a.node) in containers.instances]
    totals: dict[tuple[str, str], float] = {}
    for container, name, amount in assignment_debits(hard, assignment):
        totals[(container.label, name)] = totals.get((container.label, name), 0.0) + amount
    return tuple((label, name, amount) for (label, name), amount in totals.items())

