"""Native jobs for scripts/ha_chaos.py: clients that submit short jobs at
any daemon (a standby relays them to the leader) to a host that really
runs them, and the checks that every job acknowledged ran once, to its
end, and is accounted once in the shared reporting file and once in the
native backend's shared accounting file.

Each job runs ``run.sh NAME SECONDS``, which notes its start in
``runs/NAME`` and sleeps: a job started twice leaves two lines. Jobs are
told apart by their names (-N), which a job whose submission's outcome is
unknown (the daemon died meanwhile) also has.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from daemon_harness import Daemon
from test_kill_loop import ClientThreads

HOST = "{name: local1, slots: 4, ncpus: 4, exec: local, queues: [jobs.q]}"
"""The one host that runs jobs, in a queue of its own: ARs are kept off it
(``sge_queues: [all.q]``), so jobs never wait for a window."""
SECONDS = (1, 6)
"""How long a job sleeps."""
SLACK = 1
"""Seconds the acct record's run may fall short of the sleep: whole seconds,
and the shepherd notes the start once the job runs (on a loaded machine,
a moment later); exit 0 of the sleep is what says it ran to its end."""
SUBMITTED = re.compile(r'Your job (\d+) \(".*"\) has been submitted')
SCRIPT = """#!/bin/sh
echo start >> {runs}/"$1"
exec sleep "$2"
"""


@dataclass
class Job:
    name: str
    seconds: int
    id: int | None = None            # None: the submission's outcome is unknown
    message: str = ""


@dataclass(frozen=True)
class Acct:
    """A job's acct record in the reporting file."""

    name: str
    id: int
    start: int
    end: int
    failed: int
    exit_status: int


class JobFolder:
    """The job script and the jobs' start marks, readable and writable by
    every test user."""

    def __init__(self, folder: Path) -> None:
        self.runs = folder / "runs"
        self.runs.mkdir(parents=True)
        os.chmod(folder, 0o755)
        os.chmod(self.runs, 0o1777)
        self.script = folder / "run.sh"
        self.script.write_text(SCRIPT.format(runs=self.runs))
        self.script.chmod(0o755)

    def starts(self, name: str) -> int:
        path = self.runs / name
        return len(path.read_text().splitlines()) if path.exists() else 0


class JobLoad(ClientThreads):
    """A client thread per user submitting jobs at random daemons until stopped."""

    def __init__(self, daemons: list[Daemon], folder: JobFolder, prefix: str) -> None:
        self.daemons, self.folder, self.prefix = daemons, folder, prefix
        self.jobs: list[Job] = []
        self.refused: list[Job] = []
        self.lock = threading.Lock()
        super().__init__(("plusu1", "plusu2"))

    def _work(self, index: int, user: str) -> None:
        rng = random.Random()
        while not self.stop.is_set():
            with self.lock:
                job = Job(f"{self.prefix}{user[-1]}x{len(self.jobs)}", rng.randint(*SECONDS))
                self.jobs.append(job)
            self._submit(rng.choice(self.daemons), user, job)
            self.stop.wait(rng.uniform(0.2, 1.0))

    def _submit(self, daemon: Daemon, user: str, job: Job) -> None:
        try:
            done = daemon.run(user, "plus_qsub", "-b", "y", "-N", job.name, "-q", "jobs.q",
                              "-l", "h_rt=120", "-j", "y", "-o", "/dev/null",
                              str(self.folder.script), job.name, str(job.seconds))
        except subprocess.TimeoutExpired:
            job.message = "timed out"
            return
        found = SUBMITTED.search(done.stdout)
        if done.returncode == 0 and found:
            job.id = int(found.group(1))
        else:
            job.message = (done.stdout + done.stderr).strip()[:200]

    @property
    def counts(self) -> dict[str, int]:
        known = sum(job.id is not None for job in self.jobs)
        return {"jobs": known, "jobs unknown": len(self.jobs) - known}


def accounting_records(lines: list[str]) -> list[Acct]:
    """The records of accounting-file lines (accounting(5): name, number,
    then start, end, failed and exit status from the tenth field on)."""
    found = []
    for line in lines:
        fields = line.split(":")
        if not line.startswith("#") and len(fields) > 12:
            found.append(Acct(fields[4], int(fields[5]), int(fields[9]), int(fields[10]),
                              int(fields[11]), int(fields[12])))
    return found


def acct_records(lines: list[str]) -> list[Acct]:
    """The acct records of reporting-file lines (time:acct:accounting(5)'s fields)."""
    return accounting_records([line.split(":", 2)[2] for line in lines
                               if line.split(":", 2)[1:2] == ["acct"]])


def running(daemon: Daemon) -> set[int]:
    """The ids of the jobs the daemon shows running (every user's)."""
    shown = daemon.ok("root", "plus_qstat", "-u", "*", "--json") or "[]"
    return {int(job["id"]) for job in json.loads(shown) if job["state"] == "r"}


def all_accounted(jobs: list[Job], records: list[Acct]) -> bool:
    """Whether every acknowledged job has its acct record."""
    names = {record.name for record in records}
    return all(job.name in names for job in jobs if job.id is not None)


def job_problems(jobs: list[Job], records: list[Acct], folder: JobFolder,
                 running_at_fault: set[int]) -> list[str]:
    """Every acknowledged job ran once to its end, exit 0, and is accounted
    once; a job of unknown outcome at most once; the jobs running when the
    fault came among them."""
    by_name: dict[str, list[Acct]] = {}
    for record in records:
        by_name.setdefault(record.name, []).append(record)
    problems = []
    for job in jobs:
        accounted, starts = by_name.get(job.name, []), folder.starts(job.name)
        if job.id is None and not accounted and starts == 0:
            continue                             # never made: fine for an unknown outcome
        if len(accounted) != 1 or starts != 1:
            problems.append(f"job {job.name} (id {job.id}, {job.message or 'acknowledged'}): "
                            f"{len(accounted)} acct records, started {starts} times")
            continue
        (record,) = accounted
        if job.id is not None and record.id != job.id:
            problems.append(f"job {job.name}: acknowledged as {job.id}, accounted as {record.id}")
        if record.failed or record.exit_status or record.end - record.start < job.seconds - SLACK:
            problems.append(f"job {job.name} ({record.id}): failed {record.failed}, exit "
                            f"{record.exit_status}, ran {record.end - record.start} of "
                            f"{job.seconds} s")
    accounted_ids = {record.id for record in records}
    problems += [f"job {job_id} was running at the fault and was never accounted"
                 for job_id in sorted(running_at_fault - accounted_ids)]
    return problems
