"""RESQUERY (seed 003) is exact: every start inside a returned range is
grantable at the moment of the answer, and every grantable start lies in a
returned range, checked by brute force on random clusters and bookings."""

from __future__ import annotations

import random

import pytest

from overlay.language.model import NoCapacity, PermissionDenied, Request
from test_manager import ALICE, BOB, HOUR, T0, Env

MINUTE = 60
CLUSTER = """\
nodes:
  - {name: "n[01-06]", slots: 4, memory: 16G, arch: lx-amd64, queues: [all.q]}
  - {name: "g[01-02]", slots: 8, memory: 64G, arch: lx-amd64, queues: [all.q],
     properties: {gpu: "yes"}}
"""


def grantable(env: Env, request: Request) -> bool:
    """Whether a reserve of ``request`` by ALICE would be granted now (the
    reserve's own node choice, without making the AR)."""
    try:
        env.manager._allocate(ALICE, request, env.manager._context())
    except NoCapacity:
        return False
    return True


def inside(ranges: list[tuple[int, int]], start: int) -> bool:
    return any(low <= start <= high for low, high in ranges)


@pytest.mark.parametrize("seed", range(12))
def test_every_returned_start_is_grantable_and_every_grantable_start_is_returned(tmp_path, seed):
    rng = random.Random(seed)
    env = Env(tmp_path, cluster=CLUSTER)
    for _ in range(rng.randint(5, 25)):
        start = T0 + rng.randrange(0, 20 * HOUR, 10 * MINUTE)
        try:
            env.manager.reserve(BOB, Request(
                start=start, end=start + rng.randrange(30, 300, 10) * MINUTE,
                nodes=rng.randint(1, 4),
                slots_per_node=rng.choice([None, None, 1, 2]),
                attributes=rng.choice([(), (), (("gpu", "yes"),)])))
        except NoCapacity:
            pass
    shape = Request(start=T0 + rng.randrange(0, 2 * HOUR, MINUTE),
                    end=0, nodes=rng.randint(1, 6), slots_per_node=rng.choice([None, 2, 3]),
                    attributes=rng.choice([(), (("gpu", "yes"),)]))
    duration = rng.randrange(20, 240, 5) * MINUTE
    shape = Request(start=shape.start, end=shape.start + duration, nodes=shape.nodes,
                    slots_per_node=shape.slots_per_node, attributes=shape.attributes)
    last = shape.start + 24 * HOUR
    ranges = env.manager.start_ranges(ALICE, shape, last)
    points = set(range(shape.start, last + 1, 5 * MINUTE))
    for low, high in ranges:
        points |= {low - 1, low, low + 1, high - 1, high, high + 1}
    for start in sorted(p for p in points if shape.start <= p <= last):
        candidate = Request(start=start, end=start + duration, nodes=shape.nodes,
                            slots_per_node=shape.slots_per_node, attributes=shape.attributes)
        assert inside(ranges, start) == grantable(env, candidate), (seed, start - T0, ranges)


def test_ranges_start_no_earlier_than_now_and_follow_the_arusers_rule(tmp_path):
    env = Env(tmp_path, cluster=CLUSTER, settings="arusers: [alice]\n")
    shape = Request(start=T0 - HOUR, end=T0, nodes=8)
    assert env.manager.start_ranges(ALICE, shape, T0 + HOUR) == [(T0, T0 + HOUR)]
    assert env.manager.start_ranges(ALICE, shape, T0 - 1) == []
    with pytest.raises(PermissionDenied, match="may not create advance reservations"):
        env.manager.start_ranges(BOB, shape, T0 + HOUR)
    env.manager.reserve(ALICE, Request(start=T0 + 600, end=T0 + 1200, nodes=1))
    assert env.manager.start_ranges(ALICE, shape, T0 + HOUR) == [(1200 + T0, T0 + HOUR)]
