"""Node.running_jobs and Node.idle_since, worked out by the core from the
backend's running jobs, so that every backend gives policies (PluS's
nRunJobs and idleTime) and NodeSortKey=LongestIdleTime the same figures."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Iterable

from overlay.contract.backend import Job
from overlay.language.model import Node


class Activity:
    """Remembers since when each node has run no job. A node idle at the
    first look counts as idle since then: the daemon cannot know earlier.
    A node that comes with its idle time (the leader's, from the published
    inventory) keeps it, so every daemon tells the same, and a standby
    that takes the lead carries on from the leader's."""

    def __init__(self) -> None:
        self.idle_since: dict[str, int] = {}

    def apply(self, nodes: Iterable[Node], jobs: Iterable[Job], now: int) -> list[Node]:
        """``nodes`` with their running job counts and idle times filled in."""
        running = Counter(host for job in jobs for host in set(job.nodes))
        result = []
        for node in nodes:
            count = running.get(node.name, 0)
            if count:
                self.idle_since.pop(node.name, None)
                since = 0
            elif node.idle_since:
                since = self.idle_since[node.name] = node.idle_since
            else:
                since = self.idle_since.setdefault(node.name, now)
            result.append(replace(node, running_jobs=count, idle_since=since))
        return result
