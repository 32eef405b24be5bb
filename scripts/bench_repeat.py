"""Benchmark of recurring ARs (plus_reserve --repeat) on a 1,000-node
embedded cluster (the native backend's nodes from a cluster file, running
no jobs, as scripts/bench_core.py uses): a series of 1,000 occurrences
granted (the command, then the leader's passes up to the depth) and listed
(plus_status, plus_status -series, plus_status -series ID), for occurrences
of 1 node and of all 1,000 nodes. PBS's ARs quasi-hung above 1,000
occurrences of a standing reservation; these are the times here.

Run as root after scripts/install.sh:
  /opt/plus-venv/bin/python scripts/bench_repeat.py [--occurrences 1000] [--widths 1,1000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from calibration import python_speed
from overlay.wire import protocol

NODES = 1000
BIN = Path(sys.executable).parent


class Daemon:
    """plus_scheduler on a 1,000-node embedded cluster in a folder of its own."""

    def __init__(self, work: Path, occurrences: int) -> None:
        self.work = work
        (work / "cluster.yaml").write_text(f"nodes:\n  - {{name: 'node[0001-{NODES:04d}]', "
                                           "slots: 8}\n")
        (work / "plus.yaml").write_text(
            "state_dir: state\nmax_expired: 1000000\nreconcile_interval: 5\n"
            f"repeat: {{depth: 366d, max_occurrences: {occurrences}}}\n"
            "native: {cluster: cluster.yaml, local_host: false}\nmail: {enabled: false}\n")
        self.env = {**os.environ, "PLUS_CONF": str(work / "plus.yaml")}
        self.socket = str(work / "state" / protocol.DEFAULT_SOCKET)
        self.log = open(work / "daemon.log", "w")
        self.process = subprocess.Popen([str(BIN / "plus_scheduler")], env=self.env,
                                        stderr=self.log, stdout=self.log)
        began = time.perf_counter()
        while True:
            try:
                protocol.call(self.socket, "status", {"summary": True}, timeout=600)
                return
            except protocol.ProtocolError:
                if self.process.poll() is not None or time.perf_counter() - began > 600:
                    raise SystemExit(f"plus_scheduler did not start; see {work}/daemon.log") \
                        from None
                time.sleep(0.05)

    def timed(self, *argv: str) -> tuple[float, str]:
        """Seconds one command took, and its output."""
        began = time.perf_counter()
        done = subprocess.run([str(BIN / argv[0]), *argv[1:]], env=self.env, text=True,
                              capture_output=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.strip()}")
        return time.perf_counter() - began, done.stdout

    def series(self, series_id: int) -> dict:
        reply = protocol.call(self.socket, "series_status", {"series": series_id}, timeout=600)
        return reply["data"][0]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait()
        self.log.close()


def run(occurrences: int, width: int) -> list[tuple[str, str]]:
    with tempfile.TemporaryDirectory(prefix="plus-bench-repeat-") as folder:
        daemon = Daemon(Path(folder), occurrences)
        try:
            start = time.strftime("%Y%m%d%H%M", time.localtime(time.time() + 7200))
            command, output = daemon.timed(
                "plus_reserve", "-s", start, "-D", "30m", "-n", str(width),
                "--repeat", f"FREQ=HOURLY;COUNT={occurrences}")
            series_id = int(output.split("series ")[1].split()[0])
            at_once = int(output.split("granted: ")[1].split()[0])
            began = time.perf_counter() - command
            deadline = time.perf_counter() + 3600
            while (shown := daemon.series(series_id))["handled"] < occurrences:
                if time.perf_counter() > deadline:
                    raise SystemExit(f"only {shown['handled']} of {occurrences} handled in an hour")
                time.sleep(0.2)
            granted = time.perf_counter() - began
            if shown["granted"] != occurrences:
                raise SystemExit(f"{occurrences - shown['granted']} occurrences refused: "
                                 f"{shown['refused'][:1]}")
            listing, listed = daemon.timed("plus_status")
            assert len(listed.splitlines()) == occurrences + 2, "plus_status lists them all"
            lines, _ = daemon.timed("plus_status", "-series")
            detail, _ = daemon.timed("plus_status", "-series", str(series_id))
            cancel, _ = daemon.timed("plus_cancel", "-series", str(series_id))
            began = time.perf_counter() - cancel
            while (shown := daemon.series(series_id))["next_due"] is not None or any(
                    o["state"] != "d" for o in shown["occurrences"]):
                if time.perf_counter() > deadline:
                    raise SystemExit("the series' occurrences were not all cancelled in an hour")
                time.sleep(0.2)
            cancelled = time.perf_counter() - began
        finally:
            daemon.stop()
    label = f"{occurrences} occurrences of {width} node(s)"
    return [(f"{label}: plus_reserve --repeat (the first {at_once} granted)", f"{command:.2f} s"),
            (f"{label}: all granted (the leader's passes)", f"{granted:.2f} s"),
            (f"{label}: plus_status (every AR)", f"{listing:.2f} s"),
            (f"{label}: plus_status -series", f"{lines:.2f} s"),
            (f"{label}: plus_status -series ID (every occurrence)", f"{detail:.2f} s"),
            (f"{label}: plus_cancel -series ID (the first 32 cancelled)", f"{cancel:.2f} s"),
            (f"{label}: all cancelled (the leader's passes)", f"{cancelled:.2f} s")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--occurrences", type=int, default=1000)
    parser.add_argument("--widths", default="1,1000", help="nodes per occurrence, comma-separated")
    args = parser.parse_args()
    print(python_speed(), flush=True)
    for width in (int(w) for w in args.widths.split(",")):
        for name, figure in run(args.occurrences, width):
            print(f"{name:<72} {figure:>10}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
