"""plus_resquery: seed 003's RESQUERY, the ranges of start times in which a
reservation could start."""

from __future__ import annotations

import sys
import time

from overlay import ggf
from overlay.cli import common, ggfverbs
from overlay.request import RequestError
from overlay.timespec import TimeSpecError

PROG = "plus_resquery"


def parser() -> common.Parser:
    p = common.Parser(PROG, "RESQUERY UserID TimeNeeded {TimeSpec} {ResAccess} ResourceList "
                      "(seed 003): print the ranges 'STime EndSTime ...' (Unix epoch, GMT) in "
                      "which a reservation of this shape could start. TimeNeeded: 3600s, 90m, "
                      "2h, 1d. TimeSpec: earliest[,latest_start[,latest_end]] (default: now, a "
                      "week later). ResAccess: R<id>[,R<id>...]. ResourceList: "
                      "nodes=4;ppn=8;mem=2G;arch=lx-amd64;...")
    p.add_argument("words", nargs="+", metavar="argument")
    ggfverbs.add_site_options(p)
    return p


@common.command(PROG)
def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    named = ggfverbs.split(PROG, args.words, ("TimeSpec", "ResAccess"))
    if args.site:
        answer = ggfverbs.remote(PROG, args.site, args.token, "resquery", named)
        ranges = [[r["STime"], r["EndSTime"]] for r in answer["ranges"]]
        user = answer["UserID"]
    else:
        try:
            arguments = ggf.resquery_arguments(named, int(time.time()))
        except (RequestError, TimeSpecError) as exc:
            ggfverbs.fail_usage(PROG, str(exc))
        answer = common.call(PROG, "resquery", arguments, acting_for=named["UserID"])
        ranges, user = answer["ranges"], answer["user"]
    if args.json:
        common.print_json({"UserID": user, "ranges": [{"STime": s, "EndSTime": e}
                                                       for s, e in ranges]})
    else:
        print(" ".join(f"{s} {e}" for s, e in ranges))
    return 0


if __name__ == "__main__":
    sys.exit(main())
