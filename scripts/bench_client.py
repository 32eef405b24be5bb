"""The compiled client (issue 34) against the Python commands and Grid Engine.

Run as root with the venv's Python after the test set-up. A 1,000-node
embedded daemon with 10,000 ARs written into its store; each figure's runs
interleaved (client, Python command, Grid Engine's command, client, ...), so
that all meet the same machine; medians with the spread (p10 to p90). Grid
Engine's column comes from scripts/sge_peer.py when a qmaster runs here
(1,000 configuration-only hosts and as many ARs as ours, removed after).
Then the command server's CPU per command (the server and its workers,
which are its children), from /proc.

    python scripts/bench_client.py [--runs 15] [--ars 10000] [--no-sge]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import sge_peer
from bench_core import FAR, HOUR, NODES, Daemon, fill_store, generate, timed_process, windows
from calibration import python_speed

LIBEXEC = Path(sys.executable).parent.parent / "libexec" / "plus"
"""The Python commands, beside the client that stands for them in bin."""


def spread(samples: list[float]) -> str:
    ordered = sorted(samples)
    low, high = ordered[len(ordered) // 10], ordered[-1 - len(ordered) // 10]
    return f"{statistics.median(ordered):7.2f} ({low:.1f}-{high:.1f})"


def server_cpu(daemon: Daemon) -> float:
    """CPU seconds of the command server and its reaped workers."""
    pid = int(subprocess.run(["pgrep", "-P", str(daemon.process.pid), "-f", "cmdserver"],
                             capture_output=True, text=True).stdout.split()[0])
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--ars", type=int, default=10000)
    parser.add_argument("--no-sge", action="store_true")
    args = parser.parse_args()
    print(python_speed(), flush=True)
    if not (LIBEXEC / "plus_client").exists():
        raise SystemExit("no compiled client installed (scripts/install.sh found no cc)")
    sge = not args.no_sge and sge_peer.available()
    added = sge_peer.Added()
    now = int(time.time())
    with tempfile.TemporaryDirectory(prefix="plus-bench-client-") as folder:
        daemon = Daemon(Path(folder))
        with open(Path(folder) / "plus.yaml", "a") as conf:
            conf.write('http: {address: "off"}\n')      # the commands' figures need no API
        fill_store(daemon.url, generate(args.ars, now), now)
        daemon.start()
        try:
            if sge:
                sge_peer.setup(NODES, added)
                for start, duration in windows(args.ars, now):
                    subprocess.run(sge_peer.qrsub_argv(start, duration), env=sge_peer.ENV,
                                   capture_output=True)
                ids = sge_peer.own_ar_ids()
            else:
                print("Grid Engine: not measured (no qmaster here, or not root)")
            middle = str(args.ars // 2)
            rows = {
                "one AR: plus_status -r / qrstat -ar": (
                    ["plus_status", "-r", middle],
                    sge and sge_peer.qrstat_argv("-ar", str(ids[len(ids) // 2]))),
                "create: plus_reserve / qrsub": (
                    None, sge and sge_peer.qrsub_argv(now + FAR, HOUR)),
                f"list {args.ars:,}: plus_status / qrstat -u '*'": (
                    ["plus_status"], sge and sge_peer.qrstat_argv("-u", "*")),
            }
            far = iter(range(now + FAR, now + FAR + 10 ** 8, HOUR))
            print(f"{'1,000 nodes, ms: median (p10-p90)':<46}{'client':>22}{'Python':>22}"
                  f"{'Grid Engine':>22}{'client/SGE':>11}")
            before, commands = server_cpu(daemon), 0
            for name, (words, theirs) in rows.items():
                samples: dict[str, list[float]] = {"client": [], "python": [], "sge": []}
                for _ in range(args.runs):
                    for side, folder_of in (("client", None), ("python", LIBEXEC)):
                        argv = (daemon.reserve_argv(next(far), HOUR) if words is None
                                else [str(Path(sys.executable).parent / words[0]), *words[1:]])
                        if folder_of is not None:
                            argv[0] = str(folder_of / Path(argv[0]).name)
                        samples[side].append(timed_process(argv, daemon.env)[0])
                        commands += side == "client"
                    if sge:
                        samples["sge"].append(timed_process(theirs, sge_peer.ENV)[0])
                ratio = (f"{statistics.median(samples['client']) / statistics.median(samples['sge']):11.2f}"
                         if sge else "")
                print(f"{name:<46}{spread(samples['client']):>22}{spread(samples['python']):>22}"
                      f"{spread(samples['sge']) if sge else '':>22}{ratio}", flush=True)
            print(f"command server CPU per command (server and workers), ms: "
                  f"{(server_cpu(daemon) - before) / commands * 1000:.2f}")
        finally:
            daemon.stop()
            if sge:
                sge_peer.teardown(added)


if __name__ == "__main__":
    main()
