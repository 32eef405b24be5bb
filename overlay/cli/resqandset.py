"""plus_resqandset: seed 003's RESQANDSET, a reservation at the earliest
start the site can grant, and its ResKey (printed once: keep it)."""

from __future__ import annotations

import sys

from overlay.cli import common, ggfverbs
from overlay.network import ggf

PROG = "plus_resqandset"


def parser() -> common.Parser:
    return ggfverbs.parser(PROG, "RESQANDSET UserID TimeNeeded {TimeSpec} {ResAccess} "
                           "ResourceList (seed 003): reserve at the earliest start that TimeSpec "
                           "allows and print 'SuccessOrNot StartTime ResKey OtherInfo' (true, "
                           "the start, the ResKey, "
                           "the AR as R<id>), or 'false reason'. TimeNeeded: 3600s, 90m, 2h, 1d. "
                           "TimeSpec: earliest[,latest_start[,latest_end]]. ResourceList: "
                           "nodes=4;ppn=8;mem=2G;...")


@common.command(PROG)
def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return ggfverbs.reserving(PROG, args, "resqandset", ggfverbs.OPTIONAL,
                              ggf.resquery_arguments)


if __name__ == "__main__":
    sys.exit(main())
