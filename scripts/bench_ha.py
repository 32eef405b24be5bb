"""Several daemons on one PostgreSQL store (issue 30): failover and the
change feed, measured on this machine with real daemons (native backend,
a 100-node cluster file, no jobs).

Run as root, with the test set-up's PostgreSQL (scripts/test.sh starts it):
  PLUS_VENV=/opt/plus-venv /opt/plus-venv/bin/python scripts/bench_ha.py [kills] [stops]

Prints, after the machine's speed:
  failover         leader killed (kill -9) or stopped (SIGSTOP) -> the standby
                   logs that it leads; median and worst
  window lateness  an AR due to start during the failover: how late the new
                   leader opened it (seen through its socket)
  feed             an AR made at one daemon -> shown by the other's socket
  creation rate    ARs per second through the sockets, 6 clients, with one
                   daemon, with two (three clients at each) and with three
                   (two at each)
  status p99       plus_status at the standby while the leader takes ARs
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from calibration import python_speed
from overlay.wire import protocol
from pgschema import bench_store

VENV = Path(os.environ.get("PLUS_VENV", "/opt/plus-venv"))
CLUSTER = 'nodes:\n  - {name: "n[001-100]", slots: 4, queues: [all.q]}\n'
POLL = 0.01
STOOD_DOWN = "standing by: lost the store to"
"""What a leader that woke up to find another leading logs (it serves on, as a standby)."""


class Node:
    """One plus_scheduler on the shared store."""

    def __init__(self, folder: Path, store: str) -> None:
        self.dir = folder
        folder.mkdir()
        (folder / "cluster.yaml").write_text(CLUSTER)
        self.conf = folder / "plus.yaml"
        self.conf.write_text(f"state_dir: state\nstore: '{store}'\nreconcile_interval: 30\n"
                             "http: {address: 'off'}\n"
                             "native: {cluster: cluster.yaml, local_host: false}\n")
        self.socket = str(folder / "state" / "plus.sock")
        self.log = folder / "daemon.log"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        with open(self.log, "a") as log:
            self.process = subprocess.Popen([str(VENV / "bin" / "plus_scheduler")],
                                            env={**os.environ, "PLUS_CONF": str(self.conf)},
                                            stdout=log, stderr=subprocess.STDOUT)
        until(lambda: self.answers(), 120, "a daemon to answer")

    def answers(self) -> bool:
        try:
            return protocol.call(self.socket, "status", {"summary": True}, timeout=5)["ok"]
        except protocol.ProtocolError:
            return False

    def said(self, words: str) -> int:
        return self.log.read_text().count(words)

    def call(self, op: str, args: dict) -> dict:
        reply = protocol.call(self.socket, op, args)
        if not reply.get("ok"):
            raise SystemExit(f"bench_ha: {op} failed: {reply}")
        return reply

    def state_of(self, ar_id: int) -> str | None:
        reply = protocol.call(self.socket, "status", {"id": ar_id})
        return reply["data"][0]["state"] if reply.get("ok") and reply["data"] else None

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.terminate()
            self.process.wait()


def until(condition, timeout: float, what: str) -> float:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"bench_ha: timed out waiting for {what}")
        time.sleep(POLL)
    return time.monotonic()


def summary(values: list[float], unit: str = "s") -> str:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return (f"median {statistics.median(ordered):7.3f} {unit}   p99 {p99:7.3f} {unit}   "
            f"worst {ordered[-1]:7.3f} {unit}   ({len(ordered)})")


def failover(leader: Node, standby: Node, how: str, starts: list[int]) -> tuple[float, float]:
    """Kill or stop ``leader`` with an AR due in 2 s; (seconds until the
    standby leads, seconds the AR's window opened late at it)."""
    start = int(time.time()) + 2
    ar = standby.call("reserve", {"start": start, "end": start + 3600, "nodes": 1})["data"]["id"]
    starts.append(start)
    led = standby.said("taking the lead")
    began = time.monotonic()
    if how == "kill":
        leader.process.kill()
        leader.process.wait()
    else:
        leader.process.send_signal(signal.SIGSTOP)
    taken = until(lambda: standby.said("taking the lead") > led, 120, "a standby to lead")
    until(lambda: standby.state_of(ar) == "r", 120, "the window to open")
    late = max(0.0, time.time() - start)
    if how == "stop":                                # it wakes up and stands by
        stood = leader.said(STOOD_DOWN)
        leader.process.send_signal(signal.SIGCONT)
        until(lambda: leader.said(STOOD_DOWN) > stood, 120, "the woken leader to stand by")
    else:
        leader.start()                               # back, as a standby
        until(lambda: leader.said("standby:") > 0, 60, "the old leader to stand by")
    return taken - began, late


def rate(nodes: list[Node], clients: int, count: int, first: int) -> float:
    """ARs per second made by ``clients`` clients spread over ``nodes``;
    a refused call ends the benchmark (a thread would end silently)."""
    refused: list[str] = []

    def work(node: Node, offset: int) -> None:
        for i in range(count):
            start = first + (offset * count + i) * 60
            reply = protocol.call(node.socket, "reserve",
                                  {"start": start, "end": start + 3600, "nodes": 1})
            if not reply.get("ok"):
                refused.append(str(reply.get("error")))
                return
    threads = [threading.Thread(target=work, args=(nodes[c % len(nodes)], c))
               for c in range(clients)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if refused:
        raise SystemExit(f"bench_ha: a reserve was refused: {refused[0]}")
    return clients * count / (time.perf_counter() - began)


def main() -> None:
    kills = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    stops = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    print(python_speed())
    with bench_store() as store:
        measure(store, kills, stops)


def measure(store: str, kills: int, stops: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="plus-bench-ha-"))
    os.chmod(work, 0o755)
    first, second, third = Node(work / "a", store), Node(work / "b", store), Node(work / "c", store)
    try:
        first.start()
        second.start()
        until(lambda: second.said("standby:") > 0, 60, "the second daemon to stand by")
        leader, standby = first, second
        times: dict[str, list[float]] = {"kill": [], "stop": []}
        lateness: list[float] = []
        starts: list[int] = []
        for how in ["kill"] * kills + ["stop"] * stops:
            taken, late = failover(leader, standby, how, starts)
            times[how].append(taken)
            lateness.append(late)
            leader, standby = standby, leader
        feed = []
        for i in range(50):
            start = int(time.time()) + 86400 + i * 7200
            ar = leader.call("reserve", {"start": start, "end": start + 3600,
                                         "nodes": 1})["data"]["id"]
            began = time.monotonic()
            feed.append(until(lambda ar=ar: standby.state_of(ar) is not None, 60,
                              "the AR at the other daemon") - began)
        far = int(time.time()) + 30 * 86400
        clients, each = 6, 60
        one = rate([leader], clients, each, far)
        statuses: list[float] = []
        busy = threading.Event()

        def watch() -> None:
            while not busy.is_set():
                began = time.perf_counter()
                standby.call("status", {"summary": True})
                statuses.append(time.perf_counter() - began)
        watcher = threading.Thread(target=watch)
        watcher.start()
        two = rate([leader, standby], clients, each, far + clients * each * 60)
        busy.set()
        watcher.join()
        third.start()
        until(lambda: third.said("standby:") > 0, 60, "the third daemon to stand by")
        three = rate([leader, standby, third], clients, each, far + 2 * clients * each * 60)
        print("daemons on one PostgreSQL store, native backend, 100 nodes")
        print(f"  failover, kill -9   {summary(times['kill'])}")
        if times["stop"]:
            print(f"  failover, SIGSTOP   {summary(times['stop'])}")
        print(f"  window lateness     {summary(lateness)}")
        print(f"  feed                {summary([f * 1000 for f in feed], 'ms')}")
        print(f"  creation rate       one daemon {one:6.1f} ARs/s   two {two:6.1f} ARs/s   "
              f"three {three:6.1f} ARs/s   (ratios {two / one:4.2f}, {three / one:4.2f})")
        print(f"  status p99 at the standby while both take ARs: "
              f"{summary([s * 1000 for s in statuses], 'ms')}")
    finally:
        for node in (first, second, third):
            node.stop()


if __name__ == "__main__":
    main()
