"""plus_destroy: remove a reservation and its record entirely."""

from __future__ import annotations

import sys

from overlay.cli import common, select


def parser() -> common.Parser:
    return select.parser("plus_destroy", "Destroy reservations: the AR, its jobs and its record "
                         "are removed, whatever its state.")


@common.command("plus_destroy")
def main(argv: list[str] | None = None) -> int:
    p = parser()
    return select.run(p, "destroy", "destroyed", p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
