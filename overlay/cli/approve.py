"""plus_approve: grant ARs that await a manager's approval (state h)."""

from __future__ import annotations

import sys

from overlay.cli import common, decide


def parser() -> common.Parser:
    return decide.parser("plus_approve", "Approve ARs that await a manager's approval (state "
                         "h): each is granted as asked and enforced on the batch system. "
                         "Managers only.")


@common.command("plus_approve")
def main(argv: list[str] | None = None) -> int:
    return decide.run(parser(), "approve", "approved", argv)


if __name__ == "__main__":
    sys.exit(main())
