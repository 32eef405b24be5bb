"""Concurrent plus_reserve calls never double-book a node, on SQLite and on
PostgreSQL, where two daemons take them at once. (A second daemon on one
SQLite store refuses to start: test_store_integrity.py; on PostgreSQL it
is a standby that serves users: test_ha.py.)"""

from __future__ import annotations

import datetime as dt
import json
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from daemon_harness import Daemon

USERS = ("plusu1", "plusu2")
CLUSTER_NODES = 5


def _window() -> tuple[str, str]:
    start = int(time.time()) + 7200
    iso = lambda t: dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: E731
    return iso(start), iso(start + 3600)


def _race(daemons: list[Daemon], requests: int) -> list[dict]:
    """``requests`` plus_reserve -n 1 for one window, all at once, spread
    over the daemons; returns the granted ARs and checks the refusals."""
    start, end = _window()

    def reserve(i: int):
        daemon = daemons[i % len(daemons)]
        return daemon.run(USERS[i % 2], "plus_reserve", "--json", "-s", start, "-e", end, "-n", "1")

    with ThreadPoolExecutor(requests) as pool:
        results = list(pool.map(reserve, range(requests)))
    granted = [json.loads(r.stdout) for r in results if r.returncode == 0]
    for refused in (r for r in results if r.returncode != 0):
        assert refused.returncode == 1, refused.stderr
        assert "requested nodes" in refused.stderr or "no longer free" in refused.stderr, refused.stderr
    return granted


def _booked_nodes(granted: list[dict]) -> list[str]:
    return [a["node"] for view in granted for a in view["allocations"]]


def test_concurrent_reserves_book_each_node_once(store_url):
    """One daemon on SQLite; on PostgreSQL two (issue 30's HA mode), the
    requests spread over both: each re-checks capacity under the
    database's lock, so exactly one request wins each node."""
    daemons = [Daemon(store=store_url).start()
               for _ in range(1 if store_url.startswith("sqlite") else 2)]
    try:
        granted = _race(daemons, 24)
        nodes = _booked_nodes(granted)
        assert len(granted) == CLUSTER_NODES and sorted(nodes) == sorted(set(nodes))
        assert len({view["id"] for view in granted}) == CLUSTER_NODES
        assert {view["owner"] for view in granted} <= set(USERS)
        for daemon in daemons:
            deadline = time.monotonic() + 60       # a standby hears of the other's ARs
            while len(daemon.status()) != CLUSTER_NODES:
                assert time.monotonic() < deadline, daemon.status()
                time.sleep(0.05)
    finally:
        for daemon in daemons:
            daemon.cleanup()


@pytest.mark.parametrize("slots, expected", [(2, 2 * 4 + 8), (3, 4 + 5)])
def test_partial_slots_fill_nodes_exactly(store_url, slots, expected):
    """n01..n04 have 4 slots, big 16: k-slot requests fit floor(capacity / k) times each."""
    daemon = Daemon(store=store_url).start()
    try:
        start, end = _window()
        with ThreadPoolExecutor(24) as pool:
            results = list(pool.map(lambda i: daemon.run(
                USERS[i % 2], "plus_reserve", "--json", "-s", start, "-e", end, "-n", "1",
                "-sn", str(slots)), range(24)))
        granted = [json.loads(r.stdout) for r in results if r.returncode == 0]
        assert len(granted) == expected
        per_node: dict[str, int] = {}
        for node in _booked_nodes(granted):
            per_node[node] = per_node.get(node, 0) + slots
        assert all(used <= (16 if node == "big" else 4) for node, used in per_node.items())
    finally:
        daemon.cleanup()
