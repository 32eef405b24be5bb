"""``type: usage``: seed 004 3.4.5.3, caps on what one owner reserves around
now (PluS's plus_rsvutil), checked once per request."""

from __future__ import annotations

from overlay.api.plugin import PolicyContext, Request, hookimpl
from overlay_policies.settings import AMOUNT, COUNT, DURATION, HOUR, Section, readable


class UsagePolicy:
    """The owner's ARs overlapping [now - period, now + period]
    (context.usage, PluS's plus_rsvutil: every AR but cancelled ones) plus
    this request must stay within each cap: at most ``max_count`` ARs,
    ``max_duration`` seconds of windows, ``max_node_hours`` node-hours
    (nodes x hours). Unlike PluS's sample, which compares only the existing
    usage with <= (so one more AR may go past every cap), the request itself
    is counted (count + 1, its duration, its nodes x hours), so a cap is
    never exceeded; reaching it exactly is allowed. For a modify the AR
    being changed counts once, with its new window (the context leaves out
    its old one)."""

    KEYS = ("period", "max_count", "max_duration", "max_node_hours")

    def __init__(self, period: int, max_count: int | None = None, max_duration: int | None = None,
                 max_node_hours: float | None = None) -> None:
        self.period = period
        self.max_count = max_count
        self.max_duration = max_duration
        self.max_node_hours = max_node_hours

    @classmethod
    def from_settings(cls, section: Section) -> "UsagePolicy":
        return cls(section.require("period", DURATION), section.get("max_count", COUNT),
                   section.get("max_duration", DURATION), section.get("max_node_hours", AMOUNT))

    def look_back(self) -> int:
        """How long ago an AR may have ended and still count."""
        return self.period

    @hookimpl
    def plus_validate_request(self, request: Request, owner: str,
                              context: PolicyContext) -> str | None:
        used = context.usage(owner, context.now - self.period, context.now + self.period)
        count = used.count + 1
        seconds = used.duration + request.duration
        node_hours = used.node_hours + request.nodes * request.duration / HOUR
        around = f"within {readable(self.period)} of now"
        if self.max_count is not None and count > self.max_count:
            return (f"this request would make {count} ARs of {owner} {around}; "
                    f"max_count is {self.max_count}")
        if self.max_duration is not None and seconds > self.max_duration:
            return (f"this request would make {readable(seconds)} of reserved time of {owner} "
                    f"{around}; max_duration is {readable(self.max_duration)}")
        if self.max_node_hours is not None and node_hours > self.max_node_hours:
            return (f"this request would make {node_hours:.1f} node-hours of {owner} {around}; "
                    f"max_node_hours is {self.max_node_hours:g}")
        return None
