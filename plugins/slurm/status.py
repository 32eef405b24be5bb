"""What Slurm's commands print, read into typed records.

``scontrol show node|reservation --oneliner`` prints one record per line
as ``Key=Value`` words, where a value may hold spaces (``OS=Linux 6.1 #1
SMP``, ``Reason=down for repair [root@...]``): a key is a capitalised word
followed by ``=`` at the start of a word. squeue is asked for the columns
the backend needs, separated by ``|`` (no field it prints can hold one).
Times are epoch seconds: every command runs with SLURM_TIME_FORMAT=%s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from overlay_slurm import hostlist

_KEY = re.compile(r"(?:^|(?<= ))([A-Z][A-Za-z0-9_:]*)=")

JOB_FORMAT = "%i|%u|%T|%v|%N|%S|%l|%P|%r"
"""squeue -o: id, user, state, reservation, nodes, start, time limit,
partition, reason."""

DOWN_STATES = ("DOWN", "DRAIN", "FAIL", "NO_RESPOND", "POWERED_DOWN", "POWERING_DOWN",
               "REBOOT_ISSUED", "FUTURE", "UNKNOWN")
"""Node state words (base state or flag) under which a node runs no new job."""


def records(text: str) -> list[dict[str, str]]:
    """Each line's ``Key=Value`` words; lines without one are skipped
    ("No reservations in the system")."""
    found = []
    for line in text.splitlines():
        keys = list(_KEY.finditer(line))
        if not keys:
            continue
        record = {}
        for index, match in enumerate(keys):
            end = keys[index + 1].start() if index + 1 < len(keys) else len(line)
            record[match.group(1)] = line[match.end():end].strip()
        found.append(record)
    return found


def _number(text: str, default: int = 0) -> int:
    return int(text) if text.isdigit() else default


def time_limit(text: str) -> int | None:
    """Seconds of a limit as Slurm writes it (minutes, minutes:seconds,
    hours:minutes:seconds, days-hours[:minutes[:seconds]]); None for
    UNLIMITED and anything else."""
    match = re.match(r"^(?:(\d+)-)?(\d+(?::\d+){0,2})$", text.strip())
    if not match:
        return None
    parts = [int(part) for part in match.group(2).split(":")]
    if match.group(1) is not None:
        hours, minutes, seconds = (parts + [0, 0])[:3]
    elif len(parts) == 3:
        hours, minutes, seconds = parts
    else:
        hours, minutes, seconds = 0, parts[0], (parts[1] if len(parts) == 2 else 0)
    return int(match.group(1) or 0) * 86400 + hours * 3600 + minutes * 60 + seconds


@dataclass(frozen=True)
class SlurmNode:
    name: str
    state: str                  # as printed: IDLE, MIXED+DRAIN, DOWN*, ...
    cpus: int
    memory_mb: int
    arch: str
    os: str
    features: tuple[str, ...]
    gres: str
    partitions: tuple[str, ...]
    load: float
    reason: str

    @property
    def problems(self) -> list[str]:
        """Why the node runs no new job, in Slurm's state words."""
        words = re.split(r"[+]", self.state.rstrip("*~#!%$@^-"))
        found = [w for w in words if w in DOWN_STATES]
        if self.state.endswith("*"):
            found.append("NOT_RESPONDING")
        return found


def nodes(text: str) -> list[SlurmNode]:
    found = []
    for record in records(text):
        features = record.get("AvailableFeatures", record.get("Features", ""))
        load = record.get("CPULoad", "0")
        found.append(SlurmNode(
            name=record.get("NodeName", ""), state=record.get("State", "UNKNOWN"),
            cpus=_number(record.get("CPUTot", ""), 1),
            memory_mb=_number(record.get("RealMemory", "")), arch=record.get("Arch", ""),
            os=record.get("OS", ""),
            features=tuple(f for f in features.split(",") if f and f != "(null)"),
            gres=record.get("Gres", "(null)"),
            partitions=tuple(p for p in record.get("Partitions", "").split(",") if p),
            load=float(load) if re.match(r"^\d+(\.\d+)?$", load) else 0.0,
            reason=record.get("Reason", "")))
    return [node for node in found if node.name]


@dataclass(frozen=True)
class SlurmReservation:
    name: str
    start: int
    end: int
    nodes: tuple[str, ...]
    users: tuple[str, ...]
    flags: tuple[str, ...]
    cores: int
    partition: str
    state: str


def reservations(text: str) -> list[SlurmReservation]:
    found = []
    for record in records(text):
        users = record.get("Users", "(null)")
        found.append(SlurmReservation(
            name=record.get("ReservationName", ""), start=_number(record.get("StartTime", "")),
            end=_number(record.get("EndTime", "")),
            nodes=tuple(hostlist.expand(record.get("Nodes", ""))),
            users=tuple(u for u in users.split(",") if u and u != "(null)"),
            flags=tuple(f for f in record.get("Flags", "").split(",") if f),
            cores=_number(record.get("CoreCnt", "")),
            partition=record.get("PartitionName", "(null)"), state=record.get("State", "")))
    return [reservation for reservation in found if reservation.name]


@dataclass(frozen=True)
class SlurmJob:
    id: str
    user: str
    state: str                  # RUNNING, PENDING, SUSPENDED, ...
    reservation: str            # "" outside any
    nodes: tuple[str, ...]
    start: int | None
    limit: int | None           # seconds; None: UNLIMITED
    partition: str
    reason: str

    @property
    def limit_end(self) -> int | None:
        return self.start + self.limit if self.start and self.limit is not None else None


def jobs(text: str) -> list[SlurmJob]:
    """squeue -h -o JOB_FORMAT's lines."""
    found = []
    for line in text.splitlines():
        fields = line.split("|")
        if len(fields) != JOB_FORMAT.count("|") + 1 or not fields[0]:
            continue
        job_id, user, state, reservation, nodelist, start, limit, partition, reason = fields
        found.append(SlurmJob(
            id=job_id, user=user, state=state,
            reservation="" if reservation in ("(null)", "") else reservation,
            nodes=tuple(hostlist.expand(nodelist)) if state == "RUNNING" else (),
            start=int(start) if start.isdigit() else None, limit=time_limit(limit),
            partition=partition, reason=reason))
    return found
