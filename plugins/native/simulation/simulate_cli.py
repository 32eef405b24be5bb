"""plus_simulate: replay a Standard Workload Format trace through the native
scheduler in virtual time and print Grid Engine-style figures."""

from __future__ import annotations

import argparse
import sys
import time

from overlay_native.scheduling import dispatch
from overlay_native.simulation import replay, swf


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="plus_simulate", description=__doc__.splitlines()[0],
        epilog="Bounded slowdown is max(1, (wait + run) / max(run, 10 s)).")
    p.add_argument("trace", help="SWF file, plain or .gz")
    p.add_argument("--policy", choices=sorted(dispatch.POLICIES), default="easy",
                   help="fcfs: strict order; easy: one reservation, for the queue head; "
                        "conservative: a reservation for every job (default: easy)")
    p.add_argument("--overrun", choices=replay.OVERRUN, default="kill",
                   help="a job running longer than it requested: kill it at the request "
                        "(h_rt) or let it run (default: kill)")
    p.add_argument("--default-duration", type=int, metavar="SECONDS",
                   help="planned time of jobs that requested none (never killed); "
                        "default: the longest request in the trace")
    p.add_argument("--duration-offset", type=int, default=0, metavar="SECONDS",
                   help="DURATION_OFFSET added to every planned time (default 0)")
    p.add_argument("--processors", type=int, help="machine size (default: the trace's MaxProcs)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    started = time.perf_counter()
    try:
        trace = swf.read(args.trace)
        report = replay.simulate(trace, dispatch.POLICIES[args.policy], args.overrun,
                                     args.default_duration, args.duration_offset, args.processors)
    except (OSError, ValueError) as exc:
        print(f"plus_simulate: {exc}", file=sys.stderr)
        return 2
    print("\n".join(report.lines()))
    print(f"records skipped       {trace.skipped} (no run time or processor count)")
    print(f"wall time             {time.perf_counter() - started:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
