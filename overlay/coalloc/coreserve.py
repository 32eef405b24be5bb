"""plus_coreserve: one reservation at several sites for one common window,
or nowhere; --recover finishes what a killed coordinator left."""

from __future__ import annotations

import sys
import time

from overlay.cli import common
from overlay.coalloc.commands import acted, common_options, coordinator, show, site_request
from overlay.coalloc.coordinator import CoallocError

PROG = "plus_coreserve"
WEEK = 7 * 86400


def parser() -> common.Parser:
    p = common.Parser(PROG, "Reserve at several sites for one common window, or nowhere: query "
                      "every site, prepare a pending reservation at each, then commit all or "
                      "abort all, each step logged first so that a coordinator killed at any "
                      "point finishes (or undoes) its work with --recover.")
    p.add_argument("-D", metavar="duration", type=common.duration_arg("-D"),
                   help="the window's length: 2h, 90m, 1:30:00")
    p.add_argument("-s", metavar="earliest", type=common.time_arg("-s"),
                   help="the earliest start (default now)")
    p.add_argument("-E", metavar="latest", type=common.time_arg("-E"),
                   help="the latest end (default a week after the earliest start)")
    p.add_argument("--site", action="append", metavar="NAME:RESOURCES",
                   help="a site of the sites file and what to reserve there, as a ResourceList "
                        "(nodes=4;ppn=8); give one per site")
    p.add_argument("--attempts", type=common.count_arg("--attempts", "attempts"), default=5,
                   help="common starts tried in turn when a site refuses one (default 5)")
    p.add_argument("--recover", action="store_true",
                   help="finish every co-allocation a killed coordinator left: commit those "
                        "decided, abort the others")
    common_options(p)
    return p


def recover(p: common.Parser, args) -> int:
    """Finish every unfinished co-allocation; one that cannot be finished
    yet (a site unreachable) is a line on standard error, and the others
    go on."""
    if args.site or args.D:
        p.error("--recover takes no --site and no -D")
    made, status = coordinator(PROG, args), 0
    for coalloc_id in made.log.unfinished():
        deciding = made.log.load(coalloc_id).state == "committing"     # made now, if it commits
        try:
            coalloc = made.recover(coalloc_id)
        except CoallocError as exc:
            print(f"{PROG}: {exc}", file=sys.stderr)
            status = max(status, exc.status)
            continue
        show(args, coalloc, reskeys=deciding and coalloc.state == "committed")
    return status


@common.command(PROG)
def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.recover:
        return recover(p, args)
    if not args.D or not args.site:
        p.error("give -D duration and at least one --site NAME:RESOURCES")
    requests = dict(site_request(p, text) for text in args.site)
    if len(requests) != len(args.site):
        p.error("--site: each site may be named once")
    earliest = args.s if args.s is not None else int(time.time())
    latest_end = args.E if args.E is not None else earliest + WEEK + args.D
    if latest_end - args.D < earliest:
        p.error("-E: the latest end leaves no room for -D after the earliest start")
    return acted(PROG, args, lambda made: made.reserve(args.D, earliest, latest_end - args.D,
                                                       requests), reskeys=True)


if __name__ == "__main__":
    sys.exit(main())
