"""``type: projects``: seed 004 3.4.5.4, each project's members may reserve
only its nodes."""

from __future__ import annotations

from typing import Iterable, NamedTuple

from overlay.hookspecs import hookimpl
from overlay.model import Node
from overlay.policy import PolicyContext
from overlay_policies.members import Members
from overlay_policies.patterns import NodeNames
from overlay_policies.settings import MEMBER, PATTERN, Section, choice

OTHERS = ("deny", "allow")


class Project(NamedTuple):
    name: str
    members: Members
    nodes: NodeNames


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

    @classmethod
    def from_settings(cls, section: Section) -> "Projects":
        projects = [Project(name, Members(entry.entries("members", MEMBER, required=True)),
                            NodeNames(entry.entries("nodes", PATTERN, required=True)))
                    for name, entry in section.section("projects", None).children(("members", "nodes"))]
        return cls(projects, section.get("others", choice(OTHERS), "deny"))

    def mine(self, owner: str, groups: Iterable[str]) -> tuple[Project, ...] | str | None:
        """The owner's projects; a refusal when they are in none and others
        are denied; None when they are in none and others are allowed."""
        mine = tuple(p for p in self.projects if p.members.includes(owner, groups))
        if mine:
            return mine
        return f"{owner} is a member of no project" if self.others == "deny" else None

    @hookimpl
    def plus_node_reservable(self, node: Node, owner: str, groups: tuple[str, ...],
                             context: PolicyContext) -> str | None:
        if self not in context.cache:
            context.cache[self] = self.mine(owner, groups)
        mine = context.cache[self]
        if mine is None or isinstance(mine, str):
            return mine
        for project in mine:
            if node.name in project.nodes:
                return None
        return f"not a node of {owner}'s projects ({', '.join(p.name for p in mine)})"
