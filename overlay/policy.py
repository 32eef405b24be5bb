"""What policy hooks see besides the request (``PolicyContext``): the clock,
every node, the ARs there are, PluS's plus_rsvutil(owner, start, end), and a
cache for the figures a policy works out once per request."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from overlay.model import Node, Reservation, State


class Usage(NamedTuple):
    """plus_rsvutil's answer: [0] count, [1] total seconds, [2] node-hours."""

    count: int
    duration: int
    node_hours: float


@dataclass(frozen=True)
class PolicyContext:
    """One request's context, the same object for every node of it.
    ``reservations`` are the ARs the store holds but the cancelled ones, and
    but the one a plus_modify is changing (its own usage would otherwise
    count against it); open ones hold their resources (``holds_resources``)."""

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


def context_for(now: int, nodes: tuple[Node, ...], reservations: list[Reservation],
                ignoring: int | None = None) -> PolicyContext:
    """The context of one request: every AR but the cancelled ones and ``ignoring``."""
    return PolicyContext(now, nodes, tuple(ar for ar in reservations
                                           if ar.state != State.DELETED and ar.id != ignoring))
