"""The per-request policies of plugins/policies (usage, limits) against
hand-built requests and contexts."""

from __future__ import annotations

import datetime as dt

import pytest

from overlay.language.model import Request, State
from overlay_policies.limits import Limits, months
from overlay_policies.usage import UsagePolicy
from test_policies_nodes import DAY, HOUR, T0, context, request, reservation


def usage_refusal(policy: UsagePolicy, req: Request, ars, owner: str = "alice") -> str | None:
    return policy.plus_validate_request(request=req, owner=owner, context=context(reservations=ars))


# -- usage -----------------------------------------------------------------------

def alices_week() -> list:
    """alice: 2 ARs within 7 days of now (3 h, 5 node-hours), one 8 days
    ahead and one 8 days ago (both outside), and bob's."""
    return [reservation(1, "alice", T0 - 2 * DAY, 2, 2),
            reservation(2, "alice", T0 + DAY, 1, 1, state=State.EXITED),
            reservation(3, "alice", T0 + 8 * DAY, 10, 10),
            reservation(4, "alice", T0 - 8 * DAY, 10, 10),
            reservation(5, "bob", T0 + DAY, 10, 10)]


def test_usage_caps_count_the_request_and_allow_reaching_them():
    ars, req = alices_week(), request(HOUR, hours=1, nodes=3)      # +1 AR, +1 h, +3 node-hours
    assert usage_refusal(UsagePolicy(7 * DAY, max_count=3), req, ars) is None
    assert usage_refusal(UsagePolicy(7 * DAY, max_count=2), req, ars) == \
        "this request would make 3 ARs of alice within 7d of now; max_count is 2"
    assert usage_refusal(UsagePolicy(7 * DAY, max_duration=4 * HOUR), req, ars) is None
    assert usage_refusal(UsagePolicy(7 * DAY, max_duration=4 * HOUR - 1), req, ars) == \
        "this request would make 4h of reserved time of alice within 7d of now; max_duration is 3:59:59"
    assert usage_refusal(UsagePolicy(7 * DAY, max_node_hours=8), req, ars) is None
    assert usage_refusal(UsagePolicy(7 * DAY, max_node_hours=7.5), req, ars) == \
        "this request would make 8.0 node-hours of alice within 7d of now; max_node_hours is 7.5"


def test_usage_is_per_owner_and_per_period():
    ars, req = alices_week(), request(HOUR)
    assert usage_refusal(UsagePolicy(7 * DAY, max_count=1), req, ars, owner="carol") is None
    assert usage_refusal(UsagePolicy(9 * DAY, max_count=4), req, ars) == \
        "this request would make 5 ARs of alice within 9d of now; max_count is 4"


# -- limits ----------------------------------------------------------------------

def limit_refusal(policy: Limits, req: Request, ars=(), owner: str = "alice",
                  groups: tuple[str, ...] = ("staff",), now: int = T0,
                  members: dict[str, tuple[str, ...]] | None = None) -> str | None:
    return policy.plus_validate_request(request=req, owner=owner, groups=groups,
                                        context=context(reservations=ars, now=now, members=members))


def test_max_advance_and_max_duration_allow_their_limit():
    policy = Limits(max_advance=30 * DAY, max_duration=2 * DAY)
    assert limit_refusal(policy, request(30 * DAY, hours=48)) is None
    assert limit_refusal(policy, request(30 * DAY + 1)) == \
        "start 30d 0:00:01 ahead is beyond max_advance 30d"
    assert limit_refusal(policy, request(HOUR, hours=48.5)) == \
        "duration 2d 30m is beyond max_duration 2d"


def test_concurrent_ars_per_user_overlapping_the_window():
    start = T0 + 10 * HOUR
    ars = [reservation(1, "alice", start - HOUR, 2, 1),               # overlaps
           reservation(2, "alice", start + HOUR, 5, 1),               # overlaps
           reservation(3, "alice", start - 2 * HOUR, 2, 1),           # ends at the start
           reservation(4, "alice", start, 1, 1, state=State.EXITED),  # holds nothing
           reservation(5, "bob", start, 2, 1)]
    req = request(10 * HOUR, hours=2)
    assert limit_refusal(Limits(max_concurrent_per_user=3), req, ars) is None
    assert limit_refusal(Limits(max_concurrent_per_user=2), req, ars) == \
        "this request would make 3 ARs of alice overlapping the window; max_concurrent_per_user is 2"


def test_concurrent_ars_per_group_one_number_binds_the_primary_group():
    start = T0 + 10 * HOUR
    ars = [reservation(1, "bob", start, 1, 1, group="chem"),
           reservation(2, "carol", start, 1, 1, group="chem"),
           reservation(3, "alice", start, 1, 1, group="staff"),       # alice's, another group
           reservation(4, "dave", start + 5 * HOUR, 1, 1, group="chem")]
    req = request(10 * HOUR, hours=2)
    policy = Limits(max_concurrent_per_group=2)
    assert limit_refusal(policy, req, ars, groups=("chem", "staff")) == \
        "this request would make 3 ARs of group chem overlapping the window; max_concurrent_per_group is 2"
    assert limit_refusal(policy, req, ars, groups=("staff", "chem")) is None
    assert limit_refusal(Limits(max_concurrent_per_group=3), req, ars, groups=("chem",)) is None
    assert limit_refusal(policy, req, ars, groups=()) is None        # no group: no group limits


def test_group_limits_count_the_ars_of_every_member_now():
    start = T0 + 10 * HOUR
    req = request(10 * HOUR, hours=2)
    bobs = reservation(1, "bob", start, 1, 1, group="chem")
    carols = reservation(2, "carol", start, 1, 1, group="bio")       # chem: a supplementary group
    erins = reservation(3, "erin", start, 1, 1, group="chem")        # erin has left chem since
    members = {"carol": ("bio", "chem"), "erin": ("bio",)}
    policy = Limits(max_concurrent_per_group=2)
    assert limit_refusal(policy, req, [bobs, carols], groups=("chem",), members=members) == \
        "this request would make 3 ARs of group chem overlapping the window; max_concurrent_per_group is 2"
    assert limit_refusal(policy, req, [bobs, erins], groups=("chem",), members=members) is None


def test_a_quota_on_a_supplementary_group_binds_its_members(zone):
    zone("UTC")
    start = T0 + 10 * HOUR
    req = request(10 * HOUR, hours=10, nodes=2)                       # 20 node-hours
    ars = [reservation(1, "bob", start, 1, 1, group="chem"),
           reservation(2, "carol", start, 10, 1, group="bio")]        # 10 node-hours, carol in chem
    members = {"carol": ("bio", "chem")}
    concurrent = Limits(max_concurrent_per_group={"chem": 2})
    assert limit_refusal(concurrent, req, ars, groups=("staff", "chem"), members=members) == \
        "this request would make 3 ARs of group chem overlapping the window; max_concurrent_per_group is 2"
    assert limit_refusal(concurrent, req, ars, groups=("staff",), members=members) is None
    monthly = Limits(node_hours_per_month={"chem": 31, "bio": 29})      # chem: 20 + 1 + 10
    assert limit_refusal(monthly, req, ars, groups=("staff", "chem"), members=members) is None
    assert limit_refusal(monthly, req, ars, groups=("staff", "chem", "bio"), members=members) == \
        "group bio would use 30.0 node-hours in 2027-01; node_hours_per_month is 29"
    assert limit_refusal(Limits(node_hours_per_month={"chem": 31.5}), req, ars + [
        reservation(3, "dave", start, 1, 1, group="chem")], groups=("staff", "chem"),
        members=members) == "group chem would use 32.0 node-hours in 2027-01; node_hours_per_month is 31.5"


def test_the_star_binds_the_primary_group_not_the_supplementary_ones(zone):
    zone("UTC")
    req = request(HOUR, hours=10, nodes=2)                            # 20 node-hours
    ars = [reservation(1, "bob", T0 + DAY, 10, 1, group="bob")]       # 10 node-hours, bob in users
    members = {"bob": ("bob", "users")}
    policy = Limits(max_concurrent_per_group=0, node_hours_per_month={"*": 25})
    assert limit_refusal(policy, req, ars, groups=("alice", "users"), members=members) == \
        "this request would make 1 ARs of group alice overlapping the window; max_concurrent_per_group is 0"
    policy = Limits(node_hours_per_month={"*": 25})
    assert limit_refusal(policy, req, ars, groups=("alice", "users"), members=members) is None
    assert limit_refusal(policy, req, ars, groups=("users", "alice"), members=members) == \
        "group users would use 30.0 node-hours in 2027-01; node_hours_per_month is 25"


def local(*fields: int) -> int:
    return int(dt.datetime(*fields).timestamp())


def test_months_in_local_time(zone):
    zone("Europe/Berlin")
    assert months(local(2026, 11, 30, 22), local(2026, 12, 1, 2)) == [
        ("2026-11", local(2026, 11, 1), local(2026, 12, 1)),
        ("2026-12", local(2026, 12, 1), local(2027, 1, 1))]
    assert [m[0] for m in months(local(2026, 12, 5), local(2027, 2, 1))] == ["2026-12", "2027-01"]
    assert local(2026, 12, 1) == local(2026, 11, 30, 23) + HOUR == 1_796_079_600  # 23:00 UTC


def test_node_hours_per_month_spanning_a_month_boundary(zone):
    zone("Europe/Berlin")
    now = local(2026, 11, 20)
    start = local(2026, 11, 30, 22)
    req = Request(start=start, end=start + 4 * HOUR, nodes=10)        # 20 node-hours in each month
    ars = [reservation(1, "bob", local(2026, 12, 31, 20), 10, 100, group="chem"),  # 400 in December
           reservation(2, "bob", local(2026, 10, 31, 23), 2, 100, group="chem"),   # 100 in November
           reservation(3, "carol", local(2026, 12, 2), 10, 100, group="bio"),
           reservation(4, "bob", local(2026, 11, 25), 1, 1000, group="chem",
                       state=State.EXITED)]                            # 1000 in November, ended
    policy = Limits(node_hours_per_month={"chem": 1120, "*": 10})
    assert limit_refusal(policy, req, ars, groups=("chem",), now=now) is None
    policy = Limits(node_hours_per_month={"chem": 1119.5})
    assert limit_refusal(policy, req, ars, groups=("chem",), now=now) == \
        "group chem would use 1120.0 node-hours in 2026-11; node_hours_per_month is 1119.5"
    ars[0] = reservation(1, "bob", local(2026, 12, 31, 20), 10, 300, group="chem")  # 1200 in December
    assert limit_refusal(Limits(node_hours_per_month={"chem": 1120}), req, ars, groups=("chem",),
                         now=now) == \
        "group chem would use 1220.0 node-hours in 2026-12; node_hours_per_month is 1120"


def test_the_star_quota_is_for_groups_not_listed(zone):
    zone("UTC")
    req = request(HOUR, hours=10, nodes=2)                              # 20 node-hours
    policy = Limits(node_hours_per_month={"chem": 5, "*": 20})
    assert limit_refusal(policy, req, groups=("bio",)) is None
    assert limit_refusal(policy, req, groups=("chem",)).startswith("group chem would use 20.0")
    assert limit_refusal(Limits(node_hours_per_month={"chem": 5}), req, groups=("bio",)) is None


@pytest.mark.parametrize("policy", [Limits(), UsagePolicy(7 * DAY)])
def test_no_caps_refuse_nothing(policy):
    req = request(400 * DAY, hours=1000, nodes=10_000)
    if isinstance(policy, Limits):
        assert limit_refusal(policy, req, alices_week()) is None
    else:
        assert usage_refusal(policy, req, alices_week()) is None
