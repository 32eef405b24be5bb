"""``type: node_state``: seed 004 3.4.5.1, a node is reservable only while it
looks usable (alive, unloaded, running no jobs, idle long enough) and is not
on a deny list."""

from __future__ import annotations

from overlay.api.plugin import FLAG, Node, PolicyContext, hookimpl
from overlay_policies.patterns import NodeNames
from overlay_policies.settings import AMOUNT, COUNT, DURATION, PATTERN, Section, readable


class NodeState:
    """PluS's sample ``nRunJobs == 0 && isAlive && loadavg <= 0.3 &&
    !member(name, UnusableNodes)``, with each limit optional. The figures are
    what the backend last polled (seed 004 3.4.3: not the state of this
    instant). ``min_idle`` uses Node.idle_since: a node running jobs (0) has
    been idle for no time at all and is refused while min_idle is above 0."""

    KEYS = ("alive", "max_load", "max_running_jobs", "min_idle", "deny")

    def __init__(self, alive: bool = True, max_load: float | None = None,
                 max_running_jobs: int | None = None, min_idle: int = 0,
                 deny: tuple[str, ...] = ()) -> None:
        self.alive = alive
        self.max_load = max_load
        self.max_running_jobs = max_running_jobs
        self.min_idle = min_idle
        self.deny = NodeNames(deny)

    @classmethod
    def from_settings(cls, section: Section) -> "NodeState":
        return cls(alive=section.get("alive", FLAG, True),
                   max_load=section.get("max_load", AMOUNT),
                   max_running_jobs=section.get("max_running_jobs", COUNT),
                   min_idle=section.get("min_idle", DURATION, 0),
                   deny=section.entries("deny", PATTERN))

    @hookimpl
    def plus_node_reservable(self, node: Node, context: PolicyContext) -> str | None:
        if self.alive and not node.alive:
            return "node is down"
        if self.max_load is not None and node.load > self.max_load:
            return f"load average above {self.max_load:g}"
        if self.max_running_jobs is not None and node.running_jobs > self.max_running_jobs:
            return f"more than {self.max_running_jobs} running jobs"
        if self.min_idle and (not node.idle_since or context.now - node.idle_since < self.min_idle):
            return f"idle for less than {readable(self.min_idle)}"
        if node.name in self.deny:
            return f"node name in deny list ({self.deny})"
        return None
