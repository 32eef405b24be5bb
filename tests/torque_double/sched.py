"""One pbs_sched (FIFO) cycle: queued, unheld jobs in queue order then submit
order; a job of a stopped queue gets 'Queue not started'; one whose node spec
no node could ever meet is deleted ('would never run'); the rest start where
they fit now or get 'Not enough of the right type of nodes'."""

from __future__ import annotations

from . import formats, jobs, nodes, nodespec, queues

NOT_STARTED = "Not Running: Queue not started."
NO_NODES = "Not Running: Not enough of the right type of nodes are available"


def cycle(state: dict, now: float) -> None:
    """Run one scheduling cycle at virtual time ``now``."""
    for queue_name, queue in state["queues"].items():
        waiting = [job for job in state["jobs"].values()
                   if job["queue"] == queue_name and job["state"] == jobs.QUEUED]
        for job in waiting:
            if not queues.started(queue):
                _comment(job, NOT_STARTED, now)
                continue
            spec = jobs.node_spec(job)
            if not nodespec.feasible(spec, state["nodes"]):
                jobs.delete(state, job, now)
                continue
            placement = nodespec.place(spec, state["nodes"], nodes.free_slots(state))
            if placement is None:
                _comment(job, NO_NODES, now)
            else:
                jobs.start(state, job, placement, now, formats.started_comment(now))


def _comment(job: dict, text: str, now: float) -> None:
    if job["comment"] != text:
        job["comment"] = text
        job["mtime"] = now
