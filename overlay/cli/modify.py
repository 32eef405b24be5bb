"""plus_modify: change a reservation's window, node count or users."""

from __future__ import annotations

import sys

from overlay.cli import common
from overlay.language.timespec import format_ctime


def parser() -> common.Parser:
    p = common.Parser("plus_modify", "Change a reservation. -s alone moves the window and keeps "
                      "its length; -e or -D set the end.")
    p.add_argument("-T", action="store_true", dest="transactional",
                   help="hold the change until plus_commit or plus_abort")
    p.add_argument("-r", metavar="rsvID", type=common.ar_id_arg("-r"),
                   help="the AR (required, unless --reskey names it)")
    p.add_argument("-s", metavar="startTime", type=common.time_arg("-s"), help="new start time")
    p.add_argument("-e", metavar="endTime", type=common.time_arg("-e"), help="new end time")
    p.add_argument("-D", metavar="duration", type=common.duration_arg("-D"), help="new duration")
    p.add_argument("-n", metavar="numNodes", type=common.count_arg("-n", "the number of nodes"),
                   help="new number of nodes")
    p.add_argument("-U", metavar="users", type=common.names_arg("-U", groups=True),
                   help="new access list (the owner stays included)")
    p.add_argument("-repair", metavar="none|before|always", type=common.repair_arg("-repair"),
                   help="when a reserved node that goes down is replaced by a free one")
    p.add_argument("--reskey", metavar="FILE", help="change the AR whose ResKey (from "
                   "plus_setres or plus_resqandset) the file holds, as its owner: a signed "
                   "one-time claim is sent, never the key (not with -r or -T)")
    p.add_argument("-series", metavar="seriesID", type=common.count_arg("-series", "the series id"),
                   help="a recurring series: its occurrences not started yet and those to come "
                        "(-D, -n, -U, -repair, --notify-*; one occurrence: -r its AR id)")
    common.add_notice_options(p)
    common.add_clear_notice_option(p)
    common.add_release_options(p)
    return p


@common.command("plus_modify")
def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    leads, release = common.given_leads(args), common.given_release(args)
    if all(value is None for value in (args.s, args.e, args.D, args.n, args.U, args.repair)) \
            and not leads and not release:
        p.error("nothing to change: give at least one of -s, -e, -D, -n, -U, -repair, "
                "--notify-start, --notify-end, --clear-notice, --idle-release, "
                "--release-when-done")
    changes = {"start": args.s, "end": args.e, "duration": args.D, "nodes": args.n,
               "users": list(args.U) if args.U is not None else None, "repair": args.repair,
               **leads, **release}
    if args.series is not None:
        if args.r is not None or args.transactional or args.reskey is not None:
            p.error("-series names the series itself: it cannot be used with -r, -T or --reskey")
        done = common.call(p.prog, "series_modify", {"series": args.series, **changes})
        print(f"Advance reservation series {done['id']} has been modified: "
              f"{len(done['modified'])} occurrence(s) changed"
              + "".join(f"\nAdvance reservation {item['id']} was not modified: {item['reason']}"
                        for item in done["not_modified"]))
        return 0
    if args.reskey is not None:
        if args.r is not None or args.transactional:
            p.error("--reskey names the AR itself: it cannot be used with -r or -T")
        payload = {key: value for key, value in changes.items() if value is not None}
        view = common.call(p.prog, "claim", common.claim(p.prog, args.reskey, "modify", payload))
    elif args.r is None:
        p.error("-r rsvID is required (or --reskey FILE)")
    else:
        view = common.call(p.prog, "modify", {"id": args.r, **changes,
                                              "transactional": args.transactional})
    if view["pending"]:
        print(f"The change of advance reservation {view['id']} is pending: run plus_commit -r "
              f"{view['id']} or plus_abort -r {view['id']} before "
              f"{format_ctime(view['pending']['expires'])}")
    elif view["state"] == "x":
        print(f"Advance reservation {view['id']} has been released")
    else:
        print(f"Advance reservation {view['id']} has been modified")
    return 0


if __name__ == "__main__":
    sys.exit(main())
