"""Issue 11 on the native batch system: no local user reads another's job.
The spool a job runs from (its spec with the environment, its script, its
PE hostfile, status and log) is its owner's and root's alone; a job
script's bytes reach the host as they were. Real shepherds and real users
(plusu1 runs the job, plusu2 tries to look)."""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from overlay.kit.remote import LocalRunner
from overlay_native.execution.runners import Executor, Finished, JobSpec

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the shepherd runs as root, and "
                                "the tests read files as other users")


@pytest.fixture
def spool():
    """A spool base the jobs' owners can traverse, as a site makes it."""
    path = tempfile.mkdtemp(prefix="plus-spool-")
    os.chmod(path, 0o755)
    yield Path(path)
    shutil.rmtree(path)


def readable_by(user: str, path: Path) -> bool:
    return subprocess.run(["runuser", "-u", user, "--", "cat", str(path)],
                          capture_output=True).returncode == 0


def listable_by(user: str, path: Path) -> bool:
    return subprocess.run(["runuser", "-u", user, "--", "ls", str(path)],
                          capture_output=True).returncode == 0


def ended(executor: Executor, job_id: str) -> Finished:
    """The job's outcome; its spool entry stays until the next poll."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for job in executor.poll():
            if job.job_id == job_id:
                return job
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not end")


def mode(path: Path) -> tuple[int, str]:
    info = path.stat()
    return stat.S_IMODE(info.st_mode), pwd.getpwuid(info.st_uid).pw_name


def test_a_jobs_files_are_its_owners_alone(spool, work):
    (spool / "jobs").mkdir(mode=0o755)    # as an older daemon left it: listable
    executor = Executor(LocalRunner(), str(spool))
    executor.start(JobSpec(id="7", name="secret", owner="plusu1", command=[], cwd=str(work),
                           script="cat \"$PE_HOSTFILE\"\n", env={"TOKEN": "s3cret"},
                           slots=2, pe_hosts=[("n1", 2)]))
    assert ended(executor, "7").exit_status == 0
    assert (work / "secret.o7").read_text() == "n1 2 all.q@n1 UNDEFINED\n"
    job = spool / "jobs" / "7"
    assert {path.name: mode(path) for path in [spool, spool / "jobs", job, *job.iterdir()]} == {
        spool.name: (0o711, "root"), "jobs": (0o711, "root"), "7": (0o711, "root"),
        "spec.json": (0o600, "root"), "shepherd.py": (0o600, "root"),
        "status": (0o600, "root"), "shepherd.log": (0o600, "root"),
        "script": (0o700, "plusu1"), "pe_hostfile": (0o600, "plusu1")}
    assert not listable_by("plusu2", spool / "jobs") and not listable_by("plusu2", job)
    assert [path.name for path in job.iterdir() if readable_by("plusu2", path)] == []
    assert readable_by("plusu1", job / "script") and not readable_by("plusu1", job / "spec.json")


def test_a_script_keeps_bytes_that_are_not_utf8(spool, work):
    """plus_qsub reads a script's bytes as surrogate escapes; they are
    written back as the same bytes, and the job runs."""
    script = b"#!/bin/sh\n# caf\xe9\necho ok\n".decode("utf-8", "surrogateescape")
    executor = Executor(LocalRunner(), str(spool))
    executor.start(JobSpec(id="8", name="latin1", owner="plusu1", command=[], cwd=str(work),
                           script=script))
    assert (spool / "jobs" / "8" / "script").read_bytes() == b"#!/bin/sh\n# caf\xe9\necho ok\n"
    assert ended(executor, "8").exit_status == 0
    assert (work / "latin1.o8").read_text() == "ok\n"
