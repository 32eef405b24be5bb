"""The job description a ResKey claim carries to a foreign batch system
(Grid Engine, TORQUE), which the backend submits with that system's own
qsub as the AR's owner, into the AR's queue. Its fields are plus_qsub's
(the native backend takes all of those); every value goes to qsub as one
argv word after its option, never through a shell, and none may look
like an option."""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple

from overlay.language.limits import MAX_ARGUMENT, MAX_SCRIPT, shown
from overlay.language.request import RequestError, parse_name

FIELDS = ("script", "name", "cwd", "stdout", "stderr", "merge")


class BatchJob(NamedTuple):
    script: str
    name: str | None
    cwd: str | None
    stdout: str | None
    stderr: str | None
    merge: bool


def _path(job: Mapping[str, Any], key: str) -> str | None:
    value = job.get(key)
    if value is None:
        return None
    if (not isinstance(value, str) or not value.startswith("/") or len(value) > MAX_ARGUMENT
            or not value.isprintable()):
        raise RequestError(f"job: {key}: expected an absolute path of printable characters, "
                           f"got {shown(repr(value))}")
    return value


def batch_job(job: Mapping[str, Any], system: str) -> BatchJob:
    """The fields ``system``'s qsub is given, each checked."""
    unknown = sorted(set(job) - set(FIELDS))
    if unknown:
        raise RequestError(f"job: field '{shown(unknown[0])}' is not taken by {system} through a "
                           f"ResKey claim; accepted: {', '.join(FIELDS)}")
    script, name, merge = job.get("script"), job.get("name"), job.get("merge", False)
    if not isinstance(script, str) or not script.strip():
        raise RequestError("job: script is required: the job script's text")
    if len(script.encode("utf-8", "surrogateescape")) > MAX_SCRIPT:
        raise RequestError(f"job: the script is larger than {MAX_SCRIPT} bytes")
    if name is not None:
        name = parse_name(name if isinstance(name, str) else "", "job: name")
    if not isinstance(merge, bool):
        raise RequestError(f"job: merge: expected true or false, got {shown(repr(merge))}")
    return BatchJob(script, name, _path(job, "cwd"), _path(job, "stdout"), _path(job, "stderr"),
                    merge)


def qsub_words(job: BatchJob, cwd_option: str, merge: list[str]) -> list[str]:
    """qsub's options for the job's name, directory, output and error
    (``cwd_option``: Grid Engine's -wd, TORQUE's -d; ``merge``: the words
    that merge error into output)."""
    words: list[str] = []
    for option, value in (("-N", job.name), (cwd_option, job.cwd), ("-o", job.stdout),
                          ("-e", job.stderr)):
        if value is not None:
            words += [option, value]
    return words + (merge if job.merge else [])
