"""plus_costatus: a co-allocation as the log has it, and each site's AR now."""

from __future__ import annotations

import sys

from overlay.cli import common
from overlay.coalloc.commands import coordinator, one_parser, show
from overlay.coalloc.coordinator import CoallocError

PROG = "plus_costatus"


def parser() -> common.Parser:
    return one_parser(PROG, "A co-allocation as the log has it, and each site's AR now.")


@common.command(PROG)
def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        coalloc, live = coordinator(PROG, args).status(args.id)
    except CoallocError as exc:
        common.fail(PROG, str(exc), exc.status)
    now = {name: str(view) if isinstance(view, Exception) else f"state {view['state']}"
           for name, view in sorted(live.items())}
    if args.json:
        common.print_json({**coalloc.view(), "now": now})
        return 0
    show(args, coalloc)
    for name, text in now.items():
        print(f"  {name}: now {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
