"""Which nodes may hold a request: live nodes of the reservable queues
(sge_queues, -sgeq), in NodeSortKey order, whose static attributes can
hold it. Worked out once per refresh of the nodes, not per request."""

from __future__ import annotations

from typing import Callable, Iterable

from overlay.daemon.config import Config
from overlay.language.matching import wildcard_match
from overlay.language.model import Node, Request
from overlay.placement.ordering import sort_nodes

KINDS_KEPT = 64
"""Kinds of request whose eligible nodes are kept between refreshes of the nodes."""


HOST_NAME = ("hostname", "h")
"""Grid Engine's built-in complex that every host has (``h`` its shortcut,
of type HOST: seed 002), so ``-l hostname=node005``, ``-l h="node00[56]"``
or seed 000's ``-l "h=host1|host2"`` name nodes on every backend. A node
property of that name, where a site gives one, is what it matches."""


def _attribute_matches(node: Node, name: str, wanted: str) -> bool:
    """Whether ``node``'s attribute ``name`` (a property, or its name as
    hostname) matches ``wanted``: wildcards, and ``|`` between
    alternatives as Grid Engine's string requests take them (seed 002)."""
    have = node.properties.get(name)
    if have is None and name in HOST_NAME:
        have = node.name
    return have is not None and any(wildcard_match(str(have), alternative)
                                    for alternative in wanted.split("|"))


def node_satisfies(node: Node, request: Request) -> bool:
    """Whether ``node`` can ever hold ``request`` (its static attributes)."""
    if request.slots_per_node is not None and request.slots_per_node > node.slots:
        return False
    if request.memory_mb is not None and node.memory_mb < request.memory_mb:
        return False
    if request.ncpus is not None and node.ncpus < request.ncpus:
        return False
    if request.arch is not None and not wildcard_match(node.arch, request.arch):
        return False
    if request.os is not None and not wildcard_match(node.os, request.os):
        return False
    if request.queues and not any(wildcard_match(q, pattern)
                                  for q in node.queues for pattern in request.queues):
        return False
    return all(_attribute_matches(node, name, wanted) for name, wanted in request.attributes)


class EligibleNodes:
    """The reservable nodes and, per kind of request, those that can hold
    it: kept until the next refresh (most requests ask alike, and testing
    1,000 nodes was a tenth of a creation)."""

    def __init__(self, config: Config, clock: Callable[[], int]) -> None:
        self.config = config
        self.clock = clock
        self._nodes: list[Node] = []
        self._reservable: list[Node] | None = None
        self._by_kind: dict[tuple, list[Node]] = {}

    def refresh(self, nodes: Iterable[Node]) -> None:
        """The backend's nodes changed: forget what was worked out."""
        self._nodes = list(nodes)
        self._reservable, self._by_kind = None, {}

    def reservable(self, down_too: bool = False) -> list[Node]:
        """Live nodes of the reservable queues (``down_too``: and those
        down, for maintenance), in the configured NodeSortKey order (which
        depends on nothing else); read only."""
        if down_too:
            return self._ordered(self._nodes)
        if self._reservable is None:
            self._reservable = self._ordered([n for n in self._nodes if n.alive])
        return self._reservable

    def _ordered(self, nodes: list[Node]) -> list[Node]:
        allowed = self.config.sge_queues
        kept = [n for n in nodes if not allowed or any(q in allowed for q in n.queues)]
        return sort_nodes(kept, self.config.node_order, self.clock())

    def eligible(self, request: Request) -> list[Node]:
        """Reservable nodes that can hold ``request``, in their order (a
        maintenance request's down nodes too); read only."""
        if request.maint:
            return [n for n in self.reservable(down_too=True) if node_satisfies(n, request)]
        kind = (request.slots_per_node, request.memory_mb, request.ncpus, request.arch,
                request.os, request.queues, request.attributes)
        eligible = self._by_kind.get(kind)
        if eligible is None:
            if len(self._by_kind) >= KINDS_KEPT:
                self._by_kind.clear()
            eligible = self._by_kind[kind] = [n for n in self.reservable()
                                              if node_satisfies(n, request)]
        return eligible
