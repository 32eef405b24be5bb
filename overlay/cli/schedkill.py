"""plus_schedkill: stop plus_scheduler (its owner or a manager only)."""

from __future__ import annotations

import sys

from overlay.cli import common


def parser() -> common.Parser:
    return common.Parser("plus_schedkill", "Stop plus_scheduler. Only the user running it or a "
                         "manager may.")


@common.command("plus_schedkill")
def main(argv: list[str] | None = None) -> int:
    parser().parse_args(argv)
    data = common.call("plus_schedkill", "shutdown", {})
    print(f"plus_scheduler (pid {data['stopping']}) is stopping")
    return 0


if __name__ == "__main__":
    sys.exit(main())
