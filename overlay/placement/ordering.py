"""The orders of nodes and jobs: PluS's NodeSortKey (the core's node_order,
the native scheduler's and TORQUE's self-scheduling mode's), and the job
order of the schedulers this overlay runs: JobSortKey with the owners',
groups' and hosts' orders (seed 004, 3.2), and PluS's own sched_conf file
read unchanged.

Keys sort lexicographically, earlier keys dominating; nodes still tied go
by name, jobs by submit time, then id (FIFO).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Hashable, Mapping, Protocol, Sequence

if TYPE_CHECKING:
    from overlay.language.model import Node

NODE_SORT_KEYS = ("NodeName", "LowestLoadAverage", "LongestIdleTime", "LargestPhysicalMemory")

JOB_SORT_KEYS = ("JobPriority", "SubmitTime", "LeastCPURequested", "MostCPURequested",
                 "LeastNodeRequested", "MostNodeRequested", "LeastTimeRequested",
                 "MostTimeRequested", "QueuePriority", "QueueRoundRobin", "ByQueue",
                 "OwnersName", "OwnersGroup", "OwnersHost")
DEFAULT_JOB_ORDER = ("QueuePriority", "ByQueue", "JobPriority")
_NEEDS = {"OwnersName": "OwnersOrder", "OwnersGroup": "GroupsOrder", "OwnersHost": "HostsOrder"}


class OrderError(ValueError):
    """A sort setting that cannot be used; the text names it."""


def node_order(where: str, keys: Sequence[str]) -> tuple[str, ...]:
    """NodeSortKey names, checked: the one check of the core's node_order,
    the native scheduler's and TORQUE's self-scheduling mode's."""
    for key in keys:
        if key not in NODE_SORT_KEYS:
            raise OrderError(f"{where}: unknown sort key {key!r}; accepted: "
                             f"{', '.join(NODE_SORT_KEYS)}")
    return tuple(keys)


def sort_nodes(nodes: list[Node], keys: Sequence[str], now: int) -> list[Node]:
    """PluS NodeSortKey: NodeName, LowestLoadAverage, LongestIdleTime,
    LargestPhysicalMemory; earlier keys dominate, the name breaks ties."""
    extractors = {
        "NodeName": lambda n: n.name,
        "LowestLoadAverage": lambda n: n.load,
        "LongestIdleTime": lambda n: n.idle_since if n.idle_since else now,
        "LargestPhysicalMemory": lambda n: -n.memory_mb,
    }
    return sorted(nodes, key=lambda n: tuple(extractors[k](n) for k in keys) + (n.name,))


class Orderable(Protocol):
    id: Hashable
    priority: float          # Grid Engine's combined priority (qsub -p and urgency)
    submit_time: int
    queue: str
    slots: int               # CPUs requested
    nodes: int               # nodes requested
    time: int                # run time requested
    owner: str
    group: str
    host: str                # submit host


@dataclass(frozen=True)
class JobOrder:
    """JobSortKey and the orders the Owners* keys need."""

    keys: tuple[str, ...] = DEFAULT_JOB_ORDER
    owners: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    queue_priority: dict[str, int] = field(default_factory=dict)   # higher first
    queue_order: tuple[str, ...] = ()                             # as registered

    def __post_init__(self) -> None:
        for key in self.keys:
            if key not in JOB_SORT_KEYS:
                raise OrderError(f"JobSortKey: unknown key {key!r}; accepted: {', '.join(JOB_SORT_KEYS)}")
        given = {"OwnersOrder": self.owners, "GroupsOrder": self.groups, "HostsOrder": self.hosts}
        for key, needed in _NEEDS.items():
            if key in self.keys and not given[needed]:
                raise OrderError(f"JobSortKey {key} needs {needed}")
        if "QueueRoundRobin" in self.keys and "ByQueue" in self.keys:
            raise OrderError("JobSortKey: QueueRoundRobin and ByQueue exclude each other "
                             "(round_robin and by_queue must not both be true)")


def _listed(order: Sequence[str], value: str, suffix: bool = False) -> int:
    """Position in an order list; unlisted values after all listed ones.
    Host entries may be domains (apgrid.org matches node1.apgrid.org)."""
    for index, entry in enumerate(order):
        if value == entry or (suffix and value.endswith("." + entry)):
            return index
    return len(order)


def order_jobs(jobs: Sequence[Orderable], order: JobOrder) -> list[Orderable]:
    """The jobs in the order the scheduler considers them."""
    queue_rank = {name: i for i, name in enumerate(order.queue_order)}

    def queue_position(job: Orderable) -> tuple:
        return (queue_rank.get(job.queue, len(queue_rank)), job.queue)

    simple = {
        "JobPriority": lambda j: -j.priority,
        "SubmitTime": lambda j: j.submit_time,
        "LeastCPURequested": lambda j: j.slots, "MostCPURequested": lambda j: -j.slots,
        "LeastNodeRequested": lambda j: j.nodes, "MostNodeRequested": lambda j: -j.nodes,
        "LeastTimeRequested": lambda j: j.time, "MostTimeRequested": lambda j: -j.time,
        "QueuePriority": lambda j: -order.queue_priority.get(j.queue, 0),
        "ByQueue": queue_position,
        "OwnersName": lambda j: _listed(order.owners, j.owner),
        "OwnersGroup": lambda j: _listed(order.groups, j.group),
        "OwnersHost": lambda j: _listed(order.hosts, j.host, suffix=True),
    }
    tail = (lambda j: j.submit_time, lambda j: str(j.id))
    parts: list = []
    for index, key in enumerate(order.keys):
        if key != "QueueRoundRobin":
            parts.append(simple[key])
            continue
        # one job of each queue in turn: a job's turn is its place in its own
        # queue by the keys after this one
        within = [simple[k] for k in order.keys[index + 1:] if k != "QueueRoundRobin"] + list(tail)
        turn: dict[Hashable, int] = {}
        by_queue: dict[str, list[Orderable]] = {}
        for job in jobs:
            by_queue.setdefault(job.queue, []).append(job)
        for members in by_queue.values():
            members.sort(key=lambda j: tuple(f(j) for f in within))
            turn.update({job.id: position for position, job in enumerate(members)})
        parts.extend([lambda j, turn=turn: turn[j.id], queue_position])
    parts.extend(tail)
    return sorted(jobs, key=lambda j: tuple(f(j) for f in parts))


_LINE = re.compile(r"^\s*(\w+)\s*:\s*(.*?)\s*$")


def parse_sched_conf(text: str, path: str = "sched_conf") -> dict[str, tuple[str, ...]]:
    """PluS's sched_conf (NodeSortKey, JobSortKey, OwnersOrder, GroupsOrder,
    HostsOrder), as plus_scheduler -a Sort -c sched_conf read it."""
    settings: dict[str, tuple[str, ...]] = {}
    known = ("NodeSortKey", "JobSortKey", "OwnersOrder", "GroupsOrder", "HostsOrder")
    for number, line in enumerate(text.splitlines(), 1):
        content = line.split("#", 1)[0]
        if not content.strip():
            continue
        match = _LINE.match(content)
        if not match or match.group(1) not in known:
            raise OrderError(f"{path}:{number}: expected 'Name: value, ...' with Name one of "
                             f"{', '.join(known)}, got {line.strip()!r}")
        values = tuple(v.strip() for v in match.group(2).split(",") if v.strip())
        name = match.group(1)
        if name == "NodeSortKey":
            node_order(f"{path}:{number}: NodeSortKey", values)
        for value in values if name == "JobSortKey" else ():
            if value not in JOB_SORT_KEYS:
                raise OrderError(f"{path}:{number}: {name}: unknown key {value!r}; accepted: "
                                 f"{', '.join(JOB_SORT_KEYS)}")
        settings[name] = values
    return settings


ORDER_SETTINGS = ("JobSortKey", "NodeSortKey", "OwnersOrder", "GroupsOrder", "HostsOrder")


def _names(where: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise OrderError(f"{where}: expected a list of names, got {value!r}")
    return tuple(value)


def read_orders(raw: Mapping[str, Any], section: str,
                read_file: Callable[[str], tuple[str, str]]) -> dict[str, tuple[str, ...]]:
    """JobSortKey and friends from a configuration section, inline or from
    PluS's sched_conf file (``read_file(name) -> (text, path)``)."""
    inline = {key: _names(f"{section}.{key}", raw[key]) for key in ORDER_SETTINGS if key in raw}
    node_order(f"{section}.NodeSortKey", inline.get("NodeSortKey", ()))
    if "sched_conf" not in raw:
        return inline
    if inline:
        raise OrderError(f"{section}: give either sched_conf or {', '.join(inline)}, not both")
    path = raw["sched_conf"]
    if not isinstance(path, str) or not path:
        raise OrderError(f"{section}.sched_conf: expected a file name, got {path!r}")
    return parse_sched_conf(*read_file(path))
