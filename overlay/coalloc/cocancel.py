"""plus_cocancel: cancel a committed co-allocation at every site."""

from __future__ import annotations

import sys

from overlay.cli import common
from overlay.coalloc.commands import acted, one_parser

PROG = "plus_cocancel"


def parser() -> common.Parser:
    return one_parser(PROG, "Cancel a committed co-allocation at every site.")


@common.command(PROG)
def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return acted(PROG, args, lambda made: made.cancel(args.id))


if __name__ == "__main__":
    sys.exit(main())
