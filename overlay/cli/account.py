"""plus_account: report reservation usage from the reporting file (like qacct)."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass

from overlay.cli import common
from overlay.language import limits
from overlay.language.timespec import format_duration, format_time
from overlay.reporting.accounting import ARUsage, JobUse, charged, collect, jobs_by_ar, used
from overlay.wire import protocol


@dataclass
class Total:
    ars: int = 0
    seconds: int = 0
    node_seconds: int = 0
    slot_seconds: int = 0
    asked: int = 0
    used: int = 0
    released: int = 0

    def add(self, seconds: int, nodes: int, slots: int, apart: tuple[int, int, int]) -> None:
        """One AR's hold: ``apart`` its asked, used and released node-seconds."""
        self.ars += 1
        self.seconds += seconds
        self.node_seconds += seconds * nodes
        self.slot_seconds += seconds * slots
        self.asked += apart[0]
        self.used += apart[1]
        self.released += apart[2]


def parser() -> common.Parser:
    p = common.Parser("plus_account", "Report how much was reserved: ARs, reserved time, "
                      "node-hours and slot-hours held (charged: up to an early release), and "
                      "node-hours asked, used by jobs and released early, from the reporting "
                      "file plus_scheduler writes. Without -o, -n or -l it prints the totals.")
    p.add_argument("-s", metavar="startTime", type=common.time_arg("-s"), help="period start")
    p.add_argument("-e", metavar="endTime", type=common.time_arg("-e"),
                   help="period end (default now)")
    p.add_argument("-d", metavar="days", type=common.count_arg("-d", "the number of days"),
                   help="period length in days: the last N days, or N days from -s or before -e")
    p.add_argument("-f", metavar="logfile", help="reporting file (default: the one plus_scheduler "
                   "writes, accounting_file in its state_dir)")
    p.add_argument("-o", metavar="owner", nargs="?", const=(), type=common.names_arg("-o"),
                   help="one line per owner; with a name, only that owner")
    p.add_argument("-n", metavar="nodes", nargs="?", const=(), type=common.names_arg("-n"),
                   help="one line per node; with names (comma list), only those nodes")
    p.add_argument("-l", action="store_true", help="one line per AR")
    p.add_argument("-S", action="store_true", help="add a TOTAL line to the lines above")
    return p


def default_logfile() -> str:
    """The reporting file of plus_scheduler's configuration."""
    conf = protocol.conf_path()
    try:
        scalars = protocol.read_top_level_scalars(conf)
    except common.READ_ERRORS as exc:
        common.fail("plus_account", f"cannot read the configuration {limits.shown(conf)} "
                                    f"({common.unreadable(exc)}); give -f logfile, or set "
                                    "PLUS_CONF to plus_scheduler's configuration file",
                    protocol.EXIT_REFUSED)
    state = os.path.join(os.path.dirname(os.path.abspath(conf)),
                         scalars.get("state_dir") or protocol.DEFAULT_STATE_DIR)
    return os.path.join(state, scalars.get("accounting_file") or "reporting")


def period(p: common.Parser, args) -> tuple[int, int]:
    now = int(time.time())
    days = args.d * 86400 if args.d else None
    if days and args.s is not None and args.e is not None:
        p.error("-d cannot be combined with both -s and -e")
    start, end = args.s, args.e
    if days:
        if start is not None:
            end = start + days
        else:
            end = now if end is None else end
            start = end - days
    start = 0 if start is None else start
    end = now if end is None else end
    if end <= start:
        p.error("the period's end must be later than its start")
    return start, end


@common.command("plus_account")
def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    first, last = period(p, args)
    path = args.f or default_logfile()
    jobs: list[JobUse] = []
    try:
        with open(path, encoding="utf-8", newline="\n") as handle:
            ars = collect(handle, lambda error: print(
                f"plus_account: {limits.shown(path)}: ignoring {error}", file=sys.stderr), jobs)
    except common.READ_ERRORS as exc:
        common.fail("plus_account", f"cannot read {limits.shown(path)}: {common.unreadable(exc)}",
                    protocol.EXIT_REFUSED)
    owners = set(args.o) if args.o is not None else None
    nodes = set(args.n) if args.n is not None else None
    print(report(ars, first, min(last, int(time.time())), owners, nodes, args.l, args.S, jobs))
    return 0


def report(ars: list[ARUsage], first: int, last: int, owners: set | None, nodes: set | None,
           listing: bool, total_line: bool, jobs: list[JobUse] = ()) -> str:
    """plus_account's tables; node-hours are what ARs held (charged), and
    asked, used and released node-hours stand apart beside them."""
    by_owner: dict[str, Total] = {}
    by_node: dict[str, Total] = {}
    total = Total()
    lines = []
    jobs_of = jobs_by_ar(jobs)
    for ar, begin, finish, hosts in used(ars, first, last, owners, nodes):
        seconds = finish - begin
        apart = charged(ar, begin, finish, hosts, jobs_of, first, last)
        total.add(seconds, len(hosts), sum(hosts.values()), apart)
        by_owner.setdefault(ar.owner, Total()).add(seconds, len(hosts), sum(hosts.values()),
                                                   apart)
        for host, slots in hosts.items():
            by_node.setdefault(host, Total()).add(seconds, 1, slots,
                                                  tuple(part // len(hosts) for part in apart))
        if listing:
            lines.append(f"{ar.id:>7} {ar.owner[:12]:<12} {format_time(begin)} {format_time(finish)} "
                         f"{format_duration(seconds):>10} {seconds * len(hosts) / 3600:>11.2f} "
                         f"{','.join(sorted(hosts))} {_hours(apart[0])} {_hours(apart[1])} "
                         f"{_hours(apart[2])}")
    out = []
    if listing:
        out += [f"{'AR-ID':>7} {'owner':<12} {'from':<19} {'to':<19} {'reserved':>10} "
                f"{'node-hours':>11} nodes asked-nh used-nh released-nh", "-" * 90] + lines
    for title, groups in (("OWNER", by_owner if owners is not None else None),
                          ("NODE", by_node if nodes is not None else None)):
        if groups is not None:
            if out:
                out.append("")
            out += [_header(title)] + [_row(name, groups[name]) for name in sorted(groups)]
    if not out:
        out = [_header(""), _row("TOTAL", total)]
    elif total_line:
        out.append(_row("TOTAL", total))
    return "\n".join(out)


def _header(title: str) -> str:
    return (f"{title:<16} {'ARs':>6} {'reserved':>12} {'node-hours':>12} {'slot-hours':>12} "
            f"{'asked-nh':>12} {'used-nh':>12} {'released-nh':>12}\n" + "=" * 101)


def _row(name: str, total: Total) -> str:
    return (f"{name[:16]:<16} {total.ars:>6} {format_duration(total.seconds):>12} "
            f"{total.node_seconds / 3600:>12.2f} {total.slot_seconds / 3600:>12.2f} "
            f"{_hours(total.asked):>12} {_hours(total.used):>12} {_hours(total.released):>12}")


def _hours(node_seconds: int) -> str:
    return f"{node_seconds / 3600:.2f}"


if __name__ == "__main__":
    sys.exit(main())
