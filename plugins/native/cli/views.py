"""How plus_qstat prints jobs and queues: qstat's job table, its full
listing (-f: queue instances with their jobs, then the pending jobs) and
its job detail (-j), laid out byte for byte as SoGE 8.1.9 does."""

from __future__ import annotations

from overlay.api.commands import format_ctime, format_time

JOB_HEADER = ("job-ID  prior   name       user         state submit/start at     "
              "queue                          slots ja-task-ID ")
QUEUE_HEADER = "queuename                      qtype resv/used/tot. load_avg arch          states"
PENDING_BANNER = ("", "#" * 76,
                  " - PENDING JOBS - PENDING JOBS - PENDING JOBS - PENDING JOBS - PENDING JOBS",
                  "#" * 76)
DETAIL_RULE = "=" * 62


def _job_start(job: dict) -> str:
    """submit/start at: when a running job started, else when it was submitted."""
    return format_time(job["start_time"] if job["start_time"] else job["submit_time"])


def job_line(job: dict, with_queue: bool = True) -> str:
    line = (f"{job['id']:>7} {job['priority']:7.5f} {job['name'][:10]:<10} {job['owner'][:12]:<12} "
            f"{job['state']:<5} {_job_start(job)} ")
    if with_queue:
        line += f"{job['queue'][:30]:<30} "
    return line + f"{job['slots']:>5}        "


def job_table(jobs: list[dict]) -> str:
    """qstat's default listing (nothing at all without jobs, as qstat prints)."""
    if not jobs:
        return ""
    return "\n".join([JOB_HEADER, "-" * 113] + [job_line(job) for job in jobs])


def full(instances: list[dict], pending: list[dict]) -> str:
    """qstat -f: each queue instance and its jobs, then the pending jobs."""
    lines = [QUEUE_HEADER]
    for instance in instances:
        load = "-NA-" if instance["load"] is None else f"{instance['load']:.2f}"
        slots = f"{instance['reserved']}/{instance['used']}/{instance['total']}"
        lines += ["-" * 81,
                  f"{instance['name'][:30]:<30} {instance['qtype']:<5} {slots:<14} {load:<8} "
                  f"{instance['arch'][:13]:<13} {instance['states']}"]
        lines += [job_line(job, with_queue=False) for job in instance["jobs"]]
    if pending:
        lines += list(PENDING_BANNER) + [job_line(job, with_queue=False) for job in pending]
    return "\n".join(lines)


def _field(name: str, value: object) -> str:
    return f"{name + ':':<28}{value}"


def detail(job: dict) -> str:
    """qstat -j: one job's block, Grid Engine's fields in its order."""
    env = job["env"]
    origin = {key[6:].lower(): value for key, value in env.items() if key.startswith("SGE_O_")}
    passed = {key: value for key, value in env.items() if not key.startswith("SGE_O_")}
    lines = [DETAIL_RULE, _field("job_number", job["id"]),
             _field("exec_file", f"job_scripts/{job['id']}"),
             _field("submission_time", format_ctime(job["submit_time"])),
             _field("owner", job["owner"])]
    if job.get("uid") is not None:
        lines.append(_field("uid", job["uid"]))
    lines.append(_field("group", job["group"]))
    if job.get("gid") is not None:
        lines.append(_field("gid", job["gid"]))
    for key in ("home", "log_name", "path", "shell", "workdir", "host"):
        name = "logname" if key == "log_name" else key
        if name in origin:
            lines.append(_field(f"sge_o_{key}", origin[name]))
    lines.append(_field("account", job["account"]))
    if job["cwd"]:
        lines.append(_field("cwd", job["cwd"]))
    if job["reserve"]:
        lines.append(_field("reserve", "y"))
    if job["merge"]:
        lines.append(_field("merge", "y"))
    if job["hard"]:
        lines.append(_field("hard resource_list", job["hard"]))
    if job["soft"]:
        lines.append(_field("soft resource_list", job["soft"]))
    lines += [_field("notify", "FALSE"), _field("job_name", job["name"])]
    if job["stdout"]:
        lines.append(_field("stdout_path_list", f"NONE:NONE:{job['stdout']}"))
    if job["stderr"]:
        lines.append(_field("stderr_path_list", f"NONE:NONE:{job['stderr']}"))
    if job["posix_priority"]:
        lines.append(_field("priority", job["posix_priority"]))
    lines.append(_field("jobshare", 0))
    if job["queues"]:
        lines.append(_field("hard_queue_list", ",".join(job["queues"])))
    if job["master_queues"]:
        lines.append(_field("master_hard_queue_list", ",".join(job["master_queues"])))
    if job["start_after"]:
        lines.append(_field("execution_time", format_ctime(job["start_after"])))
    if passed:
        lines.append(_field("env_list", ",".join(f"{k}={v}" for k, v in passed.items())))
    if job["command"]:
        lines.append(_field("job_args", ",".join(job["command"][1:] if job["binary"]
                                                  else job["command"])))
    lines.append(_field("script_file", job["command"][0] if job["binary"] else job["script_path"]
                        or "STDIN"))
    if job["pe"]:
        lines.append(f"{'parallel environment:':<22} {job['pe']} range: {job['pe_range']}")
    if job["hold_jids"]:
        lines.append(_field("jid_predecessor_list", ",".join(job["hold_jids"])))
    if job["ar"] is not None:
        lines.append(_field("ar_id", job["ar"]))
    if job["granted"]:
        hosts = ",".join(f"{host}:{slots}" for _, host, slots in job["granted"])
        lines.append(f"{'exec_host_list':<22}1:    {hosts}")
        if job["granted_pe"]:
            lines.append(f"{'granted_pe':<22}1:    {job['granted_pe']}")
    if job["error"]:
        lines.append(f"{'error reason':<22}1:      {job['error']}")
    if job["reasons"]:
        lines.append(_field("scheduling info", job["reasons"][0]))
        lines += [" " * 28 + reason for reason in job["reasons"][1:]]
    return "\n".join(lines)
