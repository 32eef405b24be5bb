"""A job's attributes as pbs_server reports them to qstat: job_attr_def order,
only the ones that are set, times as epoch seconds."""

from __future__ import annotations

from . import jobs

Attribute = tuple[str, "str | None", str]

TIMES = {"ctime", "etime", "mtime", "qtime", "start_time", "comp_time", "Execution_Time"}


def job_attributes(state: dict, job: dict, now: float) -> list[Attribute]:
    """(name, resource, value) for every attribute set, in qstat's order."""
    server = state["server_name"]
    out: list[Attribute] = []

    def add(name: str, value, resource: str | None = None) -> None:
        if value is not None:
            out.append((name, resource, str(int(value)) if name in TIMES else str(value)))

    add("Job_Name", job["name"])
    add("Job_Owner", f"{job['owner']}@localhost")
    for key, value in job["resources_used"] or []:
        add("resources_used", value, key)
    add("job_state", job["state"])
    add("queue", job["queue"])
    add("server", server)
    add("Checkpoint", "u")
    add("ctime", job["ctime"])
    add("Error_Path", job["error_path"])
    add("exec_host", job["exec_host"])
    add("Execution_Time", job.get("execution_time"))
    add("Hold_Types", jobs.holds(job))
    add("Join_Path", "n")
    add("Keep_Files", "n")
    add("Mail_Points", "a")
    add("mtime", job["mtime"])
    add("Output_Path", job["output_path"])
    add("Priority", job["priority"])
    add("qtime", job["qtime"])
    add("Rerunable", "True" if job["rerunable"] else "False")
    for key, value in job["resources"]:
        add("Resource_List", value, key)
    add("session_id", job["session_id"])
    add("substate", job["substate"])
    add("Variable_List", ",".join(f"{key}={value}" for key, value in job["variables"]))
    add("euser", job["owner"])
    add("egroup", job["group"])
    add("hashname", job["id"] if job["hashname"] else None)
    add("queue_rank", job["queue_rank"])
    add("queue_type", "E")
    add("comment", job["comment"])
    add("etime", job["etime"])
    add("exit_status", job["exit_status"])
    add("submit_args", job["submit_args"])
    add("start_time", job["start_time"])
    limit = jobs.walltime(job)
    if job["state"] == jobs.RUNNING and limit is not None:
        add("Walltime", limit - int(now - job["start_time"]), "Remaining")
    add("start_count", job["start_count"] or None)
    add("fault_tolerant", "False")
    add("comp_time", job["comp_time"])
    add("job_radix", 0)
    add("total_runtime", job["total_runtime"])
    add("submit_host", server)
    add("init_work_dir", job["cwd"])
    add("request_version", 1)
    return out
