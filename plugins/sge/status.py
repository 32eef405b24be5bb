"""What Grid Engine reports, parsed from its -xml output: hosts (qhost),
queue instances and jobs (qstat -f), as plain values for the backend."""

from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

_SIZE = re.compile(r"^([0-9.]+)([KMGT]?)$")
_SIZE_MB = {"": 1 / 2 ** 20, "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 ** 2}
_OS_OF_ARCH = {"lx": "linux", "sol": "solaris", "darwin": "darwin", "fbsd": "freebsd",
               "nbsd": "netbsd", "aix": "aix", "hp11": "hpux", "win": "windows"}


@dataclass(frozen=True)
class HostInfo:
    name: str
    arch: str
    ncpus: int
    memory_mb: int
    load: float | None
    queues: dict[str, int]            # cluster queue -> slots on this host
    resources: dict[str, str] = field(default_factory=dict)

    @property
    def alive(self) -> bool:
        return self.load is not None

    @property
    def os(self) -> str:
        """The OS Grid Engine's arch string names (lx-amd64 -> linux)."""
        prefix = re.split(r"[-0-9]", self.arch, maxsplit=1)[0]
        return _OS_OF_ARCH.get(prefix, prefix)


@dataclass(frozen=True)
class QueueInstance:
    name: str                          # queue@host
    state: str                         # Grid Engine's letters: s, d, u, E, o, a, ...
    slots_total: int
    slots_used: int

    @property
    def queue(self) -> str:
        return self.name.split("@", 1)[0]

    @property
    def host(self) -> str:
        return self.name.split("@", 1)[1]


@dataclass(frozen=True)
class GridJob:
    id: str
    owner: str
    name: str
    state: str
    slots: int
    instance: str | None = None        # queue@host, for a running job
    start: int | None = None
    h_rt: int | None = None
    requests: dict[str, str] = field(default_factory=dict)
    queue_requests: tuple[str, ...] = ()

    @property
    def host(self) -> str | None:
        return self.instance.split("@", 1)[1] if self.instance else None

    @property
    def queue(self) -> str | None:
        return self.instance.split("@", 1)[0] if self.instance else None


@dataclass(frozen=True)
class Observation:
    """One qstat -f -u '*' -r -xml: every queue instance and job."""

    instances: list[QueueInstance]
    running: list[GridJob]
    pending: list[GridJob]


def _mb(text: str) -> int:
    match = _SIZE.match(text.strip())
    return int(float(match.group(1)) * _SIZE_MB[match.group(2)]) if match else 0


def _seconds(text: str) -> int | None:
    """A time value as qstat prints it: seconds, or h:m:s."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    parts = text.split(":")
    if len(parts) == 3 and all(p.isdigit() for p in parts):
        return int(parts[0]) * 3600 + int(parts[1]) * 60 + int(parts[2])
    return None


def _epoch(text: str | None) -> int | None:
    """qstat's times are the master's local time without a zone."""
    if not text:
        return None
    return int(time.mktime(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S")))


def parse_hosts(text: str) -> list[HostInfo]:
    """qhost -q -F -xml, without the 'global' pseudo host."""
    hosts = []
    for host in ET.fromstring(text).iter("host"):
        name = host.get("name", "")
        if name == "global":
            continue
        values = {v.get("name"): (v.text or "").strip() for v in host.findall("hostvalue")}
        resources = {r.get("name"): (r.text or "").strip() for r in host.findall("resourcevalue")}
        queues = {}
        for queue in host.findall("queue"):
            slots = {v.get("name"): (v.text or "") for v in queue.findall("queuevalue")}.get("slots", "0")
            queues[queue.get("name", "")] = int(slots) if slots.isdigit() else 0
        load = values.get("load_avg", "-")
        ncpus = values.get("num_proc", "-")
        hosts.append(HostInfo(
            name=name, arch=values.get("arch_string", "-"),
            ncpus=int(ncpus) if ncpus.isdigit() else 0, memory_mb=_mb(values.get("mem_total", "")),
            load=None if load in ("-", "") else float(load), queues=queues, resources=resources))
    return hosts


def _job(element: ET.Element, instance: str | None) -> GridJob:
    def text(tag: str) -> str:
        return (element.findtext(tag) or "").strip()
    requests = {r.get("name", ""): (r.text or "").strip() for r in element.findall("hard_request")}
    h_rt = _seconds(requests["h_rt"]) if "h_rt" in requests else None
    return GridJob(
        id=text("JB_job_number"), owner=text("JB_owner"), name=text("JB_name"),
        state=text("state"), slots=int(text("slots") or 1),
        instance=instance or (text("queue_name") or None),
        start=_epoch(element.findtext("JAT_start_time")), h_rt=h_rt, requests=requests,
        queue_requests=tuple((q.text or "").strip() for q in element.findall("hard_req_queue")))


def parse_observation(text: str) -> Observation:
    """qstat -f -u '*' -r -xml."""
    root = ET.fromstring(text)
    instances, running = [], []
    for queue in root.iter("Queue-List"):
        name = (queue.findtext("name") or "").strip()
        instances.append(QueueInstance(
            name=name, state=(queue.findtext("state") or "").strip(),
            slots_total=int(queue.findtext("slots_total") or 0),
            slots_used=int(queue.findtext("slots_used") or 0)))
        running += [_job(job, name) for job in queue.findall("job_list")]
    pending_section = root.find("job_info")
    pending = [] if pending_section is None else [_job(job, None) for job in pending_section.findall("job_list")]
    return Observation(instances, running, pending)



def parse_restart_flags(text: str) -> dict[str, str]:
    """qstat -j J,K -xml: each job's JB_restart (nothing for jobs gone)."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError:
        return {}
    flags = {}
    for element in root.iter():
        number, restart = element.find("JB_job_number"), element.find("JB_restart")
        if number is not None and restart is not None:
            flags[(number.text or "").strip()] = (restart.text or "").strip()
    return flags
