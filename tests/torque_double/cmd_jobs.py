"""The job commands: qdel, qhold, qrls, qrerun, qalter and qrun. Each id is
handled on its own; a failure prints '<command>: <server text> <id>' and the
command exits with the last failure's PBSE code mod 256 (qrun: always 2).

qhold on a running job only records the hold; qrerun requeues it (held if a
hold is set) once its epilogue has run; qrls triggers a scheduling cycle;
qrun is synchronous and keeps the job's old scheduler comment."""

from __future__ import annotations

import getopt
import random

from . import errors, jobs, nodes, nodespec, queues, simulate, values

QDEL_USAGE = ("usage: qdel [{ -p | -W delay | -m message}] [<JOBID>[<JOBID>]|'all'|'ALL']...\n"
              "       -m, -p, and -W are mutually exclusive\n")
QALTER_USAGE = ("usage: qalter [-a date_time] [-l resource_list] [-N name] [-p priority] "
                "[-r y|n] job_identifier...\n")
QRUN_USAGE = "usage: qrun [-a] [-H <HOST>[+<HOST>]...] <JOBID>[ <JOBID>]...\n"


def _job(ctx, operand: str, owner_may: bool = True) -> dict:
    job = ctx.state["jobs"].get(ctx.job_id(operand))
    if job is None:
        raise errors.PbsError(errors.UNKJOBID)
    if not (ctx.manager or (owner_may and job["owner"] == ctx.user)):
        raise errors.PbsError(errors.PERM)
    return job


def _each(ctx, command: str, operands: list[str], action) -> int:
    status = 0
    for operand in operands:
        try:
            action(operand)
        except errors.PbsError as error:
            ctx.err(f"{command}: {error.text} {ctx.job_id(operand)}\n")
            status = error.exit_status
    return status


def _options(ctx, args: list[str], spec: str, usage: str) -> tuple[dict | None, list[str]]:
    """getopt as the clients do it; (None, []) after printing the usage."""
    try:
        options, operands = getopt.gnu_getopt(args, spec)
    except getopt.GetoptError:
        options, operands = None, []
    if options is None or not operands:
        ctx.err(usage)
        return None, None
    return dict(options), operands


def qdel(ctx, args: list[str]) -> int:
    """qdel [-p] id...|all: running jobs are killed (exit_status 271), waiting ones completed."""
    options, operands = _options(ctx, args, "m:pW:", QDEL_USAGE)
    if options is None:
        return 2
    purge = "-p" in options

    def delete(operand: str) -> None:
        job = ctx.state["jobs"].get(ctx.job_id(operand))
        if job is None:
            raise errors.PbsError(errors.UNKJOBID, text="nonexistent job id:")
        _job(ctx, operand)
        if purge and ctx.manager:
            jobs.purge(ctx.state, job)
        elif job["state"] == jobs.COMPLETE:
            raise errors.PbsError(errors.BADSTATE, "invalid state for job - COMPLETE")
        else:
            jobs.delete(ctx.state, job, ctx.now)

    if [operand.lower() for operand in operands] == ["all"]:
        operands = [job["id"] for job in ctx.state["jobs"].values()
                    if job["state"] != jobs.COMPLETE and (ctx.manager or job["owner"] == ctx.user)]
    return _each(ctx, "qdel", operands, delete)


def _hold_kinds(ctx, command: str, options: dict) -> str | None:
    """The -h hold list (u by default); None, after the usage, if it is bad."""
    kinds = options.get("-h", "u")
    if not kinds or any(kind not in jobs.HOLD_ORDER for kind in kinds):
        ctx.err(f"{command}: illegal -h value\n")
        return None
    return kinds


def _may_hold(ctx, kinds: str) -> None:
    """Users may set and release only their own user holds."""
    if set(kinds) - {"u"} and not ctx.manager:
        raise errors.PbsError(errors.PERM)


def qhold(ctx, args: list[str]) -> int:
    """qhold [-h uos] id...: a queued job turns H; a running one keeps running."""
    options, operands = _options(ctx, args, "h:",
                                 "usage: qhold [-h hold_list] job_identifier...\n")
    kinds = None if options is None else _hold_kinds(ctx, "qhold", options)
    if kinds is None:
        return 2

    def hold(operand: str) -> None:
        job = _job(ctx, operand)
        _may_hold(ctx, kinds)
        if job["state"] == jobs.COMPLETE:
            raise errors.PbsError(errors.BADSTATE)
        job["holds"] = "".join(sorted(set(job["holds"]) | set(kinds)))
        if job["state"] in (jobs.QUEUED, jobs.WAITING):
            jobs.set_state(job, jobs.HELD, ctx.now)
        job["mtime"] = ctx.now

    return _each(ctx, "qhold", operands, hold)


def qrls(ctx, args: list[str]) -> int:
    """qrls [-h uos] id...: a job with no hold left is queued again; then a cycle."""
    options, operands = _options(ctx, args, "h:",
                                 "usage: qrls [-h hold_list] job_identifier...\n")
    kinds = None if options is None else _hold_kinds(ctx, "qrls", options)
    if kinds is None:
        return 2

    def release(operand: str) -> None:
        job = _job(ctx, operand)
        _may_hold(ctx, kinds)
        if job["state"] == jobs.COMPLETE:
            raise errors.PbsError(errors.BADSTATE)
        job["holds"] = "".join(kind for kind in job["holds"] if kind not in kinds)
        if job["state"] == jobs.HELD and not job["holds"]:
            jobs.set_state(job, jobs.waiting_state(job, ctx.now), ctx.now)
        job["mtime"] = ctx.now

    status = _each(ctx, "qrls", operands, release)
    simulate.kick(ctx.state, ctx.now)
    return status


def qrerun(ctx, args: list[str]) -> int:
    """qrerun id...: requeue a running job once its epilogue has run (again:
    nothing more), an exiting one at once; a queued one: silently nothing, a
    held one: bad state."""
    options, operands = _options(ctx, args, "f", "usage: qrerun [-f] <JOBID>[ <JOBID>] ...\n")
    if options is None:
        return 2

    def rerun(operand: str) -> None:
        job = _job(ctx, operand, owner_may=False)
        if job["state"] == jobs.QUEUED:
            return
        if job["state"] == jobs.EXITING:
            jobs.requeue(job, ctx.now)
            return
        if job["state"] == jobs.HELD:
            raise errors.PbsError(errors.BADSTATE, f"job {job['id']} is in a bad state")
        if job["state"] != jobs.RUNNING:
            raise errors.PbsError(errors.BADSTATE)
        if not job["rerunable"]:
            raise errors.PbsError(errors.NORERUN, f"job {job['id']} not rerunnable")
        if job["ending"] is None:
            jobs.kill(ctx.state, job, ctx.now, "rerun", random.uniform(*simulate.RERUN_STEP))

    return _each(ctx, "qrerun", operands, rerun)


def qalter(ctx, args: list[str]) -> int:
    """qalter [-a date_time] [-l res=value,...] [-r y|n] [-N name] [-p prio] id...: no
    feasibility check; a queued job given a later Execution_Time waits (W), a
    waiting one given a past one is queued."""
    options, operands = _options(ctx, args, "a:l:r:N:p:", QALTER_USAGE)
    if options is None:
        return 2
    if options.get("-r", "y") not in ("y", "n"):
        ctx.err("qalter: illegal -r value\n")
        return 2
    try:
        execution_time = values.date_time(options["-a"], ctx.now) if "-a" in options else None
    except ValueError:
        ctx.err("qalter: illegal -a value\n")
        return 2
    changes = [item.partition("=")[::2] for item in options.get("-l", "").split(",") if item]

    def alter(operand: str) -> None:
        job = _job(ctx, operand)
        if job["state"] == jobs.COMPLETE:
            raise errors.PbsError(errors.BADSTATE)
        for name, _value in changes:
            if job["state"] in jobs.ON_NODE and not (ctx.manager and name == "walltime"):
                raise errors.PbsError(errors.MODATRRUN,
                                      text=errors.TEXT[errors.MODATRRUN] + f"Resource_List.{name}")
        for name, value in changes:
            jobs.set_resource(job, name, values.resource(name, value))
            if name == "nodes":
                jobs.set_resource(job, "nodect", str(nodespec.node_count(value)))
                jobs.set_resource(job, "neednodes", value)
        if "-r" in options:
            job["rerunable"] = options["-r"] == "y"
        if "-N" in options:
            job["name"] = options["-N"]
        if "-p" in options:
            job["priority"] = int(options["-p"])
        if execution_time is not None:
            job["execution_time"] = execution_time
            if job["state"] in (jobs.QUEUED, jobs.WAITING):
                jobs.set_state(job, jobs.waiting_state(job, ctx.now), ctx.now)
        limit = jobs.walltime(job)
        if job["state"] == jobs.RUNNING and job["ending"] is None and limit is not None:
            if job["runtime"] > limit:
                job["end_at"], job["end_status"] = job["start_time"] + limit, jobs.EXIT_WALLTIME
            else:
                job["end_at"], job["end_status"] = job["start_time"] + job["runtime"], 0
        job["mtime"] = ctx.now

    return _each(ctx, "qalter", operands, alter)


def qrun(ctx, args: list[str]) -> int:
    """qrun [-H host[+host...]] id...: start now (manager only), on the given hosts if any."""
    options, operands = _options(ctx, args, "H:a", QRUN_USAGE)
    if options is None:
        return 2
    hosts = options.get("-H")

    def start(operand: str) -> None:
        job = _job(ctx, operand, owner_may=False)
        if job["state"] in (*jobs.ON_NODE, jobs.COMPLETE):
            raise errors.PbsError(errors.BADSTATE, "job already running")
        if not queues.started(ctx.state["queues"][job["queue"]]):
            raise errors.PbsError(errors.IVALREQ, "attempt to start job in non-started queue")
        spec = hosts or jobs.node_spec(job)
        if hosts:
            unknown = [part.host for part in nodespec.parse(hosts)
                       if part.host not in ctx.state["nodes"]]
            if unknown:
                raise errors.PbsError(errors.UNKNODE,
                                      text=f"Unknown node in hostlist '{hosts}...' for job")
        free = nodes.free_slots(ctx.state)
        placement = nodespec.place(spec, ctx.state["nodes"], free)
        if placement is None:
            wanted = nodespec.parse(spec)
            available = sum(1 for name in free if any(
                len(free[name]) >= part.ppn and (part.host in (None, name))
                and all(prop in ctx.state["nodes"][name]["properties"] for prop in part.props)
                for part in wanted))
            raise errors.PbsError(errors.RESCUNAV, "job allocation request exceeds currently "
                                  f"available cluster nodes, {nodespec.node_count(spec)} "
                                  f"requested, {available} available")
        jobs.start(ctx.state, job, placement, ctx.now, comment=None)

    return 2 if _each(ctx, "qrun", operands, start) else 0
