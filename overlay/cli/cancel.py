"""plus_cancel: release a reservation's nodes; the record stays (state d)."""

from __future__ import annotations

import sys

from overlay.cli import common, select


def parser() -> common.Parser:
    p = select.parser("plus_cancel", "Cancel reservations: their nodes are released at once "
                      "and the record stays, in state d, until it expires (see plus_status -ne).")
    p.add_argument("--reskey", metavar="FILE", help="cancel the AR whose ResKey (from "
                   "plus_setres or plus_resqandset) the file holds, as its owner: a signed "
                   "one-time claim is sent, never the key (not with -r, -o or -T)")
    p.add_argument("-series", metavar="seriesID", type=common.count_arg("-series", "the series id"),
                   help="a recurring series: no more occurrences, and its open ones cancelled "
                        "(one occurrence: -r its AR id)")
    return p


@common.command("plus_cancel")
def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.series is not None:
        if args.r is not None or args.o is not None or args.transactional or args.reskey:
            p.error("-series names the series itself: it cannot be used with -r, -o, -T or "
                    "--reskey")
        done = common.call(p.prog, "series_cancel", {"series": args.series})
        print(f"Advance reservation series {done['id']} has been cancelled"
              + "".join(f"\nAdvance reservation {view['id']} has been cancelled"
                        for view in done["cancelled"]))
        return 0
    if args.reskey is None:
        return select.run(p, "cancel", "cancelled", args)
    if args.r is not None or args.o is not None or args.transactional:
        p.error("--reskey names the AR itself: it cannot be used with -r, -o or -T")
    view = common.call(p.prog, "claim", common.claim(p.prog, args.reskey, "cancel", {}))
    print(f"Advance reservation {view['id']} has been cancelled")
    return 0


if __name__ == "__main__":
    sys.exit(main())
