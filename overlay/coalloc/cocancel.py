"""plus_cocancel: cancel a committed co-allocation at every site."""

from __future__ import annotations

import sys

from overlay.cli import common
from overlay.coalloc.commands import coordinator, one_parser, show
from overlay.coalloc.coordinator import CoallocError

PROG = "plus_cocancel"


def parser() -> common.Parser:
    return one_parser(PROG, "Cancel a committed co-allocation at every site.")


@common.command(PROG)
def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        coalloc = coordinator(PROG, args).cancel(args.id)
    except CoallocError as exc:
        common.fail(PROG, str(exc), exc.status)
    show(args, coalloc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
