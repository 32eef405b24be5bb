"""plus_commit and plus_abort: settle an operation made with -T."""

from __future__ import annotations

from overlay.cli import common


def parser(prog: str, description: str) -> common.Parser:
    p = common.Parser(prog, description)
    p.add_argument("-r", metavar="rsvID", type=common.ar_id_arg("-r"), required=True, help="the AR")
    return p


def run(p: common.Parser, op: str, argv: list[str] | None) -> int:
    args = p.parse_args(argv)
    view = common.call(p.prog, op, {"id": args.r})
    verb = "committed" if op == "commit" else "aborted"
    print(f"The pending operation of advance reservation {view['id']} has been {verb}")
    return 0
