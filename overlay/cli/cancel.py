"""plus_cancel: release a reservation's nodes; the record stays (state d)."""

from __future__ import annotations

import sys

from overlay.cli import common, select


def parser() -> common.Parser:
    p = select.parser("plus_cancel", "Cancel reservations: their nodes are released at once "
                      "and the record stays, in state d, until it expires (see plus_status -ne).")
    p.add_argument("--reskey", metavar="FILE", help="cancel the AR whose ResKey (from "
                   "plus_setres or plus_resqandset) the file holds, as its owner: a signed "
                   "one-time claim is sent, never the key (not with -r, -o or -T)")
    return p


@common.command("plus_cancel")
def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.reskey is None:
        return select.run(p, "cancel", "cancelled", args)
    if args.r is not None or args.o is not None or args.transactional:
        p.error("--reskey names the AR itself: it cannot be used with -r, -o or -T")
    view = common.call(p.prog, "claim", common.claim(p.prog, args.reskey, "cancel", {}))
    print(f"Advance reservation {view['id']} has been cancelled")
    return 0


if __name__ == "__main__":
    sys.exit(main())
