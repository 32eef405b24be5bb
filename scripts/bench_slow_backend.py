"""Commands while the batch system is slow (issue 30, item 6): plus_scheduler
with the Grid Engine backend on the test cluster (scripts/sge-setup.sh,
scripts/sge-hosts.sh up), every Grid Engine command taking DELAY seconds
(a wrapper on PATH sleeps, then runs the real one), as a qmaster under
load or a command over a slow link does.

Run as root: PLUS_VENV=/opt/plus-venv /opt/plus-venv/bin/python scripts/bench_slow_backend.py [delay] [rounds] [conflict]

Two daemons serve one store (a schema of its own on the test set-up's
PostgreSQL, as scripts/bench_ha.py makes): the leader, which drives Grid
Engine, and a standby beside it, started second (its start is timed: until
it answers, and until it stands by). Each round, one user reserves a node
at the leader (which the backend must then prepare: several commands, each
DELAY s), and another user runs plus_status, plus_reserve, plus_cancel and
plus_query (QUERY) at each daemon in turn, meanwhile. ``conflict``
(requeue by default) is the sge.conflict policy: with ``avoid`` a reserve
and QUERY need the running jobs (the inventory since issue 30). Prints each command's latency
at each daemon (median, p99 and worst over the rounds, in milliseconds) and how long the
backend took to make the first user's queue. Point PLUS_VENV at an install
of an earlier commit for the figures before a change.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from calibration import python_speed
from pgschema import bench_store

VENV = Path(os.environ.get("PLUS_VENV", "/opt/plus-venv"))
ENV = {**os.environ, "SGE_ROOT": "/var/lib/gridengine", "SGE_CELL": "default"}
COMMANDS = ("qconf", "qstat", "qhost", "qmod", "qsub", "qdel", "qalter", "qresub", "qhold",
            "qrls")


def slow_commands(folder: Path, delay: float) -> Path:
    folder.mkdir()
    for command in COMMANDS:
        script = folder / command
        script.write_text(f"#!/bin/sh\nsleep {delay}\nexec /usr/bin/{command} \"$@\"\n")
        script.chmod(0o755)
    return folder


def command(conf: Path, user: str, *argv: str) -> tuple[float, str]:
    """Run a PluS command as ``user``: (milliseconds, stdout)."""
    began = time.perf_counter()
    done = subprocess.run(["runuser", "-u", user, "--", "env", f"PLUS_CONF={conf}",
                           str(VENV / "bin" / argv[0]), *argv[1:]],
                          capture_output=True, text=True, cwd="/tmp", timeout=600)
    taken = (time.perf_counter() - began) * 1000
    if done.returncode != 0:
        raise SystemExit(f"bench_slow_backend: {' '.join(argv)}: {done.stderr.strip()}")
    return taken, done.stdout


def queues() -> set[str]:
    return set(subprocess.run(["/usr/bin/qconf", "-sql"], env=ENV, capture_output=True,
                              text=True).stdout.split())


def summary(values: list[float]) -> str:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return (f"median {statistics.median(ordered):8.1f}   p99 {p99:8.1f}   "
            f"worst {ordered[-1]:8.1f}")


class Daemon:
    """One plus_scheduler on the store, the slowed commands first on its PATH."""

    def __init__(self, folder: Path, store: str, conflict: str, slow: Path) -> None:
        folder.mkdir()
        self.dir, self.conf, self.log = folder, folder / "plus.yaml", folder / "daemon.log"
        self.conf.write_text(f"state_dir: state\nbackend: sge\narusers: ['@plusgrp']\n"
                             f"store: '{store}'\naccounting_file: {folder.parent / 'reporting'}\n"
                             f"reconcile_interval: 30\nhttp: {{address: 'off'}}\n"
                             f"sge: {{conflict: {conflict}}}\n")
        self.began = began = time.monotonic()
        self.process = subprocess.Popen([str(VENV / "bin" / "plus_scheduler")],
                                        env={**ENV, "PLUS_CONF": str(self.conf),
                                             "PATH": f"{slow}:{os.environ['PATH']}"},
                                        stdout=subprocess.DEVNULL, stderr=open(self.log, "w"))
        self.serves = self._until(lambda: subprocess.run(
            [str(VENV / "bin" / "plus_status")], capture_output=True,
            env={**ENV, "PLUS_CONF": str(self.conf)}).returncode == 0, began, "answer")

    def settled(self, words: str) -> float:
        """Seconds from the start until the log says ``words`` (standby:, taking the lead)."""
        return self._until(lambda: words in self.log.read_text(), self.began, f"log {words!r}")

    def _until(self, condition, began: float, what: str) -> float:
        deadline = began + 600
        while not condition():
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise SystemExit(f"bench_slow_backend: the daemon did not {what}: "
                                 f"{self.log.read_text()[-2000:]}")
            time.sleep(0.1)
        return time.monotonic() - began

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait()


OTHER = ("plus_status", "plus_reserve", "plus_cancel", "plus_query")
"""The other user's commands, at each daemon."""


def main() -> None:
    delay = float(sys.argv[1]) if len(sys.argv) > 1 else 5
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    conflict = sys.argv[3] if len(sys.argv) > 3 else "requeue"
    print(python_speed())
    folder = Path(tempfile.mkdtemp(prefix="plus-bench-slow-"))
    os.chmod(folder, 0o755)
    slow = slow_commands(folder / "slow-bin", delay)
    ids: list[int] = []
    daemons: list[Daemon] = []
    try:
        with bench_store("plus_slow") as store:
            daemons.append(Daemon(folder / "leader", store, conflict, slow))
            daemons.append(Daemon(folder / "standby", store, conflict, slow))
            standing_by = daemons[1].settled("standby:")
            leader, standby = daemons
            print(f"Grid Engine commands slowed to {delay:g} s each; conflict: {conflict}; "
                  f"{rounds} rounds; one PostgreSQL store")
            print(f"  daemon start, s: the leader answered after {leader.serves:.1f}; the "
                  f"standby answered after {standby.serves:.1f} and stood by after "
                  f"{standing_by:.1f}")
            taken, made = measure(leader, standby, rounds, delay, ids)
            print("  milliseconds")
            for name, values in taken.items():
                print(f"  {name:<36} {summary(values)}")
            print(f"  first user's queue made, s           {summary(made)}")
            for daemon in daemons:
                daemon.stop()
    finally:
        for daemon in daemons:
            if daemon.process.poll() is None:
                daemon.stop()
        remove_objects(ids)
        shutil.rmtree(folder, ignore_errors=True)


def measure(leader: Daemon, standby: Daemon, rounds: int, delay: float,
            ids: list[int]) -> tuple[dict[str, list[float]], list[float]]:
    """Each round: the first user's reserve at the leader, then the other
    user's commands at each daemon; the latencies, and when the queue was made."""
    where = {"leader": leader, "standby": standby}
    taken: dict[str, list[float]] = {"plus_reserve (first user, leader)": []}
    taken.update({f"{name} ({at})": [] for at in where for name in OTHER})
    made: list[float] = []
    for round_ in range(rounds):
        start = f"now+{2 + round_}h"
        ms, out = command(leader.conf, "plusu1", "plus_reserve", "--json", "-s", start, "-D",
                          "30m", "-n", "1")
        returned = time.time()
        taken["plus_reserve (first user, leader)"].append(ms)
        ids.append(json.loads(out)["id"])
        queue = f"R{ids[-1]}"
        for at, daemon in where.items():       # the other user, meanwhile
            ms, _ = command(daemon.conf, "plusu2", "plus_status")
            taken[f"plus_status ({at})"].append(ms)
            ms, out = command(daemon.conf, "plusu2", "plus_reserve", "--json", "-s", start,
                              "-D", "30m", "-n", "1")
            taken[f"plus_reserve ({at})"].append(ms)
            ids.append(json.loads(out)["id"])
            ms, _ = command(daemon.conf, "plusu2", "plus_cancel", "-r", str(ids[-1]))
            taken[f"plus_cancel ({at})"].append(ms)
            ms, _ = command(daemon.conf, "plusu2", "plus_query", "plusu2", "30m", "nodes=1")
            taken[f"plus_query ({at})"].append(ms)
        while queue not in queues():
            if time.time() > returned + 60 * delay:
                raise SystemExit(f"bench_slow_backend: {queue} never made")
            time.sleep(0.1)
        made.append(time.time() - returned)
    return taken, made


def remove_objects(ids: list[int]) -> None:
    """What the daemon made in Grid Engine for the bench's ARs."""
    for ar_id in ids:
        for flag, name in (("-dq", f"R{ar_id}"), ("-dul", f"R{ar_id}_users"),
                           ("-dhgrp", f"@R{ar_id}_hosts")):
            subprocess.run(["/usr/bin/qconf", flag, name], env=ENV, capture_output=True)


if __name__ == "__main__":
    main()
