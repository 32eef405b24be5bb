"""The four reservable.ad samples PluS ships (seed 004, 3.4.5), unchanged,
through the reservation manager, with outcomes that follow from the manual."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from overlay.language.model import ReservationError
from overlay.usecases.manager import Caller
from test_manager import HOUR, T0, Env

CONF = Path(__file__).resolve().parent.parent / "conf"
DAY = 24 * HOUR


def caller(name: str) -> Caller:
    return Caller(uid=6000, user=name, groups=("users",), is_manager=False)


def sample_env(tmp_path, number: int, cluster: str) -> Env:
    shutil.copy(CONF / f"reservable.ad.sample{number}", tmp_path / "reservable.ad")
    return Env(tmp_path, "classad: {file: reservable.ad}\n", cluster=cluster)


def reserve(env: Env, owner: str, nodes: int, lead: int = HOUR, hours: float = 1):
    return env.manager.reserve(caller(owner), env.request(start=T0 + lead, hours=hours, nodes=nodes))


def most_nodes(env: Env, owner: str, lead: int, hours: float = 1) -> int:
    """The largest -n the policy grants ``owner`` for this lead time (and
    that the next size up is refused by the policy, not by the cluster)."""
    granted = 0
    for nodes in range(1, 11):
        try:
            ar = reserve(env, owner, nodes, lead, hours)
        except ReservationError as exc:
            assert "policy reservable.ad: PLUS_NODE_RESERVABLE = (nAllocate <= nAllocatable) " \
                   "is false" in str(exc)
            return granted
        env.manager.destroy(caller(owner), ar.id, None)
        granted = nodes
    return granted


TEN_NODES = 'nodes:\n  - {name: "node[01-10]", slots: 1, queues: [all.q]}\n'


@pytest.fixture
def share(tmp_path):
    return sample_env(tmp_path, 2, TEN_NODES)


def test_sample2_vips_get_every_node(share):
    for lead in (10 * 60, HOUR, 5 * HOUR, 6 * DAY):
        assert most_nodes(share, "userA", lead) == 10
    assert most_nodes(share, "userC", 2 * HOUR) == 10


def test_sample2_users_get_90_percent_near_falling_linearly_to_50(share):
    assert most_nodes(share, "userX", 10 * 60) == 9          # within 30 minutes: 90%
    assert most_nodes(share, "userX", 30 * 60) == 9
    assert most_nodes(share, "userX", 75 * 60) == 7          # half way: 70%
    assert most_nodes(share, "userX", 2 * HOUR) == 5         # 2 hours or more: 50%
    assert most_nodes(share, "userX", 3 * DAY) == 5


def test_sample2_others_get_50_percent_falling_to_30(share):
    assert most_nodes(share, "bob", 10 * 60) == 5
    assert most_nodes(share, "bob", 75 * 60) == 4
    assert most_nodes(share, "bob", 5 * HOUR) == 3


def test_sample2_nobody_reserves_now_a_week_ahead_or_for_two_days(share):
    for owner in ("userA", "userX", "bob"):
        assert most_nodes(share, owner, 0) == 0
        assert most_nodes(share, owner, 7 * DAY) == 0
        assert most_nodes(share, owner, HOUR, hours=48) == 0
    assert most_nodes(share, "userA", 7 * DAY - 60) == 10
    assert most_nodes(share, "userA", HOUR, hours=47) == 10


def test_sample2_refusal_says_why(share):
    with pytest.raises(ReservationError) as caught:
        reserve(share, "bob", 4, lead=5 * HOUR)
    assert str(caught.value) == (
        "only 3 of the 4 requested nodes can be reserved for this window (10 nodes known, 10 "
        "match the request, 10 free); policy reservable.ad: PLUS_NODE_RESERVABLE = "
        "(nAllocate <= nAllocatable) is false (nAllocate = 4, nAllocatable = 3) (7 nodes)")


def test_sample3_caps_the_owners_usage_around_now(tmp_path):
    env = sample_env(tmp_path, 3, TEN_NODES)
    for day in range(3):            # 0, 1 and 2 days of existing use are within 2d
        reserve(env, "alice", 1, lead=HOUR + day * DAY, hours=24)
    with pytest.raises(ReservationError, match=r"\(util\[1\] <= MaxReserveDuration\) is false"):
        reserve(env, "alice", 1, lead=4 * DAY, hours=1)
    reserve(env, "bob", 1, lead=4 * DAY, hours=1)                 # another owner's usage


def test_sample3_counts_only_what_overlaps_the_period_and_is_not_cancelled(tmp_path):
    env = sample_env(tmp_path, 3, TEN_NODES)
    reserve(env, "alice", 1, lead=8 * DAY, hours=72)     # after now + 7d: never counted
    reserve(env, "alice", 1, lead=HOUR, hours=47)        # 0 h in use before it
    reserve(env, "alice", 1, lead=2 * DAY, hours=1)      # 47 h
    cancelled = reserve(env, "alice", 1, lead=3 * DAY, hours=1)   # 48 h: still <= 2 days
    env.manager.cancel(caller("alice"), cancelled.id, None)       # back to 48 h
    reserve(env, "alice", 1, lead=4 * DAY, hours=1)               # 48 h
    with pytest.raises(ReservationError, match="MaxReserveDuration"):
        reserve(env, "alice", 1, lead=5 * DAY, hours=1)           # 49 h


def test_sample3_node_hours(tmp_path):
    env = sample_env(tmp_path, 3, 'nodes:\n  - {name: "n[001-100]", slots: 1, queues: [all.q]}\n')
    reserve(env, "alice", 100, lead=HOUR, hours=6)          # 0 node-hours before
    reserve(env, "alice", 100, lead=7 * HOUR, hours=6)      # 600 before
    with pytest.raises(ReservationError, match=r"\(util\[2\] <= MaxReserveHourNode\) is false"):
        reserve(env, "alice", 1, lead=13 * HOUR)            # 1200 before: over 1000


PROJECT_NODES = 'nodes:\n  - {name: "node[1-5]", slots: 1, queues: [all.q]}\n'


def test_sample4_members_reserve_their_projects_nodes(tmp_path):
    env = sample_env(tmp_path, 4, PROJECT_NODES)
    assert reserve(env, "userA", 4).node_names == ["node1", "node2", "node3", "node4"]
    assert reserve(env, "userB", 2, lead=3 * HOUR).node_names == ["node1", "node2"]
    assert reserve(env, "userC", 2, lead=5 * HOUR).node_names == ["node3", "node4"]
    with pytest.raises(ReservationError, match=r"only 2 of the 3 .*\(avail1 \|\| avail2\) is false "
                                               r"\(avail1 = false, avail2 = false\) \(3 nodes\)"):
        reserve(env, "userB", 3, lead=7 * HOUR)
    with pytest.raises(ReservationError, match="only 0 of the 1"):
        reserve(env, "userZ", 1, lead=7 * HOUR)


def test_sample1_skips_unusable_nodes(tmp_path):
    env = sample_env(tmp_path, 1, 'nodes:\n  - {name: unusableA, queues: [all.q]}\n'
                                  '  - {name: "n[1-2]", queues: [all.q]}\n')
    assert reserve(env, "bob", 2).node_names == ["n1", "n2"]
    with pytest.raises(ReservationError, match=r"!member\(PLUS_CANDIDATE_NODE.name, "
                                               r"UnusableNodes\)\) is false"):
        reserve(env, "bob", 3, lead=3 * HOUR)
