"""plus_qrstat: Grid Engine's qrstat on the native backend (seed 000
5.1.3.4, Son of Grid Engine 8.1.9's qrstat(1)): 8.1.9's table and detail
view, and -xml valid against the seed's qrstat schema. -ar takes ids,
names and name patterns, as the seed has it (8.1.9 takes ids only).

Options come from the site's ``sge_qrstat`` beside plus_scheduler's
configuration, then ``~/.sge_qrstat``, then the command line, as 8.1.9
reads its sge_qrstat files; usage errors exit 1, as 8.1.9's."""

from __future__ import annotations

import os
import pwd
import sys

from overlay.api.commands import common
from overlay_native.cli import arviews, sgefiles

PROG = "plus_qrstat"


def _users(text: str) -> tuple[str, ...]:
    """-u: user names, $user for the caller, * for everyone."""
    me = pwd.getpwuid(os.getuid()).pw_name
    return common.users_arg("-u")(",".join(me if item.strip() == "$user" else item
                                           for item in text.split(",")))


def parser() -> common.Parser:
    p = sgefiles.Parser(PROG, "Show advance reservations (Grid Engine's qrstat).")
    p.add_argument("-help", action="help", help="print this help")
    p.add_argument("-ar", metavar="ar_list", type=common.ar_references_arg("-ar"),
                   help="show these ARs in detail: ids, names or name patterns")
    p.add_argument("-u", metavar="user_list", type=_users,
                   help="only ARs of these users; $user is you, * is everyone (default $user)")
    p.add_argument("-explain", action="store_true", help="show why ARs are in error state")
    p.add_argument("-xml", action="store_true", help="print XML valid against qrstat's schema")
    p.add_argument("--json", action="store_true", help="print JSON, for scripts")
    return p


MISSING = "Following advance reservations do not exist:"


def _missing(message: str, status: int):
    """8.1.9's lines on stdout for ARs -ar names that do not exist (it then
    shows those that do and exits 0; we name every missing one, exit 1)."""
    if message.startswith(MISSING):
        print(f"{MISSING}\n{message[len(MISSING):].strip()}")
        sys.exit(sgefiles.EXIT_ERROR)
    common.fail(PROG, message, status)


@common.command(PROG)
def main(argv: list[str] | None = None) -> int:
    command_line = sys.argv[1:] if argv is None else list(argv)
    args = sgefiles.merged(parser(), PROG, sgefiles.defaults("sge_qrstat", PROG) +
                           [("", command_line)])
    owners = args.u if args.u is not None else (
        None if args.ar else (pwd.getpwuid(os.getuid()).pw_name,))
    query = {"owners": list(owners) if owners else None, "refs": list(args.ar or ()) or None}
    if args.ar or args.xml or args.json:
        shown = common.call(PROG, "status", query,
                            on_refusal=None if args.xml or args.json else _missing)
        if args.xml:
            print(arviews.document(shown))
        elif args.json:
            common.print_json(shown)
        else:
            print("\n".join(arviews.detail(view) for view in shown))
        return 0
    rows = common.call(PROG, "status", {**query, "summary": True, "messages": args.explain})
    if rows:
        print(arviews.table(rows, explain=args.explain))
    return 0


if __name__ == "__main__":
    sys.exit(main())
