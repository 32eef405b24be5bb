"""plus_abort: discard a -T operation."""

from __future__ import annotations

import sys

from overlay.cli import common, transaction


def parser() -> common.Parser:
    return transaction.parser("plus_abort", "Discard the operation pending on a reservation (-T); "
                              "a pending plus_reserve disappears, other ARs stay as they were.")


@common.command("plus_abort")
def main(argv: list[str] | None = None) -> int:
    return transaction.run(parser(), "abort", argv)


if __name__ == "__main__":
    sys.exit(main())
