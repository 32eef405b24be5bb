"""What a match policy is: given one node request and the nodes that may
hold it (``NodeQuestion``), it returns the allocations it picks, or raises
NoCapacity saying why not. The question does the testing (free over the
window, inside an AR of the request's ResAccess, the reservability hooks),
so a policy decides only which nodes it tries, in which order, and when it
has enough."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Protocol, Sequence

from overlay.language.model import Allocation, NoCapacity, Node, Request


@dataclass(frozen=True)
class NodeQuestion:
    """One node request as a match policy sees it.

    ``candidates``: the nodes that can hold it, in NodeSortKey order (or the
    plus_node_order hook's); ``prefer``: the AR's own nodes (a modify keeps
    them); ``held``: the nodes of the ARs it may be inside (ResAccess);
    ``blocked``: nodes the backend will not give it, with why (they serve
    only inside an AR); ``known``: every node there is, for the refusal's
    figures; ``offer(node)``: the allocation ``node`` would give over the
    window, or None if it is not free; ``judge(node, chosen)``: the first
    refusal of the reservability hooks (PluS's PLUS_NODE_RESERVABLE) given
    the nodes ``chosen`` so far, or None."""

    request: Request
    candidates: Sequence[Node]
    prefer: frozenset[str]
    held: frozenset[str]
    blocked: Mapping[str, str]
    known: int
    offer: Callable[[Node], Allocation | None]
    judge: Callable[[Node, Sequence[Node]], str | None]

    def admitted(self, ordered: Sequence[Node]) -> tuple[list[Node], dict[str, int]]:
        """``ordered`` less the nodes the backend turns away (unless an AR
        the request may use holds them), and how many each reason turned away."""
        refusals: dict[str, int] = {}
        kept = []
        for node in ordered:
            why = self.blocked.get(node.name)
            if why is not None and node.name not in self.held:
                refusals[why] = refusals.get(why, 0) + 1
            else:
                kept.append(node)
        return kept, refusals

    def shortfall(self, chosen: int, free: int, refusals: Mapping[str, int]) -> NoCapacity:
        """The refusal when only ``chosen`` nodes could be had, ``free`` of
        the candidates were free, and ``refusals`` counts why others were not taken."""
        reason = (f"only {chosen} of the {self.request.nodes} requested nodes can be reserved "
                  f"for this window ({self.known} nodes known, {len(self.candidates)} match the "
                  f"request, {free} free)")
        if refusals:
            reason += "; " + "; ".join(f"{text} ({count} nodes)"
                                       for text, count in refusals.items())
        return NoCapacity(reason)


class MatchPolicy(Protocol):
    """Picks the nodes of one node request; chosen by name (``factory``)."""

    def choose(self, question: NodeQuestion) -> list[Allocation]:
        """``question.request.nodes`` allocations, or NoCapacity (``question.shortfall``)."""
        ...
