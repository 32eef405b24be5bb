"""plus_qdel: delete jobs of the native batch system, as qdel does."""

from __future__ import annotations

import sys

from overlay.api.commands import common

PROG = "plus_qdel"


def parser() -> common.Parser:
    p = common.Parser(PROG, "Delete jobs: pending ones at once, running ones are ended "
                            "(SIGTERM, then SIGKILL).")
    p.add_argument("jobs", nargs="*", metavar="job", type=common.job_references_arg("job"),
                   help="job ids or names (wildcards allowed)")
    p.add_argument("-u", metavar="user,...", type=common.users_arg("-u"),
                   help="every job of these users ('*': all; other users' jobs: managers only)")
    return p


@common.command(PROG)
def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if not args.jobs and not args.u:
        p.error("give job ids or names, or -u user")
    jobs = [ref for refs in args.jobs for ref in refs]
    messages = common.call(PROG, "job_delete", {"jobs": jobs, "users": list(args.u or ())})
    refused = [m for m in messages if m.startswith("denied") or "do not have" in m]
    for message in messages:
        print(message, file=sys.stderr if message in refused else sys.stdout)
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
