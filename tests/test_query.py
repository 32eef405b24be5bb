"""QUERY (seed 003): when a job would start if submitted now. The answer
is the earliest time at which enough matching nodes are free of the ARs
and of what jobs hold (running jobs until their limit, planned resource
reservations), checked by brute force on random bookings; the jobs'
holdings are booked for the question only."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from overlay.contract.backend import Backend, Holding, Inventory, Job
from overlay.language.model import NoCapacity, Request
from test_manager import ALICE, BOB, HOUR, T0, Env
from test_resquery import CLUSTER, MINUTE

CAPACITY = {**{f"n0{i}": 4 for i in range(1, 7)}, "g01": 8, "g02": 8}
GPU = {"g01", "g02"}


def holding_jobs(env: Env, holdings: list[Holding]) -> None:
    env.manager.backend.job_start = lambda request, nodes, user: None    # the core's estimate
    env.manager.backend.job_holdings = lambda now, inventory: (holdings, "test holdings")


def free(node: str, need: int | None, start: int, end: int, spans: list[tuple]) -> bool:
    """Whether ``need`` slots (None: the whole node) of ``node`` are free
    over [start, end), given (node, slots, start, end) spans."""
    mine = [(s, e, n) for name, n, s, e in spans if name == node and s < end and e > start]
    if need is None:
        return not mine
    points = {start} | {s for s, _, _ in mine if s > start}
    return all(sum(n for s, e, n in mine if s <= p < e) + need <= CAPACITY[node] for p in points)


@pytest.mark.parametrize("seed", range(10))
def test_the_answer_is_the_earliest_start_free_of_ars_and_jobs(tmp_path, seed):
    rng = random.Random(seed)
    env = Env(tmp_path, cluster=CLUSTER)
    spans: list[tuple] = []
    for _ in range(rng.randint(3, 15)):
        start = T0 + rng.randrange(0, 10 * HOUR, 10 * MINUTE)
        try:
            ar = env.manager.reserve(BOB, Request(start=start, end=start + rng.randrange(3, 30) * 10 * MINUTE,
                                                  nodes=rng.randint(1, 3),
                                                  slots_per_node=rng.choice([None, 1, 2])))
        except NoCapacity:
            continue
        spans += [(a.node, a.slots, ar.start, ar.end) for a in ar.allocations]
    holdings = []
    for _ in range(rng.randint(0, 8)):
        node = rng.choice(sorted(CAPACITY))
        slots = rng.choice([None, 1, 2])
        begin = T0 + rng.choice([0, 0, rng.randrange(0, 5 * HOUR, 10 * MINUTE)])
        end = begin + rng.randrange(1, 30) * 10 * MINUTE
        holdings.append(Holding(node, slots, begin, end))
        spans.append((node, CAPACITY[node] if slots is None else slots, begin, end))
    holding_jobs(env, holdings)
    shape = Request(start=T0, end=T0 + rng.randrange(2, 24) * 10 * MINUTE, nodes=rng.randint(1, 5),
                    slots_per_node=rng.choice([None, 1, 3]),
                    attributes=rng.choice([(), (("gpu", "yes"),)]))
    names = sorted(GPU if shape.attributes else CAPACITY)
    if len(names) < shape.nodes:
        shape = Request(shape.start, shape.end, len(names), slots_per_node=shape.slots_per_node,
                        attributes=shape.attributes)
    before = {name: env.manager.planner.keys_on(name) for name in names}
    start, how = env.manager.job_start(ALICE, shape)
    assert how == "test holdings"
    assert {name: env.manager.planner.keys_on(name) for name in names} == before   # released

    def fits(at: int) -> bool:
        return sum(free(n, shape.slots_per_node, at, at + shape.duration, spans)
                   for n in names) >= shape.nodes
    assert start is not None and fits(start), (seed, start)
    candidates = {T0} | {e for _, _, _, e in spans if T0 < e < start}
    assert not any(fits(t) for t in candidates if t < start), seed


def test_a_job_without_a_limit_holds_its_node_for_ever(tmp_path):
    env = Env(tmp_path, cluster=CLUSTER)
    holding_jobs(env, [Holding("g01", None, T0, None), Holding("g02", 2, T0, T0 + HOUR)])
    gpu = (("gpu", "yes"),)
    assert env.manager.job_start(ALICE, Request(T0, T0 + HOUR, 1, attributes=gpu))[0] == T0 + HOUR
    assert env.manager.job_start(ALICE, Request(T0, T0 + HOUR, 1, slots_per_node=6,
                                                attributes=gpu))[0] == T0
    assert env.manager.job_start(ALICE, Request(T0, T0 + HOUR, 2, attributes=gpu))[0] is None
    with pytest.raises(NoCapacity, match="only 2 node"):
        env.manager.job_start(ALICE, Request(T0, T0 + HOUR, 3, attributes=gpu))


def test_a_backend_without_a_plan_counts_running_jobs_until_their_limit():
    """Grid Engine and TORQUE: running jobs outside ARs hold their nodes
    whole until h_rt or walltime ends; queued jobs are not known."""
    jobs = [Job("1", "bob", ("n01", "n02"), None, T0 + HOUR), Job("2", "bob", ("n03",)),
            Job("3", "bob", ("n04",), reservation=7, runtime_limit_end=T0 + HOUR)]
    holdings, how = Backend.job_holdings(SimpleNamespace(), T0, Inventory(tuple(jobs), T0 - 5))
    assert holdings == [Holding("n01", None, T0, T0 + HOUR), Holding("n02", None, T0, T0 + HOUR),
                        Holding("n03", None, T0, None)]
    assert how == ("estimated from the run time limits of 2 running job(s) (observed 5 s ago) "
                   "and the ARs; queued jobs are not counted")
