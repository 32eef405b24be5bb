"""Time x resource availability: which nodes are free over a window, the
earliest start, and the ranges of feasible start times (GGF RESQUERY).

One model for everything that books capacity over time: each node keeps a
timeline of bookings (slots held over [start, end)), and every question is
answered from those timelines. Bookings carry a key (an AR id) so a
modification can be planned while ignoring the AR's own current booking.

Whole-node questions (PluS's default: an AR takes every slot of its nodes)
are answered from a free-span index over all nodes, vectorised with numpy
and rebuilt only after bookings change; requests for some slots per node
walk the timelines node by node.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Callable, Iterable

import numpy as np

INFINITY = 2 ** 62
_SHORT = 64    # breakpoints up to which a UsageProfile also answers from Python lists


@dataclass
class _Timeline:
    """The bookings of one node, sorted by start time."""

    capacity: int
    starts: list[int] = field(default_factory=list)
    items: list[tuple[int, int, int, object]] = field(default_factory=list)
    longest: int = 0

    def add(self, start: int, end: int, slots: int, key: object) -> None:
        index = bisect.bisect_right(self.starts, start)
        self.starts.insert(index, start)
        self.items.insert(index, (start, end, slots, key))
        self.longest = max(self.longest, end - start)

    def remove(self, key: object) -> None:
        kept = [item for item in self.items if item[3] != key]
        self.items = kept
        self.starts = [item[0] for item in kept]

    def overlapping(self, start: int, end: int, ignore: frozenset) -> list[tuple[int, int, int]]:
        """Bookings intersecting [start, end), clipped to it."""
        first = bisect.bisect_left(self.starts, start - self.longest)
        last = bisect.bisect_left(self.starts, end)
        return [(max(s, start), min(e, end), n)
                for s, e, n, key in self.items[first:last]
                if e > start and key not in ignore]

    def peak(self, start: int, end: int, ignore: frozenset) -> int:
        """The most slots in use at any instant of [start, end)."""
        return _peak(self.overlapping(start, end, ignore))

    def whole_free_spans(self) -> list[tuple[int, int]]:
        """Spans with no booking at all, from 0 to INFINITY."""
        spans, cursor = [], 0
        for start, end, slots, _ in self.items:
            if slots <= 0:
                continue
            if start > cursor:
                spans.append((cursor, start))
            cursor = max(cursor, end)
        spans.append((cursor, INFINITY))
        return spans

    def free_spans(self, need: int, start: int, end: int, ignore: frozenset) -> list[tuple[int, int]]:
        """Maximal spans within [start, end) where ``need`` slots stay free;
        a node without slots is never free."""
        if need > self.capacity or self.capacity <= 0:
            return []
        limit = self.capacity - need
        spans, span_start = [], start
        for time, usage in _usage_steps(self.overlapping(start, end, ignore)):
            if usage > limit and span_start is not None:
                if time > span_start:
                    spans.append((span_start, time))
                span_start = None
            elif usage <= limit and span_start is None:
                span_start = time
        if span_start is not None and end > span_start:
            spans.append((span_start, end))
        return spans


def _usage_steps(intervals: list[tuple[int, int, int]]) -> list[tuple[int, int]]:
    """(time, slots in use from then on) at each change, in time order."""
    events: dict[int, int] = {}
    for start, end, slots in intervals:
        events[start] = events.get(start, 0) + slots
        events[end] = events.get(end, 0) - slots
    steps, usage = [], 0
    for time in sorted(events):
        usage += events[time]
        steps.append((time, usage))
    return steps


def _peak(intervals: list[tuple[int, int, int]]) -> int:
    if not intervals:
        return 0
    if len(intervals) == 1:
        return intervals[0][2]
    return max(usage for _, usage in _usage_steps(intervals))


def covered_ranges(ranges: Iterable[tuple[int, int]], count: int) -> list[tuple[int, int]]:
    """Maximal closed ranges of integer times lying in at least ``count``
    of the given closed ranges: where ``count`` nodes could all start."""
    events: dict[int, int] = {}
    for first, last in ranges:
        events[first] = events.get(first, 0) + 1
        events[last + 1] = events.get(last + 1, 0) - 1
    result, depth, opened = [], 0, None
    for time in sorted(events):
        depth += events[time]
        if depth >= count and opened is None:
            opened = time
        elif depth < count and opened is not None:
            result.append((opened, time - 1))
            opened = None
    return result


def _spans_of(timelines: Iterable[tuple[int, _Timeline]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(starts, ends, owners) of the timelines' free spans, sorted by start."""
    starts, ends, owners = [], [], []
    for i, timeline in timelines:
        if timeline.capacity <= 0:
            continue
        for span_start, span_end in timeline.whole_free_spans():
            starts.append(span_start)
            ends.append(span_end)
            owners.append(i)
    order = np.argsort(np.asarray(starts, dtype=np.int64), kind="stable")
    return (np.asarray(starts, dtype=np.int64)[order], np.asarray(ends, dtype=np.int64)[order],
            np.asarray(owners, dtype=np.int64)[order])


class _FreeSpanIndex:
    """Every node's booking-free spans in three arrays sorted by span start."""

    def __init__(self, nodes: dict[str, _Timeline]) -> None:
        self.position = {name: i for i, name in enumerate(nodes)}
        self.starts, self.ends, self.owners = _spans_of(enumerate(nodes.values()))

    def update(self, changed: dict[str, _Timeline]) -> None:
        """Replace the spans of a few changed nodes: linear in the index
        size instead of a full rebuild's sort."""
        dropped = np.zeros(len(self.position), dtype=bool)
        dropped[[self.position[name] for name in changed]] = True
        keep = ~dropped[self.owners]
        starts, ends, owners = self.starts[keep], self.ends[keep], self.owners[keep]
        new_starts, new_ends, new_owners = _spans_of(
            (self.position[name], timeline) for name, timeline in changed.items())
        at = np.searchsorted(starts, new_starts, side="right")
        self.starts = np.insert(starts, at, new_starts)
        self.ends = np.insert(ends, at, new_ends)
        self.owners = np.insert(owners, at, new_owners)

    def start_candidates(self, names: Iterable[str], duration: int,
                         after: int) -> tuple[np.ndarray, np.ndarray]:
        """Per free span of the named nodes long enough for ``duration``:
        its first and last feasible start at or after ``after``; the first
        starts come out sorted."""
        wanted = np.zeros(len(self.position), dtype=bool)
        wanted[[self.position[n] for n in names if n in self.position]] = True
        first = np.maximum(self.starts, after)
        last = self.ends - duration
        keep = (last >= first) & wanted[self.owners]
        return first[keep], last[keep]


def _first_covered(first: np.ndarray, last: np.ndarray, count: int) -> int | None:
    """The earliest time in at least ``count`` of the closed ranges
    [first[i], last[i]], with ``first`` sorted. Such a time is some first[j];
    try the earliest candidates in growing blocks (cheap when the answer is
    near, as it usually is), then all of them at once."""
    total = len(first)
    block = 256
    while block < 4096 and block < total:
        candidates = first[:block]
        prefix = int(np.searchsorted(first, candidates[-1], side="right"))
        covering = (first[:prefix, None] <= candidates) & (last[:prefix, None] >= candidates)
        hits = np.flatnonzero(covering.sum(axis=0) >= count)
        if hits.size:
            return int(candidates[hits[0]])
        block *= 4
    if total == 0:
        return None
    depth = np.searchsorted(first, first, side="right") - np.searchsorted(np.sort(last), first, side="left")
    hits = np.flatnonzero(depth >= count)
    return int(first[hits[0]]) if hits.size else None


class Planner:
    """Availability of named nodes over time.

    ``need(node)`` gives the slots a request wants on a node; None means
    whole nodes, which takes the vectorised path."""

    def __init__(self) -> None:
        self._nodes: dict[str, _Timeline] = {}
        self._keys: dict[object, set[str]] = {}
        self._index: _FreeSpanIndex | None = None
        self._dirty: set[str] = set()

    def _changed(self, node: str) -> None:
        """Note a node whose bookings or slots changed; a new node means a
        new index, a known one only an update at the next query."""
        if self._index is not None and node not in self._index.position:
            self._index = None
        self._dirty.add(node)

    def _free_span_index(self) -> _FreeSpanIndex:
        if self._index is None or len(self._dirty) > len(self._nodes) // 8:
            self._index = _FreeSpanIndex(self._nodes)
        elif self._dirty:
            self._index.update({name: self._nodes[name] for name in self._dirty})
        self._dirty.clear()
        return self._index

    def set_capacity(self, node: str, slots: int) -> None:
        """Declare a node (or change its slot count), keeping its bookings."""
        timeline = self._nodes.get(node)
        if timeline is None:
            self._nodes[node] = _Timeline(slots)
        elif timeline.capacity != slots:
            timeline.capacity = slots
        else:
            return
        self._changed(node)

    def capacity(self, node: str) -> int:
        return self._nodes[node].capacity if node in self._nodes else 0

    def book(self, key: object, node: str, start: int, end: int, slots: int) -> None:
        if node not in self._nodes:
            self._nodes[node] = _Timeline(0)
        self._nodes[node].add(start, end, slots, key)
        self._keys.setdefault(key, set()).add(node)
        self._changed(node)

    def unbook(self, key: object) -> None:
        for node in self._keys.pop(key, ()):
            self._nodes[node].remove(key)
            self._changed(node)

    def _slots(self, need: Callable[[str], int] | None) -> Callable[[str], int]:
        return need if need is not None else (lambda name: self._nodes[name].capacity)

    def peak(self, node: str, start: int, end: int, ignore: Iterable = ()) -> int:
        """Most slots of ``node`` booked at once during [start, end)."""
        timeline = self._nodes.get(node)
        return timeline.peak(start, end, frozenset(ignore)) if timeline else 0

    def fits(self, node: str, slots: int, start: int, end: int, ignore: Iterable = ()) -> bool:
        timeline = self._nodes.get(node)
        if timeline is None:
            return False
        return timeline.peak(start, end, frozenset(ignore)) + slots <= timeline.capacity

    def free_nodes(self, nodes: Iterable[str], need: Callable[[str], int] | None,
                   start: int, end: int, ignore: Iterable = ()) -> list[str]:
        """The given nodes (order kept) with ``need(node)`` slots free over [start, end)."""
        skip = frozenset(ignore)
        need = self._slots(need)
        free = []
        for name in nodes:
            timeline = self._nodes.get(name)
            if timeline is not None and timeline.capacity > 0 and \
                    timeline.peak(start, end, skip) + need(name) <= timeline.capacity:
                free.append(name)
        return free

    def start_ranges(self, nodes: Iterable[str], need: Callable[[str], int] | None, count: int,
                     duration: int, first: int, last: int,
                     ignore: Iterable = ()) -> list[tuple[int, int]]:
        """Closed ranges of start times in [first, last] at which ``count`` of
        the nodes each have ``need(node)`` slots free for ``duration`` seconds."""
        skip = frozenset(ignore)
        if need is None and not skip:
            starts, ends = self._free_span_index().start_candidates(nodes, duration, first)
            keep = starts <= last
            return covered_ranges(zip(starts[keep].tolist(), np.minimum(ends[keep], last).tolist()),
                                  count)
        need = self._slots(need)
        ranges = []
        for name in nodes:
            timeline = self._nodes.get(name)
            if timeline is None:
                continue
            for span_start, span_end in timeline.free_spans(need(name), first, last + duration, skip):
                if span_end - span_start >= duration:
                    ranges.append((span_start, span_end - duration))
        return covered_ranges(ranges, count)

    def earliest_start(self, nodes: Iterable[str], need: Callable[[str], int] | None, count: int,
                       duration: int, after: int, ignore: Iterable = ()) -> int | None:
        """The first time at or after ``after`` when ``count`` nodes are free
        together for ``duration``; None when not enough nodes could ever be."""
        if need is None and not ignore:
            starts, ends = self._free_span_index().start_candidates(nodes, duration, after)
            return _first_covered(starts, ends, count)
        names = list(nodes)
        horizon = max([after] + [self.last_end(name) for name in names])
        ranges = self.start_ranges(names, need, count, duration, after, horizon, ignore)
        return ranges[0][0] if ranges else None

    def last_end(self, node: str) -> int:
        """When the last booking of ``node`` ends (0 without bookings)."""
        timeline = self._nodes.get(node)
        return max((item[1] for item in timeline.items), default=0) if timeline else 0


class UsageProfile:
    """One resource's usage over time, the resource utilization diagram of
    seed 001: sorted breakpoints and the usage from each one on, updated per
    booking and queried with numpy. The scheduler asks it, for every job of
    a pass, whether an amount fits now and when it fits earliest."""

    def __init__(self, capacity: float) -> None:
        self.capacity = capacity
        self.times = np.zeros(1, dtype=np.int64)
        self.usage = np.zeros(1, dtype=np.float64)
        self._lists: tuple[list[int], list[float]] | None = None

    @classmethod
    def of(cls, capacity: float, bookings: Iterable[tuple[int, int, float]]) -> UsageProfile:
        """A profile holding many bookings (start, end, amount) at once: one
        sort instead of an insertion per booking."""
        events: dict[int, float] = {0: 0.0}
        for start, end, amount in bookings:
            if end > start:
                events[start] = events.get(start, 0.0) + amount
                events[end] = events.get(end, 0.0) - amount
        profile = cls(capacity)
        times = sorted(events)
        profile.times = np.asarray(times, dtype=np.int64)
        profile.usage = np.cumsum(np.asarray([events[t] for t in times], dtype=np.float64))
        return profile

    def _short(self) -> tuple[list[int], list[float]] | None:
        """The diagram as Python lists while it is short: a bisect on a short
        list costs a fraction of numpy's overhead per call (a scheduling
        pass asks small diagrams millions of questions)."""
        if self._lists is None and len(self.times) <= _SHORT:
            self._lists = (self.times.tolist(), self.usage.tolist())
        return self._lists

    def drops(self, after: int) -> np.ndarray:
        """The instants after ``after`` at which usage goes down."""
        times = self.times[1:][self.usage[1:] < self.usage[:-1]]
        return times[times > after]

    def _index(self, time: int) -> int:
        """The breakpoint whose segment holds ``time``."""
        return int(self.times.searchsorted(time, "right")) - 1

    def _breakpoint(self, time: int) -> int:
        """The index of a breakpoint at ``time``, inserted if missing
        (concatenate: np.insert's generality costs more than the copy)."""
        index = self._index(time)
        if self.times[index] == time:
            return index
        at = index + 1
        self.times = np.concatenate((self.times[:at], (time,), self.times[at:]))
        self.usage = np.concatenate((self.usage[:at], self.usage[index:at], self.usage[at:]))
        return at

    def add(self, start: int, end: int, amount: float) -> None:
        """Book ``amount`` over [start, end); a negative amount releases."""
        if end <= start:
            return
        first = self._breakpoint(start)
        last = self._breakpoint(end)
        self.usage[first:last] += amount
        self._lists = None

    def prune(self, before: int) -> None:
        """Forget the past (breakpoints before ``before`` collapse into one)
        and the breakpoints released bookings left without a change."""
        index = max(self._index(before), 0)
        times, usage = self.times[index:], self.usage[index:]
        keep = np.concatenate(((True,), usage[1:] != usage[:-1]))
        self.times, self.usage = times[keep], usage[keep]
        self._lists = None

    def peak(self, start: int, end: int) -> float:
        """The most in use at any instant of [start, end)."""
        short = self._short()
        if short is not None:
            times, usage = short
            first = max(bisect.bisect_right(times, start) - 1, 0)
            return max(usage[first:max(bisect.bisect_left(times, end), first + 1)])
        first = max(self._index(start), 0)
        last = int(self.times.searchsorted(end, "left"))
        return float(self.usage[first:max(last, first + 1)].max())

    def free(self, at: int) -> float:
        return self.capacity - float(self.usage[self._index(at)])

    def fits(self, amount: float, start: int, end: int) -> bool:
        return self.peak(start, end) + amount <= self.capacity

    def earliest(self, amount: float, duration: int, after: int) -> int | None:
        """The first time at or after ``after`` from which ``amount`` stays
        free for ``duration``; None if it never fits."""
        limit = self.capacity - amount
        if limit < 0:
            return None
        first = max(self._index(after), 0)
        usage = self.usage[first:]
        times = self.times[first:].copy()
        times[0] = max(times[0], after)
        bad = usage > limit
        runs = np.flatnonzero(~bad & np.concatenate(([True], bad[:-1])))
        blocked = np.flatnonzero(bad)
        following = np.searchsorted(blocked, runs)
        ends = np.full(len(runs), INFINITY, dtype=np.int64)
        inside = following < len(blocked)
        ends[inside] = times[blocked[following[inside]]]
        long_enough = np.flatnonzero(ends - times[runs] >= duration)
        return int(times[runs[long_enough[0]]]) if long_enough.size else None
