"""The policies: section of plugins/policies: the documented example is
accepted and registered one object per policy; every mistake stops the
daemon with the full key path and what is accepted."""

from __future__ import annotations

import re
import textwrap

import pluggy
import pytest
import yaml

import overlay_policies.plugin as policies_plugin
from overlay.contract import hookspecs, plugins
from overlay.daemon.config import Config
from overlay_policies.limits import Limits
from overlay_policies.node_state import NodeState
from overlay_policies.projects import Projects
from overlay_policies.share import Share
from overlay_policies.usage import UsagePolicy

EXAMPLE = """\
node-health:
  type: node_state
  alive: true
  max_load: 0.3
  max_running_jobs: 0
  min_idle: 10m
  deny: [unusableA, "gpu*"]
fair-share:
  type: share
  near: 30m
  far: 2h
  max_lead: 7d
  max_duration: 2d
  groups:
    - {name: VIPs, members: [userA, userB, "@admins"], ratio: 100}
    - {name: Users, members: [userX], near: 90, far: 50}
  default: {near: 50, far: 30}
  scope: request
weekly-usage:
  type: usage
  period: 7d
  max_count: 100
  max_duration: 2d
  max_node_hours: 1000
projects:
  type: projects
  projects:
    proj1: {members: [userA, userB], nodes: [node1, node2]}
    proj2: {members: [userA, "@chem"], nodes: ["node3", "node4*"]}
  others: deny
site-limits:
  type: limits
  max_advance: 30d
  max_duration: 2d
  max_concurrent_per_user: 3
  max_concurrent_per_group: {chem: 20, "*": 10}
  node_hours_per_month: {chem: 5000, "*": 1000}
"""


def manager() -> pluggy.PluginManager:
    """A plugin manager with the hook specifications and this plugin only."""
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    pm.register(policies_plugin, name="policies")
    return pm


def configure(text: str | None, pm: pluggy.PluginManager | None = None) -> pluggy.PluginManager:
    pm = pm or manager()
    sections = {} if text is None else {"policies": yaml.safe_load(textwrap.dedent(text))}
    claimed = plugins.configure(pm, Config(path="plus.yaml", sections=sections))
    assert claimed == {"policies"}
    return pm


def test_the_documented_example_registers_one_object_per_policy():
    pm = configure(EXAMPLE)
    kinds = {name: type(pm.get_plugin(name)) for name in
             ("node-health", "fair-share", "weekly-usage", "projects", "site-limits")}
    assert kinds == {"node-health": NodeState, "fair-share": Share, "weekly-usage": UsagePolicy,
                     "projects": Projects, "site-limits": Limits}
    share = pm.get_plugin("fair-share")
    assert (share.near, share.far, share.max_lead, share.max_duration) == (1800, 7200, 604800, 172800)
    assert [(t.name, t.near, t.far) for t in share.tiers] == [("VIPs", 100, 100), ("Users", 90, 50)]
    assert pm.get_plugin("node-health").min_idle == 600
    assert pm.get_plugin("site-limits").node_hours_per_month == {"chem": 5000, "*": 1000}
    assert pm.get_plugin("site-limits").max_concurrent_per_group == {"chem": 20, "*": 10}
    assert len(pm.hook.plus_node_reservable.get_hookimpls()) == 3
    assert len(pm.hook.plus_validate_request.get_hookimpls()) == 3    # usage, limits, share (max_lead)


def test_no_section_registers_nothing_but_claims_the_name():
    pm = configure(None)
    assert [name for name, _ in pm.list_name_plugin()] == ["policies"]


def test_defaults_and_durations_in_seconds():
    pm = configure("""\
        state: {type: node_state}
        share: {type: share, near: 0, far: "2:00:00", default: {ratio: 40}}
        """)
    state = pm.get_plugin("state")
    assert (state.alive, state.max_load, state.max_running_jobs, state.min_idle) == (True, None, None, 0)
    share = pm.get_plugin("share")
    assert (share.near, share.far, share.scope, share.max_lead) == (0, 7200, "request", None)
    assert (share.default.near, share.default.far) == (40, 40)


def test_per_group_limits_take_one_number_for_the_primary_group_or_a_mapping():
    pm = configure("""\
        one: {type: limits, max_concurrent_per_group: 10, node_hours_per_month: 500.5}
        each: {type: limits, max_concurrent_per_group: {chem: 3, "*": 10}, node_hours_per_month: {bio: 9}}
        """)
    one, each = pm.get_plugin("one"), pm.get_plugin("each")
    assert (one.max_concurrent_per_group, one.node_hours_per_month) == ({"*": 10}, {"*": 500.5})
    assert (each.max_concurrent_per_group, each.node_hours_per_month) == ({"chem": 3, "*": 10}, {"bio": 9})


def test_a_policy_named_like_another_plugin_is_refused():
    pm = manager()
    pm.register(object(), name="mail")
    with pytest.raises(plugins.PluginError, match=r"^plus.yaml: policies.mail: the name 'mail' is "
                                                  r"already taken by another plugin"):
        configure("""\
            fine: {type: node_state}
            mail: {type: node_state}
            """, pm)
    assert pm.get_plugin("fine") is None               # nothing registered when one fails


def test_the_installed_plugins_names_are_taken():
    pm = plugins.plugin_manager()
    assert pm.get_plugin("policies") is policies_plugin     # the entry point
    with pytest.raises(ValueError, match="policies.native: the name 'native' is already taken"):
        policies_plugin.plus_configure(config=Config(path="p", sections={"policies": {
            "native": {"type": "node_state"}}}), plugin_manager=pm)


SHARE = "s: {type: share, near: 30m, far: 2h, default: {ratio: 50}, "


@pytest.mark.parametrize("text, message", [
    ("[a, b]", "policies: expected a mapping, got ['a', 'b']"),
    ("'my policy': {type: node_state}",
     "policies: invalid key 'my policy'; expected a name of letters, digits"),
    ("p: node_state", "policies.p: expected a mapping, got 'node_state'"),
    ("p: {alive: true}", "policies.p.type: missing; expected one of node_state, share, usage, "
                         "projects, limits, approval"),
    ("p: {type: quota}", "policies.p.type: expected one of node_state, share, usage, projects, "
                         "limits, approval, got 'quota'"),
    ("p: {type: approval}", "policies.p: give max_nodes, max_node_hours or max_advance"),
    ("p: {type: approval, max_nodes: x}", "policies.p.max_nodes: "),
    ("p: {type: node_state, max_lod: 1}", "policies.p: unknown key 'max_lod'; accepted: type, alive, "
                                          "max_load, max_running_jobs, min_idle, deny"),
    ("p: {type: usage, period: 7 days}", "policies.p.period: expected a number of seconds or a "
                                         "duration (h:m:s, seconds, or <n>s/<n>m/<n>h/<n>d"),
    ("p: {type: usage, period: -5}", "policies.p.period: expected a number of seconds"),
    ("p: {type: usage, period: true}", "policies.p.period: expected a number of seconds"),
    ("p: {type: usage}", "policies.p.period: missing; expected a number of seconds"),
    ("p: {type: usage, period: 1d, max_count: 1.5}",
     "policies.p.max_count: expected a whole number of 0 or more, got 1.5"),
    ("p: {type: node_state, max_load: high}", "policies.p.max_load: expected a number of 0 or more"),
    ("p: {type: node_state, alive: yes please}", "policies.p.alive: expected true or false"),
    ("p: {type: node_state, deny: []}", "policies.p.deny: expected a non-empty list"),
    ("p: {type: node_state, deny: [n1, 'bad name']}",
     "policies.p.deny[1]: expected a node name or an fnmatch pattern"),
    (SHARE + "groups: [{name: A, members: [a], ratio: 1}, {name: B, members: [b, 'bad name'], ratio: 2}]}",
     "policies.s.groups[1].members[1]: expected a user name or an @group name, got 'bad name'"),
    (SHARE + "groups: [{name: A, members: ['@'], ratio: 1}]}",
     "policies.s.groups[0].members[0]: expected a user name or an @group name, got '@'"),
    (SHARE + "groups: [{name: A, ratio: 1}]}", "policies.s.groups[0].members: missing"),
    (SHARE + "groups: [{members: [a], ratio: 1}]}", "policies.s.groups[0].name: missing"),
    (SHARE + "groups: [{name: A, members: [a], ratio: 101}]}",
     "policies.s.groups[0].ratio: expected a percentage from 0 to 100, got 101"),
    (SHARE + "groups: [{name: A, members: [a], near: -1, far: 5}]}",
     "policies.s.groups[0].near: expected a percentage from 0 to 100, got -1"),
    (SHARE + "groups: [{name: A, members: [a], ratio: 5, near: 5, far: 5}]}",
     "policies.s.groups[0]: give either ratio or near and far, not both"),
    (SHARE + "groups: [{name: A, members: [a], near: 5}]}",
     "policies.s.groups[0]: give ratio (one percentage), or near and far"),
    (SHARE + "groups: [{name: A, members: [a], share: 5}]}",
     "policies.s.groups[0]: unknown key 'share'; accepted: name, members, ratio, near, far"),
    (SHARE + "groups: {name: A}}", "policies.s.groups: expected a non-empty list of mappings"),
    (SHARE + "scope: everyone}", "policies.s.scope: expected one of request, owner, got 'everyone'"),
    ("s: {type: share, near: 2h, far: 30m, default: {ratio: 50}}",
     "policies.s.near: 2h is beyond far (30m); near must be the shorter lead time"),
    ("s: {type: share, near: 30m, far: 2h}", "policies.s.default: missing; expected a mapping"),
    ("s: {type: share, far: 2h, default: {ratio: 5}}", "policies.s.near: missing"),
    ("s: {type: share, near: 30m, far: 2h, default: {name: x, ratio: 5}}",
     "policies.s.default: unknown key 'name'; accepted: ratio, near, far"),
    ("p: {type: projects}", "policies.p.projects: missing; expected a mapping"),
    ("p: {type: projects, projects: {a: {members: [x]}}}", "policies.p.projects.a.nodes: missing"),
    ("p: {type: projects, projects: {a: {members: [x], nodes: [n1], owner: y}}}",
     "policies.p.projects.a: unknown key 'owner'; accepted: members, nodes"),
    ("p: {type: projects, projects: {a: {members: ['x y'], nodes: [n1]}}}",
     "policies.p.projects.a.members[0]: expected a user name or an @group name"),
    ("p: {type: projects, projects: {a: {members: [x], nodes: [n1]}}, others: maybe}",
     "policies.p.others: expected one of deny, allow"),
    ("p: {type: limits, node_hours_per_month: {chem: -1}}",
     "policies.p.node_hours_per_month.chem: expected a number of 0 or more, got -1"),
    ("p: {type: limits, node_hours_per_month: {'a b': 1}}",
     "policies.p.node_hours_per_month: invalid group 'a b'; expected a group name, or \"*\""),
    ("p: {type: limits, node_hours_per_month: lots}",
     "policies.p.node_hours_per_month: expected a number of 0 or more, or a mapping of group names "
     "(and \"*\" for a primary group not listed) to such values, got 'lots'"),
    ("p: {type: limits, max_concurrent_per_group: {chem: 1.5}}",
     "policies.p.max_concurrent_per_group.chem: expected a whole number of 0 or more, got 1.5"),
    ("p: {type: limits, max_concurrent_per_group: {'@chem': 1}}",
     "policies.p.max_concurrent_per_group: invalid group '@chem'; expected a group name, or \"*\""),
    ("p: {type: limits, max_advance: 1w}", "policies.p.max_advance: expected a number of seconds"),
])
def test_configuration_errors_name_the_key_path(text, message):
    with pytest.raises(plugins.PluginError, match="^" + re.escape("plus.yaml: " + message)):
        configure(text)


def test_usage_history_must_keep_what_the_policies_count():
    def configure_with(history: int, text: str) -> None:
        pm = manager()
        plugins.configure(pm, Config(path="plus.yaml", usage_history=history,
                                     sections={"policies": yaml.safe_load(textwrap.dedent(text))}))

    configure_with(35 * 86400, "u: {type: usage, period: 35d, max_count: 1}")
    with pytest.raises(plugins.PluginError, match=re.escape(
            "plus.yaml: policies.u: counts ARs that ended up to 60d ago, but usage_history keeps "
            "them 35d; set usage_history to 5184000 or more")):
        configure_with(35 * 86400, "u: {type: usage, period: 60d, max_count: 1}")
    configure_with(0, "l: {type: limits, max_concurrent_per_user: 2}")
    with pytest.raises(plugins.PluginError, match=r"policies.l: counts ARs that ended up to 31d "
                                                  r"ago, but usage_history keeps them 30d"):
        configure_with(30 * 86400, "l: {type: limits, node_hours_per_month: {'*': 10}}")
