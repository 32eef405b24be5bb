"""plus_qacct: report usage from the native batch system's accounting file, as
qacct does; it reads the file itself (no daemon needed).

Without options, the totals; -o, -g, -h, -q or -ar list per owner, group,
host, cluster queue or AR (or, with a name, that one); -j lists jobs.
-b/-e/-d select by start time (by end time with -E).
"""

from __future__ import annotations

import fnmatch
import os
import sys
import time

from overlay.api.commands import TIME_FORMS, common, limits, options, protocol
from overlay_native import acct

PROG = "plus_qacct"
_WARNINGS = 5
"""Malformed lines named one by one; the rest are counted."""
GROUPINGS = (("o", "owner"), ("g", "group"), ("h", "host"), ("q", "queue"), ("ar", "ar"))


def parser() -> common.Parser:
    p = common.Parser(PROG, "Report usage of finished jobs from the accounting file.",
                      add_help=False)    # -h is qacct's host option
    p.add_argument("-help", "--help", action="help", help="show this help and exit")
    for letter, what in GROUPINGS:
        names = ("-o", "-u") if letter == "o" else (f"-{letter}",)
        p.add_argument(*names, dest=letter, nargs="?", const=(), metavar=what.upper(),
                       type=common.pattern_arg(names[0]), help=f"per {what}, or that {what} only")
    p.add_argument("-j", nargs="?", const="*", metavar="job", type=common.pattern_arg("-j"),
                   help="list jobs: all, or by id, name or pattern")
    p.add_argument("-A", metavar="account", type=common.pattern_arg("-A"),
                   help="only jobs of this account")
    p.add_argument("-b", metavar="BeginTime", type=common.time_arg("-b"),
                   help="jobs started at or after this time")
    p.add_argument("-e", metavar="EndTime", type=common.time_arg("-e"),
                   help="jobs started at or before this time")
    p.add_argument("-d", metavar="Days", type=common.count_arg("-d", "the number of days"),
                   help="days from -b, before -e, or the last days")
    p.add_argument("-E", action="store_true", help="select by end time instead of start time")
    p.add_argument("-f", metavar="AcctFileName", help="accounting file (default: "
                   "<state_dir>/accounting of plus_scheduler's configuration)")
    p.epilog = f"Times: {TIME_FORMS}."
    return p


def default_file() -> str:
    conf = protocol.conf_path()
    try:
        state_dir = protocol.read_top_level_scalars(conf).get("state_dir")
    except common.READ_ERRORS:
        state_dir = None
    base = os.path.join(os.path.dirname(os.path.abspath(conf)),
                        state_dir or protocol.DEFAULT_STATE_DIR)
    return os.path.normpath(os.path.join(base, "accounting"))


def window(args: options.Namespace) -> tuple[float, float]:
    first, last = args.b, args.e
    if args.d:
        span = args.d * 86400
        if first is not None:
            last = first + span
        elif last is not None:
            first = last - span
        else:
            first = time.time() - span
    return (first if first is not None else float("-inf"),
            last if last is not None else float("inf"))


@common.command(PROG)
def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    chosen = [(letter, what) for letter, what in GROUPINGS if getattr(args, letter) is not None]
    if len(chosen) > 1 or (chosen and args.j is not None):
        p.error("give at most one of -o, -g, -h, -q, -ar and -j")
    path = args.f or default_file()
    try:
        malformed: list[ValueError] = []
        records = list(acct.read(path, malformed.append))
    except OSError as error:
        common.fail(PROG, f"error: can't open accounting file {limits.shown(path)}: "
                          f"{error.strerror}", 1)
    if malformed and not records:
        common.fail(PROG, f"error: {limits.shown(path)} is no accounting file: "
                          f"{len(malformed)} malformed lines, the first: {malformed[0]}", 1)
    for error in malformed[:_WARNINGS]:
        print(f"{PROG}: error: ignoring {error}", file=sys.stderr)
    if len(malformed) > _WARNINGS:
        print(f"{PROG}: error: ignoring {len(malformed) - _WARNINGS} more malformed lines",
              file=sys.stderr)
    first, last = window(args)
    records = [r for r in records if first <= (r.end_time if args.E else r.start_time) <= last
               and (args.A is None or r.account == args.A)]
    if args.j is not None:
        found = [r for r in records if str(r.job_number) == args.j
                 or fnmatch.fnmatchcase(r.job_name, args.j)]
        if not found:
            kind = "id" if args.j.isascii() and args.j.isdigit() else "name"
            print(f"error: job {kind} {limits.shown(args.j)} not found", file=sys.stderr)
            return 1
        print("\n".join(acct.detail(record) for record in found))
        return 0
    if chosen:
        letter, what = chosen[0]
        print(acct.grouped(records, what, getattr(args, letter) or None))
    else:
        print(acct.total(records))
    lent = acct.lending(records)
    if lent:
        print(lent)
    return 0


if __name__ == "__main__":
    sys.exit(main())
