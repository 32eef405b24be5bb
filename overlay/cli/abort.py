"""plus_abort: discard a -T operation."""

from __future__ import annotations

import sys

from overlay.cli import transaction


def main(argv: list[str] | None = None) -> int:
    return transaction.run("plus_abort", "abort",
                           "Discard the operation pending on a reservation (-T); a pending "
                           "plus_reserve disappears, other ARs stay as they were.", argv)


if __name__ == "__main__":
    sys.exit(main())
