"""plus_cancel: release a reservation's nodes; the record stays (state d)."""

from __future__ import annotations

import sys

from overlay.cli import select


def main(argv: list[str] | None = None) -> int:
    return select.run("plus_cancel", "cancel", "cancelled",
                      "Cancel reservations: their nodes are released at once and the record "
                      "stays, in state d, until it expires (see plus_status -ne).", argv)


if __name__ == "__main__":
    sys.exit(main())
