"""Time x resource availability: the one model of everything that books
capacity over time, shaped like flux-sched's resource planner.

``Planner`` is one resource (a node's slots, a consumable of a container, a
parallel environment's slots): a capacity and the step function of its
usage over time (seed 001's resource utilization diagram), to which keyed
spans (an AR's booking) and anonymous amounts (a scheduling pass's jobs) are
added. It answers what every user of the model asks: the peak over a
window, whether an amount fits, the earliest start, the spans where an
amount stays free, the instants where usage drops. A question may leave out
the spans of some keys, so an AR's move is planned without its own booking.

``MultiPlanner`` composes named planners (a cluster's nodes), as
flux-sched's planner_multi composes one planner per resource type, and
answers the questions about several at once: which of them are free over a
window, and the earliest start and the ranges of start times (GGF
RESQUERY) at which a count of them are free together. Whole-node questions
are answered from a free-span index over all planners, vectorised with
numpy and updated only for the planners that changed.

The reservation manager plans ARs on a MultiPlanner of the nodes; the
native scheduler plans jobs, ``-R y`` reservations and AR slots on Planners
of its hosts, consumables and parallel environments.
"""

from __future__ import annotations

import bisect
from typing import Callable, Iterable

import numpy as np

INFINITY = 2 ** 62
_SHORT = 64    # breakpoints up to which a Planner also answers peaks from Python lists

Span = tuple[int, int, float]      # [start, end) holding an amount


def _runs(times: np.ndarray, good: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The maximal runs of consecutive segments where ``good`` holds, as
    (start times, end times); a run reaching the last segment ends at
    INFINITY. Segment i covers [times[i], times[i + 1])."""
    bad = ~good
    first = np.flatnonzero(good & np.concatenate(([True], bad[:-1])))
    blocked = np.flatnonzero(bad)
    following = np.searchsorted(blocked, first)
    ends = np.full(len(first), INFINITY, dtype=np.int64)
    inside = following < len(blocked)
    ends[inside] = times[blocked[following[inside]]]
    return times[first], ends


def _without(times: np.ndarray, usage: np.ndarray, spans: list[Span],
             end: int) -> tuple[np.ndarray, np.ndarray]:
    """A window of the step function with the amounts of ``spans`` taken
    out: their ends become breakpoints, so each segment lies wholly inside
    or outside each span."""
    bounds = [t for span in spans for t in span[:2] if times[0] < t < end]
    if bounds:
        split = np.union1d(times, bounds)
        usage = usage[np.searchsorted(times, split, "right") - 1]
        times = split
    else:
        usage = usage.copy()
    for start, stop, amount in spans:
        usage[(times >= start) & (times < stop)] -= amount
    return times, usage


class Planner:
    """One resource's usage over time: sorted breakpoints and the usage from
    each one on, changed per span and queried with numpy. Unbooking drops
    the breakpoints a span leaves without a change of usage, so a planner
    that lives as long as the daemon stays as small as what it holds;
    anonymous amounts are cleared by ``prune``."""

    def __init__(self, capacity: float = 0) -> None:
        self.capacity = capacity
        self.times = np.zeros(1, dtype=np.int64)
        self.usage = np.zeros(1, dtype=np.float64)
        self._origin = 0             # the first breakpoint's time, as a Python int
        self._spans: dict[object, tuple[Span, ...]] = {}    # tuples: most keys hold one span
        self._lists: tuple[list[int], list[float]] | None = None

    # -- changes ---------------------------------------------------------------------------

    def add(self, start: int, end: int, amount: float) -> None:
        """Add ``amount`` over [start, end) under no key; a negative amount
        releases. Time before the first breakpoint (forgotten by ``prune``)
        is not changed."""
        if start < self._origin:
            start = self._origin
        if end <= start:
            return
        first = self._breakpoint(start)
        last = self._breakpoint(end)
        self.usage[first:last] += amount
        self._lists = None

    def add_many(self, spans: Iterable[Span]) -> None:
        """Add many anonymous spans with one sort instead of an insertion each."""
        self._add_events(spans)

    def book(self, key: object, start: int, end: int, amount: float) -> None:
        """Add a span under ``key``, to be released by ``unbook(key)`` or left
        out of a question by ``ignore``."""
        if end > start:
            self._spans[key] = self._spans.get(key, ()) + ((start, end, amount),)
            self.add(start, end, amount)

    def book_many(self, spans: Iterable[tuple[object, int, int, float]]) -> None:
        """``book`` for many (key, start, end, amount), with one sort."""
        kept, held = [], self._spans
        for key, start, end, amount in spans:
            if end > start:
                span = (start, end, amount)
                held[key] = held.get(key, ()) + (span,)
                kept.append(span)
        self._add_events(kept)

    def snapshot(self, capacity: float) -> Planner:
        """A planner with this one's usage and ``capacity``, without its keys:
        a scheduling pass books its jobs on it and leaves this one as it was."""
        twin = Planner(capacity)
        twin.times, twin.usage, twin._origin = self.times.copy(), self.usage.copy(), self._origin
        return twin

    def unbook(self, key: object) -> None:
        """Release the spans of ``key``, and the breakpoints they leave
        without a change of usage."""
        for start, end, amount in self._spans.pop(key, ()):
            self.remove(start, end, amount)

    def remove(self, start: int, end: int, amount: float) -> None:
        """Take back an anonymous ``add``, and the breakpoints it leaves
        without a change of usage."""
        self.add(start, end, -amount)
        self._merge(end)
        self._merge(start)

    def prune(self, before: int) -> None:
        """Forget the past: breakpoints before ``before`` collapse into one,
        and spans that ended by then are dropped."""
        index = max(self._index(before), 0)
        self.times, self.usage = self.times[index:], self.usage[index:]
        self._origin = self.times.item(0)
        self._spans = {key: kept for key, spans in self._spans.items()
                       if (kept := tuple(span for span in spans if span[1] > before))}
        self._lists = None

    def _add_events(self, spans: Iterable[Span]) -> None:
        events: dict[int, float] = {self._origin: 0.0}
        for start, end, amount in spans:
            start = max(start, self._origin)
            if end > start:
                events[start] = events.get(start, 0.0) + amount
                events[end] = events.get(end, 0.0) - amount
        if len(events) == 1:
            return
        if len(self.times) > 1 or self.usage.item(0):
            previous = 0.0
            for time, used in zip(self.times.tolist(), self.usage.tolist(), strict=True):
                events[time] = events.get(time, 0.0) + used - previous
                previous = used
        times = sorted(events)
        usage = np.cumsum(np.asarray([events[t] for t in times], dtype=np.float64))
        keep = np.concatenate(((True,), usage[1:] != usage[:-1]))
        self.times, self.usage = np.asarray(times, dtype=np.int64)[keep], usage[keep]
        self._lists = None

    def _index(self, time: int) -> int:
        """The breakpoint whose segment holds ``time``."""
        return int(self.times.searchsorted(time, "right")) - 1

    def _breakpoint(self, time: int) -> int:
        """The index of a breakpoint at ``time``, inserted if missing
        (concatenate: np.insert's generality costs more than the copy)."""
        index = self._index(time)
        if self.times.item(index) == time:
            return index
        at = index + 1
        self.times = np.concatenate((self.times[:at], (time,), self.times[at:]))
        self.usage = np.concatenate((self.usage[:at], self.usage[index:at], self.usage[at:]))
        return at

    def _merge(self, time: int) -> None:
        """Drop the breakpoint at ``time`` if usage does not change there."""
        index, usage = self._index(time), self.usage
        if index > 0 and self.times.item(index) == time and usage.item(index) == usage.item(index - 1):
            self.times = np.concatenate((self.times[:index], self.times[index + 1:]))
            self.usage = np.concatenate((usage[:index], usage[index + 1:]))
            self._lists = None

    # -- questions -------------------------------------------------------------------------

    def _short(self) -> tuple[list[int], list[float]] | None:
        """The step function as Python lists while it is short: a bisect on a
        short list costs a fraction of numpy's overhead per call (a
        scheduling pass asks small diagrams millions of questions)."""
        if self._lists is None and len(self.times) <= _SHORT:
            self._lists = (self.times.tolist(), self.usage.tolist())
        return self._lists

    def keys(self) -> list[object]:
        """The keys holding spans here."""
        return list(self._spans)

    def _ignored(self, ignore: Iterable) -> list[Span]:
        if not self._spans:
            return []
        return [span for key in ignore for span in self._spans.get(key, ())]

    def _window(self, start: int, end: int, ignore: Iterable) -> tuple[np.ndarray, np.ndarray]:
        """The segments meeting [start, end), the first one starting at
        ``start``, without the spans of the keys in ``ignore``."""
        first = max(self._index(start), 0)
        last = max(int(self.times.searchsorted(end, "left")), first + 1)
        times, usage = self.times[first:last].copy(), self.usage[first:last]
        times[0] = start
        spans = self._ignored(ignore)
        if spans:
            return _without(times, usage, spans, end)
        return times, usage

    def peak(self, start: int, end: int, ignore: Iterable = ()) -> float:
        """The most in use at any instant of [start, end)."""
        if ignore and self._spans and self._ignored(ignore):
            return float(self._window(start, end, ignore)[1].max())
        short = self._lists or self._short()
        if short is not None:
            times, usage = short
            first = max(bisect.bisect_right(times, start) - 1, 0)
            return max(usage[first:max(bisect.bisect_left(times, end), first + 1)])
        first = max(self._index(start), 0)
        last = int(self.times.searchsorted(end, "left"))
        return float(self.usage[first:max(last, first + 1)].max())

    def free(self, at: int) -> float:
        return self.capacity - float(self.usage[max(self._index(at), 0)])

    def fits(self, amount: float, start: int, end: int, ignore: Iterable = ()) -> bool:
        return self.peak(start, end, ignore) + amount <= self.capacity

    def earliest(self, amount: float, duration: int, after: int, ignore: Iterable = ()) -> int | None:
        """The first time at or after ``after`` from which ``amount`` stays
        free for ``duration``; None if it never fits."""
        limit = self.capacity - amount
        if limit < 0:
            return None
        times, usage = self._window(after, INFINITY, ignore)
        starts, ends = _runs(times, usage <= limit)
        long_enough = np.flatnonzero(ends - starts >= duration)
        return int(starts[long_enough[0]]) if long_enough.size else None

    def free_spans(self, amount: float, start: int, end: int,
                   ignore: Iterable = ()) -> list[tuple[int, int]]:
        """Maximal spans within [start, end) where ``amount`` stays free; a
        resource without capacity is never free."""
        if amount > self.capacity or self.capacity <= 0:
            return []
        times, usage = self._window(start, end, ignore)
        starts, ends = _runs(times, usage <= self.capacity - amount)
        return [(s, min(e, end)) for s, e in zip(starts.tolist(), ends.tolist(), strict=True) if s < end]

    def idle_spans(self) -> tuple[np.ndarray, np.ndarray]:
        """(starts, ends) of the spans with nothing in use, up to INFINITY."""
        return _runs(self.times, self.usage <= 0)

    def drops(self, after: int) -> np.ndarray:
        """The instants after ``after`` at which usage goes down."""
        times = self.times[1:][self.usage[1:] < self.usage[:-1]]
        return times[times > after]

    def last_end(self) -> int:
        """When the last use ends (0 if nothing is in use)."""
        used = np.flatnonzero(self.usage)
        if not used.size:
            return 0
        after = int(used[-1]) + 1
        return int(self.times[after]) if after < len(self.times) else INFINITY


def inside(capacity: int, start: int, end: int,
           bookings: Iterable[tuple[object, int, int, int]]) -> Planner:
    """The slots an AR holds on one node (``capacity`` over [start, end)),
    with the bookings (key, start, end, slots) of the ARs placed inside it
    (ResAccess): before and after its window nothing is free."""
    planner = Planner(capacity)
    planner.book_many([("before", 0, start, capacity), ("after", end, INFINITY, capacity),
                       *bookings])
    return planner


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


def _spans_of(planners: Iterable[tuple[int, Planner]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(starts, ends, owners) of the planners' idle spans, sorted by start."""
    starts, ends, owners = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)], []
    for i, planner in planners:
        if planner.capacity <= 0:
            continue
        span_starts, span_ends = planner.idle_spans()
        starts.append(span_starts)
        ends.append(span_ends)
        owners.append(np.full(len(span_starts), i, dtype=np.int64))
    starts, ends = np.concatenate(starts), np.concatenate(ends)
    owners = np.concatenate(owners) if owners else np.zeros(0, dtype=np.int64)
    order = np.argsort(starts, kind="stable")
    return starts[order], ends[order], owners[order]


class _FreeSpanIndex:
    """Every planner's idle spans in three arrays sorted by span start."""

    def __init__(self, planners: dict[str, Planner]) -> None:
        self.position = {name: i for i, name in enumerate(planners)}
        self.starts, self.ends, self.owners = _spans_of(enumerate(planners.values()))

    def update(self, changed: dict[str, Planner]) -> None:
        """Replace the spans of a few changed planners: linear in the index
        size instead of a full rebuild's sort."""
        dropped = np.zeros(len(self.position), dtype=bool)
        dropped[[self.position[name] for name in changed]] = True
        keep = ~dropped[self.owners]
        starts, ends, owners = self.starts[keep], self.ends[keep], self.owners[keep]
        new_starts, new_ends, new_owners = _spans_of(
            (self.position[name], planner) for name, planner in changed.items())
        at = np.searchsorted(starts, new_starts, side="right")
        self.starts = np.insert(starts, at, new_starts)
        self.ends = np.insert(ends, at, new_ends)
        self.owners = np.insert(owners, at, new_owners)

    def start_candidates(self, names: Iterable[str], duration: int,
                         after: int) -> tuple[np.ndarray, np.ndarray]:
        """Per idle span of the named planners long enough for ``duration``:
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


class MultiPlanner:
    """Named planners (a cluster's nodes, by name) and the questions about
    several of them at once.

    ``need(name)`` gives the amount a request wants of each; None means all
    of it (whole nodes), which takes the vectorised path."""

    def __init__(self) -> None:
        self._planners: dict[str, Planner] = {}
        self._keys: dict[object, set[str]] = {}
        self._index: _FreeSpanIndex | None = None
        self._dirty: set[str] = set()

    def _changed(self, name: str) -> None:
        """Note a planner whose spans or capacity changed; a new one means a
        new index, a known one only an update at the next question."""
        if self._index is not None and name not in self._index.position:
            self._index = None
        self._dirty.add(name)

    def _free_span_index(self) -> _FreeSpanIndex:
        if self._index is None or len(self._dirty) > len(self._planners) // 8:
            self._index = _FreeSpanIndex(self._planners)
        elif self._dirty:
            self._index.update({name: self._planners[name] for name in self._dirty})
        self._dirty.clear()
        return self._index

    def _planner(self, name: str) -> Planner:
        """The planner called ``name``; one without capacity if unknown."""
        planner = self._planners.get(name)
        if planner is None:
            planner = self._planners[name] = Planner(0)
        return planner

    def set_capacity(self, name: str, capacity: int) -> None:
        """Declare a planner (or change its capacity), keeping its spans."""
        planner = self._planners.get(name)
        if planner is not None and planner.capacity == capacity:
            return
        self._planner(name).capacity = capacity
        self._changed(name)

    def capacity(self, name: str) -> int:
        return self._planners[name].capacity if name in self._planners else 0

    def book(self, key: object, name: str, start: int, end: int, amount: int) -> None:
        self._planner(name).book(key, start, end, amount)
        self._keys.setdefault(key, set()).add(name)
        self._changed(name)

    def book_many(self, spans: Iterable[tuple[object, str, int, int, int]]) -> None:
        """``book`` for many (key, name, start, end, amount), one sort per
        planner: how a daemon takes its stored ARs in at start."""
        by_name: dict[str, list[tuple[object, int, int, int]]] = {}
        for key, name, start, end, amount in spans:
            by_name.setdefault(name, []).append((key, start, end, amount))
            self._keys.setdefault(key, set()).add(name)
        for name, found in by_name.items():
            self._planner(name).book_many(found)
            self._changed(name)

    def unbook(self, key: object) -> None:
        for name in self._keys.pop(key, ()):
            self._planners[name].unbook(key)
            self._changed(name)

    def keys_on(self, name: str) -> list[object]:
        """The keys with spans on ``name``."""
        planner = self._planners.get(name)
        return planner.keys() if planner else []

    def _needs(self, need: Callable[[str], int] | None) -> Callable[[str], int]:
        return need if need is not None else (lambda name: self._planners[name].capacity)

    def peak(self, name: str, start: int, end: int, ignore: Iterable = ()) -> float:
        """Most of ``name`` in use at once during [start, end)."""
        planner = self._planners.get(name)
        return planner.peak(start, end, ignore) if planner else 0

    def fits(self, name: str, amount: int, start: int, end: int, ignore: Iterable = ()) -> bool:
        planner = self._planners.get(name)
        return planner is not None and planner.fits(amount, start, end, ignore)

    def free(self, name: str, start: int, end: int, ignore: Iterable = ()) -> int:
        """What of ``name`` is free through all of [start, end)."""
        planner = self._planners.get(name)
        if planner is None:
            return 0
        return max(0, int(planner.capacity - planner.peak(start, end, ignore)))

    def free_nodes(self, names: Iterable[str], need: Callable[[str], int] | None,
                   start: int, end: int, ignore: Iterable = ()) -> list[str]:
        """The given names (order kept) with ``need(name)`` free over [start, end)."""
        skip = frozenset(ignore)
        need = self._needs(need)
        free = []
        for name in names:
            planner = self._planners.get(name)
            if planner is not None and planner.capacity > 0 and \
                    planner.fits(need(name), start, end, skip):
                free.append(name)
        return free

    def start_ranges(self, names: Iterable[str], need: Callable[[str], int] | None, count: int,
                     duration: int, first: int, last: int,
                     ignore: Iterable = ()) -> list[tuple[int, int]]:
        """Closed ranges of start times in [first, last] at which ``count`` of
        the named planners each have ``need(name)`` free for ``duration`` seconds."""
        skip = frozenset(ignore)
        if need is None and not skip:
            starts, ends = self._free_span_index().start_candidates(names, duration, first)
            keep = starts <= last
            return covered_ranges(zip(starts[keep].tolist(), np.minimum(ends[keep], last).tolist(), strict=True),
                                  count)
        need = self._needs(need)
        return covered_ranges((found for name in names
                               for found in self.node_ranges(name, need(name), duration, first,
                                                             last, skip)), count)

    def node_ranges(self, name: str, amount: int, duration: int, first: int, last: int,
                    ignore: Iterable = ()) -> list[tuple[int, int]]:
        """Closed ranges of start times in [first, last] at which ``amount``
        of ``name`` stays free for ``duration`` seconds."""
        planner = self._planners.get(name)
        if planner is None:
            return []
        return [(start, end - duration)
                for start, end in planner.free_spans(amount, first, last + duration, ignore)
                if end - start >= duration]

    def earliest_start(self, names: Iterable[str], need: Callable[[str], int] | None, count: int,
                       duration: int, after: int, ignore: Iterable = ()) -> int | None:
        """The first time at or after ``after`` when ``count`` of the named
        planners are free together for ``duration``; None when not enough
        could ever be."""
        if need is None and not ignore:
            starts, ends = self._free_span_index().start_candidates(names, duration, after)
            return _first_covered(starts, ends, count)
        names = list(names)
        horizon = max([after] + [self.last_end(name) for name in names])
        ranges = self.start_ranges(names, need, count, duration, after, horizon, ignore)
        return ranges[0][0] if ranges else None

    def last_end(self, name: str) -> int:
        """When the last span of ``name`` ends (0 without spans)."""
        planner = self._planners.get(name)
        return planner.last_end() if planner else 0
