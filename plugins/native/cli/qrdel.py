"""plus_qrdel: Grid Engine's qrdel on the native backend (seed 000 5.1.3.3,
Son of Grid Engine 8.1.9's qrdel(1)): delete ARs by id or name, in the
order given, each AR's jobs with it; -u all ARs of some users."""

from __future__ import annotations

import os
import pwd
import sys

from overlay.api.commands import common
from overlay_native.cli import sgefiles

PROG = "plus_qrdel"
EXIT_ERROR = sgefiles.EXIT_ERROR


def parser() -> common.Parser:
    p = sgefiles.Parser(PROG, "Delete advance reservations and their jobs (Grid Engine's qrdel).")
    p.add_argument("-help", action="help", help="print this help")
    p.add_argument("-f", action="store_true",
                   help="force: the AR's jobs are deleted first, even where their hosts do not "
                        "answer (the native scheduler always does so)")
    p.add_argument("-u", metavar="wc_user_list", type=common.users_arg("-u"),
                   help="delete the ARs of these users (* for all: managers only)")
    p.add_argument("ars", metavar="wc_ar_list", nargs="*", type=common.ar_references_arg("wc_ar_list"),
                   help="AR ids or names, comma-separated or as separate words")
    return p


@common.command(PROG)
def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    refs = [ref for group in args.ars for ref in group]
    if not refs and args.u is None:
        p.error("no option argument: give AR ids or names, or -u wc_user_list")
    me = pwd.getpwuid(os.getuid()).pw_name
    owners = list(args.u) if args.u else None if refs and all(r.isdigit() for r in refs) else [me]

    def missing(message: str, status: int):
        names = message.partition(": ")[2] or message
        common.fail(PROG, f'denied: advance_reservation "{names}" does not exist', status)

    rows = common.call(PROG, "status", {"summary": True, "owners": owners, "refs": refs or None},
                       on_refusal=missing)
    if not rows and refs:
        common.fail(PROG, f'denied: advance_reservation "{",".join(refs)}" does not exist',
                    EXIT_ERROR)
    status = 0
    for ar_id, _, owner, *_ in rows:
        def refused(message: str, code: int, ar_id=ar_id, owner=owner) -> None:
            text = (f'{me} - you do not have the necessary privileges to delete the '
                    f'advance_reservation "{ar_id}"' if owner != me and "belongs to" in message
                    else message)
            print(f"{PROG}: {text}", file=sys.stderr)
            raise _Refused(code)
        try:
            common.call(PROG, "cancel", {"id": ar_id}, on_refusal=refused)
        except _Refused as exc:
            status = exc.code
            continue
        print(f"{me} has deleted advance_reservation {ar_id}")
    return status


class _Refused(Exception):
    """One AR's deletion refused; the others still go."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


if __name__ == "__main__":
    sys.exit(main())
