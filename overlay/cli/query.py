"""plus_query: seed 003's QUERY, when a job would start if submitted now."""

from __future__ import annotations

import sys

from overlay.cli import common, ggfverbs
from overlay.network import ggf

PROG = "plus_query"


def parser() -> common.Parser:
    return ggfverbs.parser(PROG, "QUERY UserID TimeNeeded ResourceList (seed 003): print "
                           "'StartTime OtherInfo': when a job of this shape would start if "
                           "submitted now, without a reservation (Unix epoch, GMT), and how the "
                           "site estimated it. TimeNeeded: 3600s, 90m, 2h, 1d. ResourceList: "
                           "nodes=4;ppn=8;mem=2G;...")


@common.command(PROG)
def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    named = ggfverbs.split(PROG, args.words, ())
    answer = ggfverbs.ask(PROG, args, "query", named, ggf.query_arguments, ggf.query_answer)
    if args.json:
        common.print_json(answer)
    else:
        print(f"{answer['StartTime']} {answer['OtherInfo']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
