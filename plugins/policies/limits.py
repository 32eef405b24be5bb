"""``type: limits``: site limits checked once per request: how far ahead and
how long, how many ARs at once per user and per group, and a monthly
node-hour quota per group."""

from __future__ import annotations

import datetime as dt
from typing import Iterable

from overlay.hookspecs import hookimpl
from overlay.model import Request, Reservation
from overlay.policy import PolicyContext
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


def quota(section: Section) -> dict[str, float]:
    """node_hours_per_month: group names, or "*" for any group not listed, to node-hours."""
    if "node_hours_per_month" not in section:
        return {}
    hours = section.section("node_hours_per_month", None)
    for group in hours.values:
        if group != ANY_GROUP and NAME.convert(group) is None:
            raise ValueError(f"{hours.path}: invalid group {group!r}; expected a group name, "
                             f"or \"*\" for any group not listed")
    return {group: hours.get(group, AMOUNT) for group in hours.values}


class Limits:
    """Each limit is optional; reaching one exactly is allowed.

    ``max_advance``: the start at most this far after now. ``max_duration``:
    the window at most this long. ``max_concurrent_per_user``: the owner's
    ARs (holding states) overlapping the requested window, this one
    included. ``max_concurrent_per_group``: the same for ARs whose group
    (Reservation.group, their owner's primary group) is the owner's primary
    group. ``node_hours_per_month``: for the owner's primary group (or "*"
    for groups not listed), in every calendar month (local time) the window
    touches, the node-hours of the group's ARs inside that month (every AR
    the daemon still keeps but cancelled ones, clipped to the month) plus
    this request's nodes x its hours inside the month. An owner without a
    group is not subject to the group limits."""

    KEYS = ("max_advance", "max_duration", "max_concurrent_per_user", "max_concurrent_per_group",
            "node_hours_per_month")

    def __init__(self, max_advance: int | None = None, max_duration: int | None = None,
                 max_concurrent_per_user: int | None = None,
                 max_concurrent_per_group: int | None = None,
                 node_hours_per_month: dict[str, float] | None = None) -> None:
        self.max_advance = max_advance
        self.max_duration = max_duration
        self.max_concurrent_per_user = max_concurrent_per_user
        self.max_concurrent_per_group = max_concurrent_per_group
        self.node_hours_per_month = node_hours_per_month or {}

    def look_back(self) -> int:
        """How long ago an AR may have ended and still count: a month's
        quota reaches back to the 1st (31 days at most)."""
        return 31 * 86400 if self.node_hours_per_month else 0

    @classmethod
    def from_settings(cls, section: Section) -> "Limits":
        return cls(section.get("max_advance", DURATION), section.get("max_duration", DURATION),
                   section.get("max_concurrent_per_user", COUNT),
                   section.get("max_concurrent_per_group", COUNT), quota(section))

    @hookimpl
    def plus_validate_request(self, request: Request, owner: str, groups: tuple[str, ...],
                              context: PolicyContext) -> str | None:
        lead = request.start - context.now
        if self.max_advance is not None and lead > self.max_advance:
            return f"start {readable(lead)} ahead is beyond max_advance {readable(self.max_advance)}"
        if self.max_duration is not None and request.duration > self.max_duration:
            return (f"duration {readable(request.duration)} is beyond max_duration "
                    f"{readable(self.max_duration)}")
        group = groups[0] if groups else None
        if self.max_concurrent_per_user is not None:
            count = 1 + _overlapping(request, [ar for ar in context.reservations if ar.owner == owner])
            if count > self.max_concurrent_per_user:
                return (f"this request would make {count} ARs of {owner} overlapping the window; "
                        f"max_concurrent_per_user is {self.max_concurrent_per_user}")
        if group is None:
            return None
        if self.max_concurrent_per_group is not None:
            count = 1 + _overlapping(request, [ar for ar in context.reservations if ar.group == group])
            if count > self.max_concurrent_per_group:
                return (f"this request would make {count} ARs of group {group} overlapping the "
                        f"window; max_concurrent_per_group is {self.max_concurrent_per_group}")
        return self.monthly(request, group, context)

    def monthly(self, request: Request, group: str, context: PolicyContext) -> str | None:
        """node_hours_per_month for ``group``, month by month."""
        limit = self.node_hours_per_month.get(group, self.node_hours_per_month.get(ANY_GROUP))
        if limit is None:
            return None
        spans = months(request.start, request.end)
        first, last = spans[0][1], spans[-1][2]
        windows = [(request.start, request.end, request.nodes)]
        for ar in context.reservations:       # ar.request, not ar.start: this runs for every AR
            window = ar.request
            if ar.group == group and window.start < last and window.end > first:
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
