"""qrsub's slots as cores for a batch system without parallel environments
(overlay.placement.cores): the count the -pe ranges allow, filled up node
by node, -q against queues and instances, and what is refused."""

from __future__ import annotations

import pytest

from overlay.language.model import Allocation, InvalidRequest, NoCapacity, Node, Request
from overlay.placement import cores

NODES = [Node("n1", slots=4, queues=("debug",)), Node("n2", slots=4, queues=("debug",)),
         Node("n3", slots=4, queues=("debug", "pair"))]


def request(**fields) -> Request:
    return Request(start=100, end=200, nodes=0, **fields)


@pytest.mark.parametrize("ranges, free, count", [
    ((), 5, 1), ((), 0, None), (((6, 6),), 12, 6), (((2, 8),), 5, 5), (((2, 8),), 1, None),
    (((1, 2), (6, 9)), 7, 7), (((1, 2), (6, 9)), 5, 2),
])
def test_the_count_is_the_most_the_ranges_allow_within_what_is_free(ranges, free, count):
    assert cores.slot_count(ranges, free) == count


def test_slots_fill_the_nodes_in_order_from_what_each_has_free():
    free = {"n1": 1, "n2": 4, "n3": 4}
    placed = cores.fill_up(request(pe="mpi", pe_range=((6, 6),)), NODES,
                           lambda node: free[node.name])
    assert placed == [Allocation("n1", 1), Allocation("n2", 4), Allocation("n3", 1)]


def four(node: Node) -> int:
    return 4


def test_queue_patterns_name_a_queue_or_its_instance_on_a_node():
    free = four
    assert cores.fill_up(request(pe_range=((3, 3),), queues=("pair",)), NODES, free) == [
        Allocation("n3", 3)]
    assert cores.fill_up(request(queues=("debug@n2",)), NODES, free) == [Allocation("n2", 1)]


def test_too_many_slots_say_how_many_are_free():
    with pytest.raises(NoCapacity, match="13 slot.*12 free"):
        cores.fill_up(request(pe_range=((13, 20),)), NODES, four)


@pytest.mark.parametrize("field, value, option", [
    ("alloc_rule", "$round_robin", "-alloc"), ("master_queues", ("debug",), "-masterq"),
    ("ckpt", "blcr", "-ckpt")])
def test_what_needs_a_scheduler_of_pes_is_refused_naming_it(field, value, option):
    with pytest.raises(InvalidRequest, match=f"^{option} needs a scheduler of parallel "
                                             "environments; slurm reserves cores"):
        cores.refuse_unsupported(request(**{field: value}), "slurm")
