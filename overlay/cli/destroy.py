"""plus_destroy: remove a reservation and its record entirely."""

from __future__ import annotations

import sys

from overlay.cli import select


def main(argv: list[str] | None = None) -> int:
    return select.run("plus_destroy", "destroy", "destroyed",
                      "Destroy reservations: the AR, its jobs and its record are removed, "
                      "whatever its state.", argv)


if __name__ == "__main__":
    sys.exit(main())
