"""What plus_approve and plus_deny share: a manager's decision on ARs a
policy holds for approval (state h). Every AR named must await approval,
or none is decided."""

from __future__ import annotations

from overlay.cli import common
from overlay.language.limits import MAX_ITEMS


def parser(prog: str, description: str) -> common.Parser:
    p = common.Parser(prog, description)
    p.add_argument("ids", nargs="+", metavar="ID", type=common.ar_id_arg("ID"),
                   help=f"the ARs (123 or R123), at most {MAX_ITEMS}")
    p.add_argument("--json", action="store_true", help="print the ARs as JSON, for scripts")
    return p


def run(p: common.Parser, op: str, verb: str, argv: list[str] | None) -> int:
    args = p.parse_args(argv)
    if len(args.ids) > MAX_ITEMS:
        p.error(f"ID: {len(args.ids)} ARs named; at most {MAX_ITEMS} are accepted at once")
    request = {"ids": list(dict.fromkeys(args.ids))}
    if getattr(args, "reason", None):
        request["reason"] = args.reason
    views = common.call(p.prog, op, request)
    if args.json:
        common.print_json(views)
        return 0
    for view in views:
        print(f"Advance reservation {view['id']} of {view['owner']} has been {verb}"
              + (f" (state {view['state']})" if op == "approve" else ""))
    return 0
