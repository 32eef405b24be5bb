"""plus_qstat: show the native batch system's jobs and queues, as qstat does."""

from __future__ import annotations

import sys

from overlay.api.commands import common, limits
from overlay_native.cli import views

PROG = "plus_qstat"
STATES = {"p": ("qw", "hqw", "Eqw"), "r": ("r", "t", "dr", "dt"), "h": ("hqw",)}


def parser() -> common.Parser:
    p = common.Parser(PROG, "Show jobs of the native batch system (yours; -u '*' for all), "
                            "or with -f every queue instance, with -j a job's details and "
                            "why it waits.")
    p.add_argument("-help", action="help", help="show this help and exit")
    p.add_argument("-u", metavar="user,...", type=common.users_arg("-u"),
                   help="jobs of these users; '*' for everyone")
    p.add_argument("-s", metavar="p|r|h", help="only jobs in these states: p pending "
                   "(qw, hqw, Eqw), r running, h on hold; combinable (-s pr)")
    p.add_argument("-j", metavar="job,...", nargs="?", const=(),
                   type=common.job_references_arg("-j"),
                   help="details of these jobs (ids or names), or of every pending job")
    p.add_argument("-f", action="store_true", help="full format: every queue instance with "
                   "its type, reserved/used/total slots, load, arch, states and jobs")
    p.add_argument("--json", action="store_true", help="print JSON, for scripts")
    return p


@common.command(PROG)
def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    users = list(args.u) if args.u is not None else None
    if args.s and set(args.s) - set(STATES):
        p.error(f"-s: unknown state letter in '{limits.shown(args.s)}'; accepted: p, r, h")
    if args.j is not None:
        jobs = list(args.j)
        shown = common.call(PROG, "job_status", {"jobs": jobs})
        if args.json:
            common.print_json(shown)
        elif shown:
            print("\n".join(views.detail(job) for job in shown))
        missing = [j for j in jobs if not any(j in (str(v["id"]), v["name"]) for v in shown)]
        if missing:
            print("Following jobs do not exist: \n" + ",".join(missing), file=sys.stderr)
            return 1
        return 0
    jobs = common.call(PROG, "job_status", {"users": users})
    if args.s:
        wanted = {state for letter in args.s for state in STATES[letter]}
        jobs = [job for job in jobs if job["state"] in wanted]
    if args.f:
        instances = common.call(PROG, "queue_status", {})
        shown_ids = {job["id"] for job in jobs}
        for instance in instances:
            instance["jobs"] = [job for job in instance["jobs"] if job["id"] in shown_ids]
        pending = [job for job in jobs if not job["queue"]]
        if args.json:
            common.print_json({"queues": instances, "pending": pending})
        else:
            print(views.full(instances, pending))
        return 0
    if args.json:
        common.print_json(jobs)
    elif jobs:
        print(views.job_table(jobs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
