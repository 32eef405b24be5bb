"""plus_commit and plus_abort: settle an operation made with -T."""

from __future__ import annotations

from overlay.cli import common


def run(prog: str, op: str, description: str, argv: list[str] | None) -> int:
    p = common.Parser(prog, description)
    p.add_argument("-r", metavar="rsvID", type=common.ar_id_arg, required=True, help="the AR")
    args = p.parse_args(argv)
    view = common.call(prog, op, {"id": args.r})
    verb = "committed" if op == "commit" else "aborted"
    print(f"The pending operation of advance reservation {view['id']} has been {verb}")
    return 0
