"""qstat: jobs as the summary table, 'qstat -f' text (80-column wrapping, -1
lifts it) or '-x' XML; queues as 'qstat -Q' table or '-Q -f' text ('-x' is
ignored for queues, as recorded). Errors are collected and printed at the end;
the exit status is the first one's PBSE code mod 256."""

from __future__ import annotations

import getopt

from . import errors, formats, queues, render

USAGE = """usage: 
                          qstat [-f [-1]] [-W site_specific] [-x] [ job_identifier... | destination... ]
                          qstat [-a|-i|-r|-e] [-u user] [-n [-1]] [-s] [-t] [-G|-M] [-R] [job_id... | destination...]
                          qstat -Q [-f [-1]] [-W site_specific] [ destination... ]
                          qstat -q [-G|-M] [ destination... ]
                          qstat -B [-f [-1]] [-W site_specific] [ server_name... ]
                          qstat -t
"""
SUMMARY_HEADER = ("Job ID                    Name             User            Time Use S Queue\n"
                  "------------------------- ---------------- --------------- -------- - -----\n")
QUEUE_FORMAT = "{:<16} {:>5} {:>6} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5} {:<1} {:>5}\n"


def run(ctx, args: list[str]) -> int:
    try:
        options, operands = getopt.gnu_getopt(args, "fxQ1u:")
    except getopt.GetoptError:
        ctx.err(USAGE)
        return 2
    flags = {flag for flag, _ in options}
    user = next((value for flag, value in options if flag == "-u"), None)
    linesize = formats.UNLIMITED if "-1" in flags else formats.LINESIZE
    if "-1" in flags and "-f" not in flags:
        ctx.err("qstat: conflicting options.\n")
        ctx.err(USAGE)
        return 2
    if "-Q" in flags:
        return _queues(ctx, operands, "-f" in flags, linesize)
    return _jobs(ctx, operands, full="-f" in flags or "-x" in flags, xml="-x" in flags,
                 linesize=linesize, user=None if "-f" in flags else user)


def _visible(ctx, job: dict) -> bool:
    """query_other_jobs is off: users see only their own jobs."""
    return ctx.manager or job["owner"] == ctx.user


def _jobs(ctx, operands: list[str], full: bool, xml: bool, linesize: int,
          user: str | None) -> int:
    problems: list[tuple[errors.PbsError, str]] = []
    header = True
    for selection in _selections(ctx, operands, problems):
        if user is not None:
            selection = [job for job in selection if job["owner"] == user]
        if xml:
            body = "".join(_job_xml(ctx, job) for job in selection)
            ctx.write(f'<?xml version="1.0"?>\n<Data>{body}</Data>\n')
        elif full:
            ctx.write("".join(_job_text(ctx, job, linesize) for job in selection))
        elif selection:
            if header:
                ctx.write(SUMMARY_HEADER)
                header = False
            ctx.write("".join(_summary(job) for job in selection))
    return _report(ctx, problems)


def _selections(ctx, operands: list[str],
                problems: list[tuple[errors.PbsError, str]]) -> list[list[dict]]:
    """One job list per operand (a job id or a queue), as qstat asks the
    server once per operand."""
    jobs = ctx.state["jobs"]
    if not operands:
        return [[job for job in jobs.values() if _visible(ctx, job)]]
    out = []
    for operand in operands:
        if operand[:1].isdigit():
            job_id = ctx.job_id(operand)
            job = jobs.get(job_id)
            if job is None:
                problems.append((errors.PbsError(errors.UNKJOBID), job_id))
            elif not _visible(ctx, job):
                problems.append((errors.PbsError(errors.PERM), job_id))
            else:
                out.append([job])
        else:
            queue = operand.split("@")[0]
            if queue not in ctx.state["queues"]:
                missing = errors.PbsError(errors.UNKQUE, f"cannot locate queue {queue}")
                problems.append((missing, ""))
            else:
                out.append([job for job in jobs.values()
                            if job["queue"] == queue and _visible(ctx, job)])
    return out


def _report(ctx, problems: list[tuple[errors.PbsError, str]]) -> int:
    for problem, subject in problems:
        ctx.err(f"qstat: {problem.text} {subject}\n")
    return problems[0][0].exit_status if problems else 0


def _job_xml(ctx, job: dict) -> str:
    attributes = render.job_attributes(ctx.state, job, ctx.now)
    return ("<Job>" + formats.xml_element("Job_Id", job["id"])
            + formats.xml_attributes(attributes) + "</Job>")


def _job_text(ctx, job: dict, linesize: int) -> str:
    out = [f"Job Id: {job['id']}\n"]
    for name, resource, value in render.job_attributes(ctx.state, job, ctx.now):
        if name in render.TIMES:
            value = formats.ctime(float(value)) + "\n"
            out.append(formats.prt_attr(name, resource, value, linesize))
        else:
            out.append(formats.prt_attr(name, resource, value, linesize) + "\n")
    return "".join(out) + "\n"


def _summary(job: dict) -> str:
    name = job["name"]
    if len(name) > 16:
        cut = len(name) - 16 + 3
        slash = name.find("/", cut)
        name = ("..." + name[slash if slash >= 0 else cut:])[:16]
    used = dict(job["resources_used"] or [])
    time_used = used.get("cput", "0")[:8]
    return "{:<26} {:<16} {:<15} {:>8} {:<1} {:<15}\n".format(
        job["id"][:29], name, job["owner"][:15], time_used, job["state"], job["queue"][:15])


def _queues(ctx, operands: list[str], full: bool, linesize: int) -> int:
    problems = []
    names = []
    for operand in operands or list(ctx.state["queues"]):
        name = operand.split("@")[0]
        if name in ctx.state["queues"]:
            names.append(name)
        else:
            problems.append((errors.PbsError(errors.UNKQUE, f"cannot locate queue {name}"), ""))
    if full:
        for name in names:
            ctx.write(f"Queue: {name}\n")
            for key, value in queues.attributes(ctx.state, name):
                ctx.write(formats.prt_attr(key, None, value, linesize) + "\n")
            ctx.write("\n")
    elif names:
        ctx.write(QUEUE_FORMAT.format("Queue", "Max", "Tot", "Ena", "Str", "Que", "Run", "Hld",
                                      "Wat", "Trn", "Ext", "T", "Cpt"))
        ctx.write(QUEUE_FORMAT.format("----------------", "---", "----", "--", "--", "---", "---",
                                      "---", "---", "---", "---", "-", "---"))
        for name in names:
            ctx.write(_queue_row(ctx, name))
    return _report(ctx, problems)


def _queue_row(ctx, name: str) -> str:
    attrs = dict(queues.attributes(ctx.state, name))
    total, _ = queues.state_count(ctx.state, name)
    counts = {state: 0 for state in "QRHWTEC"}
    for job in ctx.state["jobs"].values():
        if job["queue"] == name:
            counts[job["state"]] += 1
    return QUEUE_FORMAT.format(
        name[:16], attrs.get("max_running", "0"), str(total),
        "yes" if attrs.get("enabled") == "True" else "no",
        "yes" if attrs.get("started") == "True" else "no",
        counts["Q"], counts["R"], counts["H"], counts["W"], counts["T"], counts["E"],
        attrs.get("queue_type", "not defined")[:1], counts["C"])
