"""Self-repair: an AR whose node went down gets a free node in its place.

The lifecycle's pass finds an AR's health problem; before its window (or
during it, with ``-repair always``) the nodes that failed are replaced by
the same placement a modify uses (the match policy, the reservability
hooks, the store's capacity re-check in the change's transaction), the
AR's other nodes kept (``Manager.repair``). When no free node matches, the
AR stays in W or E as it would without repair, its message saying why no
replacement was had; the next passes try again only once the ARs or the
nodes changed, so an AR no node can save costs nothing pass after pass.
"""

from __future__ import annotations

import re
from typing import Mapping

from overlay.language.model import Node, Reservation, ReservationError, State
from overlay.persistence.store import Stale


def wants_repair(ar: Reservation, now: int) -> bool:
    """Whether ``ar``'s -repair mode asks for a replacement now: ``before``
    until its window opens, ``always`` until it ends. A qrsub AR's slots
    are the batch system's scheduler's to place, an AR with a -T operation
    pending waits for it, and an AR others are placed inside keeps its nodes."""
    mode = ar.request.repair
    if mode == "none" or ar.request.by_slots or ar.pending is not None:
        return False
    if ar.state not in (State.WAITING, State.WARNING, State.RUNNING, State.ERROR):
        return False
    return now < ar.start or (mode == "always" and now < ar.end)


def failed_nodes(ar: Reservation, nodes: Mapping[str, Node], problem: str) -> list[str]:
    """The AR's nodes to replace: those gone or down as the inventory last
    saw them, or else those the backend's ``problem`` names (an AR's own
    queue instance disabled on a host that is up), in the AR's order."""
    down = [name for name in ar.node_names if name not in nodes or not nodes[name].alive]
    if down:
        return down
    return [name for name in ar.node_names
            if re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])", problem)]


class Repairs:
    """The lifecycle's attempts at repair, and what it remembers of those
    that found no replacement: the state of ARs and nodes they were made
    in (the manager's revision, the inventory's), and why they failed."""

    def __init__(self, manager) -> None:
        self.manager = manager
        self._failed: dict[int, tuple[tuple[int, int, str], str]] = {}

    def attempt(self, ar: Reservation, now: int, problem: str) -> str | None:
        """Repair ``ar`` if its mode wants it and a replacement is free: None
        once repaired (stored, back in w or r); else the message its W or E
        shows, ``problem`` and, after a failed attempt, why it failed."""
        if not wants_repair(ar, now):
            return problem
        failed = failed_nodes(ar, self.manager.nodes, problem)
        if not failed:
            return problem
        seen = (self.manager.revision, self.manager.observed.revision, problem)
        known = self._failed.get(ar.id)
        if known is not None and known[0] == seen:
            return f"{problem}; {known[1]}"
        try:
            self.manager.repair(ar, failed, problem)
        except Stale:
            raise
        except ReservationError as exc:
            why = f"not repaired: no free node matches to replace {', '.join(failed)} ({exc})"
            self._failed[ar.id] = ((self.manager.revision, self.manager.observed.revision,
                                    problem), why)
            return f"{problem}; {why}"
        self._failed.pop(ar.id, None)
        return None

    def forget(self, ar_id: int) -> None:
        """The AR has no problem any more, or is gone."""
        self._failed.pop(ar_id, None)
