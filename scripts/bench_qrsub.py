"""plus_qrsub and plus_qrstat -u '*' beside Grid Engine's own qrsub and qrstat,
at 1,000 hosts and 10,000 ARs, measured alternately in the same run (issue 17).

Our side: plus_scheduler on a 1,000-host embedded cluster whose ARs are
qrsub's (one slot of all.q each), made through the socket. Grid Engine's
side (when scripts/sge-setup.sh has run here): 1,000 configuration-only
hosts and the same windows through its qrsub binary (scripts/sge_peer.py).
Prints the medians in ms and the ratios ours / Grid Engine's, with the
machine's speed.

Run as root after scripts/install.sh:
  /opt/plus-venv/bin/python scripts/bench_qrsub.py [--ars 10000] [--runs 15] [--no-sge]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import sge_peer
from bench_core import BIN, HOUR, NODES, Daemon, in_streams, sustained, timed_process, windows
from calibration import python_speed
from overlay.wire import protocol

FAR = 300 * 86400


def fill(daemon: Daemon, count: int, now: int) -> None:
    """``count`` qrsub ARs of one slot through the socket, two clients at once."""
    failures = []

    def create(item) -> None:
        start, duration = item
        reply = protocol.call(daemon.socket, "reserve",
                              {"start": start, "end": start + duration, "nodes": 0})
        if not reply.get("ok"):
            failures.append(reply)
    in_streams(iter(windows(count, now)), create, 2)
    if failures:
        raise SystemExit(f"{len(failures)} ARs were refused, e.g. {failures[0]}")


def qrsub_argv(start: int) -> list[str]:
    return [str(BIN / "plus_qrsub"), "-a", time.strftime("%Y%m%d%H%M.%S", time.localtime(start)),
            "-d", "1:0:0"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ars", type=int, default=10000, help="ARs stored on each side")
    parser.add_argument("--runs", type=int, default=15, help="runs per figure (median)")
    parser.add_argument("--no-sge", action="store_true", help="leave Grid Engine out")
    args = parser.parse_args()
    print(python_speed(), flush=True)
    now = int(time.time())
    with_sge = not args.no_sge and sge_peer.available()
    work = Path(tempfile.mkdtemp(prefix="bench-qrsub-"))
    daemon = Daemon(work)
    added = sge_peer.Added()
    try:
        if with_sge:
            sge_peer.setup(NODES, added)
            sustained((sge_peer.qrsub_argv(s, d) for s, d in windows(args.ars, now)),
                      sge_peer.ENV, 2)
        daemon.start()
        fill(daemon, args.ars, now)
        figures: dict[str, dict[str, list[float]]] = {"qrsub": {}, "qrstat -u '*'": {}}
        for run in range(args.runs):
            start = now + FAR + run * 2 * HOUR
            sides = {"ours": (qrsub_argv(start), [str(BIN / "plus_qrstat"), "-u", "*"],
                              daemon.env)}
            if with_sge:
                sides["SGE"] = (sge_peer.qrsub_argv(start, HOUR),
                                sge_peer.qrstat_argv("-u", "*"), sge_peer.ENV)
            for side, (create, listing, env) in sides.items():
                figures["qrsub"].setdefault(side, []).append(timed_process(create, env)[0])
                figures["qrstat -u '*'"].setdefault(side, []).append(
                    timed_process(listing, env)[0])
        print(f"{NODES:,} hosts, {args.ars:,} ARs on each side, medians of {args.runs} runs (ms)")
        print(f"{'':<16}{'ours':>10}{'SGE':>10}{'ours/SGE':>10}")
        for name, sides in figures.items():
            ours = statistics.median(sides["ours"])
            sge = statistics.median(sides["SGE"]) if "SGE" in sides else None
            print(f"{name:<16}{ours:>10.1f}" + (f"{sge:>10.1f}{ours / sge:>10.2f}" if sge else
                                                 f"{'-':>10}{'-':>10}"))
    finally:
        daemon.stop()
        shutil.rmtree(work, ignore_errors=True)
        if with_sge:
            sge_peer.teardown(added)


if __name__ == "__main__":
    main()
