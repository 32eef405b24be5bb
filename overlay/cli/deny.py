"""plus_deny: refuse ARs that await a manager's approval (state h), saying why."""

from __future__ import annotations

import sys

from overlay.cli import common, decide
from overlay.language.limits import MAX_REASON


def parser() -> common.Parser:
    p = decide.parser("plus_deny", "Deny ARs that await a manager's approval (state h): each "
                      "ends in state d and its owner is told why. Managers only.")
    p.add_argument("-reason", metavar="TEXT", type=common.reason_arg("-reason"),
                   help=f"why, for the owner and the records (one line, at most {MAX_REASON} "
                        "characters)")
    return p


@common.command("plus_deny")
def main(argv: list[str] | None = None) -> int:
    return decide.run(parser(), "deny", "denied", argv)


if __name__ == "__main__":
    sys.exit(main())
