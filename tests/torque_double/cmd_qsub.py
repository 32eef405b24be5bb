"""qsub [-a date_time] [-N name] [-q queue] [-l res=value,...] [-r y|n] [-p prio]
[-h] [-d dir] [-o path] [-e path] [-j oe|eo|n] [script]: the script from the file or stdin, through the submit filter
torque.cfg names (SUBMITFILTER: run with qsub's arguments, the script on its
stdin, its stdout the script), '#PBS' lines read as options first. The
server checks queue, enabled, ACLs and that some node could ever meet the node
spec; a rejected job still uses up its number. The job runs for the sum of the
script's 'sleep N' commands (none: it ends as soon as it starts), at most its
walltime. pbs_sched runs a cycle a moment after every submission (the job
is Q when qsub returns)."""

from __future__ import annotations

import getopt
import os
import re
import shlex
import subprocess

from . import errors, jobs, nodespec, queues, simulate, values

USAGE = ("usage: qsub [-a date_time] [-A account_string] [-c interval]\n"
         "\t[-C directive_prefix] [-e path] [-h ] [-I [-X]] [-j oe|eo|n]\n"
         "\t[-l resource_list] [-m n|{abe}] [-M user_list] [-N jobname]\n"
         "\t[-o path] [-p priority] [-q queue] [-r y|n] [-S path]\n"
         "\t[-t number_to_submit] [-T type]  [-u user_list] [-w] path\n"
         "\t[-W otherattributes=value...] [-v variable_list] [-V ] [-x] [-X] [-z] [script]\n")
OPTIONS = "a:N:q:l:r:p:hd:o:e:j:"
INFEASIBLE = ("cannot locate feasible nodes (nodes file is empty, all systems are busy, "
              "or no nodes have the requested feature)")
ENVIRONMENT = ("HOME", "LOGNAME", "PATH", "MAIL", "SHELL", "LANG")
SLEEP = re.compile(r"\bsleep\s+(\d+(?:\.\d+)?)\b")


def run(ctx, args: list[str]) -> int:
    try:
        options, rest = getopt.gnu_getopt(args, OPTIONS)
    except getopt.GetoptError:
        ctx.err(USAGE)
        return 2
    if len(rest) > 1:
        ctx.err(USAGE)
        return 2
    if rest:
        path = os.path.join(ctx.cwd, rest[0])
        try:
            with open(path) as handle:
                script = handle.read()
        except OSError as error:
            ctx.err(f"qsub: script file '{rest[0]}' cannot be loaded - {error.strerror}\n")
            return 1
    else:
        script = ctx.stdin()
    script = _filtered(ctx, args, script)
    if script is None:
        return 2
    try:
        request = _request(_directives(script) + options, rest, ctx.now)
    except ValueError as problem:
        ctx.err(f"qsub: {problem}\n{USAGE}")
        return 2
    state = ctx.state
    seq = int(state["server"]["next_job_number"])
    state["server"]["next_job_number"] = str(seq + 1)
    try:
        job = _build(ctx, seq, request, script, args)
    except errors.PbsError as error:
        ctx.err(f"qsub: submit error ({error.text})\n")
        return error.exit_status
    state["jobs"][job["id"]] = job
    ctx.write(job["id"] + "\n")
    simulate.kick_later(state, ctx.now)
    return 0


def _filtered(ctx, args: list[str], script: str) -> str | None:
    """The script as the submit filter returns it (unchanged without one);
    None, after saying so, if the filter refused (not simulated)."""
    try:
        with open(os.path.join(ctx.directory, "torque.cfg")) as handle:
            lines = handle.read().splitlines()
    except FileNotFoundError:
        return script
    path = next((line.split(None, 1)[1].strip() for line in lines
                 if line.startswith("SUBMITFILTER") and len(line.split(None, 1)) == 2), None)
    if path is None:
        return script
    result = subprocess.run([path, *args], input=script, capture_output=True, text=True,
                            cwd=ctx.cwd, timeout=60, check=False)
    ctx.err(result.stderr)
    if result.returncode != 0:
        ctx.unsupported(f"the submit filter exited {result.returncode}: qsub's rejection is "
                        "not simulated")
        return None
    return result.stdout


def _directives(script: str) -> list[tuple[str, str]]:
    """The '#PBS' options at the top of the script, before its first command."""
    words: list[str] = []
    for line in script.splitlines():
        stripped = line.strip()
        if stripped.startswith("#PBS"):
            words += shlex.split(stripped[4:])
        elif stripped and not stripped.startswith("#"):
            break
    try:
        return getopt.gnu_getopt(words, OPTIONS)[0]
    except getopt.GetoptError as problem:
        raise ValueError(f"directive error: {problem}") from None


def _request(options: list[tuple[str, str]], rest: list[str], now: float) -> dict:
    request = {"name": os.path.basename(rest[0]) if rest else "STDIN", "queue": None,
               "resources": [], "rerunable": True, "priority": 0, "held": False,
               "execution_time": None, "work_dir": None, "output": None, "error": None,
               "join": "n"}
    for flag, value in options:
        if flag == "-a":
            request["execution_time"] = values.date_time(value, now)
        elif flag == "-N":
            request["name"] = value
        elif flag == "-q":
            request["queue"] = value.split("@")[0]
        elif flag == "-l":
            for item in value.split(","):
                key, _, setting = item.partition("=")
                request["resources"] = [pair for pair in request["resources"] if pair[0] != key]
                request["resources"].append([key, setting])
        elif flag == "-r":
            if value not in ("y", "n"):
                raise ValueError("illegal -r value")
            request["rerunable"] = value == "y"
        elif flag == "-p":
            request["priority"] = int(value)
        elif flag == "-h":
            request["held"] = True
        elif flag in ("-d", "-o", "-e"):
            request[{"-d": "work_dir", "-o": "output", "-e": "error"}[flag]] = value
        elif flag == "-j":
            if value not in ("oe", "eo", "n"):
                raise ValueError("illegal -j value")
            request["join"] = value
    return request


def _build(ctx, seq: int, request: dict, script: str, args: list[str]) -> dict:
    state = ctx.state
    server = state["server_name"]
    queue_name = request["queue"] or state["server"]["default_queue"]
    queue = queues.get(state, queue_name, "requested queue not found")
    who = f"user {ctx.user}@localhost, queue {queue_name}"
    if not queues.enabled(queue):
        raise errors.PbsError(errors.QUNOENB, f"queue is disabled: {who}")
    if not queues.acl_allows(queue, ctx.user, ctx.groups):
        raise errors.PbsError(errors.PERM, f"user ACL rejected the submitting user: {who}")
    resources = [[key, values.resource(key, value)] for key, value in request["resources"]]
    job = {"resources": resources}
    if jobs.resource(job, "nodes") is not None:
        _node_counts(job)
    for defaults in (queue["attrs"], state["server"]):
        for key, value in defaults.items():
            if key.startswith("resources_default."):
                name = key.split(".", 1)[1]
                if jobs.resource(job, name) is None:
                    resources.append([name, value])
    if jobs.resource(job, "nodect") is None and jobs.resource(job, "nodes") is not None:
        _node_counts(job)
    if not nodespec.feasible(jobs.node_spec(job), state["nodes"]):
        raise errors.PbsError(errors.EXCQRESC, INFEASIBLE)
    job_id = f"{seq}.{server}"
    variables = [["PBS_O_QUEUE", queue_name]]
    variables += [[f"PBS_O_{name}", ctx.env[name]] for name in ENVIRONMENT if name in ctx.env]
    variables += [["PBS_O_WORKDIR", ctx.cwd], ["PBS_O_HOST", server], ["PBS_O_SERVER", server]]
    held = request["held"]
    default_output = f"{ctx.cwd}/{request['name']}.o{seq}"
    default_error = f"{ctx.cwd}/{request['name']}.e{seq}"
    job.update({
        "id": job_id, "seq": seq, "name": request["name"], "owner": ctx.user,
        "group": ctx.groups[0], "queue": queue_name,
        "holds": "u" if held else "", "execution_time": request["execution_time"],
        "rerunable": request["rerunable"],
        "priority": request["priority"], "ctime": ctx.now, "qtime": ctx.now, "mtime": ctx.now,
        "etime": None, "variables": variables,
        "submit_args": " ".join(args) or None, "cwd": ctx.cwd, "comment": None,
        "output_path": f"{server}:{request['output'] or default_output}",
        "error_path": f"{server}:{request['error'] or default_error}",
        "join_path": request["join"], "init_work_dir": request["work_dir"],
        "exec": None, "exec_host": None, "session_id": None, "start_time": None,
        "start_count": 0, "exit_status": None, "comp_time": None, "total_runtime": None,
        "resources_used": None, "hashname": False, "queue_rank": state["next_queue_rank"],
        "runtime": sum(float(n) for n in SLEEP.findall(script)),
        "end_at": None, "end_status": 0, "purge_at": None, "ending": None, "requeue_at": None,
    })
    jobs.set_state(job, jobs.waiting_state(job, ctx.now), ctx.now)
    state["next_queue_rank"] += 1
    return job


def _node_counts(job: dict) -> None:
    spec = jobs.resource(job, "nodes")
    jobs.set_resource(job, "nodect", str(nodespec.node_count(spec)))
    jobs.set_resource(job, "neednodes", spec)
