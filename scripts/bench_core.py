"""Benchmark of the reservation core on a 1,000-node embedded cluster, beside
Grid Engine's own advance reservations when its qmaster runs here.

For stores of 1,000 and 100,000 ARs (written straight into the database) and
for 10,000 ARs made through the commands, two streams at a time, it prints:
  the daemon's start, plus_reserve, plus_status -r and the listing (median
  milliseconds with p10-p90, the listing's client memory), plus_availnodes
  over a day; other users' latency at the socket (p50 / p99 of plus_status
  -r's request) alone and while 4 clients loop on listings; the longest wait
  of a socket request while background passes run, the reconcile and
  scheduling passes' cost, the daemon's memory and idle CPU; sustained
  creation through the commands and through the socket; the planner's
  earliest-start query alone.
With Grid Engine (scripts/sge-setup.sh has run: CI's test set-up), the same
10,000 windows go to 1,000 configuration-only hosts through its qrsub, the
two sides taking turns burst by burst (--burst ARs each), and then qrsub,
qrstat -ar and qrstat -u '*' run in turns with ours (ours, SGE, ours, ...),
so that both meet the same load; sge_qmaster's memory, and its idle CPU over
the same seconds as ours; the ratios are ours / Grid Engine's medians. The
commands are run by name from the venv's bin (and /usr/lib/gridengine), so
the figures follow whatever the install put there.

Run as root after scripts/install.sh, holding the Grid Engine group's lock:
  flock /run/lock/plus-tests-grid-engine.lock /opt/plus-venv/bin/python scripts/bench_core.py \\
      [--counts 1000,100000] [--through 10000] [--burst 250] [--runs 15]
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
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from sqlmodel import Session

import sge_peer
from calibration import python_speed
from interleave import Spread, alternate, bursts, number, percentile, ratio, spread
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
HELD = "ARs held after the commands above"
LISTERS = 4                  # clients listing in a loop while other users' requests are timed
OTHERS_ALONE = "other users' plus_status -r at the socket, p50 / p99 ms"
OTHERS_LOADED = f"  ... while {LISTERS} clients loop on listings"
OURS, SGE = "ours", "SGE"


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


def idle_cpu(pids: dict[str, int], seconds: float) -> dict[str, float]:
    """Percent of a core each process used over the same ``seconds`` of no
    requests."""
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    time.sleep(seconds)
    return {name: (cpu_seconds(pid) - before[name]) / seconds * 100 for name, pid in pids.items()}


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

    def latencies(self, seconds: float) -> list[float]:
        """Milliseconds of back-to-back socket requests for one AR (what
        plus_status -r asks) over ``seconds``."""
        samples, one = [], {"id": self.middle_id()}
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            began = time.perf_counter()
            protocol.call(self.socket, "status", one)
            samples.append((time.perf_counter() - began) * 1000)
        return samples

    def latencies_while_listing(self, seconds: float, clients: int) -> tuple[list[float], float]:
        """The socket requests' latencies while ``clients`` run plus_status
        (the whole listing) over and over, and the listings per second
        they got through meanwhile."""
        stop, done, failures = threading.Event(), [0], []

        def loop() -> None:
            while not stop.is_set():
                result = subprocess.run([str(BIN / "plus_status")], env=self.env, cwd="/tmp",
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                if result.returncode != 0:
                    failures.append(result.stderr.decode())
                    return
                done[0] += 1
        threads = [threading.Thread(target=loop) for _ in range(clients)]
        for thread in threads:
            thread.start()
        began = time.perf_counter()
        try:
            samples = self.latencies(seconds)
        finally:
            stop.set()
            for thread in threads:
                thread.join()
        if failures:
            raise SystemExit(f"plus_status failed while listing in a loop: {failures[0]}")
        return samples, done[0] / (time.perf_counter() - began)

    def middle_id(self) -> int:
        """An AR id half-way through those made so far (1 if none)."""
        last = protocol.call(self.socket, "status", {"summary": True})["data"]
        return (last[-1][0] // 2 or 1) if last else 1

    def held(self) -> int:
        """How many ARs the daemon holds."""
        return len(protocol.call(self.socket, "status", {"summary": True})["data"])

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


@dataclass
class Side:
    """One system's commands as the paired figures run them, by name from
    its own folder (ours: whatever the venv's bin holds)."""

    env: dict
    create: Callable[[int, int], list[str]]
    """the command that makes one AR over (start, duration)"""
    one: Callable[[], list[str]]
    """the command that shows one AR, picked among those made so far"""
    listing: list[str]
    pid: Callable[[], int]
    held: Callable[[], int]
    """how many ARs this side holds"""


def our_side(daemon: Daemon) -> Side:
    return Side(env=daemon.env, create=daemon.reserve_argv,
                one=lambda: [str(BIN / "plus_status"), "-r", str(daemon.middle_id())],
                listing=[str(BIN / "plus_status")], pid=lambda: daemon.process.pid, held=daemon.held)


def grid_engine_side() -> Side:
    def one() -> list[str]:
        ids = sge_peer.own_ar_ids()
        return sge_peer.qrstat_argv("-ar", str(ids[len(ids) // 2]))
    return Side(env=sge_peer.ENV, create=sge_peer.qrsub_argv, one=one,
                listing=sge_peer.qrstat_argv("-u", "*"), pid=sge_peer.qmaster_pid,
                held=lambda: len(sge_peer.own_ar_ids()))


def creation_in_rounds(sides: dict[str, Side], slots: list[tuple[int, int]], streams: int,
                       burst: int) -> dict[str, Spread]:
    """Each side's ARs per second through its commands from ``streams``
    clients, given the same ``slots`` in bursts of ``burst``, the sides
    taking turns burst by burst: the spread is over the bursts."""
    rounds = bursts(slots, burst)
    rates: dict[str, list[float]] = {name: [] for name in sides}
    for turn, name in alternate(len(rounds), list(sides)):
        side = sides[name]
        rates[name].append(sustained((side.create(s, d) for s, d in rounds[turn]), side.env, streams))
    return {name: spread(samples) for name, samples in rates.items()}


def commands_in_turns(sides: dict[str, Side], runs: int, now: int) -> dict[str, dict[str, object]]:
    """Creating one AR, showing one and listing all, each run by every side
    in turn (ours, theirs, ours, ...) so that all meet the same load; the
    n-th creation of each side asks for the same window."""
    ones = {name: side.one() for name, side in sides.items()}
    asked = ((CREATE, runs, lambda name, turn: sides[name].create(now + FAR + turn * 2 * HOUR, HOUR)),
             (ONE, runs, lambda name, turn: ones[name]),
             (LIST, max(3, runs // 4), lambda name, turn: sides[name].listing))
    figures: dict[str, dict[str, object]] = {name: {} for name in sides}
    for label, count, argv in asked:
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
        for turn, name in alternate(count, list(sides)):
            samples[name].append(timed_process(argv(name, turn), sides[name].env))
        for name, taken in samples.items():
            figures[name][label] = spread([ms for ms, _ in taken])
            if label == LIST:
                figures[name][LIST_MEMORY] = max(mib for _, mib in taken)
    return figures


def processes(sides: dict[str, Side], figures: dict[str, dict[str, object]]) -> None:
    """Each side's ARs held, memory and idle CPU (over the same seconds)
    into its figures."""
    pids = {name: side.pid() for name, side in sides.items()}
    for name, side in sides.items():
        figures[name][HELD] = side.held()
        figures[name][MEMORY] = rss_mib(pids[name])
    for name, percent in idle_cpu(pids, 30).items():
        figures[name][IDLE] = percent


def daemon_figures(daemon: Daemon, runs: int, wait_seconds: float,
                   latency_seconds: float) -> dict[str, object]:
    """Ours alone: what Grid Engine has no peer for."""
    alone = daemon.latencies(latency_seconds)
    loaded, listings = daemon.latencies_while_listing(latency_seconds, LISTERS)
    figures: dict[str, object] = {
        "plus_availnodes over a day": spread([timed_process(
            [str(BIN / "plus_availnodes"), "-s", "now+2d", "-e", "now+3d"], daemon.env)[0]
            for _ in range(runs)]),
        "longest wait on a background pass, ms": max(daemon.latencies(wait_seconds)),
        OTHERS_ALONE: f"{percentile(alone, 50):.2f} / {percentile(alone, 99):.2f}",
        OTHERS_LOADED: f"{percentile(loaded, 50):.2f} / {percentile(loaded, 99):.2f}",
        f"  ... listings/s the {LISTERS} clients got": listings,
    }
    figures["reconcile pass, median / max ms CPU"], figures["scheduling pass, median / max ms CPU"] = \
        daemon.pass_costs()
    return figures


def filled(count: int, runs: int, wait_seconds: float, latency_seconds: float) -> dict[str, object]:
    """A daemon started on a store of ``count`` ARs written straight into it."""
    now = int(time.time())
    ars = generate(count, now)
    work = Path(tempfile.mkdtemp(prefix="plus-bench-"))
    daemon = Daemon(work)
    try:
        fill_store(daemon.url, ars, now)
        figures: dict[str, object] = {"daemon start, s": daemon.start()}
        sides = {OURS: our_side(daemon)}
        figures.update(commands_in_turns(sides, runs, now)[OURS])
        figures.update(daemon_figures(daemon, runs, wait_seconds, latency_seconds))
        processes(sides, {OURS: figures})
        figures.update(planner_figures(ars, now, runs))
        return figures
    finally:
        daemon.stop()
        shutil.rmtree(work, ignore_errors=True)


def beside_grid_engine(count: int, args: argparse.Namespace, with_sge: bool) -> dict[str, dict[str, object]]:
    """A daemon given ``count`` ARs by ``args.streams`` plus_reserve clients
    and, with Grid Engine, its qmaster given the same windows by as many
    qrsub clients, the two taking turns; then the commands of both in turns.
    Our figures under OURS, Grid Engine's under SGE."""
    work = Path(tempfile.mkdtemp(prefix="plus-bench-"))
    daemon = Daemon(work)
    added = sge_peer.Added()
    now = int(time.time())
    try:
        started = daemon.start()
        sides = {OURS: our_side(daemon)}
        if with_sge:
            sge_peer.setup(NODES, added)
            sides[SGE] = grid_engine_side()
        rates = creation_in_rounds(sides, windows(count, now), args.streams, args.burst)
        figures = commands_in_turns(sides, args.runs, now)
        for name, rate in rates.items():
            figures[name][f"sustained creation, {args.streams} streams of commands, AR/s"] = rate
        processes(sides, figures)
        figures[OURS]["daemon start, s"] = started
        figures[OURS].update(daemon_figures(daemon, args.runs, args.wait_seconds, args.latency_seconds))
        later = [(s + 40 * 86400, d) for s, d in windows(args.socket_ars, now, seed=3)]  # apart from the rest
        figures[OURS][f"sustained creation through the socket, {args.streams} streams, AR/s"] = \
            daemon.socket_rate(later, args.streams)
        return figures
    finally:
        daemon.stop()
        shutil.rmtree(work, ignore_errors=True)
        if with_sge:
            sge_peer.teardown(added)


def shown(value: object) -> str:
    return number(value) if isinstance(value, float) else str(value)


def table(columns: dict[str, dict[str, object]], paired: tuple[str, str] | None) -> list[str]:
    """The figures as lines: a row per figure, a column per run, and with
    ``paired`` (ours, Grid Engine's column) the ratio of their medians."""
    names = list(dict.fromkeys(name for figures in columns.values() for name in figures))
    lines = [f"{'1,000 nodes':<52}" + "".join(f"{name:>22}" for name in columns)
             + (f"{'ours/SGE':>10}" if paired else "")]
    for name in names:
        line = f"{name:<52}" + "".join(f"{shown(columns[c].get(name, '')):>22}" for c in columns)
        if paired and (quotient := ratio(columns[paired[0]].get(name), columns[paired[1]].get(name))):
            line += f"{quotient:>10.2f}"
        lines.append(line)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="1000,100000", help="ARs written straight into the store")
    parser.add_argument("--through", type=int, default=10000, help="ARs made through the commands")
    parser.add_argument("--streams", type=int, default=2, help="clients creating ARs at once")
    parser.add_argument("--burst", type=int, default=250,
                        help="ARs each side makes in its turn before the other's")
    parser.add_argument("--socket-ars", type=int, default=2000, help="ARs made through the socket")
    parser.add_argument("--runs", type=int, default=15, help="runs per figure (median)")
    parser.add_argument("--wait-seconds", type=float, default=20, help="socket requests during passes")
    parser.add_argument("--latency-seconds", type=float, default=10,
                        help="socket requests timed alone, and again while clients list")
    parser.add_argument("--no-sge", action="store_true", help="leave Grid Engine out")
    args = parser.parse_args()
    if args.burst < 1 or args.runs < 1 or args.through < 1:
        parser.error("--burst, --runs and --through take a whole number of at least 1")
    print(python_speed(), flush=True)
    with_sge = not args.no_sge and sge_peer.available()
    if not with_sge:
        print("Grid Engine: not measured (no qmaster here, or not root)")
    counts = [int(c) for c in args.counts.split(",") if c]
    measured = {count: filled(count, args.runs, args.wait_seconds, args.latency_seconds)
                for count in counts if count < args.through}
    paired = beside_grid_engine(args.through, args, with_sge)
    measured.update({count: filled(count, args.runs, args.wait_seconds, args.latency_seconds)
                     for count in counts if count >= args.through})
    ours_name, sge_name = f"{args.through:,} cmds", f"SGE {args.through:,}"
    columns = {sge_name: paired[SGE]} if with_sge else {}
    columns.update({f"{count:,}": measured[count] for count in counts if count < args.through})
    columns[ours_name] = paired[OURS]
    columns.update({f"{count:,}": measured[count] for count in counts if count >= args.through})
    print(f"each figure: median (p10-p90) of {args.runs} runs, the listing of {max(3, args.runs // 4)}, "
          f"sustained creation of bursts of {args.burst} ARs a side; ours and Grid Engine's "
          "taken in turns (ours, SGE, ours, ...); ours/SGE: the ratio of the medians")
    for line in table(columns, (ours_name, sge_name) if with_sge else None):
        print(line)


if __name__ == "__main__":
    main()
