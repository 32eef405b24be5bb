"""plus_costatus: a co-allocation as the log has it, and each site's AR now."""

from __future__ import annotations

import sys

from overlay.cli import common
from overlay.coalloc.commands import coordinator, one_parser, show
from overlay.coalloc.coordinator import CoallocError
from overlay.language.timespec import format_time

PROG = "plus_costatus"


def parser() -> common.Parser:
    return one_parser(PROG, "A co-allocation as the log has it, and each site's AR now; "
                            "without an id, every co-allocation of the log, a line each.",
                      optional=True)


@common.command(PROG)
def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.id is None:
        return listing(args)
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
    print("  (its ResKeys were shown once, by the plus_coreserve that made it)")
    return 0


def listing(args) -> int:
    """Every co-allocation of the log: id, state, window."""
    log = coordinator(PROG, args).log
    found = [log.load(coalloc_id) for coalloc_id in log.all()]
    if args.json:
        common.print_json([coalloc.view() for coalloc in found])
        return 0
    for coalloc in found:
        window = "" if coalloc.start is None else \
            f"{format_time(coalloc.start)} to {format_time(coalloc.start + coalloc.duration)}"
        print(f"{coalloc.id:<24} {coalloc.state:<16} {window}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
