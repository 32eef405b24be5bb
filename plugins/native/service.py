"""The native batch system's commands as plus_scheduler serves them:
plus_qsub (job_submit), plus_qdel (job_delete) and plus_qstat (job_status,
queue_status). Arguments are checked here, so a hand-made client meets the
same errors as the commands; identity comes from the socket's peer
credentials (the ``caller``), never from the arguments.
"""

from __future__ import annotations

import grp
import math
import os
import pwd
from typing import Any, Callable, Mapping

from overlay.api.plugin import (
    MAX_ITEMS,
    MAX_WORDS,
    RequestError,
    Reservation,
    ReservationError,
    ShownJob,
    State,
    format_pe_range,
    groups_of,
    shown,
    system_account,
)
from overlay_native.jobs import PENDING_STATES, Job, JobState, Submission
from overlay_native.relay import Relay, Relayed
from overlay_native.scheduling.scheduler import Scheduler, Submitter
from overlay_native.submit import SubmitError

_TYPES = {"command": "words", "script": "text?", "script_path": "text", "name": "text",
          "binary": "bool", "cwd": "path?", "env": "environment", "shell": "path?",
          "stdout": "text?", "stderr": "text?", "merge": "bool", "hard": "text", "soft": "text",
          "pe": "text?", "pe_range": "ranges", "queues": "strings", "master_queues": "strings",
          "reserve": "bool", "ar": "int?", "priority": "int", "now": "bool",
          "start_after": "int?", "hold_jids": "strings", "hold": "bool", "verify": "text",
          "account": "text", "submit_host": "text",
          "preemptible": "text?"}
CHANGING = frozenset({"job_submit", "job_delete", "job_hold"})
"""The operations that change jobs: the leader's to carry out."""
_CLAIMED = "job_claimed"
"""A ResKey claim's job, relayed from a standby (not a client's operation)."""


def _checked(key: str, kind: str, value: Any) -> Any:
    """``value`` if it has the JSON type ``kind`` names (lists of at most
    MAX_ITEMS entries, a command MAX_WORDS); the submission's content is
    checked by make_job."""
    optional = kind.endswith("?")
    kind = kind.rstrip("?")
    if value is None and optional:
        return None
    ok = {"text": isinstance(value, str),
          "path": isinstance(value, str) and os.path.isabs(value),
          "bool": isinstance(value, bool),
          "int": isinstance(value, int) and not isinstance(value, bool),
          "strings": isinstance(value, list) and len(value) <= MAX_ITEMS and all(
              isinstance(v, str) for v in value),
          "words": isinstance(value, list) and len(value) <= MAX_WORDS and all(
              isinstance(v, str) for v in value),
          "environment": isinstance(value, dict) and all(
              isinstance(k, str) and k and "=" not in k and isinstance(v, str)
              for k, v in value.items()),
          "ranges": isinstance(value, list) and len(value) <= MAX_ITEMS and all(
              isinstance(r, list) and len(r) == 2 and
              all(isinstance(n, int) and not isinstance(n, bool) for n in r) for r in value)}[kind]
    if not ok:
        expected = {"text": "a string", "path": "an absolute path", "bool": "true or false",
                    "int": "a whole number", "strings": f"a list of at most {MAX_ITEMS} strings",
                    "words": f"a list of at most {MAX_WORDS} strings",
                    "environment": "a mapping of variable names (without '=') to strings",
                    "ranges": f"a list of at most {MAX_ITEMS} [first, last] slot ranges"}[kind]
        raise RequestError(f"job: {key}: expected {expected}, got {shown(repr(value))}")
    return value


def submission_from(args: Mapping[str, Any]) -> Submission:
    """A Submission from the client's JSON, every field checked."""
    unknown = sorted(set(args) - set(_TYPES))
    if unknown:
        raise RequestError(f"job: unknown field '{shown(unknown[0])}'; accepted: "
                           f"{', '.join(_TYPES)}")
    values = {key: _checked(key, _TYPES[key], value) for key, value in args.items()}
    if not values.get("command") and values.get("script") is None:
        raise RequestError("job: a script or a command (-b y) is needed")
    return Submission.from_dict(values)


def _id(lookup: Callable, name: str, field: str) -> int | None:
    try:
        return getattr(lookup(name), field)
    except KeyError:
        return None


def _slots(job: Job) -> int:
    return job.placement.slots if job.placement else job.slots


def job_view(job: Job, detail: bool = False) -> dict:
    """A job as plus_qstat prints it (with ``detail``, as qstat -j)."""
    placement = job.placement
    view = {"id": job.id, "priority": job.priority, "name": job.name, "owner": job.owner,
            "state": job.state_letters, "submit_time": job.submit_time,
            "start_time": job.start_time,
            "queue": "@".join(placement.master) if placement and job.state in (
                JobState.RUNNING, JobState.TRANSFERRING) else "",
            "slots": _slots(job), "ar": job.ar}
    if not detail:
        return view
    spec = job.submission
    view.update(
        group=job.group, uid=_id(pwd.getpwnam, job.owner, "pw_uid"),
        gid=_id(grp.getgrnam, job.group, "gr_gid"), hard=spec.hard, soft=spec.soft, queues=list(spec.queues),
        master_queues=list(spec.master_queues), script_path=spec.script_path,
        command=list(spec.command), binary=spec.binary, cwd=spec.cwd, account=spec.account,
        reserve=spec.reserve, now=spec.now, merge=spec.merge, stdout=spec.stdout,
        stderr=spec.stderr, shell=spec.shell, posix_priority=spec.priority,
        start_after=spec.start_after, hold_jids=list(spec.hold_jids),
        pe=spec.pe, pe_range=format_pe_range(spec.pe_range) if spec.pe else None,
        env=dict(spec.env), reasons=list(job.reasons), error=job.error,
        urgency=job.urgency,
        granted=[list(task) for task in placement.tasks] if placement else [],
        granted_pe=placement.pe if placement else None,
        h_rt_limit=placement.h_rt if placement else None)
    return view


def shown_jobs(scheduler: Scheduler) -> list[ShownJob]:
    """Every job as plus_qstat -u '*' lists it, in its order, for GET /jobs:
    the leader's, or at a standby those the store holds."""
    shown = []
    for job in scheduler.jobs_by_priority():
        view, placement = job_view(job), job.placement
        placed = placement is not None and job.state in (JobState.RUNNING,
                                                         JobState.TRANSFERRING)
        started = None if job.start_time is None else int(job.start_time)
        shown.append(ShownJob(
            str(job.id), job.owner, view["state"], tuple(placement.hosts) if placed else (),
            job.ar, job.name, view["slots"], view["queue"] or None, job.priority,
            int(job.submit_time), started,
            int(started + placement.h_rt) if placed and started is not None
            and placement.h_rt is not None else None))
    return shown


def queue_view(scheduler: Scheduler) -> list[dict]:
    """Every queue instance as plus_qstat -f prints it: type, reserved, used
    and total slots, load, arch, states (d disabled, s suspended, u unknown),
    and the jobs in it."""
    config, now = scheduler.cluster.config(), scheduler.now()
    jobs, hosts = scheduler.running_jobs(), scheduler.hosts_shown()
    reserved = hosts.reserved(now)
    instances = []
    for queue in sorted(config.queues.values(), key=lambda q: q.name):    # as qstat -f
        for host, total in sorted(queue.slots.items()):
            used = [(j, n) for j in jobs for q, h, n in j.placement.tasks
                    if (q, h) == (queue.name, host)]
            states = ("d" if host in queue.disabled else "") + \
                ("s" if host in queue.suspended else "") + \
                ("u" if not config.hosts[host].alive or not scheduler.hosts.runs_jobs(host)
                 or host in hosts.unreachable else "")
            load = hosts.reports.get(host, {}).get("load_avg", config.hosts[host].load)
            instances.append({
                "name": f"{queue.name}@{host}",
                "qtype": ("B" if "BATCH" in queue.qtype else "") +
                         ("I" if "INTERACTIVE" in queue.qtype else "") +
                         ("P" if queue.pe_list else ""),
                "reserved": min(reserved.get(host, 0), total), "used": sum(n for _, n in used),
                "total": total, "load": None if load is None or math.isnan(load) else load,
                "arch": config.hosts[host].arch, "states": states,
                "jobs": [dict(job_view(j), slots=n) for j, n in used]})
    return instances


WINDOW_WAIT = 5.0
"""Seconds a job of an AR granted a moment ago waits for the enforcer to
hand the AR to the scheduler (Scheduler.await_window)."""


def _open_to_jobs(ar_status: Callable[[int], list[Reservation]], ar_id: int) -> bool:
    """Refuses an AR awaiting plus_commit or approval: it takes no jobs yet
    (the scheduler learns of it only at the next reconcile, so the core,
    ``ar_status``, is asked); whether the core holds the AR with its
    resources."""
    try:
        (reservation,) = ar_status(ar_id)
    except ReservationError:
        return False    # none: the scheduler refuses it in Grid Engine's words
    if reservation.state == State.PENDING:
        raise SubmitError(f"AR {ar_id} is pending: it takes jobs once plus_commit -r {ar_id} "
                          "commits it")
    if reservation.state == State.AWAITING:
        raise SubmitError(f"AR {ar_id} awaits a manager's approval: it takes jobs once "
                          "approved")
    return reservation.holds_resources


def _refuse_system_account(user: str, uid: int, min_uid: int) -> None:
    """No job runs as root or a system account, whoever submits it."""
    if system_account(uid, min_uid):
        raise SubmitError(f"job rejected: {user} (uid {uid}) is root or a system account (below "
                          f"min_uid {min_uid}): jobs never run as one; submit as a user")


def _refuse_fenced(scheduler: Scheduler) -> None:
    """A daemon that has just lost the lead (cut off, or stopped and woken)
    changes no job; it stands by at once and then passes job commands on
    to the leader."""
    if not scheduler.fence():
        raise ReservationError("this plus_scheduler has just lost the lead to another daemon: "
                               "nothing was changed; try again")


def _by_the_leader(scheduler: Scheduler, relay: Relay, name: str, caller, args: dict,
                   carry_out: Callable[[Any, dict], Any]) -> Any:
    """A job-changing operation carried out here when this daemon leads,
    else relayed to the leader."""
    if scheduler.standing_by:
        return relay.ask(name, caller, args)
    _refuse_fenced(scheduler)
    return carry_out(caller, args)


def submit_claimed(scheduler: Scheduler, relay: Relay, reservation: Reservation,
                   job: Mapping[str, Any]) -> dict:
    """A ResKey claim's job (plus_qsub's fields), submitted into the AR as
    its owner; at a standby, by the leader."""
    return _by_the_leader(scheduler, relay, _CLAIMED, Relayed(-1, reservation.owner, (), False),
                          {"ar": reservation.id, "job": dict(job)},
                          lambda _caller, args: _claimed(scheduler, reservation, args["job"]))


def delete_job(scheduler: Scheduler, relay: Relay, job_id: str, caller: Relayed) -> list[str]:
    """plus_qdel of the one job whose id is ``job_id`` (no job's name starts
    with a digit, so it names no other), for DELETE /jobs/{id}; at a
    standby, by the leader."""
    return _by_the_leader(scheduler, relay, "job_delete", caller, {"jobs": [job_id]},
                          lambda who, args: _delete(scheduler, who, args))


def _delete(scheduler: Scheduler, caller, args: dict) -> list[str]:
    references = _checked("jobs", "strings", args.get("jobs", []))
    users = _checked("users", "strings", args.get("users", []))
    if not references and not users:
        raise RequestError("give job ids or names, or -u user")
    return scheduler.delete(Submitter(caller.user, tuple(caller.groups), caller.is_manager),
                            references, users)


def _claimed(scheduler: Scheduler, reservation: Reservation, job: Mapping[str, Any]) -> dict:
    if job.get("ar", reservation.id) != reservation.id:
        raise RequestError(f"job: ar {shown(repr(job.get('ar')))} is not the claimed AR "
                           f"{reservation.id}; leave it out")
    submission = submission_from({**job, "ar": reservation.id})
    try:
        entry = pwd.getpwnam(reservation.owner)
    except KeyError:
        raise ReservationError(f"the AR's owner {reservation.owner} is no longer known on this "
                               "host") from None
    _refuse_system_account(reservation.owner, entry.pw_uid, scheduler.min_uid)
    owner = Submitter(reservation.owner, groups_of(reservation.owner, entry.pw_gid), False)
    reply = scheduler.submit(owner, submission)
    if "verified" in reply:
        return reply
    return {**reply, "message": f'Your job {reply["id"]} ("{reply["name"]}") has been submitted'}


def operations(scheduler: Scheduler, relay: Relay,
               ar_status: Callable[[int], list[Reservation]]) -> dict[str, Callable]:
    """The operations the native commands call, by name; ``ar_status`` is
    the core's AR query (plus_status -r). The job-changing ones are the
    leader's: a standby has the leader carry them out (``relay``); qstat
    answers at every daemon from the jobs the store holds."""
    local = carried_out(scheduler, ar_status)

    def served(name: str) -> Callable:
        def serve(caller, args: dict):
            if name in CHANGING:
                return _by_the_leader(scheduler, relay, name, caller, args, local[name])
            return local[name](caller, args)
        return serve

    return {name: served(name) for name in local if name != _CLAIMED}


def carried_out(scheduler: Scheduler,
                ar_status: Callable[[int], list[Reservation]]) -> dict[str, Callable]:
    """The operations as the leading daemon carries them out, by name (a
    ResKey claim's job too, which no client may call by name)."""
    def who(caller) -> Submitter:
        return Submitter(caller.user, tuple(caller.groups), caller.is_manager)

    def submit(caller, args: dict) -> dict:
        _refuse_system_account(caller.user, caller.uid, scheduler.min_uid)
        submission = submission_from(args)
        if submission.ar is not None and _open_to_jobs(ar_status, submission.ar):
            scheduler.await_window(submission.ar, WINDOW_WAIT)
        return scheduler.submit(who(caller), submission)

    def delete(caller, args: dict) -> list[str]:
        return _delete(scheduler, caller, args)

    def status(caller, args: dict) -> list[dict]:
        users = _checked("users", "strings", args.get("users") or [caller.user])
        detail = _checked("jobs", "strings?", args.get("jobs"))
        jobs = scheduler.jobs_by_priority()
        if detail is not None:    # qstat -j: the jobs named, or every pending one
            chosen = [j for j in jobs if str(j.id) in detail or j.name in detail] if detail \
                else [j for j in jobs if j.state in PENDING_STATES]
            return [job_view(j, detail=True) for j in chosen]
        return [job_view(j) for j in jobs if "*" in users or j.owner in users]

    def queues(caller, args: dict) -> list[dict]:
        return queue_view(scheduler)

    def hold(caller, args: dict) -> list[str]:
        references = _checked("jobs", "strings", args.get("jobs", []))
        if not references:
            raise RequestError("give job ids or names")
        return scheduler.hold(who(caller), references, _checked("hold", "bool", args.get("hold")))

    def claimed(caller, args: dict) -> dict:
        (reservation,) = ar_status(args["ar"])
        return _claimed(scheduler, reservation, args["job"])

    return {"job_submit": submit, "job_delete": delete, "job_status": status,
            "queue_status": queues, "job_hold": hold, _CLAIMED: claimed}
