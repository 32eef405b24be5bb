"""plus_qhold and plus_qrls: put pending jobs on user hold and release them,
as qhold and qrls do."""

from __future__ import annotations

import sys

from overlay.api.commands import common


def parser(hold: bool = True) -> common.Parser:
    what = "Hold pending jobs (state hqw)" if hold else "Release jobs from user hold"
    p = common.Parser("plus_qhold" if hold else "plus_qrls", f"{what}; yours, or any as a manager.")
    p.add_argument("jobs", nargs="+", metavar="job", type=common.job_references_arg("job"),
                   help="job ids or names (wildcards allowed)")
    return p


def run(hold: bool, argv: list[str] | None) -> int:
    p = parser(hold)
    args = p.parse_args(argv)
    jobs = [ref for refs in args.jobs for ref in refs]
    messages = common.call(p.prog, "job_hold", {"jobs": jobs, "hold": hold})
    refused = [m for m in messages if not m.startswith("modified hold")]
    for message in messages:
        print(message, file=sys.stderr if message in refused else sys.stdout)
    return 1 if refused else 0


@common.command("plus_qhold")
def hold_main(argv: list[str] | None = None) -> int:
    return run(True, argv)


@common.command("plus_qrls")
def release_main(argv: list[str] | None = None) -> int:
    return run(False, argv)


if __name__ == "__main__":
    sys.exit(hold_main())
