"""Entry point of the policies plugin: reads the ``policies:`` section and
registers one object per configured policy under the policy's key, so that
a refusal reads "policy <key>: <why>"."""

from __future__ import annotations

from typing import Any

import pluggy

from overlay.api.plugin import choice, hookimpl
from overlay_policies.approval import ApprovalPolicy
from overlay_policies.limits import Limits
from overlay_policies.node_state import NodeState
from overlay_policies.projects import Projects
from overlay_policies.settings import Section, readable
from overlay_policies.share import Share
from overlay_policies.usage import UsagePolicy

SECTION = "policies"
TYPES = {"node_state": NodeState, "share": Share, "usage": UsagePolicy, "projects": Projects,
         "limits": Limits, "approval": ApprovalPolicy}
TYPE = choice(TYPES)


def build(options: Any) -> dict[str, Any]:
    """Every policy of the section, by key; raises ValueError naming the key
    path of the first mistake."""
    policies = {}
    for key, entry in Section(SECTION, options, None).children(None):
        kind = TYPES[entry.require("type", TYPE)]
        policies[key] = kind.from_settings(Section(entry.path, entry.values, ("type",) + kind.KEYS))
    return policies


@hookimpl
def plus_configure(config: Any, plugin_manager: pluggy.PluginManager) -> list[str]:
    options = config.sections.get(SECTION)
    if options is None:
        return [SECTION]
    policies = build(options)
    history = config.usage_history
    for key, policy in policies.items():
        needed = policy.look_back() if hasattr(policy, "look_back") else 0
        if needed > history:
            raise ValueError(f"{SECTION}.{key}: counts ARs that ended up to {readable(needed)} "
                             f"ago, but usage_history keeps them {readable(history)}; set "
                             f"usage_history to {needed} or more")
    for key in policies:
        if plugin_manager.has_plugin(key) or plugin_manager.is_blocked(key):
            raise ValueError(f"{SECTION}.{key}: the name {key!r} is already taken by another "
                             "plugin; give the policy another key")
    for key, policy in policies.items():
        plugin_manager.register(policy, name=key)
    return [SECTION]
