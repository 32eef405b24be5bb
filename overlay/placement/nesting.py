"""ARs placed inside other ARs (seed 003's ResAccess): a group holding a big
AR carves reservations for its members out of it.

A request names the ARs it may use (``Request.res_access``); each of its
nodes is then either the node's own free slots, as for any AR, or slots of
one of those ARs there (``Allocation.within``), inside that AR's window.
Bookings inside an AR use its slots, not the node's, so the node planner
never holds them: ``Inside`` keeps them by node, and gives for an outer AR
and a node the planner of its slots with what is booked inside them. ARs
nest one level deep. The store checks the same rule (Store._check_inside).

While ARs are inside it, the outer AR is given to the backend with their
slots taken off its own on each node (``enforced``), for its whole window:
the batch system never runs more jobs on a node than it has slots, at the
price of the outer AR's jobs losing those slots a little longer than needed.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable, Iterator

from overlay.language.model import InvalidRequest, PermissionDenied, Reservation, State
from overlay.placement.planner import Planner, inside

USABLE_STATES = (State.WAITING, State.RUNNING)
"""States of an AR others may be placed inside."""


class Inside:
    """Bookings inside other ARs, by node: key -> (outer AR, start, end, slots)."""

    def __init__(self) -> None:
        self._by_node: dict[str, dict[object, tuple[int, int, int, int]]] = {}
        self._nodes: dict[object, set[str]] = {}
        self._by_outer: dict[int, set[tuple[object, str]]] = {}

    def book(self, key: object, node: str, outer: int, start: int, end: int, slots: int) -> None:
        self._by_node.setdefault(node, {})[key] = (outer, start, end, slots)
        self._nodes.setdefault(key, set()).add(node)
        self._by_outer.setdefault(outer, set()).add((key, node))

    def unbook(self, key: object) -> None:
        for node in self._nodes.pop(key, ()):
            held = self._by_node[node]
            outer = held.pop(key)[0]
            if not held:
                del self._by_node[node]
            inside_outer = self._by_outer[outer]
            inside_outer.discard((key, node))
            if not inside_outer:
                del self._by_outer[outer]

    def keys_on(self, node: str) -> list[object]:
        return list(self._by_node.get(node, ()))

    def _bookings(self, outer: int, node: str, ignore: frozenset) -> Iterator[tuple]:
        for key, (within, start, end, slots) in self._by_node.get(node, {}).items():
            if within == outer and key not in ignore:
                yield key, start, end, slots

    def planner(self, outer: Reservation, node: str, ignore: Iterable = ()) -> Planner | None:
        """The slots ``outer`` holds on ``node`` with what is booked inside
        them (less the bookings of ``ignore``); None if it holds none there."""
        slots = next((a.slots for a in outer.allocations if a.node == node and a.within is None),
                     None)
        if slots is None:
            return None
        return inside(slots, outer.start, outer.end,
                      self._bookings(outer.id, node, frozenset(ignore)))

    def fits(self, outer: Reservation, node: str, slots: int, start: int, end: int,
             ignore: Iterable = ()) -> bool:
        planner = self.planner(outer, node, ignore)
        return planner is not None and planner.fits(slots, start, end)

    def ranges(self, outer: Reservation, node: str, slots: int, duration: int, first: int,
               last: int) -> list[tuple[int, int]]:
        """The closed ranges of starts in [first, last] at which ``slots``
        stay free inside ``outer`` on ``node`` for ``duration``."""
        planner = self.planner(outer, node)
        if planner is None:
            return []
        return [(start, end - duration) for start, end in
                planner.free_spans(slots, first, last + duration) if end - start >= duration]

    def used(self, outer: int) -> dict[str, int]:
        """Slots booked inside ``outer`` per node, over all its window (the
        granted bookings and those a pending change asks for alike)."""
        used: dict[str, int] = {}
        for key, node in self._by_outer.get(outer, ()):
            used[node] = used.get(node, 0) + self._by_node[node][key][3]
        return used

    def inner(self, outer: int) -> set[int]:
        """The ids of the ARs booked inside ``outer``."""
        return {key if isinstance(key, int) else key[0]
                for key, _ in self._by_outer.get(outer, ())}


def accessible(ars: dict[int, Reservation], res_access: Iterable[int], user: str,
               groups: Iterable[str], is_manager: bool) -> list[Reservation]:
    """The ARs of a ResAccess list, each checked: live, usable by the user
    (in its access list, or a manager), and not itself inside another."""
    usable = []
    for ar_id in res_access:
        ar = ars.get(ar_id)
        if ar is None:
            raise InvalidRequest(f"ResAccess: AR {ar_id} does not exist")
        if ar.state not in USABLE_STATES or ar.pending is not None:
            raise InvalidRequest(f"ResAccess: AR {ar_id} is in state {ar.state.value}"
                                 f"{' with a pending ' + ar.pending.value if ar.pending else ''}; "
                                 "only ARs waiting or running (w, r) can hold others")
        if ar.outers:
            raise InvalidRequest(f"ResAccess: AR {ar_id} is itself inside AR "
                                 f"{min(ar.outers)}; ARs nest one level deep")
        members = set(ar.acl)
        if not (is_manager or user in members or any(f"@{g}" in members for g in groups)):
            raise PermissionDenied(f"ResAccess: {user} may not use AR {ar_id} (not in its access "
                                   f"list: {','.join(ar.acl)})")
        usable.append(ar)
    return usable


def merged(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Closed integer ranges of one node, overlapping or touching ones joined."""
    result: list[tuple[int, int]] = []
    for first, last in sorted(ranges):
        if result and first <= result[-1][1] + 1:
            result[-1] = (result[-1][0], max(result[-1][1], last))
        else:
            result.append((first, last))
    return result


def enforced(ar: Reservation, used: dict[str, int]) -> Reservation:
    """``ar`` as the backend enforces it: less the slots ARs inside it use
    on each node (a node left without any is not the AR's there)."""
    if not used:
        return ar
    kept = [replace(a, slots=a.slots - used.get(a.node, 0)) for a in ar.allocations]
    return replace(ar, allocations=[a for a in kept if a.slots > 0])
