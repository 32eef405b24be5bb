"""qrsub's slot requests on a batch system that reserves cores and has no
parallel environments (Slurm): the core places them itself, as Grid
Engine's $fill_up would, over what the node planner has free.

``-pe NAME N`` (or a range) becomes the most cores the ranges allow that
the eligible nodes have free over the window, taken node by node in their
order; NAME is kept for the records and qrstat. ``-q`` patterns match a
node's queues (Slurm's partitions) or ``queue@node``; ``-l`` requests match
its attributes, as for plus_reserve. What has no meaning without a
scheduler of PEs (``-alloc``, ``-masterq``, ``-ckpt``) is refused.
"""

from __future__ import annotations

from typing import Callable, Sequence

from overlay.language.matching import wildcard_match
from overlay.language.model import Allocation, InvalidRequest, NoCapacity, Node, Request

UNSUPPORTED = (("alloc_rule", "-alloc"), ("master_queues", "-masterq"), ("ckpt", "-ckpt"))


def refuse_unsupported(request: Request, system: str) -> None:
    for field, option in UNSUPPORTED:
        if getattr(request, field):
            raise InvalidRequest(f"{option} needs a scheduler of parallel environments; {system} "
                                 f"reserves cores: ask -pe NAME SLOTS (or plus_reserve -sn)")


def in_queues(node: Node, patterns: Sequence[str]) -> bool:
    """Whether one of qrsub's -q patterns names a queue of ``node`` or its
    instance there (``queue@node``)."""
    return not patterns or any(
        wildcard_match(queue, pattern) or wildcard_match(f"{queue}@{node.name}", pattern)
        for queue in node.queues for pattern in patterns)


def slot_count(ranges: Sequence[tuple[int, int]], free: int) -> int | None:
    """The most slots the -pe ranges allow within ``free`` (one slot without
    -pe), or None if even the least is more."""
    best = None
    for low, high in ranges or ((1, 1),):
        if low <= free:
            best = max(best or 0, min(high, free))
    return best


def fill_up(request: Request, nodes: Sequence[Node],
            free: Callable[[Node], int]) -> list[Allocation]:
    """The request's slots over ``nodes`` (eligible, in order), each node
    giving what ``free`` says it has over the window; NoCapacity if the
    ranges' least does not fit."""
    offers = [(node, free(node)) for node in nodes if in_queues(node, request.queues)]
    offers = [(node, amount) for node, amount in offers if amount > 0]
    total = sum(amount for _, amount in offers)
    count = slot_count(request.pe_range, total)
    if count is None:
        least = min((low for low, _ in request.pe_range), default=1)
        raise NoCapacity(f"no suitable queues: {least} slot(s) asked, {total} free on the "
                         f"eligible nodes over the window")
    allocations = []
    for node, amount in offers:
        if count == 0:
            break
        taken = min(amount, count)
        allocations.append(Allocation(node.name, taken))
        count -= taken
    return allocations
