"""plus_cancel and plus_destroy: the same selection (-r and/or -o, -T)."""

from __future__ import annotations

from overlay.cli import common


def parser(prog: str, description: str) -> common.Parser:
    p = common.Parser(prog, description)
    p.add_argument("-T", action="store_true", dest="transactional",
                   help="hold the operation until plus_commit or plus_abort (not with -o)")
    p.add_argument("-r", metavar="rsvID", type=common.ar_id_arg("-r"), help="the AR")
    p.add_argument("-o", metavar="owner", type=common.name_arg("-o"),
                   help="every AR of this owner (yours, or anyone's for a manager)")
    return p


def run(p: common.Parser, op: str, done: str, args) -> int:
    """Ask for ``op`` on the ARs the parsed ``args`` select, and say what was ``done``."""
    if args.r is None and args.o is None:
        p.error("give -r rsvID or -o owner")
    if args.o is not None and args.transactional:
        p.error("-T cannot be used with -o owner")
    selected = common.call(p.prog, op, {"id": args.r, "owner": args.o,
                                        "transactional": args.transactional})
    for view in selected:
        if view["pending"]:
            print(f"The {op} of advance reservation {view['id']} is pending: run plus_commit -r "
                  f"{view['id']} or plus_abort -r {view['id']}")
        else:
            print(f"Advance reservation {view['id']} has been {done}")
    if not selected:
        print(f"{args.o} has no advance reservations to {op}")
    return 0
