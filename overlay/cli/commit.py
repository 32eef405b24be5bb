"""plus_commit: make a -T operation take effect."""

from __future__ import annotations

import sys

from overlay.cli import transaction


def main(argv: list[str] | None = None) -> int:
    return transaction.run("plus_commit", "commit",
                           "Make the operation pending on a reservation (-T) take effect.", argv)


if __name__ == "__main__":
    sys.exit(main())
