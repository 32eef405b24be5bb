"""``type: projects``: seed 004 3.4.5.4, each project's members may reserve
only its nodes."""

from __future__ import annotations

from typing import Iterable, NamedTuple

from overlay.api.plugin import Node, PolicyContext, choice, hookimpl
from overlay_policies.members import Members
from overlay_policies.patterns import NodeNames
from overlay_policies.settings import MEMBER, PATTERN, Section

OTHERS = ("deny", "allow")


class Project(NamedTuple):
    name: str
    members: Members
    nodes: NodeNames


class Access(NamedTuple):
    """What one owner may use: ``nodes`` (None: any node) and the refusal
    for the others."""

    nodes: NodeNames | None
    refusal: str | None


class Projects:
    """PluS's avail1 || avail2: a node is reservable when it is a node of one
    of the projects the owner is a member of (by name or @group); an owner in
    several projects may use the nodes of all of them. Owners in no project
    are refused every node with ``others: deny`` (PluS's sample) and are not
    restricted with ``others: allow``."""

    KEYS = ("projects", "others")

    def __init__(self, projects: Iterable[Project], others: str = "deny") -> None:
        self.projects = tuple(projects)
        self.others = others
        self.merged: dict[tuple[str, ...], NodeNames] = {}

    @classmethod
    def from_settings(cls, section: Section) -> "Projects":
        projects = [Project(name, Members(entry.entries("members", MEMBER, required=True)),
                            NodeNames(entry.entries("nodes", PATTERN, required=True)))
                    for name, entry in section.section("projects", None).children(("members", "nodes"))]
        return cls(projects, section.get("others", choice(OTHERS), "deny"))

    def access(self, owner: str, groups: Iterable[str]) -> Access:
        """The nodes of the owner's projects, matched in one step (kept for
        each combination of projects, as owners share them)."""
        mine = [p for p in self.projects if p.members.includes(owner, groups)]
        if not mine:
            if self.others == "allow":
                return Access(None, None)
            return Access(NodeNames(()), f"{owner} is a member of no project")
        names = tuple(p.name for p in mine)
        if names not in self.merged:
            self.merged[names] = NodeNames(pattern for p in mine for pattern in p.nodes.patterns)
        return Access(self.merged[names], f"not a node of {owner}'s projects ({', '.join(names)})")

    @hookimpl
    def plus_node_reservable(self, node: Node, owner: str, groups: tuple[str, ...],
                             context: PolicyContext) -> str | None:
        access = context.cache.get(self)
        if access is None:
            access = context.cache[self] = self.access(owner, groups)
        if access.nodes is None or node.name in access.nodes:
            return None
        return access.refusal
