"""A job's life on the simulated server: started on slots, finished or killed
into C, requeued by qrerun, deleted, purged after keep_completed. Only R and
E jobs occupy slots: a requeued job keeps its stale exec_host, as TORQUE's
does.

A kill (qdel of a running job, qrerun) takes effect only once the job's
epilogue has run; until then the job stays R (a real 6.1 server, issue 14).
A rerun then shows E for a moment before the job is queued again."""

from __future__ import annotations

from . import nodespec, values

QUEUED, HELD, WAITING, RUNNING, EXITING, COMPLETE = "Q", "H", "W", "R", "E", "C"
SUBSTATE = {QUEUED: 10, HELD: 20, WAITING: 30, RUNNING: 42, EXITING: 61, COMPLETE: 59}
RERUN_SUBSTATE = 60        # JOB_SUBSTATE_RERUN: R, the kill sent, the epilogue running
ON_NODE = (RUNNING, EXITING)
HOLD_ORDER = "uos"
EXIT_SIGTERM = 271         # qdel of a running job
EXIT_WALLTIME = -11        # killed at its walltime


def resource(job: dict, name: str) -> str | None:
    return next((value for key, value in job["resources"] if key == name), None)


def set_resource(job: dict, name: str, value: str) -> None:
    """Replace a resource in place, or append it, as TORQUE's resource lists do."""
    for pair in job["resources"]:
        if pair[0] == name:
            pair[1] = value
            return
    job["resources"].append([name, value])


def node_spec(job: dict) -> str:
    return resource(job, "nodes") or "1"


def walltime(job: dict) -> int | None:
    text = resource(job, "walltime")
    return None if text is None else values.seconds(text)


def holds(job: dict) -> str:
    return "".join(kind for kind in HOLD_ORDER if kind in job["holds"]) or "n"


def keep_completed(state: dict, queue: str) -> int:
    """The queue's keep_completed, else the server's."""
    attrs = state["queues"].get(queue, {}).get("attrs", {})
    return int(attrs.get("keep_completed", state["server"].get("keep_completed", "0")))


def occupancy(state: dict) -> dict[str, dict[int, str]]:
    """node -> slot -> id of the running job on it."""
    used: dict[str, dict[int, str]] = {}
    for job in state["jobs"].values():
        if job["state"] in ON_NODE:
            for name, slots in job["exec"]:
                for slot in slots:
                    used.setdefault(name, {})[slot] = job["id"]
    return used


def waiting_state(job: dict, now: float) -> str:
    """A job not running: H while held, W until its Execution_Time, else Q."""
    if job["holds"]:
        return HELD
    return WAITING if (job.get("execution_time") or 0) > now else QUEUED


def set_state(job: dict, new: str, now: float) -> None:
    """Change state and substate; a held job loses its eligible time (etime),
    a released one gets a new one."""
    job["state"] = new
    job["substate"] = SUBSTATE[new]
    job["mtime"] = now
    if new in (HELD, WAITING):
        job["etime"] = None
    elif new == QUEUED and job["etime"] is None:
        job["etime"] = now


def start(state: dict, job: dict, placement: list[list], now: float, comment: str | None) -> None:
    """Put a job on its slots: R, a session, a start time, an end time."""
    job["exec"] = placement
    job["exec_host"] = nodespec.exec_host(placement)
    set_state(job, RUNNING, now)
    job["session_id"] = state["next_session"]
    state["next_session"] += 8
    job["start_time"] = now
    job["start_count"] += 1
    job["hashname"] = True
    job["exit_status"] = None
    job["ending"] = None
    limit = walltime(job)
    if limit is not None and job["runtime"] > limit:
        job["end_at"], job["end_status"] = now + limit, EXIT_WALLTIME
    else:
        job["end_at"], job["end_status"] = now + job["runtime"], 0
    if comment is not None:
        job["comment"] = comment
    state["queues"][job["queue"]]["assigned_seen"] = True


def complete(state: dict, job: dict, now: float, exit_status: int) -> None:
    """A running job ends (or is killed): C with its usage, purged after
    keep_completed."""
    elapsed = max(0.0, now - job["start_time"])
    job["resources_used"] = [["cput", "00:00:00"], ["vmem", "11640kb"],
                             ["walltime", values.hms(int(elapsed))], ["mem", "7148kb"],
                             ["energy_used", "0"]]
    set_state(job, COMPLETE, now)
    job["exit_status"] = exit_status
    job["comp_time"] = now
    job["total_runtime"] = f"{elapsed:.6f}"
    job["end_at"] = job["requeue_at"] = job["ending"] = None
    job["purge_at"] = now + keep_completed(state, job["queue"]) + state["settings"]["purge_delay"]


def epilogue(state: dict) -> float:
    """Seconds the moms' epilogue runs after a job is killed."""
    return state["settings"].get("epilogue", 0.0)


def kill(state: dict, job: dict, now: float, ending: str, delay: float = 0.0) -> None:
    """Kill a running job for ``ending`` ('delete' or 'rerun'): it ends
    ``delay`` seconds after its epilogue has run, still R until then."""
    job["ending"] = ending
    job["end_at"] = now + epilogue(state) + delay
    job["end_status"] = EXIT_SIGTERM
    if ending == "rerun":
        job["substate"] = RERUN_SUBSTATE


def begin_requeue(job: dict, now: float, requeue_at: float) -> None:
    """The rerun job's obit is in: E until the server has queued it again."""
    set_state(job, EXITING, now)
    job["end_at"] = None
    job["requeue_at"] = requeue_at


def delete(state: dict, job: dict, now: float) -> None:
    """qdel: a running job is killed (exit 271) once its epilogue has run (a
    second qdel changes nothing), an exiting one at once; a waiting one goes to C at once and is purged after
    twice keep_completed (on_job_exit waits one keep_completed before the
    kept time starts, as recorded)."""
    if job["state"] == RUNNING and job["ending"] is not None:
        job["ending"], job["end_status"] = "delete", EXIT_SIGTERM    # killed already
        return
    if job["state"] == RUNNING and epilogue(state) > 0:
        kill(state, job, now, "delete")
        return
    if job["state"] in ON_NODE:
        complete(state, job, now, EXIT_SIGTERM)
        return
    set_state(job, COMPLETE, now)
    job["purge_at"] = (now + 2 * keep_completed(state, job["queue"])
                       + state["settings"]["purge_delay"])


def requeue(job: dict, now: float) -> None:
    """The end of a rerun: back to Q (H if held); exec_host, session and
    start_count stay, exit_status reads 0."""
    set_state(job, waiting_state(job, now), now)
    job["exit_status"] = 0
    job["end_at"] = job["requeue_at"] = job["ending"] = None


def purge(state: dict, job: dict) -> None:
    del state["jobs"][job["id"]]
