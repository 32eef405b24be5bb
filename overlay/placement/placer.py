"""What the use cases ask the placement: the nodes of a PluS node AR (the
match policy picks them among the eligible nodes, the planners say which
are free), and the slots of a qrsub AR (the backend's scheduler places
them, the node planner and the reservability hooks confirm). Called under
the Manager's lock, which also guards the planners it reads."""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterable, Mapping, Protocol, Sequence

import pluggy

from overlay.contract import plugins
from overlay.contract.backend import Backend, Inventory
from overlay.contract.policy import PolicyContext
from overlay.daemon.config import Config
from overlay.kit.users import account
from overlay.language.model import (
    Allocation,
    InvalidRequest,
    NoCapacity,
    Node,
    Request,
    Reservation,
)
from overlay.placement import cores
from overlay.placement.base import NodeQuestion
from overlay.placement.eligible import EligibleNodes
from overlay.placement.factory import DEFAULT_POLICY, match_policy
from overlay.placement.nesting import Inside
from overlay.placement.planner import MultiPlanner


class Owner(Protocol):
    """Whom an AR is placed for."""

    user: str
    groups: tuple[str, ...]


def booking_keys(ar_id: int) -> tuple[object, object]:
    """The keys of an AR's bookings in the planners: its granted window,
    and the window a pending modification asks for."""
    return ar_id, (ar_id, "pending")


class Placer:
    """Which nodes or slots an AR gets. ``backend`` and ``hooks`` give the
    Manager's backend and plugin manager as they are now (a SIGHUP replaces
    the plugin manager), ``inventory`` the running jobs last observed."""

    def __init__(self, config: Config, backend: Callable[[], Backend], planner: MultiPlanner,
                 inside: Inside, hooks: Callable[[], pluggy.PluginManager],
                 clock: Callable[[], int], inventory: Callable[[], Inventory],
                 policy: str = DEFAULT_POLICY) -> None:
        self.backend = backend
        self.inventory = inventory
        self.planner = planner
        self.inside = inside
        self.hooks = hooks
        self.policy = match_policy(policy)
        self.known: Mapping[str, Node] = {}
        self._eligible = EligibleNodes(config, clock)

    def refresh(self, nodes: Mapping[str, Node]) -> None:
        """The backend's nodes, as the last refresh found them."""
        self.known = nodes
        self._eligible.refresh(nodes.values())

    def reservable(self) -> list[Node]:
        """Live nodes of the reservable queues, in NodeSortKey order; read only."""
        return self._eligible.reservable()

    def eligible(self, request: Request) -> list[Node]:
        """Reservable nodes that can hold ``request``, in their order; read only."""
        return self._eligible.eligible(request)

    def nodes(self, owner: Owner, request: Request, context: PolicyContext,
              outers: Sequence[Reservation] = (), ignore: Iterable = (),
              prefer: Iterable[str] = (), avoid: Iterable[str] = ()) -> list[Allocation]:
        """``request.nodes`` nodes free over its window (or inside one of
        ``outers``, the ARs its ResAccess may use), which the reservability
        hooks accept node by node, as the match policy picks them;
        ``ignore``: bookings left out (the AR a modify moves), ``prefer``:
        its nodes, ``avoid``: nodes not to take (those a repair replaces).
        A maintenance request may have busy and down nodes. NoCapacity
        says why not."""
        hooks = self.hooks()
        candidates = self.eligible(request)
        if avoid:
            shunned = frozenset(avoid)
            candidates = [node for node in candidates if node.name not in shunned]
        ordered = hooks.hook.plus_node_order(nodes=candidates, request=request,
                                             owner=owner.user, groups=owner.groups,
                                             context=context)
        if ordered is not None:
            candidates = list(ordered)
        hook = plugins.PolicyHook(hooks, "plus_node_reservable", request=request,
                                  owner=owner.user, groups=owner.groups, context=context)
        wants_allocated = hook.wants("allocated")
        blocked = {} if request.maint else self.backend().blocked_nodes(request, self.inventory())
        skip = frozenset(ignore)

        def offer(node: Node) -> Allocation | None:
            need = request.slots_on(node)
            outer = next((o.id for o in outers if self.inside.fits(
                o, node.name, need, request.start, request.end, skip)), None)
            if outer is None and (node.name in blocked or not self.planner.fits(
                    node.name, need, request.start, request.end, skip)):
                return None
            return Allocation(node.name, need, outer)

        def judge(node: Node, chosen: Sequence[Node]) -> str | None:
            return hook.first_refusal(node=node,
                                      allocated=tuple(chosen) if wants_allocated else ())

        return self.policy.choose(NodeQuestion(
            request=request, candidates=candidates, prefer=frozenset(prefer),
            held=frozenset(a.node for outer in outers for a in outer.allocations),
            blocked=blocked, known=len(self.known), offer=offer, judge=judge))

    def slots(self, owner: Owner, request: Request, context: PolicyContext,
              ignore: int | None = None) -> tuple[list[Allocation], str]:
        """qrsub's request: slots the backend's scheduler places (its queue
        instances, PE and consumables), on nodes the node planner (every
        other AR, PluS's too) still has free and the reservability hooks
        accept; and the PE it chose. ``ignore``: the AR a modify moves."""
        if request.res_access:
            raise InvalidRequest("ResAccess places node reservations inside others; a qrsub "
                                 "request (slots) cannot use it")
        backend = self.backend()
        if backend.slots_as_cores:
            allocations, pe = self._cores(backend, request, ignore), request.pe
        else:
            allocations, pe = backend.place_slots(request, (owner.user, owner.groups),
                                                  self._access(owner, request), ignore)
        per_node: dict[str, int] = {}
        for allocation in allocations:
            per_node[allocation.node] = per_node.get(allocation.node, 0) + allocation.slots
        skip = () if ignore is None else booking_keys(ignore)
        hook = plugins.PolicyHook(self.hooks(), "plus_node_reservable", request=request,
                                  owner=owner.user, groups=owner.groups, context=context)
        for name, slots in per_node.items():
            node = self.known.get(name)
            if node is None or not self.planner.fits(name, slots, request.start, request.end,
                                                     skip):
                raise NoCapacity(f"no suitable queues (host {name} is no longer free for the "
                                 "window); try again")
            refusal = hook.first_refusal(node=node, allocated=())
            if refusal:
                raise NoCapacity(f"host {name}: {refusal}")
        return allocations, pe

    def _cores(self, backend: Backend, request: Request, ignore: int | None) -> list[Allocation]:
        """qrsub's slots as cores, filled up over the eligible nodes' free
        cores (overlay.placement.cores), for a backend without PEs."""
        cores.refuse_unsupported(request, backend.name)
        skip = () if ignore is None else booking_keys(ignore)
        blocked = backend.blocked_nodes(request, self.inventory())
        nodes = [node for node in self.eligible(replace(request, queues=()))
                 if node.name not in blocked]
        return cores.fill_up(request, nodes, lambda node: self.planner.free(
            node.name, request.start, request.end, skip))

    @staticmethod
    def _access(owner: Owner, request: Request) -> list[tuple[str, tuple[str, ...]]]:
        """The users whose access the slots must allow, with their groups:
        -u's entries, or the owner if none, as 8.1.9 checks the acl_list
        (an ``@name`` entry is an access list of the batch system)."""
        users = []
        for entry in request.users or (owner.user,):
            if entry.startswith("@"):
                users.append((entry, ()))
            elif entry == owner.user:
                users.append((owner.user, owner.groups))
            else:
                found = account(entry)
                users.append(found if found is not None else (entry, ()))
        return users
