"""The batch system's jobs for the HTTP API (GET /jobs, GET /jobs/{id},
DELETE /jobs/{id}), as the backend lists them, the same at every daemon:
the native scheduler's, as plus_qstat shows them; Grid Engine's and
TORQUE's running jobs, from the leader's inventory. Anyone may list
anyone's, as qstat -u '*' and the calendar show them; a job is deleted by
its owner or a manager, through the backend (Grid Engine and TORQUE
refuse, Unsupported, naming their own qdel)."""

from __future__ import annotations

import re
from dataclasses import asdict

from overlay.contract.backend import ShownJob
from overlay.daemon.services.base import Context, Operation
from overlay.language import limits
from overlay.language.request import MAX_AR_ID, RequestError, parse_name
from overlay.usecases.manager import Caller
from overlay.wire import codec

PHASES = {"pending": "w", "held": "h", "running": "rt", "suspended": "sST", "deleting": "d",
          "error": "E"}
"""qstat -s's classes of state: a job is in each whose letters its state holds."""
_JOB_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z_.@\[\]-]{0,127}")


def _phase(text: str) -> tuple[str]:
    if text not in PHASES:
        raise RequestError(f"state: unknown state '{limits.shown(text)}'; accepted: "
                           f"{', '.join(PHASES)}")
    return (text,)


def _job_id(text: str) -> str:
    if _JOB_ID.fullmatch(text) is None:
        raise RequestError(f"job id: invalid '{limits.shown(text)}': accepted are 1 to 128 of "
                           "letters, digits and _ . @ [ ] - starting with a letter or digit, "
                           "as the batch system writes its ids")
    return text


def _owner(text: str) -> str:
    return text if text == "*" else parse_name(text, "owner")


def view(job: ShownJob) -> dict:
    """A job as the API shows it (schemas.Job)."""
    shown = asdict(job)
    shown["nodes"] = list(job.nodes)
    return shown


def jobs(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    """A page of jobs in the batch system's order: ``owner``'s (the
    caller's by default; '*' everyone's), in any of ``states``, in AR
    ``ar``."""
    limit = args.integer("limit", 1, limits.MAX_PAGE, what="limit") or limits.PAGE
    offset = args.integer("offset", 0, limits.MAX_COUNT, what="offset") or 0
    owner = args.checked("owner", _owner) or caller.user
    states = args.names("states", "state", _phase) or ()
    ar = args.integer("ar", 1, MAX_AR_ID, what="ar")
    args.done()
    letters = "".join(PHASES[state] for state in states)
    found = [job for job in context.manager.jobs(args.now)
             if (owner == "*" or job.owner == owner) and (ar is None or job.ar == ar)
             and (not letters or any(letter in job.state for letter in letters))]
    return {"total": len(found), "items": [view(job) for job in found[offset:offset + limit]]}


def job(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    job_id = args.checked("id", _job_id, True)
    args.done()
    return view(context.manager.job(args.now, job_id))


def remove_job(context: Context, caller: Caller, args: codec.Arguments) -> dict:
    """Delete one job, named by id only: the caller's own, or anyone's for
    a manager."""
    job_id = args.checked("id", _job_id, True)
    args.done()
    deleted, answer = context.manager.delete_job(caller, job_id)
    context.client_log.info((caller.user, "job deleted"), "job %s of %s deleted by %s",
                            deleted.id, deleted.owner, caller.user)
    return {"id": deleted.id, "owner": deleted.owner, "messages": answer}


OPERATIONS: dict[str, Operation] = {"jobs": jobs, "job": job, "remove_job": remove_job}
