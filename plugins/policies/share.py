"""``type: share``: seed 004 3.4.5.2, how many of all nodes an owner may
reserve depends on who they are and how far ahead the window starts."""

from __future__ import annotations

from typing import Iterable, NamedTuple

from overlay.api.plugin import Node, PolicyContext, Request, choice, hookimpl
from overlay_policies.members import Members
from overlay_policies.settings import DURATION, MEMBER, NAME, RATIO, Section, readable

SCOPES = ("request", "owner")
RATIO_KEYS = ("ratio", "near", "far")


class Tier:
    """The percentages of all nodes one group of owners may reserve:
    ``near`` at lead times up to the policy's near, ``far`` from its far on;
    a flat ``ratio:`` is both."""

    def __init__(self, name: str, members: Members, near: float, far: float) -> None:
        self.name = name
        self.members = members
        self.near = near
        self.far = far

    @classmethod
    def from_settings(cls, section: Section, name: str, members: Members) -> "Tier":
        if "ratio" in section:
            if "near" in section or "far" in section:
                raise ValueError(f"{section.path}: give either ratio or near and far, not both")
            ratio = section.get("ratio", RATIO)
            return cls(name, members, ratio, ratio)
        if "near" not in section or "far" not in section:
            raise ValueError(f"{section.path}: give ratio (one percentage), or near and far "
                             "(the percentages at the near and at the far lead time)")
        return cls(name, members, section.get("near", RATIO), section.get("far", RATIO))


class Verdict(NamedTuple):
    """One request's figures: how many nodes the owner may have in the
    window (``allowed``, fractions included), how many other ARs of theirs
    already hold there (``held``), and the refusal once that is used up."""

    allowed: float
    held: int
    refusal: str


class Share:
    """PluS's rsvRatio: a node is refused when (len(allocated) + 1 + held)
    > len(all_nodes) * ratio / 100, PluS's nAllocate <= nAllocatable, so a
    fraction of a node is never granted. ``held`` is 0 with scope request
    (PluS: this request's nodes only); with scope owner it is the nodes the
    owner's other ARs hold (holding states) in windows overlapping this one,
    so one owner cannot exceed the share by splitting a request.

    The lead time is max(0, start - now): the core refuses past starts and
    clamps a start of "now", so unlike PluS a start at now is allowed (at the
    near ratio). A lead time at or beyond ``max_lead`` (PluS LimitPeriod),
    or a window longer than ``max_duration``, refuses the request before
    any node is asked. The ratio
    is the first group the owner is in (by name or @group): its near ratio
    (PluS MaxRatio) at lead times up to ``near`` (MaxPeriod), its far ratio
    (MinRatio) from ``far`` (MinPeriod) on, linear between; a group with
    ``ratio:`` (PluS's VIPs) is flat. Owners in no group get ``default``."""

    KEYS = ("near", "far", "max_lead", "max_duration", "groups", "default", "scope")

    def __init__(self, near: int, far: int, tiers: Iterable[Tier], default: Tier,
                 max_lead: int | None = None, max_duration: int | None = None,
                 scope: str = "request") -> None:
        self.near = near
        self.far = far
        self.tiers = tuple(tiers)
        self.default = default
        self.max_lead = max_lead
        self.max_duration = max_duration
        self.scope = scope

    @classmethod
    def from_settings(cls, section: Section) -> "Share":
        near = section.require("near", DURATION)
        far = section.require("far", DURATION)
        if near > far:
            raise ValueError(f"{section.key('near')}: {readable(near)} is beyond far "
                             f"({readable(far)}); near must be the shorter lead time")
        tiers = [Tier.from_settings(group, group.require("name", NAME),
                                    Members(group.entries("members", MEMBER, required=True)))
                 for group in section.sections("groups", ("name", "members") + RATIO_KEYS)]
        default = Tier.from_settings(section.section("default", RATIO_KEYS), "default", Members(()))
        return cls(near, far, tiers, default, max_lead=section.get("max_lead", DURATION),
                   max_duration=section.get("max_duration", DURATION),
                   scope=section.get("scope", choice(SCOPES), "request"))

    def tier(self, owner: str, groups: Iterable[str]) -> Tier:
        """The first group the owner is in, else the default."""
        for tier in self.tiers:
            if tier.members.includes(owner, groups):
                return tier
        return self.default

    def ratio(self, tier: Tier, lead: int) -> float:
        """The tier's percentage at this lead time (PluS's linear())."""
        if lead <= self.near:
            return tier.near
        if lead >= self.far:
            return tier.far
        return tier.near + (tier.far - tier.near) * (lead - self.near) / (self.far - self.near)

    def verdict(self, request: Request, owner: str, groups: Iterable[str],
                context: PolicyContext) -> Verdict:
        """The figures of one request, worked out once for all its nodes."""
        lead = max(0, request.start - context.now)
        tier = self.tier(owner, groups)
        ratio = self.ratio(tier, lead)
        total = len(context.all_nodes)
        allowed = total * ratio / 100
        refusal = (f"{tier.name} share {ratio:g}% at lead time {readable(lead)} allows "
                   f"{int(allowed)} of {total} nodes")
        held = self.held(request, owner, context) if self.scope == "owner" else 0
        if held:
            refusal += f", {held} of them held by other ARs of {owner} in this window"
        return Verdict(allowed, held, refusal)

    @staticmethod
    def held(request: Request, owner: str, context: PolicyContext) -> int:
        """Nodes the owner's other ARs hold in windows overlapping the request's."""
        start, end = request.start, request.end
        return len({a.node for ar in context.reservations
                    if ar.owner == owner and ar.request.start < end and ar.request.end > start
                    and ar.holds_resources
                    for a in ar.allocations})

    @hookimpl
    def plus_validate_request(self, request: Request, context: PolicyContext) -> str | None:
        """max_lead and max_duration concern the whole request: refused
        once, before any node is asked."""
        lead = max(0, request.start - context.now)
        if self.max_lead is not None and lead >= self.max_lead:
            return f"lead time {readable(lead)} is at or beyond max_lead {readable(self.max_lead)}"
        if self.max_duration is not None and request.duration > self.max_duration:
            return (f"duration {readable(request.duration)} is beyond max_duration "
                    f"{readable(self.max_duration)}")
        return None

    @hookimpl
    def plus_node_reservable(self, request: Request, owner: str, groups: tuple[str, ...],
                             allocated: tuple[Node, ...], context: PolicyContext) -> str | None:
        verdict = context.cache.get(self)
        if verdict is None:
            verdict = context.cache[self] = self.verdict(request, owner, groups, context)
        if len(allocated) + 1 + verdict.held > verdict.allowed:
            return verdict.refusal
        return None
