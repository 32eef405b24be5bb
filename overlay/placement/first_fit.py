"""First fit: the placement PluS and this overlay have always made. The
candidates in their order (NodeSortKey, or the plus_node_order hook's),
the AR's own nodes first (a modify keeps them), then the nodes of the ARs
it may be inside (ResAccess), then hosts that run jobs; the first that are
free and that the reservability hooks accept, until there are enough: a
reserve asks few nodes of many."""

from __future__ import annotations

from operator import attrgetter

from overlay.language.model import Allocation, Node
from overlay.placement.base import NodeQuestion

_RUNS_JOBS = attrgetter("runs_jobs")
"""The hosts that run jobs before those that only take ARs: a key in C,
a third of a Python one's time at every reserve."""


class FirstFit:
    """The first nodes that fit, in the site's order."""

    name = "first-fit"

    def choose(self, question: NodeQuestion) -> list[Allocation]:
        ordered = sorted(question.candidates, key=_RUNS_JOBS, reverse=True)  # stable: in order
        if question.prefer or question.held:   # a modify's or a ResAccess's nodes, first
            ordered.sort(key=lambda n: (n.name not in question.prefer,
                                        n.name not in question.held))
        admitted, refusals = question.admitted(ordered)
        chosen: list[Node] = []
        allocations: list[Allocation] = []
        free = 0
        for node in admitted:
            allocation = question.offer(node)
            if allocation is None:
                continue
            free += 1
            refusal = question.judge(node, chosen)
            if refusal:
                refusals[refusal] = refusals.get(refusal, 0) + 1
                continue
            chosen.append(node)
            allocations.append(allocation)
            if len(allocations) == question.request.nodes:
                return allocations
        raise question.shortfall(len(allocations), free, refusals)
