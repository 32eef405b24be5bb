"""GPU nodes for one group only: a site policy for the PluS overlay.

plus.yaml:   gpu_policy: {group: gpu}
"""

from overlay.hookspecs import hookimpl


class GpuForGroup:
    def __init__(self, group: str) -> None:
        self.group = group

    @hookimpl
    def plus_node_reservable(self, node, groups):
        if node.properties.get("gpu") == "yes" and self.group not in groups:
            return f"GPU nodes are for members of group {self.group}"
        return None


@hookimpl
def plus_configure(config, plugin_manager):
    group = config.sections.get("gpu_policy", {}).get("group", "gpu")
    if not isinstance(group, str) or not group:
        raise ValueError(f"gpu_policy.group: expected a group name, got {group!r}")
    plugin_manager.register(GpuForGroup(group), name="gpu-policy")
    return ["gpu_policy"]
