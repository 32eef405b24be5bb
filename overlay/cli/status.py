"""plus_status: show advance reservations (qrstat's table and detail view)."""

from __future__ import annotations

import sys

from overlay.cli import common, views


def _owner(text: str) -> str | None:
    """-o: an owner's name, or * for everyone (as qrstat -u '*')."""
    return None if text.strip() == "*" else common.name_arg("-o")(text)


def parser() -> common.Parser:
    p = common.Parser("plus_status", "Show reservations: a table, or with -r the detail of one.")
    p.add_argument("-r", metavar="rsvID", type=common.ar_id_arg("-r"), help="show this AR in detail")
    p.add_argument("-o", metavar="owner", type=_owner, help="only ARs of this owner (* for all)")
    p.add_argument("-explain", action="store_true",
                   help="show under each AR why it is in error state (as qrstat -explain)")
    p.add_argument("-n", action="store_true", help="add the reserved nodes to the table")
    p.add_argument("-s", metavar="startTime", type=common.time_arg("-s"),
                   help="only ARs still open at or after this time")
    p.add_argument("-e", metavar="endTime", type=common.time_arg("-e"),
                   help="only ARs starting before this time")
    p.add_argument("-ne", metavar="numShowExpired", default=0,
                   type=common.count_arg("-ne", "numShowExpired", least=0),
                   help="also show up to this many of the most recently expired or cancelled ARs")
    p.add_argument("-series", metavar="seriesID", nargs="?", const=0,
                   type=common.count_arg("-series", "the series id"),
                   help="recurring series (plus_reserve --repeat): a line each, or with an id "
                        "that series with its occurrences and those refused")
    common.add_output_options(p, "print XML valid against qrstat's schema")
    return p


@common.command("plus_status")
def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.s is not None and args.e is not None and args.e <= args.s:
        p.error("-e: the end time must be later than the start time given with -s")
    if args.series is not None:
        return _series(p, args)
    summary = not (args.x or args.json or args.r is not None)
    shown = common.call("plus_status", "status", {
        "id": args.r, "owner": args.o, "start": args.s, "end": args.e, "expired": args.ne,
        "summary": summary, "nodes": args.n, "messages": summary and args.explain})
    if args.x:
        print(views.status_xml(shown))
    elif args.json:
        common.print_json(shown)
    elif args.r is not None:
        print(views.detail(shown[0]))
    elif shown:
        print(views.table(shown, show_nodes=args.n, explain=args.explain))
    return 0


def _series(p: common.Parser, args) -> int:
    """plus_status -series [ID] [-o owner] [--json]."""
    if args.x or args.r is not None:
        p.error("-series shows series: it cannot be used with -r or -x")
    listed = common.call(p.prog, "series_status", {"series": args.series or None,
                                                   "owner": args.o})
    if args.json:
        common.print_json(listed)
    elif args.series:
        print(views.series_detail(listed[0]))
    elif listed:
        print(views.series_table(listed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
