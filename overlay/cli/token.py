"""plus_token: a bearer token for the HTTP API, naming you."""

from __future__ import annotations

import sys

from overlay.cli import common


def parser() -> common.Parser:
    p = common.Parser("plus_token", "Print a bearer token for the HTTP API that names you "
                      "(send it as 'Authorization: Bearer <token>'); or revoke yours.")
    p.add_argument("-l", metavar="lifespan", type=common.duration_arg("-l"),
                   help="how long the token works, e.g. 3600, 90m, 2h (default 1 hour, at most "
                        "http.token_lifespan)")
    p.add_argument("-R", action="store_true", dest="revoke",
                   help="revoke every token issued to you so far (a manager: to -o user)")
    p.add_argument("-o", metavar="user", type=common.name_arg("-o"),
                   help="with -R: the user whose tokens to revoke (managers only)")
    p.add_argument("--json", action="store_true", help="print JSON (token, user, expires)")
    return p


@common.command("plus_token")
def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.revoke:
        if args.l is not None:
            common.fail("plus_token", "-l: not with -R", 2)
        done = common.call("plus_token", "revoke_tokens", {"owner": args.o})
        print(f"every token of {done['revoked']} issued so far is revoked")
        return 0
    if args.o is not None:
        common.fail("plus_token", "-o: only with -R", 2)
    issued = common.call("plus_token", "token", {"lifespan": args.l})
    if args.json:
        common.print_json(issued)
    else:
        print(issued["token"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
