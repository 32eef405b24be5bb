"""What policy hooks see besides the request (``PolicyContext``): the clock,
every node, the ARs there are, PluS's plus_rsvutil(owner, start, end), and a
cache for the figures a policy works out once per request."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterable, NamedTuple

from overlay.model import Node, Reservation, State


class Usage(NamedTuple):
    """plus_rsvutil's answer: [0] count, [1] total seconds, [2] node-hours."""

    count: int
    duration: int
    node_hours: float


@dataclass(frozen=True)
class PolicyContext:
    """One request's context, the same object for every node of it.
    ``reservations`` are what counts as use: the ARs the store holds (open
    ones hold their resources, ``holds_resources``), ended ones kept for
    ``usage_history`` after they left plus_status, and the part of a
    cancelled AR before its cancellation; not the AR a plus_modify is
    changing (its own usage would otherwise count against it)."""

    now: int
    all_nodes: tuple[Node, ...]
    reservations: tuple[Reservation, ...] = ()
    cache: dict[Any, Any] = field(default_factory=dict)

    def usage(self, owner: str, start: int, end: int) -> Usage:
        """plus_rsvutil: the owner's ARs overlapping [start, end): how many,
        their seconds, their node-hours."""
        count, seconds, node_hours = 0, 0, 0.0
        for ar in self.reservations:
            if ar.owner == owner and ar.end > start and ar.start < end:
                count += 1
                seconds += ar.request.duration
                node_hours += len(ar.allocations) * ar.request.duration / 3600
        return Usage(count, seconds, node_hours)


def used_part(ar: Reservation, until: int | None = None) -> Reservation | None:
    """The AR as far as it was used: a cancelled one up to its cancellation
    (``until`` for one destroyed at that time); None if it never started."""
    if until is None and ar.state == State.DELETED:
        until = ar.finished_time
    if until is None or until >= ar.end:
        return ar
    if until <= ar.start:
        return None
    return replace(ar, request=replace(ar.request, end=until))


def context_for(now: int, nodes: tuple[Node, ...], reservations: Iterable[Reservation],
                history: Iterable[Reservation] = (), ignoring: int | None = None) -> PolicyContext:
    """The context of one request: the used part of every AR but ``ignoring``,
    and the ``history`` of ARs that ended before the store forgot them."""
    used = []
    for ar in reservations:
        if ar.id == ignoring:
            continue
        if ar.state == State.DELETED:
            ar = used_part(ar)
            if ar is None:
                continue
        used.append(ar)
    used.extend(history)
    return PolicyContext(now, nodes, tuple(used))
