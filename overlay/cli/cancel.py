"""plus_cancel: release a reservation's nodes; the record stays (state d)."""

from __future__ import annotations

import sys

from overlay.cli import common, select


def parser() -> common.Parser:
    return select.parser("plus_cancel", "Cancel reservations: their nodes are released at once "
                         "and the record stays, in state d, until it expires (see plus_status -ne).")


@common.command("plus_cancel")
def main(argv: list[str] | None = None) -> int:
    return select.run(parser(), "cancel", "cancelled", argv)


if __name__ == "__main__":
    sys.exit(main())
