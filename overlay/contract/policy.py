"""What policy hooks see besides the request (``PolicyContext``): the clock,
every node, the ARs there are, PluS's plus_rsvutil(owner, start, end), the
ARs of a group's members, and a cache for the figures a policy works out once
per request."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Collection, Iterable, Iterator, NamedTuple, Sequence

from overlay.kit.users import account
from overlay.language.model import Node, Reservation, State


def owner_groups(owner: str, group: str) -> frozenset[str]:
    """The groups ``owner`` is in now as the system reports them, primary and
    supplementary (users.account: looked up again after a minute); ``group``,
    the AR's primary group at creation, for an owner the system no longer knows."""
    found = account(owner)
    if found is None:
        return frozenset((group,)) if group else frozenset()
    return frozenset(found[1])


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
    changing (its own usage would otherwise count against it).
    ``membership(owner, group)`` gives an AR owner's groups now
    (``owner_groups``; tests give their own)."""

    now: int
    all_nodes: tuple[Node, ...]
    reservations: Sequence[Reservation] = ()
    cache: dict[Any, Any] = field(default_factory=dict)
    membership: Callable[[str, str], Collection[str]] = owner_groups

    def group_ars(self, group: str) -> tuple[Reservation, ...]:
        """The ``reservations`` of every owner who is a member of ``group``
        now, through their primary or a supplementary group: what a group's
        quota counts. Worked out once per request and group."""
        key = ("group_ars", group)
        found = self.cache.get(key)
        if found is None:
            members: list[Reservation] = []
            for (owner, created_in), ars in self._by_owner.items():
                if group in self.membership(owner, created_in):
                    members.extend(ars)
            found = self.cache[key] = tuple(members)
        return found

    @functools.cached_property
    def _by_owner(self) -> dict[tuple[str, str], list[Reservation]]:
        """The reservations by owner and group at creation, so that each
        owner's membership is asked once, not once per AR."""
        by_owner: dict[tuple[str, str], list[Reservation]] = {}
        for ar in self.reservations:
            by_owner.setdefault((ar.owner, ar.group), []).append(ar)
        return by_owner

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


_ENDED = frozenset({State.DELETED, State.EXITED})
"""States whose finished time may cut what an AR counts as use."""


def used_part(ar: Reservation, until: int | None = None) -> Reservation | None:
    """The AR as far as it was used: a cancelled one up to its cancellation,
    one released early up to its release (``until`` for one destroyed at
    that time); None if it never started. Quotas and caps count what was
    held, not what was asked."""
    if until is None and ar.state in _ENDED:
        until = ar.finished_time
    if until is None or until >= ar.end:
        return ar
    if until <= ar.start:
        return None
    return replace(ar, request=replace(ar.request, end=until))


class _Used(Sequence[Reservation]):
    """What counts as use in one request, worked out when a policy first
    reads it: most requests meet no policy that does, and walking every AR
    for them cost a fifth of a request at 10,000 ARs. The sources are the
    manager's own collections, not copies (copying 10,000 references was a
    tenth of a creation): a context is read within its request, under the
    manager's lock, before the request changes anything."""

    def __init__(self, reservations: Iterable[Reservation], history: Iterable[Reservation],
                 ignoring: int | None) -> None:
        self._sources = (reservations, history, ignoring)

    @functools.cached_property
    def _items(self) -> tuple[Reservation, ...]:
        reservations, history, ignoring = self._sources
        used = []
        for ar in reservations:
            if ar.id == ignoring:
                continue
            if ar.state in _ENDED:
                ar = used_part(ar)
                if ar is None:
                    continue
            used.append(ar)
        used.extend(history)
        return tuple(used)

    def __getitem__(self, index):  # type: ignore[override]
        return self._items[index]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Reservation]:
        return iter(self._items)


def context_for(now: int, nodes: tuple[Node, ...], reservations: Iterable[Reservation],
                history: Iterable[Reservation] = (), ignoring: int | None = None) -> PolicyContext:
    """The context of one request: the used part of every AR but ``ignoring``,
    and the ``history`` of ARs that ended before the store forgot them (read
    when a policy first asks, within the request, under the lock that keeps
    them from changing)."""
    return PolicyContext(now, nodes, _Used(reservations, history, ignoring))
