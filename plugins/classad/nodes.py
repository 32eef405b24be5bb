"""PluS's node information struct (seed 004, 3.4.3) as ClassAd records.

Members: name, isAlive, loadavg, nRunJobs, nSlots, nCPUs, memory (MB),
arch, os, idleTime (seconds since the node's last job ended, 0 while it
runs one) and the node's properties (complex values of the batch system:
numbers and booleans as such, the rest as strings; a property never hides
a member). Building a record costs more than evaluating a policy, so each
is kept until its node changes.
"""

from __future__ import annotations

import re
from typing import Any

import classad2

from overlay.api.plugin import Node

_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_MEMBERS = frozenset({"name", "isalive", "loadavg", "nrunjobs", "nslots", "ncpus", "memory",
                      "arch", "os", "idletime"})


def _property(text: str) -> Any:
    if _NUMBER.fullmatch(text):
        try:
            return int(text)
        except ValueError:
            return float(text)
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    return text


def node_record(node: Node) -> classad2.ClassAd:
    """The node's record, idleTime 0 (``NodeAds.ad`` sets it)."""
    values: dict[str, Any] = {key: _property(value) for key, value in node.properties.items()
                              if key.lower() not in _MEMBERS}
    values.update(name=node.name, isAlive=node.alive, loadavg=float(node.load),
                  nRunJobs=node.running_jobs, nSlots=node.slots, nCPUs=node.ncpus,
                  memory=node.memory_mb, arch=node.arch, os=node.os, idleTime=0)
    return classad2.ClassAd(values)


class NodeAds:
    """Node records by name, rebuilt only when the node's facts change."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[Node, classad2.ClassAd]] = {}

    def ad(self, node: Node, now: int | None) -> classad2.ClassAd:
        """The node's record, its idleTime as of ``now`` (None: leave it
        as it is, for policies that never read it)."""
        cached = self._cache.get(node.name)
        if cached is None or cached[0] != node:
            cached = (node, node_record(node))
            self._cache[node.name] = cached
        record = cached[1]
        if now is not None:
            record["idleTime"] = max(0, now - node.idle_since) if node.idle_since else 0
        return record
