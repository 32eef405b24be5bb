"""plus_feed: feed tokens for the calendar feeds (make, list, revoke)."""

from __future__ import annotations

import sys
import time

from overlay.cli import common, options
from overlay.language.limits import shown

_LABEL = 64


def _label(text: str) -> str:
    if len(text) > _LABEL or not text.isprintable():
        raise options.OptionError(f"-c: the label must be at most {_LABEL} printable "
                                         "characters")
    return text


def _token_id(text: str) -> str:
    if len(text) != 16 or any(c not in "0123456789abcdef" for c in text):
        raise options.OptionError(f"-R: invalid feed token id '{shown(text)}'; "
                                         "accepted: the 16 hexadecimal digits plus_feed -l shows")
    return text


def parser() -> common.Parser:
    p = common.Parser("plus_feed", "Make, list or revoke your feed tokens: a calendar client "
                      "subscribes to /feeds/users/YOU.ics?token=TOKEN (or "
                      "/feeds/queues/QUEUE.ics?token=TOKEN, or the site's maintenance windows, "
                      "/feeds/maintenance.ics?token=TOKEN) of the HTTP API.")
    group = p.add_mutually_exclusive_group()
    group.add_argument("-c", metavar="label", nargs="?", const="", type=_label,
                       help="make a feed token (printed once), with an optional label")
    group.add_argument("-l", action="store_true", help="list your feed tokens (the default)")
    group.add_argument("-R", metavar="id", type=_token_id,
                       help="revoke the feed token with this id: every daemon refuses it at once")
    p.add_argument("-o", metavar="user", type=common.name_arg("-o"),
                   help="with -l or -R: the user whose tokens (managers only)")
    p.add_argument("--json", action="store_true", help="print JSON")
    return p


@common.command("plus_feed")
def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.c is not None:
        if args.o is not None:
            common.fail("plus_feed", "-o: not with -c: a feed token is made for yourself", 2)
        made = common.call("plus_feed", "feed_token", {"label": args.c or None})
        if args.json:
            common.print_json(made)
        else:
            print(made["token"])
            print(f"your feed: {made['feeds']['user']}")
        return 0
    if args.R is not None:
        done = common.call("plus_feed", "revoke_feed_token", {"id": args.R, "owner": args.o})
        print(f"feed token {done['revoked']} of {done['owner']} is revoked")
        return 0
    held = common.call("plus_feed", "feed_tokens", {"owner": args.o})
    if args.json:
        common.print_json(held)
        return 0
    for token in held:
        made = time.strftime("%m/%d/%Y %H:%M:%S", time.localtime(token["created"]))
        print(f"{token['id']}  {made}  {token['label']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
