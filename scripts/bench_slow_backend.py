"""Commands while the batch system is slow (issue 30, item 6): plus_scheduler
with the Grid Engine backend on the test cluster (scripts/sge-setup.sh,
scripts/sge-hosts.sh up), every Grid Engine command taking DELAY seconds
(a wrapper on PATH sleeps, then runs the real one), as a qmaster under
load or a command over a slow link does.

Run as root: PLUS_VENV=/opt/plus-venv /opt/plus-venv/bin/python scripts/bench_slow_backend.py [delay] [rounds] [conflict]

Each round, one user reserves a node (which the backend must then prepare:
several commands, each DELAY s), and another user runs plus_status,
plus_reserve, plus_cancel and plus_query (QUERY) at once. ``conflict``
(requeue by default) is the sge.conflict policy: with ``avoid`` a reserve
and QUERY need the running jobs (the inventory since issue 30). Prints each command's latency
(median, p99 and worst over the rounds, in milliseconds) and how long the
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


def main() -> None:
    delay = float(sys.argv[1]) if len(sys.argv) > 1 else 5
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    conflict = sys.argv[3] if len(sys.argv) > 3 else "requeue"
    print(python_speed())
    folder = Path(tempfile.mkdtemp(prefix="plus-bench-slow-"))
    os.chmod(folder, 0o755)
    conf = folder / "plus.yaml"
    conf.write_text("state_dir: state\nbackend: sge\narusers: ['@plusgrp']\n"
                    f"reconcile_interval: 30\nhttp: {{address: 'off'}}\n"
                    f"sge: {{conflict: {conflict}}}\n")
    slow = slow_commands(folder / "slow-bin", delay)
    daemon = subprocess.Popen([str(VENV / "bin" / "plus_scheduler")],
                              env={**ENV, "PLUS_CONF": str(conf),
                                   "PATH": f"{slow}:{os.environ['PATH']}"},
                              stdout=subprocess.DEVNULL, stderr=open(folder / "daemon.log", "w"))
    taken: dict[str, list[float]] = {"plus_reserve (first user)": [], "plus_status": [],
                                     "plus_reserve": [], "plus_cancel": [], "plus_query": []}
    made: list[float] = []
    ids: list[int] = []
    try:
        deadline = time.time() + 60 * delay
        while subprocess.run([str(VENV / "bin" / "plus_status")], capture_output=True,
                             env={**ENV, "PLUS_CONF": str(conf)}).returncode != 0:
            if time.time() > deadline or daemon.poll() is not None:
                raise SystemExit(f"bench_slow_backend: the daemon did not start: "
                                 f"{(folder / 'daemon.log').read_text()[-2000:]}")
            time.sleep(0.2)
        for round_ in range(rounds):
            start = f"now+{2 + round_}h"
            ms, out = command(conf, "plusu1", "plus_reserve", "--json", "-s", start, "-D", "30m",
                              "-n", "1")
            returned = time.time()
            taken["plus_reserve (first user)"].append(ms)
            ids.append(json.loads(out)["id"])
            queue = f"R{ids[-1]}"
            ms, _ = command(conf, "plusu2", "plus_status")   # the other user, meanwhile
            taken["plus_status"].append(ms)
            ms, out = command(conf, "plusu2", "plus_reserve", "--json", "-s", start, "-D", "30m",
                              "-n", "1")
            taken["plus_reserve"].append(ms)
            ids.append(json.loads(out)["id"])
            ms, _ = command(conf, "plusu2", "plus_cancel", "-r", str(ids[-1]))
            taken["plus_cancel"].append(ms)
            ms, _ = command(conf, "plusu2", "plus_query", "plusu2", "30m", "nodes=1")
            taken["plus_query"].append(ms)
            while queue not in queues():
                if time.time() > returned + 60 * delay:
                    raise SystemExit(f"bench_slow_backend: {queue} never made")
                time.sleep(0.1)
            made.append(time.time() - returned)
        print(f"Grid Engine commands slowed to {delay:g} s each; conflict: {conflict}; "
              f"{rounds} rounds; milliseconds")
        for name, values in taken.items():
            print(f"  {name:<27} {summary(values)}")
        print(f"  first user's queue made, s  {summary(made)}")
    finally:
        daemon.terminate()
        daemon.wait()
        remove_objects(ids)
        shutil.rmtree(folder, ignore_errors=True)


def remove_objects(ids: list[int]) -> None:
    """What the daemon made in Grid Engine for the bench's ARs."""
    for ar_id in ids:
        for flag, name in (("-dq", f"R{ar_id}"), ("-dul", f"R{ar_id}_users"),
                           ("-dhgrp", f"@R{ar_id}_hosts")):
            subprocess.run(["/usr/bin/qconf", flag, name], env=ENV, capture_output=True)


if __name__ == "__main__":
    main()
