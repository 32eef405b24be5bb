"""Which ARs a feed shows, and its entity tag. A feed shows what
plus_status shows (every AR the daemon keeps, ended and cancelled ones
until they expire): a user's feed the ARs the user owns or whose access
list names the user or a group of theirs; a queue's feed the ARs holding
a node of the queue (Node.queues, as the backend reports it: a Grid
Engine cluster queue's hosts, a TORQUE or native queue's) or slots of
that queue (qrsub); the maintenance feed every maintenance AR."""

from __future__ import annotations

import hashlib
from typing import Iterable

from overlay.kit.users import listed
from overlay.language.model import Node, Reservation

MAX_EVENTS = 3000
"""Events in one feed, at most: the ARs starting first (a feed of a few
MiB, which every calendar client takes)."""
FORMAT = "1"
"""The feed's layout: a change of what the events say changes every tag."""


def of_user(ars: Iterable[Reservation], user: str, groups: Iterable[str]) -> list[Reservation]:
    groups = tuple(groups)
    return [ar for ar in ars if ar.owner == user or listed(ar.acl, user, groups)]


def queue_nodes(nodes: Iterable[Node], queue: str) -> frozenset[str]:
    return frozenset(node.name for node in nodes if queue in node.queues)


def of_queue(ars: Iterable[Reservation], queue: str, nodes: frozenset[str]) -> list[Reservation]:
    return [ar for ar in ars if any(a.node in nodes or a.queue == queue for a in ar.allocations)]


def of_maintenance(ars: Iterable[Reservation]) -> list[Reservation]:
    """The site's maintenance windows: every maintenance AR (--maint)."""
    return [ar for ar in ars if ar.request.maint]


def bounded(ars: list[Reservation]) -> tuple[list[Reservation], int]:
    """The events a feed holds, by start (then id), at most MAX_EVENTS; and
    how many ARs matched in all."""
    ordered = sorted(ars, key=lambda ar: (ar.start, ar.id))
    return ordered[:MAX_EVENTS], len(ordered)


def tag(ars: Iterable[Reservation], *context: str) -> str:
    """The strong entity tag of a feed of ``ars``: the same ARs at the same
    store revisions, written in the same ``context`` (zone, host, what is
    fed), give the same bytes at every daemon."""
    digest = hashlib.sha256("\0".join((FORMAT, *context)).encode())
    for ar in ars:
        digest.update(b"%d:%d;" % (ar.id, ar.revision))
    return '"' + digest.hexdigest()[:32] + '"'
