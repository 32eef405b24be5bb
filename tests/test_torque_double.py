"""The TORQUE test double against the recording of a real TORQUE 6.1 server
(tests/data/torque), then the semantics the TORQUE backend relies on.

The replay runs every recorded step, in order, on one fresh double (node vm
np=4, server vm, next job number 42), each as its recorded user: root
directly, alice and bob through runuser, with the environment 'su' gave them
(HOME, SHELL, MAIL, LANG, root's PATH). The exit status must be equal and
stdout and stderr byte for byte after this normalisation, applied to both:

* values that are times or measurements of the real run: epoch seconds, dates
  (ctime, 'Job started on ...'), session ids, the mom status figures that
  change between reports (sessions, nsessions, nusers, idletime, availmem,
  loadave, netload, rectime), a job's Walltime.Remaining, resources_used
  walltime/mem/vmem and total_runtime;
* the errno text of the empty-property-list bug, which TORQUE picks at random
  (it must be one of the three recorded).

Paths are mapped, not normalised: the double's bin directory is reached
through /tmp/tb........ and the job directory is /tmp/tqj........, as long as
/opt/torque/bin and /opt/torque-jobs, so after replacing them the output,
qstat -f's 80-column wrapping included, must be the recorded bytes.

Virtual time moves on (advance) only where the recording waited: J7 ends and
vanishes before step 60, the busy queue delete is retried after the purge,
nodes re-created by qmgr report in, the held jobs deleted at step 76 are purged.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from torque_double import install
from torque_double.errors import BUG_ERRNO_TEXTS

DATA = Path(__file__).parent / "data" / "torque" / "transcripts"
STEPS = sorted(DATA.glob("*.txt"))
RECORDED_BIN = "/opt/torque/bin"
RECORDED_JOBS = "/opt/torque-jobs"
PURGE_DELAY = 1.0          # > the real time between two replayed commands
MOM_REPORT_DELAY = 42.0    # as recorded for 'create node' (42.7 s, 41.9 s)
WAITS = {                  # step -> virtual seconds the recording waited before it
    60: 5 + PURGE_DELAY + 1,   # J7 ('sleep 5') ended and was purged (keep_completed=0)
    72: PURGE_DELAY + 0.5,     # the retried 'delete queue R1', once the qdel'd jobs are gone
    86: MOM_REPORT_DELAY + 3,  # the node created in step 84 is free
    91: PURGE_DELAY + 0.5,     # J8, deleted by pbs_sched, is purged
    97: 90.0,                  # step 96's node is free; the held jobs qdel'd in 76 are purged
}
USERS = ("alice", "bob")


class Step:
    """One recorded command: '$ [user] command', 'exit: N', its two streams."""

    def __init__(self, path: Path):
        text = path.read_bytes().decode()
        header, exit_line, rest = text.split("\n", 2)
        match = re.fullmatch(r"\$ \[(\w+)\] (.*)", header)
        self.name = path.stem
        self.number = int(self.name.split("-")[0])
        self.user, self.command = match.group(1), match.group(2)
        self.exit = int(exit_line.removeprefix("exit: "))
        assert rest.startswith("--- stdout\n")
        self.stdout, self.stderr = rest[len("--- stdout\n"):].split("--- stderr\n", 1)


def _recorded_root_path() -> str:
    """Root's PATH in the recording: a job's PBS_O_PATH without the
    /opt/torque/bin the user command put in front."""
    recorded = Step(DATA / "11-qstat-f-x-all-fg.txt").stdout
    user_path = re.search(r"PBS_O_PATH=([^,<]*)", recorded).group(1)
    return user_path.removeprefix(RECORDED_BIN + ":")


NORMALISE = [
    (re.compile(r"\b1\d{9}\b"), "<epoch>"),
    (re.compile(r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep"
                r"|Oct|Nov|Dec) [ \d]\d \d\d:\d\d:\d\d \d{4}\b"), "<date>"),
    (re.compile(r"Job started on \w{3} \w{3} \d\d at \d\d:\d\d"), "Job started on <date>"),
    (re.compile(r"(<session_id>|session_id = )\d+"), r"\1<session>"),
    (re.compile(r"\b(sessions|nsessions|nusers|idletime|availmem|loadave|netload|rectime)"
                r"=[^,<\n]*"), r"\1=<figure>"),
    (re.compile(r"(<Remaining>|Walltime\.Remaining = )-?\d+"), r"\1<seconds>"),
    (re.compile(r"(<total_runtime>|total_runtime = )[\d.]+"), r"\1<seconds>"),
    (re.compile(r"<resources_used>.*?</resources_used>"),
     lambda m: re.sub(r"<(walltime|mem|vmem)>[^<]*</\1>", r"<\1><used></\1>", m.group(0))),
    (re.compile(r"(resources_used\.(?:walltime|mem|vmem) = ).*"), r"\1<used>"),
]
BUG_ERRNO = re.compile(r"(PBS_Server System error: )(.*)")


def normalise(text: str) -> str:
    for pattern, replacement in NORMALISE:
        text = pattern.sub(replacement, text)
    return BUG_ERRNO.sub(lambda m: m.group(1) + ("<errno>" if m.group(2) in BUG_ERRNO_TEXTS
                                                 else m.group(2)), text)


def _require_root_and_users() -> None:
    missing = [user for user in USERS if not _user_exists(user)]
    if os.geteuid() == 0 and not missing:
        return
    why = "not root" if os.geteuid() != 0 else f"users {missing} missing (scripts/test-users.sh)"
    if os.environ.get("CI"):
        pytest.fail(f"the TORQUE replay needs root and the test users: {why}")
    pytest.skip(f"the TORQUE replay needs root and the test users: {why}")


def _user_exists(user: str) -> bool:
    try:
        pwd.getpwnam(user)
    except KeyError:
        return False
    return True


def _scratch(prefix: str) -> str:
    """A world-writable directory in /tmp (pytest's tmp_path is root's alone)."""
    path = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    os.chmod(path, 0o777)
    return path


class Replay:
    """One double replaying the recording in order; a step asked for out of
    order first plays the ones before it."""

    def __init__(self):
        self.home = _scratch("torque-replay-")
        self.double = install(os.path.join(self.home, "torque"), next_job_number=42,
                              next_queue_rank=31, purge_delay=PURGE_DELAY,
                              mom_report_delay=MOM_REPORT_DELAY)
        self.bin = _scratch("tb")
        for command in os.listdir(self.double.path):
            os.symlink(os.path.join(self.double.path, command), os.path.join(self.bin, command))
        os.chmod(self.bin, 0o755)
        self.jobs = _scratch("tqj")
        assert (len(self.bin), len(self.jobs)) == (len(RECORDED_BIN), len(RECORDED_JOBS))
        self.root_path = self.to_local(_recorded_root_path())
        self.played = 0

    def close(self) -> None:
        for path in (self.home, self.bin, self.jobs):
            shutil.rmtree(path, ignore_errors=True)

    def to_local(self, text: str) -> str:
        return text.replace(RECORDED_BIN, self.bin).replace(RECORDED_JOBS, self.jobs)

    def to_recorded(self, text: str) -> str:
        return text.replace(self.bin, RECORDED_BIN).replace(self.jobs, RECORDED_JOBS)

    def play(self, step: Step) -> subprocess.CompletedProcess:
        if step.number <= self.played:
            pytest.fail(f"step {step.name} was already played: the replay runs in order")
        for earlier in STEPS:
            previous = Step(earlier)
            if self.played < previous.number < step.number:
                self._run(previous)
        return self._run(step)

    def _run(self, step: Step) -> subprocess.CompletedProcess:
        if step.number in WAITS:
            self.double.advance(WAITS[step.number])
        self.played = step.number
        env = {"PATH": self.root_path, "LANG": "C.UTF-8"}
        if step.user == "root":
            argv = ["bash", "-c", self.to_local(step.command)]
            env["HOME"] = "/root"
        else:
            inner = re.fullmatch(rf"su {step.user} -c '(.*)'", step.command).group(1)
            entry = pwd.getpwnam(step.user)
            env.update(SHELL=entry.pw_shell, MAIL=f"/var/mail/{step.user}")
            argv = ["runuser", "-u", step.user, "--", "bash", "-c", self.to_local(inner)]
        result = subprocess.run(argv, env=env, cwd=self.jobs, capture_output=True, timeout=60,
                                check=False)
        return subprocess.CompletedProcess(argv, result.returncode,
                                           self.to_recorded(result.stdout.decode()),
                                           self.to_recorded(result.stderr.decode()))


@pytest.fixture(scope="module")
def replay():
    _require_root_and_users()
    session = Replay()
    yield session
    session.close()


@pytest.mark.parametrize("path", STEPS, ids=[path.stem for path in STEPS])
def test_recorded_step(replay, path):
    step = Step(path)
    result = replay.play(step)
    assert (result.returncode, normalise(result.stdout), normalise(result.stderr)) == (
        step.exit, normalise(step.stdout), normalise(step.stderr))
