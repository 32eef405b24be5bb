"""The per-node policies of plugins/policies (node_state, share, projects)
against hand-built nodes, requests and contexts; the helpers serve
test_policies_requests.py too."""

from __future__ import annotations

import pytest

from overlay.contract.policy import PolicyContext
from overlay.language.model import Allocation, Node, Request, Reservation, State
from overlay_policies.members import Members
from overlay_policies.node_state import NodeState
from overlay_policies.patterns import NodeNames
from overlay_policies.projects import Project, Projects
from overlay_policies.settings import readable
from overlay_policies.share import Share, Tier

T0 = 1_800_000_000
MINUTE, HOUR, DAY = 60, 3600, 86400


def cluster(count: int, **fields) -> tuple[Node, ...]:
    return tuple(Node(f"n{index:03d}", **fields) for index in range(count))


def context(nodes: tuple[Node, ...] = cluster(10), reservations=(), now: int = T0,
            members: dict[str, tuple[str, ...]] | None = None) -> PolicyContext:
    """A context whose AR owners are in the groups ``members`` gives them,
    or else in their ARs' group only (the test's names are not the system's)."""
    known = members or {}
    return PolicyContext(now, nodes, tuple(reservations),
                         membership=lambda owner, group: known.get(owner, (group,)))


def request(lead: int = HOUR, hours: float = 1, nodes: int = 1, now: int = T0) -> Request:
    return Request(start=now + lead, end=now + lead + int(hours * HOUR), nodes=nodes)


def reservation(ar_id: int, owner: str, start: int, hours: float, nodes: int, group: str = "staff",
                state: State = State.WAITING, first: int = 0) -> Reservation:
    """An AR on nodes n<first>.. of ``cluster``."""
    window = Request(start=start, end=start + int(hours * HOUR), nodes=nodes)
    return Reservation(ar_id, owner, group, window, state, T0,
                       [Allocation(f"n{first + i:03d}", 1) for i in range(nodes)])


def granted(share: Share, req: Request, owner: str, groups: tuple[str, ...],
            ctx: PolicyContext) -> tuple[int, set[str]]:
    """Nodes the share policy lets one request take, asked node by node as
    the manager does, and the distinct refusals."""
    allocated: list[Node] = []
    refusals = set()
    for node in ctx.all_nodes:
        refusal = share.plus_node_reservable(request=req, owner=owner, groups=groups,
                                             allocated=tuple(allocated), context=ctx)
        if refusal is None:
            allocated.append(node)
        else:
            refusals.add(refusal)
    return len(allocated), refusals


# -- node_state ------------------------------------------------------------------

def state_refusal(policy: NodeState, node: Node, now: int = T0) -> str | None:
    return policy.plus_node_reservable(node=node, context=context(now=now))


def test_a_down_node_is_refused_unless_alive_is_false():
    down = Node("n1", alive=False)
    assert state_refusal(NodeState(), down) == "node is down"
    assert state_refusal(NodeState(alive=False), down) is None


def test_load_and_running_jobs_limits_are_inclusive():
    policy = NodeState(max_load=0.3, max_running_jobs=0)
    assert state_refusal(policy, Node("n1", load=0.3)) is None
    assert state_refusal(policy, Node("n1", load=0.31)) == "load average above 0.3"
    assert state_refusal(policy, Node("n1", running_jobs=1)) == "more than 0 running jobs"
    assert state_refusal(NodeState(max_running_jobs=2), Node("n1", running_jobs=2)) is None


def test_idle_time_counts_from_idle_since_and_a_busy_node_has_none():
    policy = NodeState(min_idle=10 * MINUTE)
    assert state_refusal(policy, Node("n1", idle_since=T0 - 10 * MINUTE)) is None
    assert state_refusal(policy, Node("n1", idle_since=T0 - 10 * MINUTE + 1)) == "idle for less than 10m"
    assert state_refusal(policy, Node("n1", idle_since=0, running_jobs=1)) == "idle for less than 10m"
    assert state_refusal(NodeState(), Node("n1", idle_since=0, running_jobs=1)) is None


def test_deny_patterns_match_whole_names():
    policy = NodeState(deny=("unusableA", "gpu*", "rack[12]-?"))
    refused = {name for name in ("unusableA", "unusableAB", "gpu", "gpu7", "xgpu7", "rack1-a",
                                 "rack3-a", "rack2-ab")
               if state_refusal(policy, Node(name))}
    assert refused == {"unusableA", "gpu", "gpu7", "rack1-a"}
    assert state_refusal(policy, Node("gpu7")) == "node name in deny list (unusableA, gpu*, rack[12]-?)"


def test_node_names_without_wildcards_are_looked_up_exactly():
    names = NodeNames(["a.b", "c"])
    assert "a.b" in names and "c" in names
    assert "axb" not in names and "cc" not in names


# -- share -----------------------------------------------------------------------

def ramp(**extra) -> Share:
    """PluS's sample (seed 004 3.4.5.2): VIPs 100 %, Users 90 % near -> 50 %
    far, others 50 % -> 30 %, near 30 min, far 2 h, max_lead 7 days,
    max_duration 2 days."""
    tiers = [Tier("VIPs", Members(["userA", "userB", "@admins"]), 100, 100),
             Tier("Users", Members(["userX", "userA"]), 90, 50)]
    settings = dict(near=30 * MINUTE, far=2 * HOUR, tiers=tiers,
                    default=Tier("default", Members(()), 50, 30), max_lead=7 * DAY,
                    max_duration=2 * DAY)
    settings.update(extra)
    return Share(**settings)


@pytest.mark.parametrize("lead, expected", [
    (0, 9),                          # start now: the near ratio
    (30 * MINUTE, 9),                # exactly near: still 90 %
    (30 * MINUTE + 1, 8),            # just past near: 89.99 % of 10 nodes is 8.999
    (75 * MINUTE, 7),                # the midpoint: 70 %
    (2 * HOUR - 1, 5),               # 50.007 %
    (2 * HOUR, 5),                   # exactly far: 50 %
    (3 * DAY, 5),                    # beyond far: 50 %
])
def test_the_ramp_between_near_and_far(lead, expected):
    assert granted(ramp(), request(lead), "userX", ("users",), context())[0] == expected


def test_the_midpoint_is_the_linear_value():
    share = ramp()
    users = share.tier("userX", ())
    assert share.ratio(users, 75 * MINUTE) == 70
    assert share.ratio(share.default, 75 * MINUTE) == 40
    assert share.ratio(users, 45 * MINUTE) == pytest.approx(90 - 40 / 6)


def test_vips_by_name_or_group_get_every_node_at_any_lead():
    share = ramp()
    assert granted(share, request(3 * DAY), "userB", ("staff",), context())[0] == 10
    assert granted(share, request(3 * DAY), "carol", ("staff", "admins"), context())[0] == 10
    assert share.tier("userA", ()).name == "VIPs"    # the first matching group wins


def test_everyone_else_gets_the_default():
    count, refusals = granted(ramp(), request(3 * HOUR), "dave", ("staff",), context())
    assert count == 3
    assert refusals == {"default share 30% at lead time 3h allows 3 of 10 nodes"}


def test_fractions_of_a_node_are_not_granted():
    # 7 nodes x 50 % = 3.5: PluS's nAllocate <= nAllocatable grants 3
    assert granted(ramp(), request(2 * HOUR), "userX", (), context(cluster(7)))[0] == 3
    # 7 x 30 % = 2.1 nodes
    assert granted(ramp(), request(2 * HOUR), "dave", (), context(cluster(7)))[0] == 2


def test_max_lead_refuses_at_the_limit_and_max_duration_beyond_it():
    share = ramp()

    def refusal(req):
        return share.plus_validate_request(request=req, context=context())
    assert refusal(request(7 * DAY - 1)) is None
    assert granted(share, request(7 * DAY - 1), "userA", (), context())[0] == 10
    assert refusal(request(7 * DAY)) == "lead time 7d is at or beyond max_lead 7d"
    assert refusal(request(8 * DAY + 5)) == "lead time 8d 0:00:05 is at or beyond max_lead 7d"
    assert refusal(request(HOUR, hours=48)) is None
    assert refusal(request(HOUR, hours=49)) == "duration 2d 1h is beyond max_duration 2d"


def test_owner_scope_counts_the_owners_other_ars_in_the_window():
    start = T0 + 3 * HOUR
    ars = [reservation(1, "dave", start - HOUR, 2, 2, first=0),            # overlaps: 2 nodes
           reservation(2, "dave", start + HOUR, 1, 2, first=1),            # overlaps, shares n001
           reservation(3, "dave", start + 2 * HOUR, 1, 4, first=4),        # starts at the end
           reservation(4, "dave", start, 1, 4, first=4, state=State.EXITED),
           reservation(5, "erin", start, 2, 4, first=4)]
    ctx = context(cluster(20), ars)
    req = request(3 * HOUR, hours=2)
    assert granted(ramp(), req, "dave", (), ctx)[0] == 6
    count, refusals = granted(ramp(scope="owner"), req, "dave", (), ctx)
    assert count == 3                                  # 30 % of 20 = 6, 3 nodes held (n000-n002)
    assert refusals == {"default share 30% at lead time 3h allows 6 of 20 nodes, "
                        "3 of them held by other ARs of dave in this window"}


def test_the_figures_are_worked_out_once_per_request():
    share, ctx = ramp(), context()
    granted(share, request(3 * HOUR), "dave", (), ctx)
    assert ctx.cache[share].allowed == 3
    ctx.cache[share] = ctx.cache[share]._replace(allowed=10)
    assert granted(share, request(3 * HOUR), "dave", (), ctx)[0] == 10


# -- projects --------------------------------------------------------------------

def projects(others: str = "deny") -> Projects:
    return Projects([Project("proj1", Members(["userA", "userB"]), NodeNames(["node1", "node2"])),
                     Project("proj2", Members(["userA", "@chem"]), NodeNames(["node3", "node4*"]))],
                    others)


def usable(policy: Projects, owner: str, groups: tuple[str, ...]) -> set[str]:
    ctx = context()
    names = ["node1", "node2", "node3", "node4", "node41", "node5"]
    return {name for name in names
            if policy.plus_node_reservable(node=Node(name), owner=owner, groups=groups,
                                           context=ctx) is None}


def test_project_members_get_their_projects_nodes():
    assert usable(projects(), "userB", ("staff",)) == {"node1", "node2"}
    assert usable(projects(), "userA", ("staff",)) == {"node1", "node2", "node3", "node4", "node41"}
    assert usable(projects(), "carol", ("staff", "chem")) == {"node3", "node4", "node41"}


def test_owners_in_no_project_are_denied_or_allowed():
    assert usable(projects(), "dave", ("staff",)) == set()
    assert usable(projects("allow"), "dave", ("staff",)) == {"node1", "node2", "node3", "node4",
                                                             "node41", "node5"}
    refusal = projects().plus_node_reservable(node=Node("node1"), owner="dave", groups=(),
                                              context=context())
    assert refusal == "dave is a member of no project"


def test_a_foreign_node_is_refused_with_the_owners_projects():
    refusal = projects().plus_node_reservable(node=Node("node5"), owner="userA", groups=(),
                                              context=context())
    assert refusal == "not a node of userA's projects (proj1, proj2)"


def test_readable_durations():
    assert [readable(s) for s in (0, 59, 90, 1800, 7200, 7 * DAY, DAY + 3723)] == \
        ["0:00:00", "0:00:59", "0:01:30", "30m", "2h", "7d", "1d 1:02:03"]
    assert readable(2 * DAY + HOUR) == "2d 1h"
