"""``type: limits``: site limits checked once per request: how far ahead and
how long, how many ARs at once per user and per group, and a monthly
node-hour quota per group; a group's figures count all its members' ARs."""

from __future__ import annotations

import datetime as dt
from typing import Iterable

from overlay.api.plugin import Check, PolicyContext, Request, Reservation, hookimpl
from overlay_policies.settings import AMOUNT, COUNT, DURATION, HOUR, NAME, Section, readable

ANY_GROUP = "*"


def months(start: int, end: int) -> list[tuple[str, int, int]]:
    """The calendar months, in local time, that [start, end) touches: (YYYY-MM,
    first second, first second of the next month)."""
    day = dt.datetime.fromtimestamp(start)
    first = dt.datetime(day.year, day.month, 1)
    result = []
    while True:
        following = dt.datetime(first.year + first.month // 12, first.month % 12 + 1, 1)
        result.append((f"{first:%Y-%m}", int(first.timestamp()), int(following.timestamp())))
        if following.timestamp() >= end:
            return result
        first = following


PerGroup = dict[str, float]


def per_group(section: Section, name: str, check: Check) -> float | PerGroup | None:
    """A per-group figure: one value (the "*" of every owner's primary group)
    or a mapping of group names, and "*", to values."""
    if not isinstance(section.values.get(name), dict):
        accepted = (f"{check.accepted}, or a mapping of group names (and \"*\" for a primary "
                    "group not listed) to such values")
        return section.get(name, Check(accepted, check.convert))
    figures = section.section(name, None)
    for group in figures.values:
        if group != ANY_GROUP and NAME.convert(group) is None:
            raise ValueError(f"{figures.path}: invalid group {group!r}; expected a group name, "
                             "or \"*\" for a primary group not listed")
    return {group: figures.get(group, check) for group in figures.values}


def by_group(figures: float | PerGroup | None) -> PerGroup:
    """A per-group figure as a mapping: one value is "*"'s."""
    if figures is None:
        return {}
    return figures if isinstance(figures, dict) else {ANY_GROUP: figures}


def applying(figures: PerGroup, groups: tuple[str, ...]) -> list[tuple[str, float]]:
    """The (group, value)s that bind an owner of ``groups`` (primary first):
    each of their groups listed, primary or supplementary, and "*" for the
    primary group when it is not listed (not for supplementary groups, where
    it would cap every member of a catch-all group such as "users")."""
    bound = [(group, figures[group]) for group in groups if group in figures]
    if groups and groups[0] not in figures and ANY_GROUP in figures:
        bound.insert(0, (groups[0], figures[ANY_GROUP]))
    return bound


class Limits:
    """Each limit is optional; reaching one exactly is allowed.

    ``max_advance``: the start at most this far after now. ``max_duration``:
    the window at most this long. ``max_concurrent_per_user``: the owner's
    ARs (holding states) overlapping the requested window, this one
    included. The per-group limits bind every group of the owner that they
    list, primary or supplementary, and "*" the primary group when it is
    not listed; a group's figure counts the ARs of every owner who is a
    member of it now (context.group_ars). ``max_concurrent_per_group``: the
    group's ARs (holding states) overlapping the window, this one included.
    ``node_hours_per_month``: in every calendar month (local time) the
    window touches, the node-hours of the group's ARs inside that month
    (every AR the daemon still keeps but cancelled ones, clipped to the
    month) plus this request's nodes x its hours inside the month. An owner
    without a group is not subject to the group limits."""

    KEYS = ("max_advance", "max_duration", "max_concurrent_per_user", "max_concurrent_per_group",
            "node_hours_per_month")

    def __init__(self, max_advance: int | None = None, max_duration: int | None = None,
                 max_concurrent_per_user: int | None = None,
                 max_concurrent_per_group: int | PerGroup | None = None,
                 node_hours_per_month: float | PerGroup | None = None) -> None:
        self.max_advance = max_advance
        self.max_duration = max_duration
        self.max_concurrent_per_user = max_concurrent_per_user
        self.max_concurrent_per_group = by_group(max_concurrent_per_group)
        self.node_hours_per_month = by_group(node_hours_per_month)

    def look_back(self) -> int:
        """How long ago an AR may have ended and still count: a month's
        quota reaches back to the 1st (31 days at most)."""
        return 31 * 86400 if self.node_hours_per_month else 0

    @classmethod
    def from_settings(cls, section: Section) -> "Limits":
        return cls(section.get("max_advance", DURATION), section.get("max_duration", DURATION),
                   section.get("max_concurrent_per_user", COUNT),
                   per_group(section, "max_concurrent_per_group", COUNT),
                   per_group(section, "node_hours_per_month", AMOUNT))

    @hookimpl
    def plus_validate_request(self, request: Request, owner: str, groups: tuple[str, ...],
                              context: PolicyContext) -> str | None:
        lead = request.start - context.now
        if self.max_advance is not None and lead > self.max_advance:
            return f"start {readable(lead)} ahead is beyond max_advance {readable(self.max_advance)}"
        if self.max_duration is not None and request.duration > self.max_duration:
            return (f"duration {readable(request.duration)} is beyond max_duration "
                    f"{readable(self.max_duration)}")
        if self.max_concurrent_per_user is not None:
            count = 1 + _overlapping(request, [ar for ar in context.reservations if ar.owner == owner])
            if count > self.max_concurrent_per_user:
                return (f"this request would make {count} ARs of {owner} overlapping the window; "
                        f"max_concurrent_per_user is {self.max_concurrent_per_user}")
        return self.group_limits(request, groups, context)

    def group_limits(self, request: Request, groups: tuple[str, ...],
                     context: PolicyContext) -> str | None:
        """max_concurrent_per_group, then node_hours_per_month, for every
        group of the owner that they bind."""
        for group, limit in applying(self.max_concurrent_per_group, groups):
            count = 1 + _overlapping(request, context.group_ars(group))
            if count > limit:
                return (f"this request would make {count} ARs of group {group} overlapping the "
                        f"window; max_concurrent_per_group is {limit}")
        for group, limit in applying(self.node_hours_per_month, groups):
            refusal = self.monthly(request, group, limit, context)
            if refusal:
                return refusal
        return None

    @staticmethod
    def monthly(request: Request, group: str, limit: float, context: PolicyContext) -> str | None:
        """node_hours_per_month's ``limit`` for ``group``, month by month."""
        spans = months(request.start, request.end)
        first, last = spans[0][1], spans[-1][2]
        windows = [(request.start, request.end, request.nodes)]
        for ar in context.group_ars(group):   # ar.request, not ar.start: this runs for every AR
            window = ar.request
            if window.start < last and window.end > first:
                windows.append((window.start, window.end, len(ar.allocations)))
        for label, begin, finish in spans:
            seconds = 0
            for start, end, nodes in windows:
                if start < finish and end > begin:
                    seconds += nodes * (min(end, finish) - max(start, begin))
            used = seconds / HOUR
            if used > limit:
                return (f"group {group} would use {used:.1f} node-hours in {label}; "
                        f"node_hours_per_month is {limit:g}")
        return None


def _overlapping(request: Request, ars: Iterable[Reservation]) -> int:
    """How many of ``ars`` hold resources in windows overlapping the request's."""
    start, end = request.start, request.end
    return sum(1 for ar in ars
               if ar.request.start < end and ar.request.end > start and ar.holds_resources)
