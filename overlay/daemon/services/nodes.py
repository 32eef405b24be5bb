"""Every node as GET /nodes lists it: the Manager's nodes (at every daemon
the inventory the leader published, so every daemon answers alike), each
with its state now, slots, attributes and the ARs holding it now;
filtered by state and by properties as -l matches them, a page at a
time. Only the ARs in their window are walked (the tally keeps them), not
every AR held."""

from __future__ import annotations

import math
from collections import defaultdict

from overlay.daemon.services.base import Context, Operation
from overlay.language import limits
from overlay.language.model import Node, Request, Reservation
from overlay.language.request import RequestError, parse_attribute_list
from overlay.placement.eligible import node_satisfies
from overlay.usecases.manager import Caller
from overlay.wire import codec

STATES = ("down", "reserved", "busy", "idle")
"""A node's state now, the first that holds: not alive, held by an AR in
its window, running jobs, none of these."""


def _state(text: str) -> tuple[str]:
    if text not in STATES:
        raise RequestError(f"state: unknown state '{limits.shown(text)}'; accepted: "
                           f"{', '.join(STATES)}")
    return (text,)


def _property(text: str) -> tuple[tuple[str, str], ...]:
    return parse_attribute_list(text, "property")


def nodes(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    """A page of the nodes, by name: ``states`` (any of them), and
    ``properties`` (name=pattern, every one) as plus_reserve -l matches a
    node's properties."""
    limit = args.integer("limit", 1, limits.MAX_PAGE, what="limit") or limits.PAGE
    offset = args.integer("offset", 0, limits.MAX_COUNT, what="offset") or 0
    states = set(args.names("states", "state", _state) or ())
    wanted = Request(0, 1, 1, attributes=args.names("properties", "property", _property) or ())
    args.done()
    manager = context.manager
    known = manager.known_nodes()
    holding = _holding_now(manager.tally.in_window())
    found = []
    for name in sorted(known):
        node = known[name]
        state = _state_of(node, holding.get(name))
        if (not states or state in states) and node_satisfies(node, wanted):
            found.append((node, state))
    return {"total": len(found), "items": [_view(node, state, holding.get(node.name))
                                           for node, state in found[offset:offset + limit]]}


def _holding_now(in_window: list[Reservation]) -> dict[str, dict[int, int]]:
    """Each node's ARs in their window now, with the slots each holds there
    (slots inside another AR, ResAccess, counted once, by the outer AR)."""
    holding: dict[str, dict[int, int]] = defaultdict(dict)
    for ar in in_window:
        for allocation in ar.allocations:
            held = holding[allocation.node]
            held[ar.id] = held.get(ar.id, 0) + (0 if allocation.within is not None
                                                else allocation.slots)
    return holding


def _state_of(node: Node, held: dict[int, int] | None) -> str:
    if not node.alive:
        return "down"
    if held:
        return "reserved"
    return "busy" if node.running_jobs else "idle"


def _view(node: Node, state: str, held: dict[int, int] | None) -> dict:
    held = held or {}
    return {"name": node.name, "state": state, "slots": node.slots,
            "reserved_slots": min(node.slots, sum(held.values())),
            "running_jobs": node.running_jobs, "runs_jobs": node.runs_jobs,
            "memory_mb": node.memory_mb, "ncpus": node.ncpus, "arch": node.arch, "os": node.os,
            "properties": {key: str(value) for key, value in node.properties.items()},
            "queues": list(node.queues),
            "queue_states": [list(pair) for pair in node.queue_states],
            "load": None if math.isnan(node.load) else node.load, "ars": sorted(held)}


OPERATIONS: dict[str, Operation] = {"nodes": nodes}
