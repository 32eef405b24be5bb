"""The native batch system's cluster: hosts, cluster queues, parallel
environments, user lists and complex values, from one YAML file (with
this machine added if wanted).

The file is read again whenever it (or a file it names) changes, so an
administrator can add a host, change a queue or mark a host down
(``alive: false``) without restarting the daemon; a broken edit keeps the
last good cluster and is logged. Every value is checked at load against
Grid Engine's rules (seed 002), so a mistake is reported with the place it
was made instead of surfacing as a job that never runs. ``conf/cluster.yaml``
documents every key.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import platform
import re
import socket
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

import yaml

from overlay.api.plugin import (
    Node,
    RequestError,
    SshSettings,
    parse_memory_mb,
    parse_ssh,
    read_yaml,
    valid_name,
)
from overlay_native.resources.complexes import ComplexError, ComplexTable, parse_value
from overlay_native.resources.matching import LIMIT, LOAD, RESOURCE_LIMITS, ResourceContainer
from overlay_native.scheduling.schedconf import SchedConfError, SchedulerConfig, parse_scheduler

log = logging.getLogger("plus.native")
_RANGE = re.compile(r"^(.*)\[(\d+)-(\d+)\](.*)$")
DEFAULT_QUEUE = "all.q"
ALLOCATION_RULES = ("$pe_slots", "$fill_up", "$round_robin")
QTYPES = ("BATCH", "INTERACTIVE")
LOCAL, NONE = "local", "none"
_TOP_KEYS = ("nodes", "queues", "pes", "userlists", "hostgroups", "global", "complexes",
             "scheduler")
_NODE_KEYS = ("name", "slots", "memory", "ncpus", "arch", "os", "queues", "properties", "alive",
              "load", "complex_values", "exec")
_QUEUE_KEYS = ("name", "hostlist", "slots", "seq_no", "qtype", "pe_list", "ckpt_list", "user_lists",
               "xuser_lists", "complex_values", "suspended", "disabled", "shell", "notify",
               *RESOURCE_LIMITS)
_PE_KEYS = ("name", "slots", "allocation_rule", "user_lists", "xuser_lists")


class ClusterError(Exception):
    """The cluster file cannot be used; the text names the place and the key."""


def expand_names(pattern: str) -> list[str]:
    """node[001-003] -> node001, node002, node003 (width kept)."""
    match = _RANGE.match(pattern)
    if not match:
        return [pattern]
    prefix, first, last, suffix = match.groups()
    if int(last) < int(first):
        raise ClusterError(f"node name {pattern!r}: the range ends before it starts")
    width = len(first)
    return [f"{prefix}{number:0{width}d}{suffix}" for number in range(int(first), int(last) + 1)]


def grid_engine_arch() -> str:
    """Grid Engine's architecture string for this machine (lx-amd64, ...)."""
    machine = platform.machine()
    return {"x86_64": "lx-amd64", "aarch64": "lx-arm64", "i686": "lx-x86"}.get(machine, f"lx-{machine}")


@dataclass(frozen=True)
class Host:
    """An execution host. ``slots`` is its own slot limit (Grid Engine's
    ``complex_values slots=N``), None when only its queues limit it;
    ``load`` None means measured (this machine); ``execution`` is "local",
    "none" (reservations only, no jobs) or how to reach it over SSH."""

    name: str
    slots: int | None = None
    memory_mb: int = 1024
    ncpus: int = 1
    arch: str = "lx-amd64"
    os: str = "linux"
    properties: Mapping[str, str] = field(default_factory=dict)
    alive: bool = True
    load: float | None = 0.0
    complex_values: Mapping[str, str] = field(default_factory=dict)
    execution: str | SshSettings = NONE

    def current_load(self) -> float:
        return os.getloadavg()[0] if self.load is None else self.load


@dataclass(frozen=True)
class ClusterQueue:
    """A cluster queue; its instances are queue@host for each host."""

    name: str
    slots: Mapping[str, int]               # per host, in the queue's host order
    seq_no: int = 0
    qtype: tuple[str, ...] = QTYPES
    pe_list: tuple[str, ...] = ()
    ckpt_list: tuple[str, ...] = ()
    user_lists: tuple[str, ...] = ()
    xuser_lists: tuple[str, ...] = ()
    complex_values: Mapping[str, str] = field(default_factory=dict)
    limits: Mapping[str, str] = field(default_factory=dict)
    suspended: frozenset[str] = frozenset()  # hosts whose instance is suspended
    disabled: frozenset[str] = frozenset()
    shell: str = "/bin/sh"
    notify: int = 60

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(self.slots)


@dataclass(frozen=True)
class ParallelEnvironment:
    name: str
    slots: int
    allocation_rule: str | int = "$pe_slots"
    user_lists: tuple[str, ...] = ()
    xuser_lists: tuple[str, ...] = ()


@dataclass
class Containers:
    """One set of resource containers: global, per host, per queue instance."""

    global_: ResourceContainer
    hosts: dict[str, ResourceContainer]
    instances: dict[tuple[str, str], ResourceContainer]    # (queue, host)


@dataclass(frozen=True)
class ClusterConfig:
    """Everything the cluster file says, checked."""

    table: ComplexTable
    hosts: Mapping[str, Host]
    queues: Mapping[str, ClusterQueue]
    pes: Mapping[str, ParallelEnvironment] = field(default_factory=dict)
    userlists: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    global_values: Mapping[str, str] = field(default_factory=dict)
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)
    hostgroups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)   # resolved

    def host_slots(self, host: str) -> int:
        """The slots an AR can hold on ``host``: its own limit, else the sum
        of its queue instances' slots."""
        own = self.hosts[host].slots
        if own is not None:
            return own
        return sum(queue.slots[host] for queue in self.queues.values() if host in queue.slots)

    def nodes(self) -> list[Node]:
        """The hosts as the reservation core sees them."""
        return [self.node(name) for name in self.hosts]

    def node(self, name: str) -> Node:
        """One host as the reservation core sees it."""
        host = self.hosts[name]
        return Node(name=host.name, slots=self.host_slots(host.name), memory_mb=host.memory_mb,
                    ncpus=host.ncpus, arch=host.arch, os=host.os,
                    properties=dict(host.properties),
                    queues=tuple(q.name for q in self.queues.values() if host.name in q.slots),
                    alive=host.alive, load=host.current_load(),
                    runs_jobs=host.execution != NONE,
                    queue_states=tuple((queue.name, state) for queue in self.queues.values()
                                       for state, hosts in (("disabled", queue.disabled),
                                                            ("suspended", queue.suspended))
                                       if host.name in hosts))

    def containers(self, reports: Mapping[str, Mapping[str, float]] | None = None) -> Containers:
        """A fresh set of containers with every configured value and the
        hosts' reported load values (``set_reports``)."""
        table = self.table
        top = ResourceContainer(table, "global", "global")
        for name, value in self.global_values.items():
            top.set(name, value)
        hosts: dict[str, ResourceContainer] = {}
        for host in self.hosts.values():
            container = hosts[host.name] = ResourceContainer(table, "host", host.name, top)
            for name, value in (("arch", host.arch), ("num_proc", str(host.ncpus)),
                                ("mem_total", f"{host.memory_mb}M")):
                container.set(name, value, LOAD)
            if host.slots is not None:
                container.set("slots", str(host.slots))
            for name, value in host.complex_values.items():
                container.set(name, value)
        instances: dict[tuple[str, str], ResourceContainer] = {}
        for queue in self.queues.values():
            for host_name, slots in queue.slots.items():
                instance = ResourceContainer(table, "queue", f"{queue.name}@{host_name}",
                                             hosts[host_name])
                instance.set("slots", str(slots))
                for name, value in queue.complex_values.items():
                    instance.set(name, value)
                for name, value in queue.limits.items():
                    instance.set(name, value, LIMIT)
                instances[(queue.name, host_name)] = instance
        containers = Containers(top, hosts, instances)
        self.set_reports(containers, reports or {})
        return containers

    def set_reports(self, containers: Containers,
                    reports: Mapping[str, Mapping[str, float]]) -> set[str]:
        """What hosts report as their load values: load_avg (as measured,
        else configured) and np_load_avg, and mem_free where reported; the
        names of those that changed."""
        changed = set()
        for host in self.hosts.values():
            report = reports.get(host.name, {})
            load = report.get("load_avg", host.current_load())
            values = {"load_avg": load, "np_load_avg": load / max(host.ncpus, 1)}
            if "mem_free" in report:
                values["mem_free"] = report["mem_free"]
            container = containers.hosts[host.name]
            for name, value in values.items():
                if container.reported.get(name) != value:
                    container.set(name, str(value), LOAD)
                    container.reported[name] = value
                    changed.add(name)
        return changed

    def queue_matches(self, patterns: Iterable[str], queue: str, host: str) -> bool:
        """Whether instance queue@host is in a -q/-masterq list: queue,
        queue@host, queue@@hostgroup or @host, with wildcards."""
        for pattern in patterns:
            name, at, where = pattern.partition("@")
            if name and not fnmatch.fnmatchcase(queue, name):
                continue
            if not at or (where.startswith("@") and host in self.hostgroups.get(where, ())) or \
                    (not where.startswith("@") and fnmatch.fnmatchcase(host, where)):
                return True
        return False

    def members(self, entries: Iterable[str]) -> tuple[str, ...]:
        """An AR's access list with each of this cluster's access lists
        (@name) replaced by its entries (users and @groups), each once."""
        found: dict[str, None] = {}
        for entry in entries:
            listed = self.userlists.get(entry[1:]) if entry.startswith("@") else None
            found.update(dict.fromkeys(listed if listed is not None else (entry,)))
        return tuple(found)

    def is_member(self, user: str, groups: Iterable[str], lists: Iterable[str]) -> bool:
        """Whether ``user`` (or one of its ``groups``) is in one of the user lists."""
        groups = set(groups)
        for name in lists:
            for entry in self.userlists.get(name, ()):
                if entry == user or (entry.startswith("@") and entry[1:] in groups):
                    return True
        return False

    def has_access(self, user: str, groups: Iterable[str], allowed: Iterable[str],
                   denied: Iterable[str]) -> bool:
        """user_lists/xuser_lists semantics: denied wins; an empty allowed list admits all.
        ``user`` may be an access list, @name (an AR's qrsub -u @name): it is
        denied if a denied list is that list, or if the allowed lists do not
        include it (8.1.9's sge_ar_have_users_access)."""
        allowed, denied, groups = tuple(allowed), tuple(denied), tuple(groups)
        if user.startswith("@"):
            return user[1:] not in denied and (not allowed or user[1:] in allowed)
        if self.is_member(user, groups, denied):
            return False
        return not allowed or self.is_member(user, groups, allowed)


# -- reading the file --------------------------------------------------------------

class _Reader:
    """Turns the parsed YAML into a ClusterConfig, naming the place of each error."""

    def __init__(self, path: str, ssh_defaults: Mapping[str, Any],
                 duration_offset: int | None) -> None:
        self.path = path
        self.ssh_defaults = dict(ssh_defaults)
        self.duration_offset = duration_offset
        self.files: list[str] = []           # every file read, for change detection
        self.default_queues = [DEFAULT_QUEUE]  # a node's queues when it names none

    def fail(self, where: str, message: str) -> ClusterError:
        return ClusterError(f"{self.path}: {where}: {message}")

    def read_file(self, name: str) -> tuple[str, str]:
        path = os.path.join(os.path.dirname(os.path.abspath(self.path)), name)
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as exc:
            raise ClusterError(f"{self.path}: cannot read {path}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise ClusterError(f"{self.path}: {path}: not UTF-8 text") from None
        self.files.append(path)
        return text, path

    # -- small typed values ---------------------------------------------------------

    def count(self, where: str, key: str, value: Any, minimum: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.fail(where, f"{key} must be a whole number of at least {minimum}, "
                                   f"got {value!r}")
        return value

    def names(self, where: str, key: str, value: Any) -> tuple[str, ...]:
        if value is None or (isinstance(value, str) and value.upper() == "NONE"):
            return ()
        if isinstance(value, str):
            value = value.replace(",", " ").split()
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(where, f"{key} must be a list of names, got {value!r}")
        return tuple(value)

    def values(self, where: str, key: str, value: Any) -> dict[str, str]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.fail(where, f"{key} must be a mapping of name: value, got {value!r}")
        return {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in value.items()}

    def keys(self, where: str, entry: Any, accepted: Iterable[str]) -> None:
        accepted = tuple(accepted)
        if not isinstance(entry, Mapping) or "name" not in entry:
            raise self.fail(where, "expected a mapping with at least 'name'")
        unknown = sorted(set(entry) - set(accepted))
        if unknown:
            raise self.fail(where, f"unknown key(s) {', '.join(unknown)}; known: "
                                   f"{', '.join(accepted)}")

    def name(self, where: str, value: Any) -> str:
        if not isinstance(value, str) or not valid_name(value):
            raise self.fail(where, f"name {value!r}: use letters, digits, _ . - starting with a "
                                   "letter or _")
        return value

    def entries(self, raw: Mapping, key: str) -> list:
        value = raw.get(key) or []
        if not isinstance(value, list):
            raise self.fail(key, "expected a list")
        return value

    # -- sections -------------------------------------------------------------------

    def hostgroups(self, raw: Any) -> dict[str, list[str]]:
        if raw is None:
            return {}
        if not isinstance(raw, Mapping):
            raise self.fail("hostgroups", "expected a mapping of @name: [hosts]")
        groups = {}
        for name, members in raw.items():
            if not isinstance(name, str) or not name.startswith("@") or \
                    not valid_name(name[1:]):
                raise self.fail("hostgroups", f"group name {name!r} must be @ and a name")
            groups[name] = list(self.names(f"hostgroups.{name}", "members", members))
        return groups

    def host_names(self, where: str, patterns: Iterable[str], groups: Mapping[str, list[str]],
                   known: Mapping[str, Host], seen: tuple[str, ...] = ()) -> list[str]:
        """Names, node[1-4] ranges and @groups (nested) as host names."""
        hosts: list[str] = []
        for pattern in patterns:
            if pattern.startswith("@"):
                if pattern not in groups:
                    raise self.fail(where, f"unknown host group {pattern!r}")
                if pattern in seen:
                    raise self.fail(where, f"host group {pattern!r} contains itself")
                members = self.host_names(where, groups[pattern], groups, known, seen + (pattern,))
            else:
                members = expand_names(pattern)
            for member in members:
                if member not in known:
                    raise self.fail(where, f"unknown host {member!r}")
                if member not in hosts:
                    hosts.append(member)
        return hosts

    def execution(self, where: str, value: Any, name: str) -> str | SshSettings:
        if value is None:
            return NONE
        if value in (LOCAL, NONE):
            return value
        if value == "ssh":
            value = {"ssh": {}}
        if not isinstance(value, Mapping) or set(value) != {"ssh"}:
            raise self.fail(where, f"exec: expected local, none, ssh or {{ssh: {{host, port, "
                                   f"user, key, known_hosts}}}}, got {value!r}")
        try:
            return parse_ssh(value["ssh"] or {}, {**self.ssh_defaults, "host": name}, "exec.ssh")
        except ValueError as error:
            raise self.fail(where, str(error)) from None

    def host(self, entry: Any, index: int) -> list[tuple[Host, tuple[str, ...]]]:
        where = f"nodes[{index}]"
        self.keys(where, entry, _NODE_KEYS)
        if not isinstance(entry["name"], str):
            raise self.fail(where, f"name must be a string, got {entry['name']!r}")
        slots = entry.get("slots")
        if slots is not None:
            slots = self.count(where, "slots", slots, 1)
        try:
            memory = parse_memory_mb(str(entry.get("memory", "1G")), option="memory")
        except RequestError as exc:
            raise self.fail(where, str(exc)) from None
        properties = entry.get("properties", {})
        if not isinstance(properties, Mapping):
            raise self.fail(where, "properties must be a mapping")
        load = entry.get("load", 0.0)
        if isinstance(load, bool) or not isinstance(load, (int, float)) or load < 0:
            raise self.fail(where, f"load must be a number of 0 or more, got {load!r}")
        queues = self.names(where, "queues", entry.get("queues", self.default_queues))
        hosts = []
        for name in expand_names(entry["name"]):
            self.name(where, name)
            hosts.append((Host(
                name=name, slots=slots, memory_mb=memory,
                ncpus=self.count(where, "ncpus", entry.get("ncpus", slots or 1), 1),
                arch=str(entry.get("arch", "lx-amd64")), os=str(entry.get("os", "linux")),
                properties={str(k): str(v) for k, v in properties.items()},
                alive=bool(entry.get("alive", True)), load=float(load),
                complex_values=self.values(where, "complex_values", entry.get("complex_values")),
                execution=self.execution(where, entry.get("exec"), name)), queues))
        return hosts

    def slots(self, where: str, value: Any, hosts: list[str],
              default: Callable[[str], int]) -> dict[str, int]:
        """Queue slots: a number for every host, or {default: n, host: n}."""
        if value is None:
            return {h: default(h) for h in hosts}
        if isinstance(value, Mapping):
            unknown = sorted(set(value) - set(hosts) - {"default"})
            if unknown:
                raise self.fail(where, f"slots: {unknown[0]!r} is not a host of the queue")
            base = value.get("default")
            return {h: self.count(where, "slots", value[h], 0) if h in value
                    else self.count(where, "slots", base, 0) if base is not None else default(h)
                    for h in hosts}
        count = self.count(where, "slots", value, 0)
        return {h: count for h in hosts}

    def host_states(self, where: str, key: str, value: Any, hosts: list[str]) -> frozenset[str]:
        if value is None or value is False:
            return frozenset()
        if value is True:
            return frozenset(hosts)
        listed = self.names(where, key, value)
        for host in listed:
            if host not in hosts:
                raise self.fail(where, f"{key}: {host!r} is not a host of the queue")
        return frozenset(listed)

    def queue(self, entry: Any, index: int, listed: Mapping[str, list[str]],
              groups: Mapping[str, list[str]], hosts: Mapping[str, Host]) -> ClusterQueue:
        where = f"queues[{index}]"
        self.keys(where, entry, _QUEUE_KEYS)
        name = self.name(where, entry["name"])
        where = f"queues[{index}] ({name})"
        members = self.host_names(where, self.names(where, "hostlist", entry.get("hostlist")),
                                  groups, hosts)
        members += [h for h in listed.get(name, []) if h not in members]
        qtype = tuple(t.upper() for t in self.names(where, "qtype", entry.get("qtype", list(QTYPES))))
        for kind in qtype:
            if kind not in QTYPES:
                raise self.fail(where, f"qtype: unknown type {kind!r}; accepted: {' '.join(QTYPES)}")
        limits = {key: str(entry[key]) for key in RESOURCE_LIMITS if key in entry}
        try:
            notify = int(parse_value("TIME", str(entry.get("notify", "0:0:60"))))
        except (ComplexError, OverflowError):
            raise self.fail(where, f"notify: expected seconds or h:m:s, got {entry['notify']!r}") from None
        shell = entry.get("shell", "/bin/sh")
        if not isinstance(shell, str) or not shell.startswith("/"):
            raise self.fail(where, f"shell: expected an absolute path, got {shell!r}")
        seq_no = entry.get("seq_no", 0)
        if isinstance(seq_no, bool) or not isinstance(seq_no, int):
            raise self.fail(where, f"seq_no must be a whole number, got {seq_no!r}")
        return ClusterQueue(
            name=name,
            slots=self.slots(where, entry.get("slots"), members,
                             lambda h: hosts[h].slots or hosts[h].ncpus),
            seq_no=seq_no, qtype=qtype, pe_list=self.names(where, "pe_list", entry.get("pe_list")),
            ckpt_list=self.names(where, "ckpt_list", entry.get("ckpt_list")),
            user_lists=self.names(where, "user_lists", entry.get("user_lists")),
            xuser_lists=self.names(where, "xuser_lists", entry.get("xuser_lists")),
            complex_values=self.values(where, "complex_values", entry.get("complex_values")),
            limits=limits, shell=shell, notify=notify,
            suspended=self.host_states(where, "suspended", entry.get("suspended"), members),
            disabled=self.host_states(where, "disabled", entry.get("disabled"), members))

    def pe(self, entry: Any, index: int) -> ParallelEnvironment:
        where = f"pes[{index}]"
        self.keys(where, entry, _PE_KEYS)
        name = self.name(where, entry["name"])
        where = f"pes[{index}] ({name})"
        rule = entry.get("allocation_rule", "$pe_slots")
        if not (rule in ALLOCATION_RULES or (isinstance(rule, int) and not isinstance(rule, bool)
                                             and rule >= 1)):
            raise self.fail(where, f"allocation_rule: expected {', '.join(ALLOCATION_RULES)} or a "
                                   f"whole number of slots per host, got {rule!r}")
        return ParallelEnvironment(
            name=name, slots=self.count(where, "slots", entry.get("slots", 0), 0),
            allocation_rule=rule, user_lists=self.names(where, "user_lists", entry.get("user_lists")),
            xuser_lists=self.names(where, "xuser_lists", entry.get("xuser_lists")))

    def userlists(self, raw: Any) -> dict[str, tuple[str, ...]]:
        if raw is None:
            return {}
        if not isinstance(raw, Mapping):
            raise self.fail("userlists", "expected a mapping of name: [users and @groups]")
        lists = {}
        for name, entries in raw.items():
            self.name("userlists", name)
            members = self.names(f"userlists.{name}", "entries", entries)
            for member in members:
                if not valid_name(member.removeprefix("@")):
                    raise self.fail(f"userlists.{name}", f"invalid entry {member!r}: a user or "
                                                         "@group name")
            lists[name] = members
        return lists

    def complexes(self, raw: Any) -> ComplexTable:
        try:
            if raw is None:
                return ComplexTable()
            if isinstance(raw, str):
                text, path = self.read_file(raw)
                try:
                    return ComplexTable(yaml.safe_load(text) or ())
                except yaml.YAMLError as error:
                    raise ComplexError(f"{path}: not YAML: {str(error).splitlines()[0]}") from None
            return ComplexTable(raw)
        except ComplexError as error:
            raise self.fail("complexes", str(error)) from None

    # -- the whole file ---------------------------------------------------------------

    def read(self, raw: Any, local: Host | None) -> ClusterConfig:
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            raise ClusterError(f"{self.path}: expected a mapping with nodes:, queues:, ...")
        unknown = sorted(set(raw) - set(_TOP_KEYS))
        if unknown:
            raise ClusterError(f"{self.path}: unknown key(s) {', '.join(unknown)}; known: "
                               f"{', '.join(_TOP_KEYS)}")
        table = self.complexes(raw.get("complexes"))
        hosts: dict[str, Host] = {}
        listed: dict[str, list[str]] = {}
        found = [(local, (DEFAULT_QUEUE,))] if local else []
        if raw.get("queues"):    # then the queues' hostlists place the nodes
            self.default_queues = []
        for index, entry in enumerate(self.entries(raw, "nodes")):
            found += self.host(entry, index)
        for host, queues in found:
            if host.name in hosts:
                raise ClusterError(f"{self.path}: node {host.name!r} is defined twice")
            hosts[host.name] = host
            for queue in queues:
                listed.setdefault(queue, []).append(host.name)
        groups = self.hostgroups(raw.get("hostgroups"))
        userlists = self.userlists(raw.get("userlists"))
        pes = {}
        for index, entry in enumerate(self.entries(raw, "pes")):
            pe = self.pe(entry, index)
            if pe.name in pes:
                raise self.fail(f"pes[{index}]", f"PE {pe.name!r} is defined twice")
            pes[pe.name] = pe
        queues: dict[str, ClusterQueue] = {}
        for index, entry in enumerate(self.entries(raw, "queues")):
            queue = self.queue(entry, index, listed, groups, hosts)
            if queue.name in queues:
                raise self.fail(f"queues[{index}]", f"queue {queue.name!r} is defined twice")
            queues[queue.name] = queue
        for name, members in listed.items():    # named by nodes only: Grid Engine's defaults
            if name not in queues:
                self.name(f"nodes (queue {name!r})", name)
                queues[name] = ClusterQueue(name, {
                    h: hosts[h].slots or hosts[h].ncpus for h in members})
        self.check_references(queues, pes, userlists)
        global_values = self.values("global", "complex_values",
                                    self.section(raw, "global", ("complex_values",)).get("complex_values"))
        try:
            scheduler = parse_scheduler(raw.get("scheduler"), self.read_file,
                                        {q.name: -q.seq_no for q in queues.values()}, tuple(queues))
        except SchedConfError as error:
            raise ClusterError(f"{self.path}: {error}") from None
        if scheduler.duration_offset is not None and self.duration_offset is not None and \
                scheduler.duration_offset != self.duration_offset:
            raise ClusterError(
                f"{self.path}: scheduler.params DURATION_OFFSET={scheduler.duration_offset} differs "
                f"from duration_offset {self.duration_offset} of plus_scheduler's configuration; "
                "they are one setting: drop it here or make them equal")
        resolved = {name: tuple(self.host_names(f"hostgroups.{name}", [name], groups, hosts))
                    for name in groups}
        config = ClusterConfig(table, hosts, queues, pes, userlists, global_values, scheduler,
                               resolved)
        for queue in queues.values():    # also those without hosts, which have no containers
            for name, value in {**queue.complex_values, **queue.limits}.items():
                try:
                    parse_value(table.find(name).type, value)
                except ComplexError as error:
                    raise self.fail(f"queue {queue.name}", f"{name}: {error}") from None
        try:
            config.containers()
        except ComplexError as error:
            raise ClusterError(f"{self.path}: complex values: {error}") from None
        return config

    def section(self, raw: Mapping, key: str, accepted: tuple[str, ...]) -> Mapping:
        value = raw.get(key) or {}
        if not isinstance(value, Mapping) or set(value) - set(accepted):
            raise self.fail(key, f"expected a mapping of {', '.join(accepted)}")
        return value

    def check_references(self, queues: Mapping[str, ClusterQueue],
                         pes: Mapping[str, ParallelEnvironment],
                         userlists: Mapping[str, tuple[str, ...]]) -> None:
        for queue in queues.values():
            for pe in queue.pe_list:
                if pe not in pes:
                    raise self.fail(f"queue {queue.name}", f"pe_list: unknown PE {pe!r}")
        for owner, kind in [(q, "queue") for q in queues.values()] + [(p, "PE") for p in pes.values()]:
            for name in owner.user_lists + owner.xuser_lists:
                if name not in userlists:
                    raise self.fail(f"{kind} {owner.name}", f"unknown user list {name!r}; define "
                                                            "it under userlists:")


def local_host() -> Host:
    """This machine, with its real CPUs, memory and load; jobs run here."""
    memory_kb = 0
    with open("/proc/meminfo", encoding="ascii") as meminfo:
        for line in meminfo:
            if line.startswith("MemTotal:"):
                memory_kb = int(line.split()[1])
                break
    return Host(name=socket.gethostname(), memory_mb=memory_kb // 1024,
                ncpus=os.cpu_count() or 1, arch=grid_engine_arch(),
                os=platform.system().lower(), load=None, execution=LOCAL)


def load_cluster(path: str | None, include_local: bool, ssh_defaults: Mapping[str, Any] = {},
                 duration_offset: int | None = None) -> tuple[ClusterConfig, list[str]]:
    """The cluster a file describes (this machine first if ``include_local``),
    and the files read; a file that is empty, not UTF-8 or not a mapping,
    or a cluster without nodes, is a ClusterError naming the file."""
    reader = _Reader(path or "cluster", ssh_defaults, duration_offset)
    raw = None
    if path:
        reader.files.append(path)
        raw = _read_cluster_file(path)
    config = reader.read(raw, local_host() if include_local else None)
    if not config.hosts:
        raise ClusterError(f"{reader.path}: no nodes; list the execution hosts under nodes:")
    return config, reader.files


def _read_cluster_file(path: str) -> Any:
    raw = read_yaml(path, "cluster file", ClusterError)
    if raw is None:
        raise ClusterError(f"{path}: the file is empty; a cluster file lists the execution hosts "
                           "under nodes:")
    return raw


class Cluster:
    """The current cluster: read again when one of its files changes. A file
    that cannot be used stops the daemon at its start; edited live, it keeps
    the last good cluster, with one warning per change."""

    def __init__(self, path: str | None, include_local: bool,
                 ssh_defaults: Mapping[str, Any] = {}, duration_offset: int | None = None) -> None:
        self.path = path
        self.include_local = include_local
        self.ssh_defaults = dict(ssh_defaults)
        self.duration_offset = duration_offset
        self._lock = threading.Lock()    # one reload, and one warning, per change
        self._config, self._files = self._load()
        self._stamp = self._stamps()

    def _stamps(self) -> tuple:
        stamps = []
        for path in self._files:
            try:
                stamps.append(os.stat(path).st_mtime_ns)
            except OSError:
                stamps.append(None)
        return tuple(stamps)

    def _load(self) -> tuple[ClusterConfig, list[str]]:
        """The cluster the files describe, or a one-line ClusterError naming
        the file, whatever went wrong in reading them."""
        try:
            return load_cluster(self.path, self.include_local, self.ssh_defaults,
                                self.duration_offset)
        except ClusterError as error:
            raise ClusterError(" ".join(str(error).split())) from None
        except Exception as error:    # a value or a failure the checks did not foresee
            raise ClusterError(" ".join(f"{self.path}: cannot be read: {error}".split())) \
                from error

    def config(self) -> ClusterConfig:
        with self._lock:
            stamp = self._stamps()
            if stamp != self._stamp:
                self._stamp = stamp
                self._reload()
            return self._config

    def _reload(self) -> None:
        try:
            self._config, self._files = self._load()
        except ClusterError as error:
            log.warning("keeping the last good cluster: %s", error)
            return
        self._stamp = self._stamps()

    def nodes(self) -> list[Node]:
        return self.config().nodes()
