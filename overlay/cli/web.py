"""plus_web: a one-time link that signs you in to the reservations calendar."""

from __future__ import annotations

import sys

from overlay.cli import common


def parser() -> common.Parser:
    p = common.Parser("plus_web", "Print a link to the reservations calendar that signs you in: "
                      "open it in a browser within five minutes. It works once; the page's "
                      "session then lasts 8 hours (at most http.token_lifespan).")
    p.add_argument("--json", action="store_true", help="print JSON (url, user, expires)")
    return p


@common.command("plus_web")
def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    link = common.call("plus_web", "web_link", {})
    if args.json:
        common.print_json(link)
    else:
        print(f"Open this link in a browser (it signs you in as {link['user']}, once, within "
              f"5 minutes):\n{link['url']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
