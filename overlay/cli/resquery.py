"""plus_resquery: seed 003's RESQUERY, the ranges of start times in which a
reservation could start."""

from __future__ import annotations

import sys

from overlay.cli import common, ggfverbs
from overlay.network import ggf

PROG = "plus_resquery"


def parser() -> common.Parser:
    return ggfverbs.parser(PROG, "RESQUERY UserID TimeNeeded {TimeSpec} {ResAccess} ResourceList "
                           "(seed 003): print the ranges 'STime EndSTime ...' (Unix epoch, GMT) in "
                           "which a reservation of this shape could start. TimeNeeded: 3600s, 90m, "
                           "2h, 1d. TimeSpec: earliest[,latest_start[,latest_end]] (default: now, a "
                           "week later). ResAccess: R<id>[,R<id>...]. ResourceList: "
                           "nodes=4;ppn=8;mem=2G;arch=lx-amd64;...")


@common.command(PROG)
def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    named = ggfverbs.split(PROG, args.words, ggfverbs.OPTIONAL)
    answer = ggfverbs.ask(PROG, args, "resquery", named, ggf.resquery_arguments,
                          ggf.resquery_answer)
    if args.json:
        common.print_json(answer)
    else:
        print(" ".join(f"{r['STime']} {r['EndSTime']}" for r in answer["ranges"]))
        if "OtherInfo" in answer:
            print(f"{PROG}: {answer['OtherInfo']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
