"""plugins/policies end to end: the real Manager on the native backend's
five-node cluster (test_manager.Env), configured from the daemon's YAML as
plus_scheduler does, refusing with "policy <key>: <why>"."""

from __future__ import annotations

import grp
import pwd
import textwrap

import pytest

from overlay.contract.policy import owner_groups
from overlay.kit import users
from overlay.kit.users import account, groups_of
from overlay.language.model import ReservationError
from overlay.usecases.manager import Caller
from test_manager import ALICE, BOB, HOUR, T0, Env

CLUSTER = """\
nodes:
  - {name: "n[01-04]", slots: 4, queues: [all.q]}
  - {name: big, slots: 16, queues: [all.q], load: 0.9}
"""
CAROL = Caller(uid=5003, user="carol", groups=("chem", "staff"), is_manager=False)


def env_with(tmp_path, policies: str) -> Env:
    """A manager whose configuration has this policies: section."""
    section = "policies:\n" + textwrap.indent(textwrap.dedent(policies), "  ")
    return Env(tmp_path, settings=section, cluster=CLUSTER)


def test_node_state_refuses_loaded_and_denied_nodes(tmp_path):
    env = env_with(tmp_path, """\
        node-health: {type: node_state, max_load: 0.3, deny: ["n0[12]"]}
        """)
    assert env.reserve(nodes=2).node_names == ["n03", "n04"]
    with pytest.raises(ReservationError) as refused:
        env.reserve(nodes=3, start=T0 + 5 * HOUR)
    text = str(refused.value)
    assert "only 2 of the 3 requested nodes" in text
    assert "policy node-health: load average above 0.3 (1 nodes)" in text
    assert "policy node-health: node name in deny list (n0[12]) (2 nodes)" in text


def test_share_follows_the_ramp_and_the_owner_scope(tmp_path):
    env = env_with(tmp_path, """\
        fair-share:
          type: share
          near: 30m
          far: 2h
          max_lead: 7d
          groups: [{name: VIPs, members: ["@chem"], ratio: 100}]
          default: {near: 60, far: 40}
          scope: owner
        """)
    assert len(env.reserve(nodes=2, start=T0 + 2 * HOUR).node_names) == 2      # 40 % of 5
    with pytest.raises(ReservationError, match=r"policy fair-share: default share 60% at lead time "
                                               r"30m allows 3 of 5 nodes, 2 of them held by other "
                                               r"ARs of alice in this window \(2 nodes\)"):
        env.reserve(nodes=2, start=T0 + 30 * 60, hours=2)                      # 3 - 2 held = 1
    assert len(env.reserve(nodes=1, start=T0 + 30 * 60, hours=2).node_names) == 1
    assert len(env.reserve(BOB, nodes=3, start=T0).node_names) == 3                # 60 % at 0
    assert len(env.reserve(CAROL, nodes=5, start=T0 + 20 * HOUR).node_names) == 5  # VIPs
    with pytest.raises(ReservationError) as refused:
        env.reserve(CAROL, nodes=1, start=T0 + 7 * 24 * HOUR)
    assert str(refused.value) == "policy fair-share: lead time 7d is at or beyond max_lead 7d"


def test_usage_counts_the_request_once_and_a_modify_once(tmp_path):
    env = env_with(tmp_path, """\
        weekly-usage: {type: usage, period: 7d, max_count: 1, max_node_hours: 6}
        """)
    ar = env.reserve(nodes=2, hours=2)
    with pytest.raises(ReservationError, match="^policy weekly-usage: this request would make 2 ARs "
                                               "of alice within 7d of now; max_count is 1$"):
        env.reserve(nodes=1, start=T0 + 5 * HOUR)
    env.manager.modify(ALICE, ar.id, None, None, 3 * HOUR, None, None)           # 6 node-hours
    with pytest.raises(ReservationError, match="would make 8.0 node-hours of alice"):
        env.manager.modify(ALICE, ar.id, None, None, 4 * HOUR, None, None)
    env.reserve(BOB, nodes=1)


def test_projects_give_members_their_nodes_only(tmp_path):
    env = env_with(tmp_path, """\
        projects:
          type: projects
          projects:
            small: {members: ["@staff"], nodes: ["n0[1-2]"]}
            large: {members: [carol], nodes: [big, n03]}
        """)
    assert env.reserve(nodes=2).node_names == ["n01", "n02"]
    with pytest.raises(ReservationError, match=r"policy projects: not a node of alice's projects "
                                               r"\(small\) \(3 nodes\)"):
        env.reserve(nodes=3, start=T0 + 5 * HOUR)
    assert env.reserve(CAROL, nodes=2).node_names == ["big", "n03"]     # small's are alice's now
    assert sorted(env.reserve(CAROL, nodes=4, start=T0 + 5 * HOUR).node_names) == \
        ["big", "n01", "n02", "n03"]                                     # @staff: small's too
    with pytest.raises(ReservationError, match="policy projects: bob is a member of no project"):
        env.reserve(BOB, nodes=1)


def system_caller(user: str) -> Caller:
    """A test user (scripts/test-users.sh) with their groups as the daemon
    finds them: plusu1 and plusu2 are in plusgrp through a supplementary group."""
    entry = pwd.getpwnam(user)
    return Caller(entry.pw_uid, user, groups_of(user, entry.pw_gid), False)


def test_an_owners_groups_are_the_systems_now():
    assert "plusgrp" in owner_groups("plusu1", "")
    assert owner_groups("plusu1", "") == frozenset(system_caller("plusu1").groups)
    assert "plusgrp" not in owner_groups("plusu3", "plusgrp")       # what the system says counts
    assert owner_groups("no-such-user", "chem") == {"chem"}        # gone: the AR's group
    assert owner_groups("no-such-user", "") == frozenset()


def test_an_account_is_looked_up_again_after_a_minute(monkeypatch):
    """users.account names the daemon's callers and the policies' owners: by
    uid with the peer's gid first, or by name; kept for GROUPS_TTL seconds."""
    entry = pwd.getpwnam("plusu1")
    assert account(entry.pw_uid, entry.pw_gid) == ("plusu1", system_caller("plusu1").groups)
    assert account("plusu1")[1][0] == grp.getgrgid(entry.pw_gid).gr_name
    assert account(entry.pw_uid, 0)[1][0] == "root"           # the peer's gid comes first
    assert account("no-such-user") is None and account(2 ** 31 - 7) is None
    asked = []
    monkeypatch.setattr(users, "groups_of", lambda user, gid: asked.append(user) or ("g",))
    clock = [1e12]                                              # no period a real lookup used
    monkeypatch.setattr(users.time, "monotonic", lambda: clock[0])
    assert account("plusu3") == ("plusu3", ("g",)) and account("plusu3") == ("plusu3", ("g",))
    assert asked == ["plusu3"]                                  # once within the minute
    clock[0] += users.GROUPS_TTL
    account("plusu3")
    assert asked == ["plusu3", "plusu3"]


def test_limits_per_user_and_group_and_month(tmp_path, zone):
    zone("UTC")
    env = env_with(tmp_path, """\
        site-limits:
          type: limits
          max_advance: 30d
          max_concurrent_per_user: 1
          max_concurrent_per_group: {plusgrp: 2}
          node_hours_per_month: {plusgrp: 30}
        """)
    first, second, outsider = (system_caller(user) for user in ("plusu1", "plusu2", "plusu3"))
    assert first.groups[0] != "plusgrp" and second.groups[0] != "plusgrp"
    env.reserve(first, nodes=2, hours=2)                            # plusgrp: 4 node-hours
    with pytest.raises(ReservationError, match="^policy site-limits: this request would make 2 ARs of "
                                               "plusu1 overlapping the window; max_concurrent_per_user "
                                               "is 1$"):
        env.reserve(first, nodes=1, start=T0 + 2 * HOUR)
    env.reserve(first, nodes=1, start=T0 + 3 * HOUR)                # after the first: 5
    env.reserve(outsider, nodes=1)                                  # not in plusgrp
    env.reserve(outsider, nodes=1, start=T0 + 2 * HOUR, hours=30)
    with pytest.raises(ReservationError, match="^policy site-limits: this request would make 3 ARs of "
                                               "group plusgrp overlapping the window; "
                                               "max_concurrent_per_group is 2$"):
        env.reserve(second, nodes=1, start=T0 + 2 * HOUR, hours=2)
    with pytest.raises(ReservationError, match=r"^policy site-limits: group plusgrp would use 45.0 "
                                               r"node-hours in 2027-01; node_hours_per_month is 30$"):
        env.reserve(second, nodes=2, start=T0 + 10 * HOUR, hours=20)
    env.reserve(second, nodes=1, start=T0 + 10 * HOUR, hours=20)    # 25 node-hours
    with pytest.raises(ReservationError, match="start 30d 0:00:01 ahead is beyond max_advance 30d"):
        env.reserve(BOB, start=T0 + 30 * 24 * HOUR + 1)


def test_every_type_at_once_accepts_a_reasonable_request(tmp_path):
    env = env_with(tmp_path, """\
        node-health: {type: node_state, max_load: 1, max_running_jobs: 0}
        fair-share: {type: share, near: 30m, far: 2h, default: {ratio: 100}}
        weekly-usage: {type: usage, period: 7d, max_count: 10}
        projects: {type: projects, projects: {all: {members: ["@staff"], nodes: ["*"]}}}
        site-limits: {type: limits, max_duration: 1d}
        """)
    assert len(env.reserve(nodes=5).node_names) == 5
    with pytest.raises(ReservationError, match="policy site-limits: duration 1d 1h is beyond"):
        env.reserve(nodes=1, hours=25, start=T0 + 5 * HOUR)
