"""plus_comodify: move a committed co-allocation's whole window at every
site, or leave it where it is."""

from __future__ import annotations

import sys

from overlay.cli import common
from overlay.coalloc.commands import acted, one_parser

PROG = "plus_comodify"


def parser() -> common.Parser:
    p = one_parser(PROG, "Move a committed co-allocation's window (its length kept) at every "
                         "site, or nowhere: a pending move at each site, then commit all or "
                         "abort all.")
    p.add_argument("-s", metavar="startTime", type=common.time_arg("-s"), required=True,
                   help="the new start")
    return p


@common.command(PROG)
def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return acted(PROG, args, lambda made: made.move(args.id, args.s))


if __name__ == "__main__":
    sys.exit(main())
