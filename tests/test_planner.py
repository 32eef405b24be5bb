"""overlay/placement/planner.py: free nodes over a window, start-time ranges (GGF
RESQUERY, seed 003) and the earliest start, on hand-built scenarios whose
answers are worked out below, plus a seeded random cross-check against a
brute-force search over every integer start time."""

from __future__ import annotations

import random

import pytest

from overlay.placement.planner import MultiPlanner, Planner, covered_ranges

H = 3600


def whole(planner: MultiPlanner):
    """need() for whole-node requests: every slot of the node."""
    return lambda name: planner.capacity(name)


def slots(n: int):
    return lambda name: n


# --- free_nodes and peak ------------------------------------------------------------------

@pytest.fixture
def three():
    """Nodes a, b, c with 4 slots; a booked whole [100, 200), b [150, 300)."""
    p = MultiPlanner()
    for name in ("a", "b", "c"):
        p.set_capacity(name, 4)
    p.book(1, "a", 100, 200, 4)
    p.book(2, "b", 150, 300, 4)
    return p


def test_free_nodes_whole_node_bookings(three):
    need = whole(three)
    assert three.free_nodes(["a", "b", "c"], need, 0, 100) == ["a", "b", "c"]
    assert three.free_nodes(["a", "b", "c"], need, 0, 101) == ["b", "c"]
    assert three.free_nodes(["a", "b", "c"], need, 120, 160) == ["c"]
    assert three.free_nodes(["a", "b", "c"], need, 200, 300) == ["a", "c"]
    assert three.free_nodes(["a", "b", "c"], need, 300, 400) == ["a", "b", "c"]


def test_free_nodes_keeps_the_given_order_and_skips_unknown_nodes(three):
    assert three.free_nodes(["c", "zz", "a", "b"], whole(three), 300, 400) == ["c", "a", "b"]
    assert three.free_nodes([], whole(three), 0, 10) == []


@pytest.mark.parametrize("start,end,free", [
    (0, 100, True),      # [0,100) then [100,200): touching, no overlap
    (200, 300, True),    # [100,200) then [200,300)
    (0, 101, False),
    (199, 300, False),
    (100, 200, False),
    (120, 130, False),   # inside
    (50, 250, False),    # around
])
def test_touching_intervals_do_not_overlap(start, end, free):
    p = MultiPlanner()
    p.set_capacity("n", 1)
    p.book("k", "n", 100, 200, 1)
    assert (p.free_nodes(["n"], slots(1), start, end) == ["n"]) is free
    assert p.fits("n", 1, start, end) is free
    assert (p.peak("n", start, end) == 0) is free


def test_partial_slot_bookings():
    p = MultiPlanner()
    p.set_capacity("n", 4)
    p.book("x", "n", 100, 200, 2)
    p.book("y", "n", 150, 250, 1)
    # usage: [100,150) 2, [150,200) 3, [200,250) 1
    assert p.peak("n", 0, 100) == 0
    assert p.peak("n", 100, 150) == 2
    assert p.peak("n", 0, 1000) == 3
    assert p.peak("n", 200, 250) == 1
    assert p.peak("n", 149, 151) == 3
    assert p.free_nodes(["n"], slots(1), 0, 1000) == ["n"]
    assert p.free_nodes(["n"], slots(2), 0, 1000) == []
    assert p.free_nodes(["n"], slots(2), 100, 150) == ["n"]
    assert p.free_nodes(["n"], slots(2), 200, 300) == ["n"]
    assert p.free_nodes(["n"], slots(3), 200, 300) == ["n"]
    assert p.free_nodes(["n"], slots(4), 250, 300) == ["n"]
    assert p.free_nodes(["n"], slots(4), 249, 300) == []
    assert p.free_nodes(["n"], slots(5), 1000, 2000) == []      # more than the node has


def test_peak_of_stacked_and_separate_bookings():
    p = MultiPlanner()
    p.set_capacity("n", 8)
    p.book(1, "n", 0, 100, 1)
    p.book(2, "n", 0, 100, 2)       # same interval: 3
    p.book(3, "n", 100, 200, 4)     # touching: not added to the first two
    p.book(4, "n", 500, 600, 1)
    assert p.peak("n", 0, 200) == 4
    assert p.peak("n", 0, 100) == 3
    assert p.peak("n", 200, 500) == 0
    assert p.peak("n", 0, 1000) == 4
    assert p.peak("unknown", 0, 1000) == 0


def test_a_long_booking_found_behind_many_short_ones():
    p = MultiPlanner()
    p.set_capacity("n", 2)
    p.book("long", "n", 0, 10_000, 1)
    for i in range(50):
        p.book(("short", i), "n", 100 * i + 1, 100 * i + 2, 1)
    assert p.peak("n", 9_000, 9_001) == 1
    assert p.peak("n", 1001, 1002) == 2
    assert p.free_nodes(["n"], slots(2), 9_000, 9_500) == []
    assert p.free_nodes(["n"], slots(1), 9_000, 9_500) == ["n"]


def test_ignore_keys(three):
    need = whole(three)
    assert three.free_nodes(["a", "b"], need, 120, 160) == []
    assert three.free_nodes(["a", "b"], need, 120, 160, ignore=[1]) == ["a"]
    assert three.free_nodes(["a", "b"], need, 120, 160, ignore={1, 2}) == ["a", "b"]
    assert three.peak("a", 0, 1000, ignore=[1]) == 0
    assert three.peak("a", 0, 1000, ignore=[2]) == 4
    assert three.fits("b", 4, 0, 1000, ignore=(2,))


def test_one_key_on_several_nodes_and_unbook():
    p = MultiPlanner()
    for name in ("a", "b"):
        p.set_capacity(name, 2)
    p.book("ar", "a", 0, 100, 2)
    p.book("ar", "b", 0, 100, 1)
    p.book("other", "b", 50, 150, 1)
    assert p.free_nodes(["a", "b"], slots(1), 0, 100) == []
    assert p.free_nodes(["a", "b"], slots(1), 0, 100, ignore=["ar"]) == ["a", "b"]
    p.unbook("ar")
    assert p.peak("a", 0, 1000) == 0
    assert p.peak("b", 0, 1000) == 1          # the other key stays
    assert p.last_end("b") == 150
    p.unbook("ar")                            # unknown key: nothing happens
    p.unbook("other")
    assert p.peak("b", 0, 1000) == 0


def test_capacity_fits_and_last_end():
    p = MultiPlanner()
    assert p.capacity("n") == 0
    assert not p.fits("n", 1, 0, 10)
    assert p.last_end("n") == 0
    p.set_capacity("n", 4)
    assert p.capacity("n") == 4
    assert p.last_end("n") == 0
    p.book(1, "n", 0, 100, 3)
    p.book(2, "n", 10, 50, 1)
    assert p.last_end("n") == 100
    assert not p.fits("n", 1, 0, 100)         # 4 slots in use over [10, 50)
    assert p.fits("n", 1, 50, 100)
    assert not p.fits("n", 2, 50, 100)
    p.set_capacity("n", 8)                    # bookings are kept
    assert p.capacity("n") == 8
    assert p.peak("n", 0, 100) == 4
    assert p.fits("n", 4, 0, 100)
    assert not p.fits("n", 5, 20, 30)


def test_booking_an_undeclared_node_gives_it_no_capacity():
    p = MultiPlanner()
    p.book(1, "ghost", 0, 10, 1)
    assert p.capacity("ghost") == 0
    assert p.free_nodes(["ghost"], slots(1), 100, 200) == []
    p.set_capacity("ghost", 2)
    assert p.free_nodes(["ghost"], slots(1), 0, 10) == ["ghost"]
    assert p.free_nodes(["ghost"], slots(2), 0, 10) == []


# --- start_ranges and earliest_start ------------------------------------------------------
#
# The ``three`` scenario, duration 100, starts in [0, 400]:
#   a is free for 100 s starting in [0, 0] and [200, 400]
#   b in [0, 50] and [300, 400]
#   c in [0, 400]
# Nodes free at once: t=0: a b c; 1..50: b c; 51..199: c; 200..299: a c; 300..400: a b c.

def test_start_ranges_two_of_three(three):
    ranges = three.start_ranges(["a", "b", "c"], whole(three), 2, 100, 0, 400)
    assert ranges == [(0, 50), (200, 400)]


def test_start_ranges_all_three(three):
    ranges = three.start_ranges(["a", "b", "c"], whole(three), 3, 100, 0, 400)
    assert ranges == [(0, 0), (300, 400)]


def test_start_ranges_one_node(three):
    assert three.start_ranges(["a", "b", "c"], whole(three), 1, 100, 0, 400) == [(0, 400)]
    assert three.start_ranges(["a"], whole(three), 1, 100, 0, 400) == [(0, 0), (200, 400)]
    assert three.start_ranges(["b"], whole(three), 1, 100, 0, 400) == [(0, 50), (300, 400)]


def test_start_ranges_clip_to_the_query(three):
    assert three.start_ranges(["a", "b", "c"], whole(three), 2, 100, 10, 250) == [(10, 50), (200, 250)]
    assert three.start_ranges(["a", "b", "c"], whole(three), 2, 100, 60, 150) == []
    assert three.start_ranges(["a", "b", "c"], whole(three), 3, 100, 300, 300) == [(300, 300)]


def test_start_ranges_longer_duration(three):
    # 200 s: a free from 200 on; b from 300 on (its [0,150) is too short); c always.
    assert three.start_ranges(["a", "b", "c"], whole(three), 2, 200, 0, 400) == [(200, 400)]
    assert three.start_ranges(["a", "b", "c"], whole(three), 3, 200, 0, 400) == [(300, 400)]


def test_start_ranges_with_ignore(three):
    # Ignoring b's booking (as when b's own AR is modified): b free everywhere.
    ranges = three.start_ranges(["a", "b", "c"], whole(three), 3, 100, 0, 400, ignore=[2])
    assert ranges == [(0, 0), (200, 400)]


def test_count_larger_than_the_nodes(three):
    assert three.start_ranges(["a", "b", "c"], whole(three), 4, 100, 0, 10_000) == []
    assert three.earliest_start(["a", "b", "c"], whole(three), 4, 100, 0) is None
    assert three.earliest_start(["a", "zz"], whole(three), 2, 100, 0) is None


def test_need_larger_than_any_node(three):
    assert three.start_ranges(["a", "b", "c"], slots(5), 1, 100, 0, 400) == []
    assert three.earliest_start(["a", "b", "c"], slots(5), 1, 100, 0) is None


@pytest.mark.parametrize("count,after,expected", [
    (2, 0, 0),
    (2, 10, 10),
    (2, 50, 50),
    (2, 51, 200),
    (2, 250, 250),
    (3, 0, 0),
    (3, 1, 300),
    (1, 120, 120),
    (3, 10_000, 10_000),     # after every booking
])
def test_earliest_start(three, count, after, expected):
    assert three.earliest_start(["a", "b", "c"], whole(three), count, 100, after) == expected


def test_earliest_start_partial_slots():
    # n: 4 slots; in use 3 over [100, 200), 4 over [200, 300), 3 over [300, 400).
    # One slot is free over [0, 200) and from 300; two slots before 100 and from 400.
    p = MultiPlanner()
    p.set_capacity("n", 4)
    p.book(1, "n", 100, 400, 3)
    p.book(2, "n", 200, 300, 1)
    assert p.earliest_start(["n"], slots(1), 1, 100, 0) == 0
    assert p.earliest_start(["n"], slots(1), 1, 200, 0) == 0
    assert p.earliest_start(["n"], slots(1), 1, 201, 0) == 300      # [0,200) too short
    assert p.earliest_start(["n"], slots(1), 1, 100, 150) == 300
    assert p.earliest_start(["n"], slots(2), 1, 100, 50) == 400
    assert p.earliest_start(["n"], slots(2), 1, 100, 0) == 0
    assert p.start_ranges(["n"], slots(1), 1, 100, 0, 500) == [(0, 100), (300, 500)]
    assert p.start_ranges(["n"], slots(2), 1, 100, 0, 500) == [(0, 0), (400, 500)]
    assert p.earliest_start(["n"], slots(1), 1, 100, 150, ignore=[2]) == 150


def test_earliest_start_without_bookings_is_after():
    p = MultiPlanner()
    p.set_capacity("a", 2)
    assert p.earliest_start(["a"], slots(2), 1, H, 12345) == 12345


def test_start_ranges_merge_neighbouring_nodes():
    # a free from 0 to 100, b from 100: one node is free to start anywhere in [0, 500].
    p = MultiPlanner()
    p.set_capacity("a", 1)
    p.set_capacity("b", 1)
    p.book(1, "a", 150, 1000, 1)
    p.book(2, "b", 0, 100, 1)
    assert p.start_ranges(["a", "b"], slots(1), 1, 50, 0, 500) == [(0, 500)]


# --- covered_ranges -----------------------------------------------------------------------

@pytest.mark.parametrize("ranges,count,expected", [
    ([], 1, []),
    ([(0, 10)], 1, [(0, 10)]),
    ([(0, 10)], 2, []),
    ([(0, 10), (5, 15)], 1, [(0, 15)]),
    ([(0, 10), (5, 15)], 2, [(5, 10)]),
    ([(0, 4), (5, 9)], 1, [(0, 9)]),          # integer times: 4 and 5 are neighbours
    ([(0, 4), (6, 9)], 1, [(0, 4), (6, 9)]),
    ([(0, 10), (10, 20)], 2, [(10, 10)]),     # closed ranges share the instant 10
    ([(0, 0), (0, 0), (0, 0)], 3, [(0, 0)]),
    ([(0, 100), (20, 30), (25, 80), (70, 90)], 3, [(25, 30), (70, 80)]),
    ([(5, 6), (0, 10)], 2, [(5, 6)]),         # input order does not matter
])
def test_covered_ranges(ranges, count, expected):
    assert covered_ranges(ranges, count) == expected


# --- randomized cross-check against brute force -------------------------------------------

def _brute_feasible(bookings, capacity, need, count, duration, t):
    """Whether ``count`` nodes each have need[node] slots free at every
    integer instant of [t, t + duration)."""
    ok = 0
    for node, cap in capacity.items():
        if need[node] > cap:
            continue
        if all(sum(n for (k, s, e, n) in bookings[node] if s <= u < e) + need[node] <= cap
               for u in range(t, t + duration)):
            ok += 1
    return ok >= count


def _scenario(rng: random.Random):
    p = MultiPlanner()
    capacity, bookings = {}, {}
    for index in range(rng.randint(1, 4)):
        name = f"n{index}"
        cap = rng.randint(1, 4)
        capacity[name] = cap
        p.set_capacity(name, cap)
        bookings[name] = []
        for _ in range(rng.randint(0, 5)):
            key = rng.randint(0, 6)
            start = rng.randint(0, 60)
            end = start + rng.randint(1, 25)
            n = rng.randint(1, cap)
            p.book(key, name, start, end, n)
            bookings[name].append((key, start, end, n))
    return p, capacity, bookings


def test_earliest_start_matches_brute_force():
    rng = random.Random(20240611)
    checked = 0
    for _ in range(250):
        p, capacity, bookings = _scenario(rng)
        names = list(capacity)
        whole_nodes = rng.random() < 0.5
        k = rng.randint(1, 4)
        need = {name: capacity[name] if whole_nodes else k for name in names}
        count = rng.randint(1, len(names) + 1)
        duration = rng.randint(1, 20)
        after = rng.randint(0, 70)
        horizon = max([after] + [e for b in bookings.values() for (_, _, e, _) in b])
        expected = next((t for t in range(after, horizon + 1)
                         if _brute_feasible(bookings, capacity, need, count, duration, t)), None)
        got = p.earliest_start(names, need.__getitem__, count, duration, after)
        assert got == expected, (bookings, capacity, need, count, duration, after)
        checked += expected is not None
    assert checked > 50   # the cases are not all impossible


def test_start_ranges_match_brute_force():
    rng = random.Random(77)
    for _ in range(150):
        p, capacity, bookings = _scenario(rng)
        names = list(capacity)
        k = rng.randint(1, 4)
        need = {name: min(k, capacity[name]) for name in names}
        count = rng.randint(1, len(names))
        duration = rng.randint(1, 15)
        first = rng.randint(0, 50)
        last = first + rng.randint(0, 40)
        ignore = {rng.randint(0, 6)} if rng.random() < 0.3 else set()
        visible = {name: [b for b in bookings[name] if b[0] not in ignore] for name in names}
        expected = {t for t in range(first, last + 1)
                    if _brute_feasible(visible, capacity, need, count, duration, t)}
        ranges = p.start_ranges(names, need.__getitem__, count, duration, first, last, ignore)
        got = {t for lo, hi in ranges for t in range(lo, hi + 1)}
        assert got == expected, (bookings, capacity, need, count, duration, first, last, ignore)
        # maximal, sorted and disjoint ranges
        assert ranges == sorted(ranges)
        assert all(hi + 1 < lo2 for (_, hi), (lo2, _) in zip(ranges, ranges[1:], strict=False))


# --- the vectorised whole-node path agrees with the node-by-node one ---------------------

@pytest.mark.parametrize("seed", range(25))
def test_whole_node_index_agrees_with_the_timelines(seed):
    rng = random.Random(1000 + seed)
    planner = MultiPlanner()
    names = [f"n{i}" for i in range(rng.randint(1, 40))]
    for name in names:
        planner.set_capacity(name, rng.choice([0, 1, 4, 8]))
    for key in range(rng.randint(0, 300)):
        node = rng.choice(names)
        start = rng.randrange(0, 20_000)
        planner.book(key, node, start, start + rng.randint(1, 3_000), rng.randint(1, 8))
    whole = lambda name: planner.capacity(name)  # noqa: E731 - the node-by-node path
    asked = rng.sample(names + ["unknown"], k=rng.randint(1, len(names) + 1))
    for _ in range(10):
        count = rng.randint(1, len(names) + 1)
        duration = rng.randint(1, 4_000)
        after = rng.randrange(0, 25_000)
        assert planner.earliest_start(asked, None, count, duration, after) == \
            planner.earliest_start(asked, whole, count, duration, after)
        last = after + rng.randint(0, 10_000)
        assert planner.start_ranges(asked, None, count, duration, after, last) == \
            planner.start_ranges(asked, whole, count, duration, after, last)
    assert planner.free_nodes(asked, None, 5_000, 6_000) == planner.free_nodes(asked, whole, 5_000, 6_000)
    for step in range(30):  # the index follows bookings and releases between queries
        if step % 3 == 0:
            planner.unbook(rng.randrange(0, 300))
        else:
            start = rng.randrange(0, 20_000)
            planner.book(("later", step), rng.choice(names), start, start + rng.randint(1, 3_000), 1)
        count, duration, after = rng.randint(1, len(names)), rng.randint(1, 4_000), rng.randrange(0, 25_000)
        assert planner.earliest_start(asked, None, count, duration, after) == \
            planner.earliest_start(asked, whole, count, duration, after)


def test_whole_node_index_follows_bookings_and_scales_past_its_blocks():
    planner = MultiPlanner()
    for i in range(5_000):
        planner.set_capacity(f"n{i}", 1)
        planner.book(i, f"n{i}", 0, 100 + i, 1)  # node i frees at 100 + i
    names = [f"n{i}" for i in range(5_000)]
    assert planner.earliest_start(names, None, 4_500, 10, 0) == 100 + 4_499
    planner.unbook(4_499)
    assert planner.earliest_start(names, None, 4_500, 10, 0) == 100 + 4_498  # n4499 is free now
    planner.book("late", "n0", 150, 10_000, 1)
    assert planner.earliest_start(names, None, 5_000, 10, 0) == 10_000


# --- Planner: one resource, the utilization diagram the native scheduler plans on ----------

def test_planner_adds_releases_and_answers_peaks():
    profile = Planner(10)
    profile.add(100, 200, 4)
    profile.add(150, 300, 5)
    assert profile.peak(0, 100) == 0 and profile.peak(100, 151) == 9 and profile.peak(200, 250) == 5
    assert profile.free(160) == 1 and profile.free(300) == 10
    assert profile.fits(1, 150, 200) and not profile.fits(2, 150, 200)
    profile.add(150, 300, -5)
    assert profile.peak(0, 1000) == 4


def test_planner_earliest_start():
    profile = Planner(10)
    profile.add(0, 100, 8)
    profile.add(150, 200, 10)
    assert profile.earliest(2, 50, 0) == 0
    assert profile.earliest(3, 50, 0) == 100          # fits 100..150
    assert profile.earliest(3, 51, 0) == 200          # the gap is too short
    assert profile.earliest(11, 1, 0) is None
    assert profile.earliest(3, 10, 120) == 120
    assert profile.earliest(3, 10, 160) == 200


def test_planner_agrees_with_brute_force():
    rng = random.Random(7)
    for _ in range(200):
        capacity = rng.randint(1, 8)
        profile = Planner(capacity)
        usage = [0] * 120
        for _ in range(rng.randint(0, 8)):
            start = rng.randint(0, 100)
            end = start + rng.randint(1, 20)
            amount = rng.randint(1, capacity)
            profile.add(start, end, amount)
            for t in range(start, end):
                usage[t] += amount
        amount, duration, after = rng.randint(1, capacity), rng.randint(1, 15), rng.randint(0, 60)
        expected = next(t for t in range(after, 200)
                        if all(usage[u] + amount <= capacity for u in range(t, min(t + duration, 120))))
        assert profile.earliest(amount, duration, after) == expected
        start, end = sorted(rng.sample(range(0, 121), 2))
        assert profile.peak(start, end) == max(usage[start:end])


def test_planner_prune_keeps_every_answer_from_then_on():
    rng = random.Random(11)
    profile = Planner(6)
    for _ in range(40):
        start = rng.randint(0, 200)
        profile.add(start, start + rng.randint(1, 50), rng.randint(1, 3))
    profile.add(20, 60, -1)
    before = [(profile.peak(t, t + d), profile.earliest(a, d, t))
              for t in range(100, 260, 7) for d in (1, 9, 30) for a in (1, 4)]
    size = len(profile.times)
    profile.prune(100)
    assert len(profile.times) < size
    assert before == [(profile.peak(t, t + d), profile.earliest(a, d, t))
                      for t in range(100, 260, 7) for d in (1, 9, 30) for a in (1, 4)]


def test_a_planner_built_at_once_equals_one_built_span_by_span():
    rng = random.Random(5)
    bookings = [(s, s + rng.randint(1, 50), rng.randint(1, 4)) for s in
                (rng.randint(20, 200) for _ in range(60))]
    step = Planner(10)
    for start, end, amount in bookings:
        step.add(start, end, amount)
    whole = Planner(10)
    whole.add_many(bookings)
    for start in range(0, 260, 7):
        assert whole.peak(start, start + 13) == step.peak(start, start + 13)
    assert list(whole.drops(100)) == sorted({t for t in step.times.tolist() if t > 100
                                             and step.usage[step.times.tolist().index(t)]
                                             < step.usage[step.times.tolist().index(t) - 1]})


@pytest.mark.parametrize("bookings", [20, 200])     # the short (lists) and the long (numpy) path
def test_planner_peaks_agree_with_brute_force(bookings):
    rng = random.Random(bookings)
    profile, usage = Planner(100), [0.0] * 1200
    for _ in range(bookings):
        start = rng.randint(0, 1000)
        end, amount = start + rng.randint(1, 150), rng.choice((1, 2, -1))
        profile.add(start, end, amount)
        for t in range(start, end):
            usage[t] += amount
        probe = rng.randint(0, 1100)
        assert profile.peak(probe, probe + 30) == max(usage[probe:probe + 30])
    profile.prune(500)
    assert profile.peak(600, 700) == max(usage[600:700])


# --- Planner: keyed spans, left out of a question by ``ignore`` --------------------------

def test_keyed_spans_are_released_by_key_and_left_out_by_ignore():
    planner = Planner(4)
    planner.book("a", 0, 10, 1)
    planner.book("b", 10, 20, 1)      # usage is 1 over [0, 20): no breakpoint at 10
    planner.book("c", 5, 15, 2)
    assert planner.peak(0, 20) == 3
    assert planner.peak(0, 20, ignore={"a"}) == 3
    assert planner.peak(0, 10, ignore={"a"}) == 2
    assert planner.peak(0, 5, ignore={"a"}) == 0
    assert planner.peak(12, 20, ignore={"b", "c"}) == 0
    assert planner.peak(0, 20, ignore={"unknown"}) == 3
    assert planner.earliest(4, 5, 0, ignore={"a", "b"}) == 0
    assert planner.earliest(4, 6, 0, ignore={"a", "b"}) == 15
    assert planner.earliest(4, 5, 0, ignore={"c"}) == 20
    assert planner.free_spans(3, 0, 30, ignore={"b"}) == [(0, 5), (15, 30)]
    assert planner.free_spans(2, 0, 30, ignore={"a"}) == [(0, 10), (15, 30)]
    assert planner.free_spans(2, 0, 30, ignore={"a", "b"}) == [(0, 30)]
    planner.unbook("c")
    assert planner.peak(0, 20) == 1
    planner.unbook("c")               # an unknown key: nothing happens
    assert planner.last_end() == 20


def test_released_spans_leave_no_breakpoints_behind():
    """A planner that lives as long as the daemon stays as small as what it holds."""
    rng = random.Random(3)
    planner = Planner(8)
    for key in range(500):
        start = rng.randint(0, 10_000)
        planner.book(key, start, start + rng.randint(1, 500), rng.randint(1, 4))
    planner.book("kept", 100, 200, 1)
    for key in range(500):
        planner.unbook(key)
    assert planner.times.tolist() == [0, 100, 200]
    assert planner.usage.tolist() == [0, 1, 0]


def test_prune_drops_the_spans_that_ended():
    planner = Planner(4)
    planner.book("old", 0, 50, 1)
    planner.book("running", 40, 200, 2)
    planner.prune(100)
    planner.unbook("old")             # already forgotten: changes nothing
    assert planner.peak(100, 300) == 2
    planner.unbook("running")         # only its part from the first breakpoint on
    assert planner.peak(0, 300) == 0


@pytest.mark.parametrize("seed", range(40))
def test_keyed_questions_agree_with_brute_force(seed):
    rng = random.Random(seed)
    capacity = rng.randint(1, 6)
    planner, spans = Planner(capacity), []
    for key in range(rng.randint(0, 12)):
        for _ in range(rng.randint(1, 3)):
            start = rng.randint(0, 100)
            span = (key, start, start + rng.randint(1, 30), rng.randint(1, capacity))
            spans.append(span)
            planner.book(*span)
    ignore = set(rng.sample(range(12), rng.randint(0, 4)))
    usage = [0] * 200
    for key, start, end, amount in spans:
        if key not in ignore:
            for t in range(start, end):
                usage[t] += amount
    start, end = sorted(rng.sample(range(0, 140), 2))
    assert planner.peak(start, end, ignore) == max(usage[start:end])
    amount, duration, after = rng.randint(1, capacity), rng.randint(1, 20), rng.randint(0, 100)
    expected = next(t for t in range(after, 200)
                    if all(usage[u] + amount <= capacity for u in range(t, t + duration)))
    assert planner.earliest(amount, duration, after, ignore) == expected
    free = {t for lo, hi in planner.free_spans(amount, start, end, ignore) for t in range(lo, hi)}
    assert free == {t for t in range(start, end) if usage[t] + amount <= capacity}


def test_booking_many_at_once_equals_booking_one_by_one():
    rng = random.Random(9)
    rows = [(rng.randint(0, 30), f"n{rng.randint(0, 5)}", s, s + rng.randint(1, 400), rng.randint(1, 4))
            for s in (rng.randint(1_000, 5_000) for _ in range(300))]
    one, many = MultiPlanner(), MultiPlanner()
    for planner in (one, many):
        for i in range(6):
            planner.set_capacity(f"n{i}", 8)
    for row in rows:
        one.book(*row)
    many.book_many(rows)
    names = [f"n{i}" for i in range(6)]
    for key in (3, 17):
        one.unbook(key)
        many.unbook(key)
    for after in range(0, 6_000, 250):
        assert one.earliest_start(names, None, 3, 300, after) == many.earliest_start(names, None, 3, 300, after)
        assert one.free_nodes(names, slots(2), after, after + 100, ignore=[5]) == \
            many.free_nodes(names, slots(2), after, after + 100, ignore=[5])
    assert [one.last_end(n) for n in names] == [many.last_end(n) for n in names]
    assert many.free_nodes(names, None, 0, 1_000) == names       # nothing before the first span
