"""qselect [-q queue] [-u user] [-s states] [-N name] [-h holds]: the ids of
the matching jobs, completed ones included, one per line; users see only
their own jobs."""

from __future__ import annotations

import getopt

from . import errors, jobs

USAGE = ("usage: qselect                           [-a [op]date_time] [-A account_string] "
         "[-e] [-c [op]interval] \n                          [-h hold_list] [-l resource_list] "
         "[-N name] [-p [op]priority] \n                          [-q destination] [-r y|n] "
         "[-s states] [-u user_name]\n")


def run(ctx, args: list[str]) -> int:
    try:
        options, rest = getopt.gnu_getopt(args, "q:u:s:N:h:")
    except getopt.GetoptError:
        ctx.err(USAGE)
        return 2
    if rest:
        ctx.err(USAGE)
        return 2
    selected = [job for job in ctx.state["jobs"].values()
                if ctx.manager or job["owner"] == ctx.user]
    for flag, value in options:
        if flag == "-q":
            queue = value.split("@")[0]
            if queue and queue not in ctx.state["queues"]:
                ctx.err("qselect: Unknown queue destination\n")
                return errors.UNKQUE % 256
            selected = [job for job in selected if not queue or job["queue"] == queue]
        elif flag == "-u":
            users = {entry.split("@")[0] for entry in value.split(",")}
            selected = [job for job in selected if job["owner"] in users]
        elif flag == "-s":
            selected = [job for job in selected if job["state"] in value]
        elif flag == "-N":
            selected = [job for job in selected if job["name"] == value]
        elif flag == "-h":
            selected = [job for job in selected if jobs.holds(job) == ("".join(
                kind for kind in jobs.HOLD_ORDER if kind in value) or "n")]
    ctx.write("".join(f"{job['id']}\n" for job in selected))
    return 0
