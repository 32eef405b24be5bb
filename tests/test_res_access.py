"""ResAccess (seed 003): a reservation placed inside ARs its user may use,
using their slots as well as free ones. The planner, RESQUERY's ranges and
the store's double-booking check all know it; the outer AR is enforced
without the slots used inside it; cancelling the outer AR cancels the ones
inside it."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from overlay.language.model import (
    Allocation,
    InvalidRequest,
    NoCapacity,
    PermissionDenied,
    Request,
    Reservation,
    State,
)
from overlay.persistence.store import Conflict
from test_manager import ALICE, BOB, HOUR, T0, Caller, Env
from test_resquery import CLUSTER, MINUTE, inside

CAROL = Caller(uid=5003, user="carol", groups=("third",), is_manager=False)
PLAIN = [f"n0{i}" for i in range(1, 7)]


def full_cluster(env: Env, gpu_free: int = 0) -> Reservation:
    """BOB holds every plain node from T0 + 1 h to T0 + 5 h in an AR alice
    may use, and all but ``gpu_free`` GPU nodes in one she may not."""
    gpu = (("gpu", "yes"),)
    gpus = env.manager.reserve(BOB, Request(T0, T0 + 6 * HOUR, 2, attributes=gpu))
    outer = env.manager.reserve(BOB, Request(T0 + HOUR, T0 + 5 * HOUR, 6, users=("bob", "alice")))
    assert set(outer.node_names) == set(PLAIN)
    if gpu_free:
        env.manager.destroy(BOB, gpus.id, None)
        if gpu_free < 2:
            env.manager.reserve(BOB, Request(T0, T0 + 6 * HOUR, 2 - gpu_free, attributes=gpu))
    return outer


def within(ar: Reservation) -> dict[str, int | None]:
    return {a.node: a.within for a in ar.allocations}


def test_a_request_is_placed_inside_an_ar_its_user_may_use(tmp_path):
    env = Env(tmp_path, cluster=CLUSTER)
    outer = full_cluster(env, gpu_free=1)
    plain = Request(T0 + 2 * HOUR, T0 + 3 * HOUR, 2, slots_per_node=2)
    with pytest.raises(NoCapacity):                     # without ResAccess: one GPU node free
        env.manager.reserve(ALICE, plain)
    inner = env.manager.reserve(ALICE, replace(plain, res_access=(outer.id,)))
    assert set(within(inner).values()) == {outer.id} and set(within(inner)) <= set(PLAIN)
    mixed = env.manager.reserve(ALICE, replace(plain, nodes=7, res_access=(outer.id,)))
    assert sorted(within(mixed).values(), key=str) == [outer.id] * 6 + [None]
    with pytest.raises(NoCapacity):                     # 2 slots left inside, 6 on one GPU node
        env.manager.reserve(ALICE, replace(plain, slots_per_node=3, res_access=(outer.id,)))


def test_inside_an_ar_only_its_slots_are_used_and_the_store_says_so_too(tmp_path):
    env = Env(tmp_path, cluster=CLUSTER)
    outer = full_cluster(env)
    ask = Request(T0 + 2 * HOUR, T0 + 3 * HOUR, 6, slots_per_node=3, res_access=(outer.id,))
    env.manager.reserve(ALICE, ask)
    with pytest.raises(NoCapacity):                     # 3 of 4 slots used on every plain node
        env.manager.reserve(ALICE, replace(ask, nodes=1, slots_per_node=2))
    later = env.manager.reserve(ALICE, replace(ask, start=T0 + 3 * HOUR, end=T0 + 5 * HOUR))
    assert set(within(later).values()) == {outer.id}
    with pytest.raises(NoCapacity):                     # past the outer AR's end: not inside it
        env.manager.reserve(ALICE, replace(ask, nodes=1, start=T0 + 4 * HOUR, end=T0 + 6 * HOUR))
    overfill = Reservation(0, "alice", "staff", replace(ask, nodes=1, slots_per_node=2),
                           State.WAITING, T0, [Allocation("n01", 2, outer.id)], ("alice",))
    with pytest.raises(Conflict, match=f"AR {outer.id} has no longer 2 slot"):
        env.store.create(overfill, env.manager.capacity())
    stray = replace(overfill, allocations=[Allocation("g01", 1, outer.id)])
    with pytest.raises(Conflict, match=f"AR {outer.id} no longer holds node g01"):
        env.store.create(stray, env.manager.capacity())


@pytest.mark.parametrize("make, error, text", [
    (lambda env, outer: (CAROL, (outer.id,)), PermissionDenied,
     "carol may not use AR {id} (not in its access list: bob,alice)"),
    (lambda env, outer: (ALICE, (9999,)), InvalidRequest, "ResAccess: AR 9999 does not exist"),
    (lambda env, outer: (ALICE, (env.manager.reserve(ALICE, Request(
        T0 + 2 * HOUR, T0 + 3 * HOUR, 1, slots_per_node=1, res_access=(outer.id,))).id,)),
     InvalidRequest, "is itself inside AR {id}; ARs nest one level deep"),
    (lambda env, outer: (ALICE, (env.manager.reserve(BOB, Request(
        T0 + 10 * HOUR, T0 + 11 * HOUR, 1, users=("bob", "alice")), True).id,)),
     InvalidRequest, "in state p"),
])
def test_what_a_request_may_not_be_placed_inside(tmp_path, make, error, text):
    env = Env(tmp_path, cluster=CLUSTER)
    outer = full_cluster(env)
    caller, access = make(env, outer)
    before = sorted(env.manager.ars)
    with pytest.raises(error, match=text.format(id=outer.id).replace("(", r"\(").replace(")", r"\)")):
        env.manager.reserve(caller, Request(T0 + 2 * HOUR, T0 + 3 * HOUR, 1, slots_per_node=1,
                                            res_access=access))
    assert sorted(env.manager.ars) == before


def test_the_outer_ar_is_enforced_without_what_is_used_inside_it(tmp_path):
    env = Env(tmp_path, cluster=CLUSTER)
    outer = full_cluster(env)
    inner = env.manager.reserve(ALICE, Request(T0 + 2 * HOUR, T0 + 3 * HOUR, 2, slots_per_node=3,
                                               res_access=(outer.id,)))
    enforced = {a.node: a.slots for a in env.manager.enforced(outer).allocations}
    assert [enforced[n] for n in inner.node_names] == [1, 1]
    assert all(enforced[n] == 4 for n in PLAIN if n not in inner.node_names)
    env.settle()
    assert env.backend.scheduler.windows.get(outer.id).slots == enforced    # the outer follows
    env.restart()                                        # the store keeps where each AR is
    assert {a.node: a.slots for a in env.manager.enforced(outer).allocations} == enforced
    env.manager.cancel(ALICE, inner.id, None)
    assert all(a.slots == 4 for a in env.manager.enforced(env.manager.ars[outer.id]).allocations)
    env.settle()
    assert env.backend.scheduler.windows.get(outer.id).slots == {n: 4 for n in PLAIN}


def test_cancelling_the_outer_ar_cancels_the_ones_inside_and_its_window_stays_put(tmp_path):
    env = Env(tmp_path, cluster=CLUSTER)
    outer = full_cluster(env)
    inner = env.manager.reserve(ALICE, Request(T0 + 2 * HOUR, T0 + 3 * HOUR, 1, slots_per_node=1,
                                               res_access=(outer.id,)))
    with pytest.raises(InvalidRequest, match=f"holds ARs placed inside it \\({inner.id}\\)"):
        env.manager.modify(BOB, outer.id, start=None, end=T0 + 6 * HOUR, duration=None,
                           nodes=None, users=None)
    env.manager.modify(BOB, outer.id, start=None, end=None, duration=None, nodes=None,
                       users=("bob", "alice", "root"))
    env.manager.cancel(BOB, outer.id, None)
    cancelled = env.manager.ars[inner.id]
    assert cancelled.state == State.DELETED
    assert cancelled.message == f"cancelled with AR {outer.id}, inside which it was"
    again = env.manager.reserve(ALICE, Request(T0 + 2 * HOUR, T0 + 3 * HOUR, 6))   # free again
    assert set(within(again).values()) == {None}


@pytest.mark.parametrize("seed", range(10))
def test_resquery_with_res_access_is_exact(tmp_path, seed):
    rng = random.Random(seed)
    env = Env(tmp_path, cluster=CLUSTER)
    outers = []
    for _ in range(rng.randint(1, 3)):
        start = T0 + rng.randrange(0, 10 * HOUR, 30 * MINUTE)
        try:
            outers.append(env.manager.reserve(BOB, Request(
                start, start + rng.randrange(2, 12) * HOUR, rng.randint(1, 4),
                users=("bob", "alice"), slots_per_node=rng.choice([None, 2, 3]))))
        except NoCapacity:
            pass
    for _ in range(rng.randint(3, 15)):
        start = T0 + rng.randrange(0, 20 * HOUR, 10 * MINUTE)
        access = tuple(o.id for o in outers if rng.random() < 0.5)
        try:
            env.manager.reserve(ALICE, Request(start, start + rng.randrange(3, 30) * 10 * MINUTE,
                                               rng.randint(1, 3), slots_per_node=rng.choice([1, 2]),
                                               res_access=access))
        except NoCapacity:
            pass
    access = tuple(o.id for o in outers)
    duration = rng.randrange(20, 240, 5) * MINUTE
    shape = Request(T0, T0 + duration, rng.randint(1, 6), slots_per_node=rng.choice([None, 1, 2]),
                    res_access=access)
    last = T0 + 24 * HOUR
    ranges = env.manager.start_ranges(ALICE, shape, last)
    points = set(range(T0, last + 1, 10 * MINUTE))
    for low, high in ranges:
        points |= {low - 1, low, low + 1, high - 1, high, high + 1}
    for start in sorted(p for p in points if T0 <= p <= last):
        candidate = replace(shape, start=start, end=start + duration)
        try:
            env.manager._allocate(ALICE, candidate, env.manager._context())
            granted = True
        except NoCapacity:
            granted = False
        assert inside(ranges, start) == granted, (seed, start - T0, ranges)
