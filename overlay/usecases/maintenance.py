"""Maintenance ARs (plus_reserve --maint, managers only): which ARs one is
forced over, and the problem those show for as long as it holds their nodes.

A maintenance AR takes busy and down nodes, and other ARs' nodes only with
--force. An AR it was forced over stays granted but degraded, as PBS
degrades ARs: W before its start, E after it, its message naming the
maintenance AR (ar_log, event, mail, as for a node down), and self-repair
moves it to free nodes when its -repair mode and the cluster allow. The
problem is worked out again at every pass that looks at the AR, so it
clears when the maintenance AR ends, is cancelled or moves away. A
maintenance AR's own health puts it in no error state: a node down is
what maintenance is for.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from overlay.language.model import Request, Reservation, State

DEGRADABLE = frozenset({State.WAITING, State.RUNNING, State.WARNING, State.ERROR})
"""The states of an AR a maintenance AR puts in W or E (a -T AR waits for its commit)."""


def in_the_way(request: Request, ars: Iterable[Reservation]) -> dict[int, set[str]]:
    """The ARs (not maintenance ones) that hold nodes over part of
    ``request``'s window, with those nodes: what --force would take."""
    found: dict[int, set[str]] = {}
    for ar in ars:
        if ar.request.maint or not ar.holds_resources:
            continue
        for window, allocations in ((ar.request, ar.allocations),
                                    (ar.pending_request, ar.pending_allocations)):
            if window is not None and window.start < request.end and window.end > request.start:
                found.setdefault(ar.id, set()).update(
                    a.node for a in allocations if a.within is None)
    return found


def held_by_maintenance(ar: Reservation,
                        maintenance: Iterable[Reservation]) -> list[tuple[Reservation, list[str]]]:
    """The maintenance ARs (``maintenance``: every one in memory, few)
    holding nodes of ``ar`` over part of its window, each with those nodes."""
    found = []
    for maint in sorted(maintenance, key=lambda m: m.id):
        if maint.id == ar.id or not maint.holds_resources or not (
                maint.start < ar.end and maint.end > ar.start):
            continue
        nodes = [node for node in ar.node_names if node in maint.node_names]
        if nodes:
            found.append((maint, nodes))
    return found


def problem(held: list[tuple[Reservation, list[str]]]) -> str:
    """What an AR's W or E says of the maintenance ARs over it."""
    return "; ".join(f"reserved node(s) {', '.join(nodes)} taken for maintenance by AR "
                     f"{maint.id}{f' ({maint.name})' if maint.name else ''}"
                     for maint, nodes in held)


def adjusted(found: Mapping[int, str], asked: Iterable[Reservation],
             maintenance: list[Reservation]) -> dict[int, str]:
    """The backend's word on the ``asked`` ARs, with maintenance's: no
    problem for a maintenance AR, and each other AR's maintenance ARs
    over it added to what the backend found. Costs the ARs asked times the
    maintenance ARs held, nothing more while there are none."""
    result = {}
    for ar in asked:
        if ar.request.maint:
            continue
        held = held_by_maintenance(ar, maintenance) if maintenance else []
        told = [text for text in (found.get(ar.id), problem(held) if held else None) if text]
        if told:
            result[ar.id] = "; ".join(told)
    return result
