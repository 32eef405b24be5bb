"""Accepting a job: a Submission checked against the cluster and turned into
a Job, refused with Grid Engine's reasons, and verified (qsub -w) against
the cluster as if it were empty.

Refusals raise SubmitError; plus_qsub prints them after "Unable to run
job: " as qsub does. A job naming an AR is always verified (-w e is
implicit, seed 000 5.3.2.1.1), and must fit its AR: the caller in its
access list, h_rt within the AR's duration and end minus DURATION_OFFSET.

Every field is bounded (overlay.language.limits) and must be something the job's
host can take: paths, command words and the environment reach exec(2) and
the file system, which refuse NUL bytes; names and requests are shown and
written to the accounting file, so they are printable. The same checks
run again on every job the store gives back after a restart.
"""

from __future__ import annotations

import posixpath
from dataclasses import replace
from typing import Mapping, Sequence

from overlay.api.plugin import (
    HORIZON,
    MAX_ARGUMENT,
    MAX_COUNT,
    MAX_ENVIRONMENT,
    MAX_NAME,
    MAX_SCRIPT,
    InvalidRequest,
    shown,
    wildcard_match,
)
from overlay_native.jobs import PREEMPT_MODES, Job, Submission
from overlay_native.resources.cluster import ClusterConfig
from overlay_native.resources.complexes import ComplexError, Request, parse_requests
from overlay_native.resources.timeline import ClusterResources
from overlay_native.resources.window import ReservedWindow

VERIFY_MODES = ("e", "w", "n", "v")
MIN_PRIORITY, MAX_PRIORITY = -1023, 1024
# A Submission's text fields: (field, as plus_qsub names it, most characters,
# printable only); lists of them, each word checked so.
_TEXTS = (("script_path", "the script's path", MAX_ARGUMENT, False),
          ("cwd", "-cwd/-wd", MAX_ARGUMENT, False), ("shell", "-S", MAX_ARGUMENT, False),
          ("stdout", "-o", MAX_ARGUMENT, False), ("stderr", "-e", MAX_ARGUMENT, False),
          ("name", "-N", MAX_NAME, True), ("account", "-A", MAX_NAME, True),
          ("hard", "-l", MAX_ARGUMENT, True), ("soft", "-soft -l", MAX_ARGUMENT, True),
          ("pe", "-pe", MAX_NAME, True), ("submit_host", "the submit host", MAX_ARGUMENT, True))
_WORDS = (("command", "the command", MAX_ARGUMENT, False), ("queues", "-q", MAX_ARGUMENT, True),
          ("master_queues", "-masterq", MAX_ARGUMENT, True),
          ("hold_jids", "-hold_jid", MAX_NAME, True))


class SubmitError(InvalidRequest):
    """A job refused at submission; the text says why (the API answers 400)."""


def _bytes(text: str) -> bytes | None:
    """``text`` as a file or exec(2) gets it (a command line's bytes that are
    not UTF-8 arrive as surrogate escapes); None if it stands for no bytes."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return None


def _execable(text: str) -> bool:
    """Whether exec(2) and the file system can take ``text``: bytes, no NUL."""
    data = _bytes(text)
    return data is not None and b"\0" not in data


def _check_text(option: str, value: str, longest: int, printable: bool) -> None:
    if len(value) <= longest and (value.isprintable() if printable else _execable(value)):
        return
    accepted = "printable text" if printable else "text without NUL bytes"
    raise SubmitError(f"{option}: expected {accepted} of at most {longest} characters, "
                      f"got '{shown(value)}'")


def _check_environment(env: Mapping[str, str]) -> None:
    """-v, -V: names without '=', nothing NUL, MAX_ENVIRONMENT bytes in all."""
    size = 0
    for name, value in env.items():
        if not name or "=" in name or not _execable(name):
            raise SubmitError(f"-v: invalid variable name '{shown(name)}'; accepted: text "
                              "without '=' or NUL bytes")
        if not _execable(value):
            raise SubmitError(f"-v {shown(name)}: invalid value '{shown(value)}'; accepted: "
                              "text without NUL bytes")
        size += len(_bytes(name)) + len(_bytes(value))
    if size > MAX_ENVIRONMENT:
        raise SubmitError(f"-v/-V: the environment holds {size} bytes; at most "
                          f"{MAX_ENVIRONMENT} are accepted")


def _check_script(script: str) -> None:
    data = _bytes(script)
    if data is None:
        raise SubmitError("the script: expected text read from a file, got characters that "
                          "stand for no bytes")
    if len(data) > MAX_SCRIPT:
        raise SubmitError(f"the script: {len(data)} bytes; at most {MAX_SCRIPT} are accepted")


def _check_numbers(spec: Submission, submit_time: int) -> None:
    """-pe ranges ascending within 1..MAX_COUNT, -ar an AR id, -a within the horizon."""
    previous = 0
    for first, last in spec.pe_range:
        if not previous < first <= last <= MAX_COUNT:
            raise SubmitError(f"-pe: slot ranges: expected ascending ranges within 1 to "
                              f"{MAX_COUNT}, got '{shown(list(spec.pe_range))}'")
        previous = last
    if spec.ar is not None and not 1 <= spec.ar <= MAX_COUNT:
        raise SubmitError(f"-ar: expected an AR id of 1 to {MAX_COUNT}, got {spec.ar}")
    if spec.start_after is not None and spec.start_after > submit_time + HORIZON:
        raise SubmitError(f"-a: {spec.start_after} is more than {HORIZON // 86400} days ahead")


def check_fields(spec: Submission, submit_time: int) -> None:
    """Every field within its bounds and something the job's host can take;
    SubmitError naming the first that is not."""
    for key, option, longest, printable in _TEXTS:
        if getattr(spec, key) is not None:
            _check_text(option, getattr(spec, key), longest, printable)
    for key, option, longest, printable in _WORDS:
        for word in getattr(spec, key):
            _check_text(option, word, longest, printable)
    _check_environment(spec.env)
    if spec.script is not None:
        _check_script(spec.script)
    _check_numbers(spec, submit_time)


def _requests(config: ClusterConfig, text: str, option: str) -> dict[str, Request]:
    if not text:
        return {}
    try:
        return parse_requests(config.table, text)
    except ComplexError as error:
        raise SubmitError(f"{option} {shown(text)}: {error}") from None


def job_name(submission: Submission) -> str:
    """-N, else the script's (or command's) file name (what is not printable
    in it as _), else STDIN (qsub(1)); sge_types(5): printable ASCII without
    / : @ \\ * ?, not starting with a digit."""
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
    name = "".join(c if c.isprintable() else "_" for c in name)
    return name if name and not name[0].isdigit() else f"J{name}"


def make_job(config: ClusterConfig, job_id: int, owner: str, groups: Sequence[str],
             submit_time: int, submission: Submission, is_manager: bool = False) -> Job:
    """The Job a Submission asks for, or SubmitError naming what is wrong."""
    check_fields(submission, submit_time)
    spec = submission = replace(submission, name=job_name(submission))
    if spec.verify not in VERIFY_MODES:
        raise SubmitError(f"-w: expected e, w, n or v, got '{shown(spec.verify)}'")
    if not MIN_PRIORITY <= spec.priority <= MAX_PRIORITY:
        raise SubmitError(f"-p {spec.priority}: a priority is {MIN_PRIORITY} to {MAX_PRIORITY}")
    if spec.priority > 0 and not is_manager:
        raise SubmitError(f"job rejected: -p {spec.priority}: only managers may raise a job's "
                          f"priority above 0; users may lower it ({MIN_PRIORITY} to 0)")
    if spec.pe is not None:
        if not spec.pe_range:
            raise SubmitError(f"-pe {spec.pe}: a slot range is needed (e.g. -pe {spec.pe} 4)")
        if not any(wildcard_match(name, spec.pe) for name in config.pes):
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
    if spec.preemptible is not None:
        if spec.preemptible not in PREEMPT_MODES:
            raise SubmitError(f"-preemptible: expected {' or '.join(PREEMPT_MODES)}, got "
                              f"'{shown(spec.preemptible)}'")
        if spec.ar is not None:
            raise SubmitError(f"-preemptible with -ar {spec.ar}: a job of an advance reservation "
                              "is its own, never lent nor preempted; give one or the other")
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
    every queue instance usable; [] when it could. An AR job sees its AR;
    a job without h_rt sees every AR, since it would never leave the slots
    they reserve (seed 000 5.2.2.1.3), as Grid Engine's qsub -w e does."""
    if job.ar is not None:
        ars = [reservations[job.ar]] if job.ar in reservations else []
    else:
        ars = list(reservations.values()) if job.limit("h_rt") is None else []
    model = ClusterResources(config, now, duration_offset, reservations=ars)
    return model.could_run(job)
