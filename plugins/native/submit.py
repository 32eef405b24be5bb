"""Accepting a job: a Submission checked against the cluster and turned into
a Job, refused with Grid Engine's reasons, and verified (qsub -w) against
the cluster as if it were empty.

Refusals raise SubmitError; plus_qsub prints them after "Unable to run
job: " as qsub does. A job naming an AR is always verified (-w e is
implicit, seed 000 5.3.2.1.1), and must fit its AR: the caller in its
access list, h_rt within the AR's duration and end minus DURATION_OFFSET.
"""

from __future__ import annotations

import fnmatch
import posixpath
from dataclasses import replace
from typing import Mapping, Sequence

from overlay.model import ReservationError
from overlay_native.cluster import ClusterConfig
from overlay_native.complexes import ComplexError, Request, parse_requests
from overlay_native.jobs import Job, Submission
from overlay_native.resources import ClusterResources, ReservedWindow

VERIFY_MODES = ("e", "w", "n", "v")
MIN_PRIORITY, MAX_PRIORITY = -1023, 1024


class SubmitError(ReservationError):
    """A job refused at submission; the text says why."""


def _requests(config: ClusterConfig, text: str, option: str) -> dict[str, Request]:
    if not text:
        return {}
    try:
        return parse_requests(config.table, text)
    except ComplexError as error:
        raise SubmitError(f"{option} {text}: {error}") from None


def job_name(submission: Submission) -> str:
    """-N, else the script's (or command's) file name, else STDIN (qsub(1));
    sge_types(5): printable ASCII without / : @ \\ * ?, not starting with a digit."""
    if submission.name:
        name = submission.name
        if not name.isascii() or not name.isprintable() or set(name) & set("/:@\\*?") or \
                name[0].isdigit():
            raise SubmitError(f"-N {name!r}: a job name is printable ASCII without / : @ \\ * ? "
                              "and not starting with a digit")
        return name
    source = submission.script_path if not submission.binary else \
        (submission.command[0] if submission.command else "")
    name = posixpath.basename(source) if source and source != "-" else "STDIN"
    return name if name and not name[0].isdigit() else f"J{name}"


def make_job(config: ClusterConfig, job_id: int, owner: str, groups: Sequence[str],
             submit_time: int, submission: Submission, is_manager: bool = False) -> Job:
    """The Job a Submission asks for, or SubmitError naming what is wrong."""
    spec = submission = replace(submission, name=job_name(submission))
    if spec.verify not in VERIFY_MODES:
        raise SubmitError(f"-w: expected e, w, n or v, got {spec.verify!r}")
    if not MIN_PRIORITY <= spec.priority <= MAX_PRIORITY:
        raise SubmitError(f"-p {spec.priority}: a priority is {MIN_PRIORITY} to {MAX_PRIORITY}")
    if spec.priority > 0 and not is_manager:
        raise SubmitError(f"job rejected: -p {spec.priority}: only managers may raise a job's "
                          f"priority above 0; users may lower it ({MIN_PRIORITY} to 0)")
    if spec.pe is not None:
        if not spec.pe_range:
            raise SubmitError(f"-pe {spec.pe}: a slot range is needed (e.g. -pe {spec.pe} 4)")
        if not any(fnmatch.fnmatchcase(name, spec.pe) for name in config.pes):
            raise SubmitError(f'job rejected: the requested parallel environment "{spec.pe}" '
                              "does not exist")
    for option, patterns in (("-q", spec.queues), ("-masterq", spec.master_queues)):
        for pattern in patterns:
            if not any(config.queue_matches([pattern], q, h)
                       for q, queue in config.queues.items() for h in queue.hosts):
                raise SubmitError(f'Job was rejected because job requests unknown queue '
                                  f'"{pattern}" ({option})')
    if spec.master_queues and spec.pe is None:
        raise SubmitError("-masterq is only for parallel jobs (with -pe)")
    hard = _requests(config, spec.hard, "-l")
    soft = _requests(config, spec.soft, "-soft -l")
    return Job(id=job_id, owner=owner, group=groups[0] if groups else "", groups=tuple(groups),
               submit_time=submit_time, submission=spec, hard=hard, soft=soft)


def check_reservation(job: Job, ar: ReservedWindow | None, now: int, duration_offset: int) -> None:
    """An AR job: the AR exists, admits the owner, and its h_rt fits both the
    AR's duration and its end from now, minus DURATION_OFFSET."""
    if ar is None:
        raise SubmitError(f"job rejected: advance reservation {job.ar} does not exist")
    if not ar.admits(job.owner, job.groups):
        raise SubmitError(f"job rejected: {job.owner} is not in the access list of advance "
                          f"reservation {job.ar}")
    h_rt = job.limit("h_rt")
    usable = min(ar.end - ar.start, ar.end - now) - duration_offset
    if usable <= 0:
        raise SubmitError(f"job rejected: advance reservation {job.ar} ends too soon for any job "
                          f"(its end minus DURATION_OFFSET, {duration_offset} s, has passed)")
    if h_rt is not None and h_rt > usable:
        raise SubmitError(f"job rejected: h_rt {int(h_rt)} s exceeds what advance reservation "
                          f"{job.ar} leaves a job ({int(usable)} s: its duration and its end from "
                          f"now, minus DURATION_OFFSET)")


def verify(config: ClusterConfig, job: Job, now: int, duration_offset: int,
           reservations: Mapping[int, ReservedWindow]) -> list[str]:
    """qsub -w: why the job could never run, even in an empty cluster with
    every queue instance usable; [] when it could."""
    ars = [reservations[job.ar]] if job.ar is not None and job.ar in reservations else []
    model = ClusterResources(config, now, duration_offset, reservations=ars)
    return model.could_run(job)
