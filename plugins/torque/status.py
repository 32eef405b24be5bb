"""What TORQUE reports, parsed: nodes (pbsnodes -x), jobs (qstat -f -x)
and queues (qmgr print server), as plain values for the backend.

TORQUE's own quirks are handled here: pbsnodes leaves empty elements out,
its <status> string is stale (the <jobs> list is the truth), and a requeued
job keeps a stale exec_host, so only a running job occupies its slots.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

_KB = re.compile(r"^(\d+)kb$")
_SETTING = re.compile(r"^(\S+) (\S+) (\+?=) ?(.*)$")
"""``R1 acl_users = alice``, and ``+=`` for each further value of a list."""


@dataclass(frozen=True)
class TorqueNode:
    name: str
    states: frozenset[str]          # free, offline, down, job-exclusive, ...
    np: int
    properties: tuple[str, ...]     # as listed, duplicates kept
    jobs: tuple[str, ...]           # job ids, one per used slot
    note: str = ""
    status: dict[str, str] = field(default_factory=dict)

    @property
    def alive(self) -> bool:
        return not self.states & {"down", "unknown"}

    @property
    def offline(self) -> bool:
        return "offline" in self.states

    @property
    def load(self) -> float:
        try:
            return float(self.status.get("loadave", "0"))
        except ValueError:
            return 0.0

    def kb(self, key: str) -> int:
        match = _KB.match(self.status.get(key, ""))
        return int(match.group(1)) if match else 0


@dataclass(frozen=True)
class TorqueJob:
    id: str
    name: str
    owner: str                      # the user, without @host
    group: str
    state: str                      # Q, H, R, E, C, W, T, S
    queue: str
    hold_types: str                 # n, u, o, s and combinations
    rerunnable: bool
    nodes_spec: str | None          # Resource_List.nodes as submitted or altered
    walltime: int | None            # seconds
    exec_hosts: tuple[str, ...]     # hosts of a running job, one per host
    start_time: int | None
    queued_since: int
    priority: int = 0
    execution_time: int | None = None   # qsub -a: W until then

    @property
    def running(self) -> bool:
        return self.state in ("R", "E")

    @property
    def held(self) -> bool:
        return self.hold_types not in ("", "n")


def seconds(text: str | None) -> int | None:
    """A TORQUE duration ([[HH:]MM:]SS) in seconds."""
    if not text:
        return None
    parts = text.strip().split(":")
    if not all(part.isdigit() for part in parts) or len(parts) > 3:
        return None
    total = 0
    for part in parts:
        total = total * 60 + int(part)
    return total


def duration(value: int) -> str:
    """Seconds as TORQUE's HH:MM:SS."""
    return f"{value // 3600:02d}:{value // 60 % 60:02d}:{value % 60:02d}"


def _status(text: str) -> dict[str, str]:
    values = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if sep:
            values[key.strip()] = value
    return values


def parse_nodes(text: str) -> list[TorqueNode]:
    """pbsnodes -x (a single <Data> line, no XML declaration)."""
    if not text.strip():
        return []
    nodes = []
    for node in ET.fromstring(text.strip()).iter("Node"):
        def value(tag: str, node: ET.Element = node) -> str:
            return (node.findtext(tag) or "").strip()
        jobs = _slot_jobs(value("jobs"))
        nodes.append(TorqueNode(
            name=value("name"), states=frozenset(s for s in value("state").split(",") if s),
            np=int(value("np") or 0),
            properties=tuple(p for p in value("properties").split(",") if p),
            jobs=jobs, note=value("note"), status=_status(value("status"))))
    return nodes


def _slot_jobs(text: str) -> tuple[str, ...]:
    """pbsnodes' <jobs> ``0-2,5/45.vm,3/47.vm``: a job id per used slot."""
    jobs: list[str] = []
    slots = 0
    for token in filter(None, text.split(",")):
        numbers, sep, job = token.partition("/")
        first, _, last = numbers.partition("-")
        if first.isdigit():
            slots += int(last) - int(first) + 1 if last.isdigit() else 1
        if sep:
            jobs.extend([job] * max(slots, 1))
            slots = 0
    return tuple(jobs)


def _hosts(exec_host: str) -> tuple[str, ...]:
    """exec_host ``vm/0+vm/1+n2/0`` (or ``vm/0-3``): the hosts, in order."""
    return tuple(dict.fromkeys(part.split("/", 1)[0] for part in exec_host.split("+") if part))


def parse_jobs(text: str) -> list[TorqueJob]:
    """qstat -f -x: every job the server knows."""
    text = text.strip()
    if not text:
        return []
    jobs = []
    for job in ET.fromstring(text).iter("Job"):
        def value(path: str, job: ET.Element = job) -> str:
            return (job.findtext(path) or "").strip()
        state = value("job_state")
        start = value("start_time")
        jobs.append(TorqueJob(
            id=value("Job_Id"), name=value("Job_Name"),
            owner=value("euser") or value("Job_Owner").split("@", 1)[0],
            group=value("egroup"), state=state, queue=value("queue"),
            hold_types=value("Hold_Types") or "n", rerunnable=value("Rerunable") == "True",
            nodes_spec=value("Resource_List/nodes") or None,
            walltime=seconds(value("Resource_List/walltime")),
            exec_hosts=_hosts(value("exec_host")) if state in ("R", "E") else (),
            start_time=int(start) if start.isdigit() else None,
            queued_since=int(value("qtime") or value("ctime") or 0),
            priority=int(value("Priority") or 0),
            execution_time=int(value("Execution_Time")) if value("Execution_Time").isdigit()
            else None))
    return jobs


def parse_queues(text: str) -> dict[str, dict[str, str]]:
    """qmgr -c 'print server': queue -> its attributes, in creation order."""
    queues: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        if line.startswith("create queue "):
            queues[line.split()[2]] = {}
        elif line.startswith("set queue "):
            match = _SETTING.match(line[len("set queue "):])
            if match:
                name, key, operator, value = match.groups()
                attributes = queues.setdefault(name, {})
                if operator == "+=" and attributes.get(key):
                    value = f"{attributes[key]},{value}"
                attributes[key] = value
    return queues


def parse_server(text: str) -> dict[str, str]:
    """qmgr -c 'print server': the server's attributes."""
    settings = {}
    for line in text.splitlines():
        if line.startswith("set server "):
            key, _, value = line[len("set server "):].partition(" = ")
            settings[key.strip()] = value.strip()
    return settings
