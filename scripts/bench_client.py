"""The compiled client (issue 34) against the Python commands and Grid Engine.

Run as root with the venv's Python after the test set-up, holding Grid
Engine's lock so that the tests and other benchmarks take turns with it:

    flock /run/lock/plus-tests-grid-engine.lock \\
        /opt/plus-venv/bin/python scripts/bench_client.py [--runs 51] [--ars 10000] [--no-sge]

A 1,000-node embedded daemon with 10,000 ARs written into its store; Grid
Engine's column from scripts/sge_peer.py when a qmaster runs here (1,000
configuration-only hosts and as many ARs as ours, made by its own qrsub,
removed after). Every command is started with posix_spawn and timed to its
end, nothing wrapped around it. Printed:
  plus_status -r, plus_reserve and the listing: each run interleaved
  (client, Python command, Grid Engine's command, client, ...), medians with
  the spread (p10 to p90), and client / Grid Engine;
  sustained creation, 2 streams of commands, in rounds interleaved the same
  way (ARs per second, median of the rounds);
  the CPU each formatted command costs the daemon and the command server
  (its workers included), apart;
  the daemon's latency for a socket request (plus_status -r's), p50 and p99,
  alone, while 4 processes only take CPU, and while 4 clients loop on
  listings through the compiled client (the clients' own work keeps both
  cores busy: no request anywhere on the machine is served as fast as on
  an idle one, so the listings' cost to others is their latency beyond
  that of the same CPU load);
  each of the issue's targets, met or not.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

import sge_peer
from bench_core import (
    FAR,
    HOUR,
    NODES,
    Daemon,
    cpu_seconds,
    fill_store,
    generate,
    in_streams,
    windows,
)
from calibration import python_speed

BIN = Path(sys.executable).parent
LIBEXEC = BIN.parent / "libexec" / "plus"
"""The Python commands, beside the client that stands for them in bin."""
SIDES = ("client", "python", "sge")
PROBE = """
import json, sys, time
from overlay.wire import protocol
samples, deadline = [], time.monotonic() + float(sys.argv[2])
while time.monotonic() < deadline:
    began = time.perf_counter()
    reply = protocol.call(sys.argv[1], "status", {"id": int(sys.argv[3])})
    samples.append((time.perf_counter() - began) * 1000)
    assert reply["ok"], reply
print(json.dumps(samples))
"""
"""Socket requests as another program makes them, back to back, in a
process of its own (this one's threads would share its GIL)."""


def spawned_ms(argv: list[str], env: dict) -> float:
    """Wall milliseconds of one command, which must succeed, its output
    thrown away."""
    null = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_WRONLY, 0) for fd in (1, 2)]
    began = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, env, file_actions=null)
    status = os.waitpid(pid, 0)[1]
    elapsed = (time.perf_counter() - began) * 1000
    if status != 0:
        shown = subprocess.run(argv, env=env, capture_output=True, text=True)
        raise SystemExit(f"{' '.join(argv)} failed: {shown.stderr.strip()}")
    return elapsed


def spread(samples: list[float]) -> str:
    ordered = sorted(samples)
    low, high = ordered[len(ordered) // 10], ordered[-1 - len(ordered) // 10]
    return f"{statistics.median(ordered):.2f} ({low:.1f}-{high:.1f})"


def percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def server_pid(daemon: Daemon) -> int:
    return int(subprocess.run(["pgrep", "-P", str(daemon.process.pid), "-f", "cmdserver"],
                              capture_output=True, text=True).stdout.split()[0])


def server_cpu(pid: int) -> float:
    """CPU seconds of the command server, its reaped workers and its live
    (warm) ones."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    total = sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    for child in children:
        try:
            total += cpu_seconds(int(child))
        except (FileNotFoundError, ProcessLookupError):
            pass                                # reaped meanwhile: counted above next time
    return total


class Commands:
    """The argument words of each measured command on each side."""

    def __init__(self, daemon: Daemon, middle: int, sge_ids: list[int], now: int) -> None:
        self.daemon = daemon
        self.middle = middle
        self.sge_id = sge_ids[len(sge_ids) // 2] if sge_ids else None
        self.hours = iter(range(now + FAR, now + FAR + 10 ** 9, HOUR))

    def ours(self, side: str, kind: str) -> list[str]:
        argv = {"one": lambda: [str(BIN / "plus_status"), "-r", str(self.middle)],
                "create": lambda: self.daemon.reserve_argv(next(self.hours), HOUR),
                "list": lambda: [str(BIN / "plus_status")]}[kind]()
        if side == "python":
            argv[0] = str(LIBEXEC / Path(argv[0]).name)
        return argv

    def theirs(self, kind: str) -> list[str]:
        return {"one": lambda: sge_peer.qrstat_argv("-ar", str(self.sge_id)),
                "create": lambda: sge_peer.qrsub_argv(next(self.hours), HOUR),
                "list": lambda: sge_peer.qrstat_argv("-u", "*")}[kind]()

    def run(self, side: str, kind: str) -> float:
        if side == "sge":
            return spawned_ms(self.theirs(kind), sge_peer.ENV)
        return spawned_ms(self.ours(side, kind), self.daemon.env)


def latency_rows(commands: Commands, sides: tuple[str, ...], runs: int,
                 ars: int) -> dict[str, dict[str, list[float]]]:
    names = {"one": "plus_status -r / qrstat -ar", "create": "plus_reserve / qrsub",
             "list": f"list {ars:,}: plus_status / qrstat -u '*'"}
    print(f"{'1,000 nodes, ms: median (p10-p90)':<44}" + "".join(f"{s:>22}" for s in sides)
          + (f"{'client/SGE':>11}" if "sge" in sides else ""))
    found = {}
    for kind, name in names.items():
        samples: dict[str, list[float]] = {side: [] for side in sides}
        for _ in range(runs):
            for side in sides:
                samples[side].append(commands.run(side, kind))
        found[kind] = samples
        print(f"{name:<44}" + "".join(f"{spread(samples[s]):>22}" for s in sides)
              + (f"{ratio(samples, 'client', 'sge'):>11.2f}" if "sge" in sides else ""),
              flush=True)
    return found


def ratio(samples: dict[str, list[float]], ours: str, theirs: str) -> float:
    return statistics.median(samples[ours]) / statistics.median(samples[theirs])


def sustained(commands: Commands, sides: tuple[str, ...], rounds: int, per_round: int,
              streams: int) -> dict[str, list[float]]:
    """ARs per second created by ``streams`` clients running the command one
    after another, per round, the sides taking turns."""
    rates: dict[str, list[float]] = {side: [] for side in sides}
    for _ in range(rounds):
        for side in sides:
            items: Iterator[Callable[[], float]] = (
                (lambda side=side: commands.run(side, "create")) for _ in range(per_round))
            rates[side].append(in_streams(items, lambda make: make(), streams))
    print(f"sustained creation, {streams} streams, AR/s (median of {rounds} rounds of "
          f"{per_round}):" + "".join(f"  {s} {statistics.median(rates[s]):.0f}" for s in sides)
          + (f"  client/SGE {ratio(rates, 'client', 'sge'):.2f}" if "sge" in sides else ""),
          flush=True)
    return rates


def cpu_per_command(commands: Commands, count: int) -> None:
    """The CPU one formatted command costs the daemon and the command server
    (its workers included), from /proc, over ``count`` client commands of
    each kind run one after another."""
    daemon_pid, server = commands.daemon.process.pid, server_pid(commands.daemon)
    print("CPU per formatted command through the client, ms: daemon / command server")
    for kind in ("one", "create", "list"):
        daemon_before, server_before = cpu_seconds(daemon_pid), server_cpu(server)
        for _ in range(count):
            commands.run("client", kind)
        print(f"  {kind:<8}{(cpu_seconds(daemon_pid) - daemon_before) / count * 1000:8.2f}"
              f"{(server_cpu(server) - server_before) / count * 1000:8.2f}", flush=True)


def probe(daemon: Daemon, seconds: float, ar_id: int) -> list[float]:
    shown = subprocess.run([sys.executable, "-c", PROBE, daemon.socket, str(seconds), str(ar_id)],
                           capture_output=True, text=True, check=True)
    return json.loads(shown.stdout)


BUSY = "while True: pass"
"""A process that only takes CPU: the load 4 looping clients put on the
machine, without their listings."""


def latency_under_listings(commands: Commands, seconds: float, listers: int) -> tuple:
    """The daemon's latency for a socket request, alone, while ``listers``
    processes only take CPU (as much of the machine as the clients take,
    no listing: what any load costs a request here), and while ``listers``
    clients loop on listings through the compiled client."""
    alone = probe(commands.daemon, seconds, commands.middle)
    busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(listers)]
    try:
        hogged = probe(commands.daemon, seconds, commands.middle)
    finally:
        for process in busy:
            process.kill()
            process.wait()
    stop, listed = threading.Event(), [0]

    def lister() -> None:
        while not stop.is_set():
            commands.run("client", "list")
            listed[0] += 1
    threads = [threading.Thread(target=lister) for _ in range(listers)]
    for thread in threads:
        thread.start()
    try:
        loaded = probe(commands.daemon, seconds, commands.middle)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    print(f"daemon latency, socket plus_status -r, ms p50 / p99: alone "
          f"{percentile(alone, 0.5):.2f} / {percentile(alone, 0.99):.2f} ({len(alone)} requests); "
          f"{listers} processes taking CPU {percentile(hogged, 0.5):.2f} / "
          f"{percentile(hogged, 0.99):.2f} ({len(hogged)} requests); "
          f"{listers} clients listing {percentile(loaded, 0.5):.2f} / "
          f"{percentile(loaded, 0.99):.2f} ({len(loaded)} requests, {listed[0]} listings)",
          flush=True)
    return alone, hogged, loaded


def verdicts(rows: dict, rates: dict, latencies: tuple) -> None:
    _alone, hogged, loaded = (percentile(samples, 0.99) for samples in latencies)
    targets = [("plus_status -r / qrstat -ar", ratio(rows["one"], "client", "sge"), "<=", 0.3),
               ("plus_reserve / qrsub", ratio(rows["create"], "client", "sge"), "<=", 0.3),
               ("listing / qrstat -u '*'", ratio(rows["list"], "client", "sge"), "<=", 0.5),
               ("sustained creation / Grid Engine's", ratio(rates, "client", "sge"), ">=", 4.0),
               ("latency p99 while listing / while as many processes take CPU", loaded / hogged,
                "<=", 1.0)]
    for name, value, way, target in targets:
        met = value <= target if way == "<=" else value >= target
        print(f"target {name} {way} {target}: {value:.2f}, {'met' if met else 'NOT met'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=51,
                        help="of each command on each side (medians of 15 moved by a tenth "
                             "between runs on a noisy machine)")
    parser.add_argument("--ars", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=5, help="rounds of sustained creation")
    parser.add_argument("--per-round", type=int, default=200, help="ARs per side per round")
    parser.add_argument("--streams", type=int, default=2)
    parser.add_argument("--cpu-commands", type=int, default=200,
                        help="client commands of each kind for the CPU per command")
    parser.add_argument("--seconds", type=float, default=10, help="of each latency probe")
    parser.add_argument("--no-sge", action="store_true")
    args = parser.parse_args()
    print(python_speed(), flush=True)
    if not (LIBEXEC / "plus_client").exists():
        raise SystemExit("no compiled client installed (scripts/install.sh found no cc)")
    os.chdir("/tmp")
    sge = not args.no_sge and sge_peer.available()
    sides = SIDES if sge else SIDES[:2]
    added = sge_peer.Added()
    now = int(time.time())
    with tempfile.TemporaryDirectory(prefix="plus-bench-client-") as folder:
        daemon = Daemon(Path(folder))
        with open(Path(folder) / "plus.yaml", "a") as conf:
            conf.write('http: {address: "off"}\n')      # the commands' figures need no API
        fill_store(daemon.url, generate(args.ars, now), now)
        daemon.start()
        try:
            ids: list[int] = []
            if sge:
                sge_peer.setup(NODES, added)
                made = (lambda start=start, duration=duration: spawned_ms(
                    sge_peer.qrsub_argv(start, duration), sge_peer.ENV)
                    for start, duration in windows(args.ars, now))
                in_streams(made, lambda make: make(), args.streams)
                ids = sge_peer.own_ar_ids()
                print(f"Grid Engine: {len(ids):,} ARs on {NODES:,} hosts", flush=True)
            else:
                print("Grid Engine: not measured (no qmaster here, or not root)")
            commands = Commands(daemon, args.ars // 2, ids, now)
            for side in sides:                        # each side's first start, unmeasured
                commands.run(side, "one")
            rows = latency_rows(commands, sides, args.runs, args.ars)
            rates = sustained(commands, sides, args.rounds, args.per_round, args.streams)
            cpu_per_command(commands, args.cpu_commands)
            latencies = latency_under_listings(commands, args.seconds, 4)
            if sge:
                verdicts(rows, rates, latencies)
        finally:
            daemon.stop()
            if sge:
                sge_peer.teardown(added)


if __name__ == "__main__":
    main()
