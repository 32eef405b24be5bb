"""plugins/native/resources/reserved.py: the ARs the native scheduler holds
between passes, changed AR by AR, and what a pass reads of them."""

from __future__ import annotations

import random

from overlay_native.resources.reserved import Reservations
from overlay_native.resources.window import ReservedWindow


def window(ar_id, start, end, slots, state="w", users=("alice",)):
    return ReservedWindow(ar_id, start, end, slots, users, state)


def test_put_change_and_remove_follow_each_ar():
    held = Reservations()
    assert held.put_all([window(1, 100, 200, {"a": 2, "b": 1})])
    assert not held.put_all([window(1, 100, 200, {"a": 2, "b": 1})])        # the same: no change
    assert held.put_all([window(2, 150, 300, {"a": 1})])
    assert held.held["a"].peak(0, 1000) == 3 and held.held["b"].peak(0, 1000) == 1
    assert held.put_all([window(1, 400, 500, {"b": 2})])                      # moved and shrunk
    assert sorted(held.held) == ["a", "b"]
    assert held.held["a"].peak(0, 1000) == 1 and held.held["b"].peak(0, 300) == 0
    assert held.held["b"].peak(400, 500) == 2
    assert held.remove(2) and not held.remove(2)
    assert sorted(held.held) == ["b"]                                   # no planner left empty
    assert list(held) == [1] and held[1].start == 400 and len(held) == 1


def test_started_and_open_hosts():
    held = Reservations([window(1, 100, 200, {"a": 1}), window(2, 50, 150, {"b": 1}, "r"),
                         window(3, 50, 150, {"c": 1}, "E"), window(4, 0, 10, {"d": 1})])
    assert sorted(w.id for w in held.started()) == [2, 3]
    assert held.open_hosts() == {"b", "c"}
    held.put_all([window(2, 50, 150, {"b": 1}, "x")])
    assert sorted(w.id for w in held.started()) == [3]
    held.remove(3)
    assert list(held.started()) == [] and held.open_hosts() == set()


def test_replace_all_equals_the_given_windows():
    rng = random.Random(4)
    held = Reservations()
    for _ in range(30):
        windows = []
        for ar_id in rng.sample(range(40), rng.randint(0, 20)):
            start = rng.randint(0, 1000)
            hosts = rng.sample("abcdef", rng.randint(1, 3))
            windows.append(window(ar_id, start, start + rng.randint(1, 300),
                                  {h: rng.randint(1, 4) for h in hosts}, rng.choice("wrE")))
        held.replace_all(windows)
        fresh = Reservations(windows)
        assert dict(held) == dict(fresh)
        assert sorted(held.held) == sorted(fresh.held)
        for host, planner in fresh.held.items():
            assert held.held[host].times.tolist() == planner.times.tolist()
            assert held.held[host].usage.tolist() == planner.usage.tolist()
        assert sorted(w.id for w in held.started()) == sorted(w.id for w in fresh.started())
    assert not held.replace_all(list(fresh.values()))
