"""The native backend's enforcement of AR windows.

The built-in scheduler (which starts jobs on these nodes) asks this table
which hosts an AR holds and which ARs are open; the table is rebuilt from
the store by the reconcile loop, so it needs no persistence of its own.
"""

from __future__ import annotations

import logging
import threading

from overlay.backend import Backend
from overlay.model import Node, Reservation
from overlay_native.cluster import Cluster

log = logging.getLogger("plus.native")
OPTIONS = ("cluster", "local_host", "ssh")


class NativeBackend(Backend):
    """Nodes from the embedded cluster; AR windows kept in an enforcement table."""

    name = "native"

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._lock = threading.Lock()
        self.prepared: dict[int, tuple[str, ...]] = {}
        self.active: set[int] = set()

    @classmethod
    def from_config(cls, config, options: dict) -> "NativeBackend":
        unknown = set(options) - set(OPTIONS)
        if unknown:
            raise ValueError(f"native: unknown setting(s) {', '.join(sorted(unknown))}; "
                             f"known: {', '.join(OPTIONS)}")
        ssh = options.get("ssh") or {}
        if not isinstance(ssh, dict) or "host" in ssh:
            raise ValueError("native.ssh: expected a mapping of port, user, key, known_hosts, "
                             "accept_unknown_host (defaults for hosts with exec: ssh; the host "
                             "is each node's name)")
        path = options.get("cluster")
        return cls(Cluster(config.relative(path) if path else None,
                           bool(options.get("local_host", True)), ssh, config.duration_offset))

    def nodes(self) -> list[Node]:
        return self.cluster.nodes()

    def prepare(self, reservation: Reservation) -> None:
        with self._lock:
            self.prepared[reservation.id] = tuple(reservation.node_names)

    def activate(self, reservation: Reservation) -> None:
        with self._lock:
            self.prepared[reservation.id] = tuple(reservation.node_names)
            self.active.add(reservation.id)

    def teardown(self, reservation: Reservation) -> None:
        with self._lock:
            self.prepared.pop(reservation.id, None)
            self.active.discard(reservation.id)

    def release(self, reservation: Reservation) -> None:
        self.teardown(reservation)

    def reserved_hosts(self) -> dict[str, set[int]]:
        """Host name -> ids of the open ARs holding it (what the scheduler keeps others off)."""
        with self._lock:
            hosts: dict[str, set[int]] = {}
            for ar_id in self.active:
                for host in self.prepared.get(ar_id, ()):
                    hosts.setdefault(host, set()).add(ar_id)
            return hosts
