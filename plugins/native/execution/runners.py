"""Run the native batch system's jobs for real, on this host or over SSH.

An Executor drives one execution host through a Runner. Each job gets a
shepherd (shepherd.py, sent as source with the start command: one command
per start, nothing to install on the host) that runs it as its owner and
leaves its outcome in SPOOL/jobs/ID/status. The spool is the only state:
an Executor made after a daemon restart finds the running and the finished
jobs there. A finished job stays until the poll() after the one that
returned it, so a daemon that dies before recording an outcome sees it again.
With several daemons, starts and polls carry the leader's epoch, and the
spool refuses those of a leader older than the latest it has seen.
"""

from __future__ import annotations

import inspect
import json
import posixpath
import threading
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from importlib import resources

from overlay.api.plugin import DEFAULT_UID_MIN, USER_PATTERN, Runner
from overlay_native.execution.shepherd import JOB_ID, RLIMITS, epoch_fence

_SHEPHERD = resources.files(__package__).joinpath("shepherd.py").read_text(encoding="utf-8")

# Run by poll(): inside the spool's epoch fence (shepherd.epoch_fence: it
# records the leader's epoch, -: none, and refuses an older one), removes the
# jobs given as the other arguments and lists the jobs, then prints every
# job's status and the host's load values (load average, free memory); a job
# whose shepherd is gone without saying so ended ("lost").
_POLL = r"""
import contextlib, fcntl, json, os, shutil, sys
from typing import Iterator, Optional
class Refused(Exception):
    pass
""" + inspect.getsource(epoch_fence) + r"""
jobs = os.path.join(sys.argv[1], "jobs")
def status(job):
    try:
        with open(os.path.join(jobs, job, "status")) as file:
            return json.load(file)
    except FileNotFoundError:
        return {"state": "starting"}
def alive(found):
    try:
        with open("/proc/%d/stat" % found["shepherd"]) as file:
            fields = file.read().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] != "Z" and fields[19] == found["shepherd_start"]
found = {}
os.makedirs(sys.argv[1], 0o711, exist_ok=True)
with epoch_fence(sys.argv[1], None if sys.argv[2] == "-" else int(sys.argv[2])):
    for job in sys.argv[3:]:
        shutil.rmtree(os.path.join(jobs, job), ignore_errors=True)
    listed = os.listdir(jobs) if os.path.isdir(jobs) else []
for job in listed:
    found[job] = status(job)
    if found[job]["state"] == "running" and not alive(found[job]):
        found[job] = status(job)    # it may have ended since the first read
        if found[job]["state"] == "running":
            found[job].update(state="ended", reason="shepherd lost", end=None,
                              exit_status=None, signal=None)
report = {"load_avg": os.getloadavg()[0]}
try:
    with open("/proc/meminfo") as file:
        for line in file:
            if line.startswith("MemAvailable:"):
                report["mem_free"] = int(line.split()[1]) * 1024
except OSError:
    pass
print(json.dumps({"jobs": found, "report": report}))
"""


class ExecutionError(Exception):
    """A job that could not be started or killed; the message says why."""


@dataclass(frozen=True)
class JobSpec:
    """One job as Grid Engine's qsub would describe it."""

    id: str
    name: str
    owner: str
    command: Sequence[str]    # argv; with shell, the script and its arguments;
    #                           with script, the script's arguments
    script: str | None = None    # a job script's text: run as [shell or /bin/sh, script, *command]
    cwd: str | None = None    # None: the owner's home, as without qsub -cwd
    env: Mapping[str, str] = field(default_factory=dict)
    shell: str | None = None    # qsub -S: runs [shell, *command]
    stdout: str | None = None    # None: NAME.oID in the cwd; a directory: that name in it
    stderr: str | None = None    # None: NAME.eID
    merge: bool = False    # qsub -j y: stderr into stdout
    h_rt: float | None = None    # seconds: SIGKILL at the limit
    s_rt: float | None = None    # seconds: SIGUSR1, then SIGKILL after notify
    notify: float = 60    # Grid Engine's queue default
    grace: float = 5    # seconds between SIGTERM and SIGKILL on kill()
    limits: Mapping[str, float] = field(default_factory=dict)    # h_vmem, s_cpu, ...: setrlimit
    slots: int = 1
    queue: str = "all.q"
    pe_hosts: Sequence[tuple[str, int]] = ()    # (host, slots): PE_HOSTFILE
    min_uid: int = DEFAULT_UID_MIN    # the shepherd runs no job as root or an account below it

    def __post_init__(self) -> None:
        if not JOB_ID.match(self.id):
            raise ValueError(f"job id: expected letters, digits, '_', '.', '-', got {self.id!r}")
        if not self.name or any(c in self.name for c in "/\0\n"):
            raise ValueError(f"job {self.id}: name: expected a file name, got {self.name!r}")
        if not USER_PATTERN.match(self.owner):
            raise ValueError(f"job {self.id}: owner: expected a user name, got {self.owner!r}")
        if not all(isinstance(word, str) for word in self.command) or \
                not (self.command or self.script is not None):
            raise ValueError(f"job {self.id}: command: expected a list of strings (or a script)")
        if self.cwd is not None and not posixpath.isabs(self.cwd):
            raise ValueError(f"job {self.id}: cwd: expected an absolute path, got {self.cwd!r}")
        for name, value in self.env.items():
            if not name or "=" in name or "\0" in name + value:
                raise ValueError(f"job {self.id}: env: invalid variable {name!r}")
        for limit in ("h_rt", "s_rt"):
            if getattr(self, limit) is not None and getattr(self, limit) <= 0:
                raise ValueError(f"job {self.id}: {limit}: expected seconds above 0")
        for name, value in self.limits.items():
            if name not in RLIMITS or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"job {self.id}: limits: {name}={value!r}; accepted: "
                                 f"{', '.join(RLIMITS)} with an amount of 0 or more")
        if self.slots < 1:
            raise ValueError(f"job {self.id}: slots: expected 1 or more, got {self.slots}")


@dataclass(frozen=True)
class Finished:
    """How a job ended, from its shepherd's status file."""

    job_id: str
    exit_status: int | None    # when it exited
    signal: int | None    # when a signal ended it
    reason: str    # "" or "h_rt exceeded", "s_rt exceeded", "killed",
    #                "cannot start job: ...", "shepherd failed: ...", "shepherd lost"
    start: float | None
    end: float | None
    rusage: Mapping[str, float] = field(default_factory=dict)    # the job tree's getrusage(2)
    failed: int = 0    # sge_status(5) code of the step that could not start the job

    @property
    def exit_code(self) -> int | None:
        """Grid Engine's accounting exit_status: the status, or 128 + signal."""
        return self.exit_status if self.signal is None else 128 + self.signal


class Executor:
    """Starts, watches and kills jobs on the host ``runner`` reaches, as root."""

    def __init__(self, runner: Runner, spool_dir: str, python: str = "python3") -> None:
        if not posixpath.isabs(spool_dir):
            raise ValueError(f"spool_dir: expected an absolute path, got {spool_dir!r}")
        self.runner, self.spool_dir, self.python = runner, spool_dir, python
        self._lock = threading.Lock()
        self._poll_lock = threading.Lock()
        self._running: set[str] = set()    # as the last poll saw them
        self._started: set[str] = set()    # started since, not yet seen by a poll
        self._returned: list[str] = []    # ended and taken: removed by the next poll
        self.report: dict[str, float] = {}    # load_avg, mem_free at the last poll

    def start(self, spec: JobSpec, epoch: int | None = None) -> None:
        """Start ``spec`` under a new shepherd; returns once it runs. With
        the leader's ``epoch``, refused once a later leader polled the host."""
        result = self.runner.run([self.python, "-I", "-c", _SHEPHERD, "start", self.spool_dir],
                                 stdin=json.dumps(dict(asdict(spec), epoch=epoch)))
        if result.status != 0:
            raise ExecutionError(f"{self.runner.where}: {result.text}")
        with self._lock:
            self._started.add(spec.id)

    def poll(self, epoch: int | None = None) -> list[Finished]:
        """The jobs that ended since the last poll (one command for all);
        with the leader's ``epoch``, older leaders' starts are refused from now on."""
        with self._poll_lock:
            with self._lock:
                returned = list(self._returned)
            result = self.runner.run([self.python, "-I", "-c", _POLL, self.spool_dir,
                                      "-" if epoch is None else str(epoch), *returned])
            if result.status != 0:
                raise ExecutionError(f"{self.runner.where}: cannot read the job statuses in "
                                     f"{self.spool_dir}: {result.text}")
            report = json.loads(result.stdout)
            found, self.report = report["jobs"], report["report"]
            finished = [Finished(job, status.get("exit_status"), status.get("signal"),
                                 status.get("reason", ""), status.get("start"), status.get("end"),
                                 status.get("rusage") or {}, status.get("failed", 0))
                        for job, status in sorted(found.items()) if status["state"] == "ended"]
            with self._lock:
                self._returned = [job for job in self._returned if job not in returned]
                self._started -= found.keys()
                self._running = {job for job, status in found.items()
                                 if status["state"] != "ended"}
            return finished

    def taken(self, job_id: str) -> None:
        """The scheduler has recorded the end poll() reported: the next poll
        removes the job's spool. Until then every poll reports it again, so
        an end the store could not record (a failover, PostgreSQL down) is
        not lost."""
        with self._lock:
            self._returned.append(job_id)

    def kill(self, job_id: str) -> None:
        """Ask the job's shepherd to end it: SIGTERM to all its processes,
        SIGKILL after the job's grace period."""
        if not JOB_ID.match(job_id):
            raise ValueError(f"job id: expected letters, digits, '_', '.', '-', got {job_id!r}")
        job_dir = posixpath.join(self.spool_dir, "jobs", job_id)
        result = self.runner.run(["touch", "--", posixpath.join(job_dir, "kill")])
        if result.status != 0:
            raise ExecutionError(f"{self.runner.where}: job {job_id}: no such job in "
                                 f"{self.spool_dir}")

    def running(self) -> list[str]:
        """The jobs running as of the last poll(), and those started since."""
        with self._lock:
            return sorted(self._running | self._started)
