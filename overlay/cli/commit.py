"""plus_commit: make a -T operation take effect."""

from __future__ import annotations

import sys

from overlay.cli import common, transaction


def parser() -> common.Parser:
    return transaction.parser("plus_commit", "Make the operation pending on a reservation (-T) "
                              "take effect.")


@common.command("plus_commit")
def main(argv: list[str] | None = None) -> int:
    return transaction.run(parser(), "commit", argv)


if __name__ == "__main__":
    sys.exit(main())
