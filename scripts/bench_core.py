"""Benchmark of the reservation core on a 1,000-node embedded cluster, beside
Grid Engine's own advance reservations when its qmaster runs here.

For stores of 1,000 and 100,000 ARs (written straight into the database) and
for 10,000 ARs made through the commands, two streams at a time, it prints:
  the daemon's start, plus_reserve, plus_status -r and the listing (median
  milliseconds, the listing's client memory), plus_availnodes over a day;
  the longest wait of a socket request while background passes run, the
  reconcile and scheduling passes' cost, the daemon's memory and idle CPU;
  sustained creation through the commands and through the socket;
  the planner's earliest-start query alone.
With Grid Engine (scripts/sge-setup.sh has run: CI's test set-up), the same
10,000 windows go to 1,000 configuration-only hosts through its qrsub, and
qrsub, qrstat -ar, qrstat -u '*', sge_qmaster's memory and idle CPU are
measured in the same run, with the ratios ours / Grid Engine's.

Run as root after scripts/install.sh:
  /opt/plus-venv/bin/python scripts/bench_core.py [--counts 1000,100000] [--through 10000]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

from sqlmodel import Session

import sge_peer
from calibration import python_speed
from overlay.language.model import Request
from overlay.persistence.store import (
    AllocationRow,
    CounterRow,
    ReservationRow,
    Store,
    _encode_request,
)
from overlay.placement.planner import MultiPlanner
from overlay.wire import protocol

NODES = 1000
SLOTS = 8
HOUR = 3600
BIN = Path(sys.executable).parent
GNU_TIME = shutil.which("time", path="/usr/bin")    # Debian's "time" package
FAR = 400 * 86400            # a creation measured apart from the windows filled in
# the figures Grid Engine has too: their names pair the columns for the ratios
CREATE = "create one AR (plus_reserve / qrsub)"
ONE = "one AR (plus_status -r / qrstat -ar)"
LIST = "list all (plus_status / qrstat -u '*')"
LIST_MEMORY = "  ... client memory, MiB"
MEMORY = "daemon memory, MiB"
IDLE = "idle daemon CPU, % of a core"


def generate(count: int, now: int, seed: int = 1) -> list[tuple[int, int, int, list[int]]]:
    """(id, start, end, node indexes) of ``count`` ARs that never overlap on
    a node: each takes 1-8 neighbouring nodes after their last booking."""
    rng = random.Random(seed)
    free_at = [now + HOUR] * NODES
    ars = []
    for ar_id in range(1, count + 1):
        width = rng.randint(1, 8)
        first = rng.randrange(NODES - width)
        nodes = list(range(first, first + width))
        start = max(free_at[n] for n in nodes) + rng.randint(0, 12) * HOUR
        end = start + rng.randint(1, 12) * HOUR
        for n in nodes:
            free_at[n] = end
        ars.append((ar_id, start, end, nodes))
    return ars


def fill_store(url: str, ars, now: int, owner: str = "root") -> None:
    store = Store(url)
    with Session(store.engine) as session:
        for ar_id, start, end, nodes in ars:
            request = Request(start=start, end=end, nodes=len(nodes), users=(owner,))
            session.add(ReservationRow(id=ar_id, owner=owner, owner_group=owner, state="w",
                                       submission_time=now, start_time=start, end_time=end,
                                       acl=owner, request=_encode_request(request)))
        session.flush()
        for ar_id, start, end, nodes in ars:
            session.add_all(AllocationRow(reservation_id=ar_id, node=f"node{n + 1:04d}", slots=SLOTS,
                                          start_time=start, end_time=end) for n in nodes)
        session.add(CounterRow(name="arseqnum", value=len(ars)))
        session.commit()
    store.close()


def planner_figures(ars, now: int, runs: int) -> dict[str, float]:
    """The earliest-start query alone (16 whole nodes for 4 h, and a hard
    one: 600 nodes for 12 h), and the index rebuild that follows a booking."""
    planner = MultiPlanner()
    names = [f"node{n + 1:04d}" for n in range(NODES)]
    for name in names:
        planner.set_capacity(name, SLOTS)
    for ar_id, start, end, nodes in ars:
        for n in nodes:
            planner.book(ar_id, names[n], start, end, SLOTS)
    figures = {}
    for label, count, hours in (("planner earliest start", 16, 4),
                                ("  ... 600 nodes x 12 h", 600, 12)):
        samples = []
        for _ in range(runs):
            began = time.perf_counter()
            planner.earliest_start(names, None, count, hours * HOUR, now)
            samples.append((time.perf_counter() - began) * 1000)
        figures[label] = statistics.median(samples)
    samples = []
    for run in range(runs):
        planner.book(("bench", run), names[run], now, now + HOUR, SLOTS)
        began = time.perf_counter()
        planner.earliest_start(names, None, 16, 4 * HOUR, now)
        samples.append((time.perf_counter() - began) * 1000)
    figures["  ... first after a booking"] = statistics.median(samples)
    return figures


def windows(count: int, now: int, seed: int = 2) -> list[tuple[int, int]]:
    """(start, duration) of ``count`` one-node ARs within the next 30 days,
    on whole minutes (qrsub's -a has no seconds to spare), 1 to 12 hours."""
    rng = random.Random(seed)
    return [((now + 3600 + rng.randrange(30 * 24 * 60) * 60) // 60 * 60, rng.randint(1, 12) * HOUR)
            for _ in range(count)]


def timed_process(argv: list[str], env: dict) -> tuple[float, float]:
    """(wall ms, peak memory in MiB) of one command, which must succeed.
    The memory is GNU time's (%M): a child's own rusage would count the
    pages of this large process it was forked from."""
    with tempfile.NamedTemporaryFile("r") as peak:
        wrapped = [GNU_TIME, "-f", "%M", "-o", peak.name, *argv] if GNU_TIME else argv
        began = time.perf_counter()
        result = subprocess.run(wrapped, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                cwd="/tmp")
        elapsed = (time.perf_counter() - began) * 1000
        if result.returncode != 0:
            raise SystemExit(f"{argv[0]} failed: {result.stderr.decode()}")
        text = peak.read().strip()
    return elapsed, int(text.splitlines()[-1]) / 1024 if text else float("nan")


def median_ms(argv: list[str], env: dict, runs: int) -> float:
    return statistics.median(timed_process(argv, env)[0] for _ in range(runs))


def in_streams(items: Iterator, work: Callable[[object], None], streams: int) -> float:
    """Items done per second while ``streams`` threads each take the next
    item and ``work`` on it until none is left."""
    lock, done = threading.Lock(), [0]

    def stream() -> None:
        while True:
            with lock:
                item = next(items, None)
            if item is None:
                return
            work(item)
            with lock:
                done[0] += 1
    began = time.perf_counter()
    threads = [threading.Thread(target=stream) for _ in range(streams)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return done[0] / (time.perf_counter() - began)


def sustained(argvs: Iterator[list[str]], env: dict, streams: int) -> float:
    """ARs per second while ``streams`` clients run the commands one after another."""
    failures = []

    def create(argv) -> None:
        if subprocess.run(argv, env=env, capture_output=True, cwd="/tmp").returncode != 0:
            failures.append(argv)
    rate = in_streams(argvs, create, streams)
    if failures:
        raise SystemExit(f"{len(failures)} creations failed, e.g. {' '.join(failures[0])}")
    return rate


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def idle_cpu(pid: int, seconds: float) -> float:
    """Percent of a core the process used over ``seconds`` of no requests."""
    before = cpu_seconds(pid)
    time.sleep(seconds)
    return (cpu_seconds(pid) - before) / seconds * 100


class Daemon:
    """plus_scheduler on a 1,000-node embedded cluster in a folder of its own."""

    def __init__(self, work: Path) -> None:
        self.work = work
        (work / "cluster.yaml").write_text(
            f"nodes:\n  - {{name: 'node[0001-{NODES:04d}]', slots: {SLOTS}}}\n")
        (work / "plus.yaml").write_text("state_dir: state\nmax_expired: 1000000\nreconcile_interval: 5\n"
                                        "native: {cluster: cluster.yaml, local_host: false}\n")
        self.env = {**os.environ, "PLUS_CONF": str(work / "plus.yaml")}
        self.socket = str(work / "state" / protocol.DEFAULT_SOCKET)
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"sqlite:///{self.work}/state/plus.db"

    def start(self) -> float:
        """Start it and wait until it answers; the seconds that took."""
        self.log = open(self.work / "daemon.log", "w")
        began = time.perf_counter()
        self.process = subprocess.Popen([str(BIN / "plus_scheduler"), "--log-level", "DEBUG"],
                                        env=self.env, stderr=self.log, stdout=self.log)
        while True:
            try:
                protocol.call(self.socket, "status", {"id": 1}, timeout=600)
                return time.perf_counter() - began
            except protocol.ProtocolError:
                if self.process.poll() is not None or time.perf_counter() - began > 600:
                    raise SystemExit(f"plus_scheduler did not start; see {self.work}/daemon.log"
                                     ) from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait()
            self.log.close()

    def reserve_argv(self, start: int, duration: int) -> list[str]:
        return [str(BIN / "plus_reserve"), "-s", time.strftime("%Y%m%d%H%M.%S", time.localtime(start)),
                "-D", str(duration), "-n", "1"]

    def longest_wait(self, seconds: float) -> float:
        """The slowest of back-to-back socket requests (plus_status -r) over
        ``seconds`` of background passes, in ms."""
        slowest, deadline = 0.0, time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            began = time.perf_counter()
            protocol.call(self.socket, "status", {"id": 1})
            slowest = max(slowest, time.perf_counter() - began)
        return slowest * 1000

    def socket_rate(self, slots: list[tuple[int, int]], streams: int) -> float:
        """ARs per second created through the socket by ``streams`` clients."""
        failures = []

        def create(item) -> None:
            reply = protocol.call(self.socket, "reserve",
                                  {"start": item[0], "end": item[0] + item[1], "nodes": 1})
            if not reply.get("ok"):
                failures.append(reply)
        rate = in_streams(iter(slots), create, streams)
        if failures:
            raise SystemExit(f"{len(failures)} reserves through the socket failed, e.g. {failures[0]}")
        return rate

    def pass_costs(self) -> tuple[str, str]:
        """Median and worst milliseconds of CPU of the reconcile and the
        scheduling passes logged so far (the first, full, reconcile pass left
        out): their wall time also counts the requests that share the GIL."""
        text = (self.work / "daemon.log").read_text()
        found = []
        for kind in ("reconcile", "scheduling"):
            costs = [float(ms) for ms in re.findall(rf"{kind} pass: .*?([0-9.]+) ms CPU", text)]
            costs = costs[1:] if kind == "reconcile" else costs
            found.append(f"{statistics.median(costs):.1f} / {max(costs):.1f}" if costs else "none")
        return found[0], found[1]


def ours(daemon: Daemon, runs: int, wait_seconds: float) -> dict[str, object]:
    """The figures of a running daemon, in the table's order."""
    env, pid = daemon.env, daemon.process.pid
    last = protocol.call(daemon.socket, "status", {"summary": True})["data"][-1][0]
    listing = [timed_process([str(BIN / "plus_status")], env) for _ in range(max(3, runs // 4))]
    figures: dict[str, object] = {
        CREATE: median_ms(daemon.reserve_argv(int(time.time()) + FAR, HOUR), env, runs),
        ONE: median_ms([str(BIN / "plus_status"), "-r", str(last // 2 or 1)], env, runs),
        LIST: statistics.median(ms for ms, _ in listing),
        LIST_MEMORY: max(mib for _, mib in listing),
        "plus_availnodes over a day": median_ms([str(BIN / "plus_availnodes"), "-s", "now+2d",
                                                 "-e", "now+3d"], env, runs),
        "longest wait on a background pass, ms": daemon.longest_wait(wait_seconds),
    }
    figures["reconcile pass, median / max ms CPU"], figures["scheduling pass, median / max ms CPU"] = \
        daemon.pass_costs()
    figures[MEMORY] = rss_mib(pid)
    figures[IDLE] = idle_cpu(pid, 30)
    return figures


def filled(count: int, runs: int, wait_seconds: float) -> dict[str, object]:
    """A daemon started on a store of ``count`` ARs written straight into it."""
    now = int(time.time())
    ars = generate(count, now)
    work = Path(tempfile.mkdtemp(prefix="plus-bench-"))
    daemon = Daemon(work)
    try:
        fill_store(daemon.url, ars, now)
        figures: dict[str, object] = {"daemon start, s": daemon.start()}
        figures.update(ours(daemon, runs, wait_seconds))
        figures.update(planner_figures(ars, now, runs))
        return figures
    finally:
        daemon.stop()
        shutil.rmtree(work, ignore_errors=True)


def through_commands(count: int, runs: int, wait_seconds: float, streams: int,
                     socket_ars: int) -> dict[str, object]:
    """A daemon given ``count`` ARs by ``streams`` plus_reserve clients."""
    work = Path(tempfile.mkdtemp(prefix="plus-bench-"))
    daemon = Daemon(work)
    now = int(time.time())
    try:
        figures: dict[str, object] = {"daemon start, s": daemon.start()}
        rate = sustained((daemon.reserve_argv(s, d) for s, d in windows(count, now)), daemon.env, streams)
        figures.update(ours(daemon, runs, wait_seconds))
        figures[f"sustained creation, {streams} streams of commands, AR/s"] = rate
        later = [(s + 40 * 86400, d) for s, d in windows(socket_ars, now, seed=3)]   # apart from the rest
        figures[f"sustained creation through the socket, {streams} streams, AR/s"] = \
            daemon.socket_rate(later, streams)
        return figures
    finally:
        daemon.stop()
        shutil.rmtree(work, ignore_errors=True)


def grid_engine(count: int, runs: int, streams: int) -> dict[str, object]:
    """Grid Engine given the same ``count`` windows by ``streams`` qrsub clients."""
    now = int(time.time())
    env = sge_peer.ENV
    added = sge_peer.Added()
    try:
        sge_peer.setup(NODES, added)
        rate = sustained((sge_peer.qrsub_argv(s, d) for s, d in windows(count, now)), env, streams)
        ids = sge_peer.own_ar_ids()
        listing = [timed_process(sge_peer.qrstat_argv("-u", "*"), env) for _ in range(max(3, runs // 4))]
        pid = sge_peer.qmaster_pid()
        return {
            CREATE: median_ms(sge_peer.qrsub_argv(now + FAR, HOUR), env, runs),
            ONE: median_ms(sge_peer.qrstat_argv("-ar", str(ids[len(ids) // 2])), env, runs),
            LIST: statistics.median(ms for ms, _ in listing),
            LIST_MEMORY: max(mib for _, mib in listing),
            MEMORY: rss_mib(pid),
            IDLE: idle_cpu(pid, 30),
            f"sustained creation, {streams} streams of commands, AR/s": rate,
        }
    finally:
        sge_peer.teardown(added)


def shown(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.2f}" if value < 100 else f"{value:.0f}"
    return str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="1000,100000", help="ARs written straight into the store")
    parser.add_argument("--through", type=int, default=10000, help="ARs made through the commands")
    parser.add_argument("--streams", type=int, default=2, help="clients creating ARs at once")
    parser.add_argument("--socket-ars", type=int, default=2000, help="ARs made through the socket")
    parser.add_argument("--runs", type=int, default=15, help="runs per figure (median)")
    parser.add_argument("--wait-seconds", type=float, default=20, help="socket requests during passes")
    parser.add_argument("--no-sge", action="store_true", help="leave Grid Engine out")
    args = parser.parse_args()
    print(python_speed(), flush=True)
    columns: dict[str, dict[str, object]] = {}
    if not args.no_sge and sge_peer.available():
        columns[f"SGE {args.through:,}"] = grid_engine(args.through, args.runs, args.streams)
    else:
        print("Grid Engine: not measured (no qmaster here, or not root)")
    counts = [int(c) for c in args.counts.split(",") if c]
    for count in counts:
        if count < args.through:
            columns[f"{count:,}"] = filled(count, args.runs, args.wait_seconds)
    columns[f"{args.through:,} cmds"] = through_commands(args.through, args.runs, args.wait_seconds,
                                                         args.streams, args.socket_ars)
    for count in counts:
        if count >= args.through:
            columns[f"{count:,}"] = filled(count, args.runs, args.wait_seconds)
    sge = next((name for name in columns if name.startswith("SGE")), None)
    ours_name = f"{args.through:,} cmds"
    names = list(dict.fromkeys(name for figures in columns.values() for name in figures))
    header = f"{'1,000 nodes':<58}" + "".join(f"{name:>16}" for name in columns)
    print(header + (f"{'ours/SGE':>10}" if sge else ""))
    for name in names:
        line = f"{name:<58}" + "".join(f"{shown(columns[c].get(name, '')):>16}" for c in columns)
        if sge and isinstance(columns[sge].get(name), float) and isinstance(columns[ours_name].get(name), float):
            line += f"{columns[ours_name][name] / columns[sge][name]:>10.2f}"
        print(line)


if __name__ == "__main__":
    main()
