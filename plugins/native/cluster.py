"""The embedded cluster: this machine plus hosts described in YAML.

The file is read again whenever it changes, so an administrator can add a
host or mark one down (``alive: false``) without restarting the daemon.
"""

from __future__ import annotations

import logging
import os
import platform
import re
import socket
from typing import Any

import yaml

from overlay.model import Node
from overlay.request import RequestError, parse_memory_mb

log = logging.getLogger("plus.native")
_RANGE = re.compile(r"^(.*)\[(\d+)-(\d+)\](.*)$")
_NODE_KEYS = {"name", "slots", "memory", "ncpus", "arch", "os", "queues",
              "properties", "alive", "load"}
DEFAULT_QUEUE = "all.q"


class ClusterError(Exception):
    """The cluster file cannot be used; the text names the node and key."""


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


def local_node() -> Node:
    """This machine, with its real CPUs, memory and load."""
    memory_kb = 0
    with open("/proc/meminfo", encoding="ascii") as meminfo:
        for line in meminfo:
            if line.startswith("MemTotal:"):
                memory_kb = int(line.split()[1])
                break
    cpus = os.cpu_count() or 1
    return Node(name=socket.gethostname(), slots=cpus, memory_mb=memory_kb // 1024, ncpus=cpus,
                arch=grid_engine_arch(), os=platform.system().lower(),
                queues=(DEFAULT_QUEUE,), load=os.getloadavg()[0])


def _node(entry: Any, index: int, path: str) -> list[Node]:
    where = f"{path}: nodes[{index}]"
    if not isinstance(entry, dict) or "name" not in entry:
        raise ClusterError(f"{where}: expected a mapping with at least 'name'")
    unknown = set(entry) - _NODE_KEYS
    if unknown:
        raise ClusterError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; "
                           f"known: {', '.join(sorted(_NODE_KEYS))}")

    def integer(key: str, default: int) -> int:
        value = entry.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ClusterError(f"{where}: {key} must be a whole number of at least 1, got {value!r}")
        return value

    try:
        memory = parse_memory_mb(str(entry.get("memory", "1G")), option=f"{where}: memory")
    except RequestError as exc:
        raise ClusterError(str(exc)) from None
    slots = integer("slots", 1)
    queues = entry.get("queues", [DEFAULT_QUEUE])
    properties = entry.get("properties", {})
    if not isinstance(queues, list) or not isinstance(properties, dict):
        raise ClusterError(f"{where}: queues must be a list and properties a mapping")
    return [Node(name=name, slots=slots, memory_mb=memory, ncpus=integer("ncpus", slots),
                 arch=str(entry.get("arch", "lx-amd64")), os=str(entry.get("os", "linux")),
                 properties={str(k): str(v) for k, v in properties.items()},
                 queues=tuple(str(q) for q in queues), alive=bool(entry.get("alive", True)),
                 load=float(entry.get("load", 0.0)))
            for name in expand_names(str(entry["name"]))]


def load_cluster_file(path: str) -> list[Node]:
    """The nodes a cluster file describes."""
    try:
        with open(path, encoding="utf-8") as handle:
            raw = yaml.safe_load(handle) or {}
    except OSError as exc:
        raise ClusterError(f"cannot read cluster file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ClusterError(f"{path}: not valid YAML: {exc}") from None
    entries = raw.get("nodes", []) if isinstance(raw, dict) else None
    if not isinstance(entries, list):
        raise ClusterError(f"{path}: expected 'nodes:' with a list of nodes")
    nodes = [node for index, entry in enumerate(entries) for node in _node(entry, index, path)]
    _check_unique(nodes, path)
    return nodes


def _check_unique(nodes: list[Node], path: str) -> None:
    seen = set()
    for node in nodes:
        if node.name in seen:
            raise ClusterError(f"{path}: node {node.name!r} is defined twice")
        seen.add(node.name)


class Cluster:
    """This machine (if wanted) and the cluster file's nodes; the file is
    read again when it changes, and a broken edit keeps the last good nodes."""

    def __init__(self, path: str | None, include_local: bool) -> None:
        self.path = path
        self.include_local = include_local
        self._stamp: int | None = None
        self._file_nodes: list[Node] = []
        self.nodes()

    def nodes(self) -> list[Node]:
        if self.path:
            try:
                stamp = os.stat(self.path).st_mtime_ns
                if stamp != self._stamp:
                    self._file_nodes = load_cluster_file(self.path)
                    self._stamp = stamp
            except (OSError, ClusterError) as exc:
                if self._stamp is None:
                    raise ClusterError(str(exc)) from None
                log.error("keeping the previous nodes: %s", exc)
        nodes = ([local_node()] if self.include_local else []) + self._file_nodes
        _check_unique(nodes, self.path or "cluster")
        return nodes
