"""GPU nodes for one group only: a site policy for the PluS overlay.

plus.yaml:   gpu_policy: {group: gpu}
"""

from overlay.api.plugin import hookimpl, settings


class GpuForGroup:
    def __init__(self, group: str) -> None:
        self.group = group

    @hookimpl
    def plus_node_reservable(self, node, groups):
        if node.properties.get("gpu") == "yes" and self.group not in groups:
            return f"GPU nodes are for members of group {self.group}"
        return None


CHECKS = {"group": settings.text("a group name", r"[A-Za-z_][A-Za-z0-9_.-]*")}


@hookimpl
def plus_configure(config, plugin_manager):
    values = settings.read_section("gpu_policy", config.sections.get("gpu_policy", {}), CHECKS)
    plugin_manager.register(GpuForGroup(values.get("group", "gpu")), name="gpu-policy")
    return ["gpu_policy"]
