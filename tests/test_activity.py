"""Running jobs per node and idle times, as the core works them out for
every backend, and the NodeSortKey orders that use them."""

from __future__ import annotations

from overlay.contract.backend import Job
from overlay.language.model import Node
from overlay.placement.ordering import sort_nodes
from overlay.usecases.activity import Activity

NODES = [Node("a"), Node("b", load=0.5), Node("c", memory_mb=64)]


def test_jobs_are_counted_per_node_and_idle_time_starts_when_the_last_ends():
    activity = Activity()
    jobs = [Job("1", "u", ("a", "b")), Job("2", "u", ("a",)), Job("3", "u", ("a", "a"))]
    first = {n.name: n for n in activity.apply(NODES, jobs, now=100)}
    assert [(first[x].running_jobs, first[x].idle_since) for x in "abc"] == \
        [(3, 0), (1, 0), (0, 100)]
    later = {n.name: n for n in activity.apply(NODES, [Job("2", "u", ("a",))], now=200)}
    assert [(later[x].running_jobs, later[x].idle_since) for x in "abc"] == \
        [(1, 0), (0, 200), (0, 100)]
    busy_again = {n.name: n for n in activity.apply(NODES, [Job("4", "u", ("c",))], now=300)}
    assert busy_again["c"].idle_since == 0 and busy_again["b"].idle_since == 200
    assert busy_again["a"].idle_since == 300


def test_node_sort_keys():
    activity = Activity()
    activity.apply(NODES, [Job("1", "u", ("a", "b"))], now=100)
    nodes = activity.apply(NODES, [Job("1", "u", ("b",))], now=200)

    def names(keys: list[str]) -> list[str]:
        return [n.name for n in sort_nodes(nodes, keys, now=300)]

    assert names(["LongestIdleTime"]) == ["c", "a", "b"]
    assert names(["LowestLoadAverage"]) == ["a", "c", "b"]
    assert names(["LargestPhysicalMemory"]) == ["c", "a", "b"]
    assert names(["NodeName"]) == ["a", "b", "c"]


def test_a_node_that_comes_with_the_leaders_idle_time_keeps_it():
    """A standby's nodes come from the leader's published inventory, idle
    times and all: its own first look does not reset them, and once it
    leads it carries on from them."""
    activity = Activity()
    (node,) = activity.apply([Node("a", idle_since=40)], [], now=100)
    assert node.idle_since == 40
    (node,) = activity.apply([Node("a")], [], now=200)     # observed by itself, leading now
    assert node.idle_since == 40
