"""plus_setres: seed 003's SETRES, a reservation at a given start, and its
ResKey (printed once: keep it)."""

from __future__ import annotations

import sys

from overlay.cli import common, ggfverbs
from overlay.network import ggf

PROG = "plus_setres"


def parser() -> common.Parser:
    return ggfverbs.parser(PROG, "SETRES UserID TimeNeeded StartTime {ResAccess} ResourceList "
                           "(seed 003): reserve at StartTime and print 'SuccessOrNot ResKey "
                           "OtherInfo' (true, the ResKey, the AR as R<id>), or 'false reason'. "
                           "TimeNeeded: 3600s, 90m, 2h, 1d. StartTime: Unix epoch (GMT) or as "
                           "plus_reserve -s takes it. ResourceList: nodes=4;ppn=8;mem=2G;...")


@common.command(PROG)
def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return ggfverbs.reserving(PROG, args, "setres", ("StartTime", "ResAccess"),
                              ggf.setres_arguments)


if __name__ == "__main__":
    sys.exit(main())
