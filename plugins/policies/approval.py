"""``type: approval``: requests a manager must approve before they are
granted (plus_approval_needed): more nodes than ``max_nodes``, more
node-hours than ``max_node_hours``, or a start further ahead than
``max_advance``. Reaching a figure exactly needs no approval. The AR waits
in state h, its nodes held, until plus_approve, plus_deny or
approval_timeout; a manager's own request is never held."""

from __future__ import annotations

from overlay.api.plugin import PolicyContext, Request, hookimpl
from overlay_policies.settings import AMOUNT, COUNT, DURATION, HOUR, Section, readable


class ApprovalPolicy:
    """Each figure is optional; the first one passed says why."""

    KEYS = ("max_nodes", "max_node_hours", "max_advance")

    def __init__(self, max_nodes: int | None = None, max_node_hours: float | None = None,
                 max_advance: int | None = None) -> None:
        self.max_nodes = max_nodes
        self.max_node_hours = max_node_hours
        self.max_advance = max_advance

    @classmethod
    def from_settings(cls, section: Section) -> "ApprovalPolicy":
        policy = cls(section.get("max_nodes", COUNT), section.get("max_node_hours", AMOUNT),
                     section.get("max_advance", DURATION))
        if (policy.max_nodes, policy.max_node_hours, policy.max_advance) == (None, None, None):
            raise ValueError(f"{section.path}: give max_nodes, max_node_hours or max_advance "
                             "(beyond which a manager must approve)")
        return policy

    @hookimpl
    def plus_approval_needed(self, request: Request, context: PolicyContext) -> str | None:
        if self.max_nodes is not None and request.nodes > self.max_nodes:
            return f"{request.nodes} nodes is more than max_nodes {self.max_nodes}"
        node_hours = request.nodes * request.duration / HOUR
        if self.max_node_hours is not None and node_hours > self.max_node_hours:
            return (f"{node_hours:.1f} node-hours is more than max_node_hours "
                    f"{self.max_node_hours:g}")
        lead = request.start - context.now
        if self.max_advance is not None and lead > self.max_advance:
            return (f"a start {readable(lead)} ahead is further than max_advance "
                    f"{readable(self.max_advance)}")
        return None
