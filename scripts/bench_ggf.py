"""Benchmark of the network face (HTTP API and seed 003's verbs) on a
1,000-node embedded cluster holding 10,000 ARs, beside Grid Engine's qrsub
when its qmaster runs here.

It prints, with the machine's speed:
  RESQUERY over a 7-day window, answered through the daemon's socket (the
  daemon's work plus one local round trip), for an easy and a hard shape;
  QUERY the same way;
  an HTTP round trip of GET /reservations/{id} on a kept-alive connection;
  SETRES sustained over HTTP from 4 clients (one-node ARs at random
  windows), then a check that no node is booked twice;
  with Grid Engine (scripts/sge-setup.sh has run), qrsub sustained from 4
  clients on 1,000 configuration-only hosts, and the ratio.

Run as root after scripts/install.sh:
  /opt/plus-venv/bin/python scripts/bench_ggf.py [--ars 10000] [--setres 2000] [--runs 50]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import socket
import statistics
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import sge_peer
from bench_core import NODES, Daemon, fill_store, generate, in_streams, sustained, windows
from calibration import python_speed
from overlay.wire import protocol

DAY = 86400


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def median_ms(work, runs: int) -> float:
    samples = []
    for _ in range(runs):
        began = time.perf_counter()
        work()
        samples.append((time.perf_counter() - began) * 1000)
    return statistics.median(samples)


def asked(daemon: Daemon, op: str, args: dict) -> dict:
    reply = protocol.call(daemon.socket, op, args)
    if not reply.get("ok"):
        raise SystemExit(f"{op} refused: {reply.get('error')}")
    return reply["data"]


class Api:
    """The daemon's HTTP API on a kept-alive connection per thread."""

    def __init__(self, port: int, token: str) -> None:
        self.port, self.local = port, threading.local()
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        connection = getattr(self.local, "connection", None)
        if connection is None:
            connection = self.local.connection = http.client.HTTPConnection("127.0.0.1", self.port,
                                                                            timeout=60)
        connection.request(method, path, None if body is None else json.dumps(body), self.headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read())

    def wait(self) -> None:
        deadline = time.monotonic() + 60
        while True:
            try:
                probe = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                probe.request("GET", "/openapi.json")
                if probe.getresponse().status == 200:
                    return
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("the HTTP API did not answer within a minute") from None
                time.sleep(0.1)


def double_booked(daemon: Daemon) -> list[str]:
    """Nodes whose live ARs overlap (each AR holds its nodes whole)."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for ar in asked(daemon, "status", {}):
        for allocation in ar["allocations"]:
            spans.setdefault(allocation["node"], []).append((ar["start"], ar["end"]))
    return [node for node, held in spans.items()
            if any(a[1] > b[0] for a, b in zip(sorted(held), sorted(held)[1:], strict=False))]


@contextmanager
def api_site(ars: int, now: int, seed: int = 1) -> Iterator[tuple[Daemon, Api, str]]:
    """A daemon on 1,000 nodes holding ``ars`` ARs, its HTTP API answering:
    the daemon, the API with a root token, and that token."""
    work = Path(tempfile.mkdtemp(prefix="plus-bench-"))
    os.chmod(work, 0o755)        # the companion runs as nobody and needs the socket
    daemon, port = Daemon(work), free_port()
    with open(work / "plus.yaml", "a") as conf:
        conf.write(f"http: {{address: '127.0.0.1:{port}'}}\n")
    try:
        fill_store(daemon.url, generate(ars, now, seed), now)
        daemon.start()
        token = asked(daemon, "token", {"lifespan": 3600})["token"]
        api = Api(port, token)
        api.wait()
        yield daemon, api, token
    finally:
        daemon.stop()
        shutil.rmtree(work, ignore_errors=True)


def ours(ars: int, setres: int, runs: int, clients: int) -> dict[str, object]:
    now = int(time.time())
    with api_site(ars, now) as (daemon, api, _):
        week = now + 7 * DAY
        figures: dict[str, object] = {}
        for label, nodes, hours in (("RESQUERY 7 days, 4 nodes x 4 h, ms", 4, 4),
                                    ("RESQUERY 7 days, 64 nodes x 12 h, ms", 64, 12)):
            shape = {"start": now, "end": now + hours * 3600, "nodes": nodes, "last_start": week}
            figures[label] = median_ms(lambda shape=shape: asked(daemon, "resquery", shape), runs)
        query = {"start": now, "end": now + 4 * 3600, "nodes": 4}
        figures["QUERY 4 nodes x 4 h, ms"] = median_ms(lambda: asked(daemon, "query", query), runs)
        figures["HTTP GET /reservations/{id}, ms"] = median_ms(
            lambda: api.request("GET", f"/reservations/{ars // 2}"), runs)
        failures: list[tuple[int, dict]] = []

        def setres_one(item: tuple[int, int]) -> None:
            start, duration = item
            status, body = api.request("POST", "/ggf/setres", {
                "UserID": "root", "TimeNeeded": f"{duration}s", "StartTime": str(start + 60 * DAY),
                "ResourceList": "nodes=1"})
            if status != 201:
                failures.append((status, body))
        figures[f"SETRES over HTTP, {clients} clients, AR/s"] = in_streams(
            iter(windows(setres, now, seed=3)), setres_one, clients)
        figures["  ... refused (no capacity is allowed, nothing else)"] = len(failures)
        odd = [f for f in failures if f[0] != 409]
        if odd:
            raise SystemExit(f"SETRES failed otherwise than for capacity: {odd[0]}")
        figures["  ... nodes booked twice"] = len(double_booked(daemon))
        return figures


def grid_engine(count: int, clients: int) -> dict[str, object]:
    """qrsub sustained from ``clients`` streams on 1,000 configuration-only hosts."""
    added = sge_peer.Added()
    try:
        sge_peer.setup(NODES, added)
        rate = sustained((sge_peer.qrsub_argv(s, d) for s, d in windows(count, int(time.time()))),
                         sge_peer.ENV, clients)
        return {f"qrsub, {clients} clients, AR/s": rate}
    finally:
        sge_peer.teardown(added)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ars", type=int, default=10_000, help="ARs in the store")
    parser.add_argument("--setres", type=int, default=2_000, help="ARs made by SETRES")
    parser.add_argument("--clients", type=int, default=4, help="SETRES (and qrsub) clients at once")
    parser.add_argument("--runs", type=int, default=50, help="runs per figure (median)")
    parser.add_argument("--no-sge", action="store_true", help="leave Grid Engine out")
    args = parser.parse_args()
    print(python_speed(), flush=True)
    figures = ours(args.ars, args.setres, args.runs, args.clients)
    print(f"1,000 nodes, {args.ars:,} ARs")
    for name, value in figures.items():
        print(f"  {name:<58}{value:>10.2f}" if isinstance(value, float) else f"  {name:<58}{value:>10}")
    if args.no_sge or not sge_peer.available():
        print("Grid Engine: not measured (no qmaster here, or not root)")
        return
    peer = grid_engine(args.setres, args.clients)
    ours_rate = figures[f"SETRES over HTTP, {args.clients} clients, AR/s"]
    for name, value in peer.items():
        print(f"  {name:<58}{value:>10.2f}")
        print(f"  {'SETRES / qrsub':<58}{ours_rate / value:>10.2f}")


if __name__ == "__main__":
    main()
