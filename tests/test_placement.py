"""The placement room's seams: match policies chosen by name, the question
a policy is given (tested without a Manager), and the Manager asking the
room the same way for every request."""

from __future__ import annotations

import pytest

from overlay.language.model import Allocation, NoCapacity, Node, Request
from overlay.placement.base import NodeQuestion
from overlay.placement.eligible import node_satisfies
from overlay.placement.factory import DEFAULT_POLICY, MATCH_POLICIES, match_policy
from overlay.placement.first_fit import FirstFit
from test_manager import ALICE, BOB, HOUR, T0, Env

NODES = [Node("a", slots=4), Node("b", slots=4), Node("c", slots=4, runs_jobs=False),
         Node("d", slots=4)]


def question(nodes: int = 2, prefer=(), held=(), blocked=None, busy=(), refuse=None,
             within=None) -> NodeQuestion:
    """A question over NODES: ``busy`` nodes are not free, ``refuse`` maps
    a node to a hook's refusal, ``within`` a held node to the AR it is inside."""
    request = Request(start=T0, end=T0 + HOUR, nodes=nodes)
    blocked = blocked or {}
    within = within or {}

    def offer(node: Node) -> Allocation | None:
        if node.name in within:
            return Allocation(node.name, node.slots, within[node.name])
        if node.name in busy or node.name in blocked:
            return None
        return Allocation(node.name, node.slots)

    return NodeQuestion(request=request, candidates=NODES, prefer=frozenset(prefer),
                        held=frozenset(held), blocked=blocked, known=len(NODES) + 1,
                        offer=offer, judge=lambda node, chosen: (refuse or {}).get(node.name))


def names(allocations: list[Allocation]) -> list[str]:
    return [a.node for a in allocations]


def test_the_factory_makes_the_policy_named():
    assert DEFAULT_POLICY == "first-fit" and list(MATCH_POLICIES) == ["first-fit"]
    assert isinstance(match_policy("first-fit"), FirstFit)


def test_the_factory_names_the_policies_there_are():
    with pytest.raises(ValueError, match="unknown match policy 'pack'; known: first-fit"):
        match_policy("pack")


def test_first_fit_takes_the_first_free_nodes_hosts_that_run_jobs_first():
    assert names(FirstFit().choose(question(nodes=3))) == ["a", "b", "d"]
    assert names(FirstFit().choose(question(nodes=2, busy={"a"}))) == ["b", "d"]


def test_first_fit_prefers_the_ars_own_nodes_then_those_of_its_outer_ars():
    chosen = FirstFit().choose(question(nodes=3, prefer={"d"}, held={"c"}, within={"c": 7}))
    assert chosen == [Allocation("d", 4), Allocation("c", 4, 7), Allocation("a", 4)]


def test_a_blocked_node_serves_only_inside_an_ar_the_request_may_use():
    blocked = {"a": "jobs still run", "b": "jobs still run"}
    chosen = FirstFit().choose(question(nodes=2, held={"b"}, blocked=blocked, within={"b": 3}))
    assert chosen == [Allocation("b", 4, 3), Allocation("d", 4)]


def test_first_fit_says_how_far_it_got_and_why():
    with pytest.raises(NoCapacity) as refused:
        FirstFit().choose(question(nodes=3, blocked={"a": "jobs still run"}, busy={"c"},
                                   refuse={"d": "policy p: no"}))
    assert str(refused.value) == (
        "only 1 of the 3 requested nodes can be reserved for this window (5 nodes known, "
        "4 match the request, 2 free); jobs still run (1 nodes); policy p: no (1 nodes)")


def test_the_hooks_see_the_nodes_chosen_so_far():
    seen = []

    def judge(node: Node, chosen) -> None:
        seen.append((node.name, [n.name for n in chosen]))

    asked = question(nodes=2)
    FirstFit().choose(NodeQuestion(**{**asked.__dict__, "judge": judge}))
    assert seen == [("a", []), ("b", ["a"])]


@pytest.fixture
def env(tmp_path):
    return Env(tmp_path)


def test_a_modify_keeps_its_nodes_and_later_requests_keep_the_node_order(env):
    """A modify's preference for the AR's own nodes is its own: the next
    request goes in NodeSortKey order again (the eligible nodes are kept
    between requests, and must not keep a modify's order)."""
    env.reserve(BOB)                                   # big
    ar = env.reserve()                                 # n01
    assert ar.node_names == ["n01"]
    moved = env.manager.modify(ALICE, ar.id, None, T0 + 3 * HOUR, None, None, None)
    assert moved.node_names == ["n01"]
    later = env.reserve(start=T0 + 10 * HOUR)
    assert later.node_names == ["big"]


def test_the_manager_asks_its_placer_with_the_default_policy(env):
    assert isinstance(env.manager.placer.policy, FirstFit)
    assert env.manager.placer.reservable() == env.manager.placer.eligible(env.request())


@pytest.mark.parametrize("attributes, matched", [
    ((("hostname", "b"),), ["b"]),
    ((("h", "a|d"),), ["a", "d"]),                  # seed 000's -l "h=host1|host2"
    ((("h", "[bd]"),), ["b", "d"]),
    ((("hostname", "nosuch"),), []),
    ((("rack", "1|2"),), ["a", "b"]),
    ((("hostname", "x"),), ["e"]),                  # a property of that name is what matches
    ((("hostname", "e"),), []),
])
def test_hostname_names_nodes_and_bar_separates_alternatives(attributes, matched):
    nodes = [Node("a", properties={"rack": "1"}), Node("b", properties={"rack": "2"}),
             Node("c", properties={"rack": "3"}), Node("d"),
             Node("e", properties={"hostname": "x"})]
    request = Request(T0, T0 + HOUR, 1, attributes=attributes)
    assert [n.name for n in nodes if node_satisfies(n, request)] == matched
