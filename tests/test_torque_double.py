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
* the errno text of the empty-property-list bug: whatever errno holds when
  the server fails (the recording saw three, a real 6.1 server a fourth), so
  any text there is accepted.

Paths are mapped, not normalised: the double's bin directory is reached
through /tmp/tb........ and the job directory is /tmp/tqj........, as long as
/opt/torque/bin and /opt/torque-jobs, so after replacing them the output,
qstat -f's 80-column wrapping included, must be the recorded bytes.

Virtual time moves on (advance) only where the recording waited: after each
qsub, for the cycle it kicks (the real pbs_sched ran it before the next
command was typed; in the double it comes up to 0.6 s later), after each
qrerun, for the requeue (up to 60 ms, on the real server too), J7 ends and
vanishes before step 60, the busy queue delete is retried after the purge,
nodes re-created by qmgr report in, the held jobs deleted at step 76 are purged.
The real time the replay takes must not matter, so a node made by 'create node'
reports in after 42 s (as recorded), a completed job lingers 3 s (recorded
0.1 s: long enough to make step 71's delete busy however slow the machine) and
pbs_sched's first periodic cycle comes after 120 s (none played a part in the
recording).
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from torque_double import install
from torque_double.errors import BUG_ERRNO_TEXTS
from torque_double.simulate import RERUN_STEP, SUBMIT_CYCLE_DELAY

DATA = Path(__file__).parent / "data" / "torque" / "transcripts"
STEPS = sorted(DATA.glob("*.txt"))
RECORDED_BIN = "/opt/torque/bin"
RECORDED_JOBS = "/opt/torque-jobs"
SETTLES = {                # a command -> virtual seconds until what it set off is done
    re.compile(r"\bqsub\b"): SUBMIT_CYCLE_DELAY[1],    # the cycle it kicks
    re.compile(r"\bqrerun\b"): 2 * RERUN_STEP[1],      # the job queued again
}
PURGE_DELAY = 3.0          # well above the real time between two replayed commands
MOM_REPORT_DELAY = 42.0    # as recorded for 'create node' (42.7 s, 41.9 s)
FIRST_CYCLE = 120.0        # no periodic cycle may start J4/J5 before steps 57/58 do
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
BUG_ERRNO = re.compile(r"(PBS_Server System error: ).*")


def normalise(text: str) -> str:
    for pattern, replacement in NORMALISE:
        text = pattern.sub(replacement, text)
    return BUG_ERRNO.sub(r"\1<errno>", text)


@pytest.mark.parametrize("errno", BUG_ERRNO_TEXTS + ("Interrupted system call", ""))
def test_a_replay_accepts_any_errno_text_of_the_property_list_bug(errno):
    recorded = "qmgr obj=vm svr=default: PBS_Server System error: Bad file descriptor\n"
    seen = f"qmgr obj=vm svr=default: PBS_Server System error: {errno}\n"
    assert normalise(seen) == normalise(recorded)
    assert normalise("qmgr obj=vm svr=default: Unknown node \n") != normalise(recorded)


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
                              mom_report_delay=MOM_REPORT_DELAY, first_cycle_after=FIRST_CYCLE)
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
        for command, seconds in SETTLES.items():
            if command.search(step.command):
                self.double.advance(seconds)
        return subprocess.CompletedProcess(argv, result.returncode,
                                           self.to_recorded(result.stdout.decode()),
                                           self.to_recorded(result.stderr.decode()))


@pytest.fixture(scope="module")
def replay():
    _require_root_and_users()
    session = Replay()
    yield session
    session.close()


@pytest.mark.parametrize("path", STEPS, ids=[path.name for path in STEPS])
def test_recorded_step(replay, path):
    step = Step(path)
    result = replay.play(step)
    assert (result.returncode, normalise(result.stdout), normalise(result.stderr)) == (
        step.exit, normalise(step.stdout), normalise(step.stderr))


# -- the double's own semantics, as the TORQUE backend depends on them ----------------------

NOT_STARTED = "Not Running: Queue not started."
NO_NODES = "Not Running: Not enough of the right type of nodes are available"


@pytest.fixture
def double():
    home = _scratch("torque-double-")
    yield install(os.path.join(home, "torque"))
    shutil.rmtree(home, ignore_errors=True)


def sh(double, command: str, user: str | None = None, stdin: str | None = None):
    """``command`` through bash, as root or as ``user``, the double first on PATH."""
    argv = ["bash", "-c", command]
    if user is not None:
        argv = ["runuser", "-u", user, "--", *argv]
    env = double.environ({"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"})
    return subprocess.run(argv, env=env, cwd=double.directory, input=stdin, capture_output=True,
                          text=True, timeout=60, check=False)


def ok(double, command: str, user: str | None = None, stdin: str | None = None) -> str:
    result = sh(double, command, user, stdin)
    assert result.returncode == 0, f"{command}: {result.stderr}"
    return result.stdout


def submit(double, options: str = "", script: str = "sleep 100", user: str | None = None) -> str:
    """Submit, then let the pbs_sched cycle the submission kicks run."""
    job_id = ok(double, f"qsub {options}", user, stdin=script).strip()
    double.advance(SUBMIT_CYCLE_DELAY[1])
    return job_id


def test_a_submitted_job_starts_a_moment_after_its_qsub_returns(double):
    """As on a real 6.1 server: Q when qsub exits, R 0.25 to 0.6 s later
    (read from the job's times, not from how fast the test runs)."""
    for _ in range(3):                                    # the node has 4 slots
        job_id = ok(double, "qsub", stdin="sleep 100").strip()
        double.advance(SUBMIT_CYCLE_DELAY[1])
        started = job(double, job_id)
        assert started["state"] == "R"
        assert SUBMIT_CYCLE_DELAY[0] <= started["start_time"] - started["qtime"] <= SUBMIT_CYCLE_DELAY[1]


def job(double, job_id: str) -> dict:
    return double.state()["jobs"][job_id]


def reservation_queue(double, name: str) -> None:
    """A queue as the backend makes one: enabled, not started, keep_completed 0."""
    for request in (f"create queue {name} queue_type=execution", f"set queue {name} enabled=true",
                    f"set queue {name} started=false", f"set queue {name} keep_completed=0"):
        ok(double, f"qmgr -c '{request}'")


def test_pbs_sched_deletes_a_queued_job_once_no_node_has_its_property(double):
    reservation_queue(double, "R1")
    ok(double, "qmgr -c 'set node vm properties += R1'")
    waiting = submit(double, "-q R1 -l nodes=1:R1")
    assert job(double, waiting)["comment"] == NOT_STARTED
    ok(double, "qmgr -c 'set node vm properties -= R1'")
    ok(double, "qmgr -c 'set queue R1 started=true'")
    assert job(double, waiting)["state"] == "Q"          # started=true alone runs no cycle
    ok(double, "qmgr -c 'set server scheduling=true'")
    double.advance(1)
    assert waiting not in double.state()["jobs"]
    gone = sh(double, f"qstat -f -x {waiting}")
    assert (gone.returncode, gone.stderr) == (153, f"qstat: Unknown Job Id Error {waiting}\n")


def test_the_periodic_cycle_deletes_it_too(double):
    reservation_queue(double, "R1")
    ok(double, "qmgr -c 'set node vm properties += base'")
    ok(double, "qmgr -c 'set node vm properties += R1'")
    waiting = submit(double, "-q R1 -l nodes=1:R1")
    ok(double, "qmgr -c 'set node vm properties -= R1'")
    ok(double, "qmgr -c 'set queue R1 started=true'")
    double.advance(31)
    assert waiting not in double.state()["jobs"]


def test_a_queue_with_a_kept_job_cannot_be_deleted_until_the_job_is_purged(double):
    for request in ("create queue K queue_type=execution", "set queue K enabled=true",
                    "set queue K started=true", "set queue K keep_completed=10"):
        ok(double, f"qmgr -c '{request}'")
    short = submit(double, "-q K", script="sleep 2")
    assert job(double, short)["state"] == "R"
    double.advance(3)
    assert (job(double, short)["state"], job(double, short)["exit_status"]) == ("C", 0)
    busy = sh(double, "qmgr -c 'delete queue K'")
    assert (busy.returncode, busy.stderr) == (
        2, "qmgr obj=K svr=default: Cannot delete busy queue\n")
    double.advance(8)
    assert sh(double, "qmgr -c 'delete queue K'").returncode == 2
    double.advance(2)
    ok(double, "qmgr -c 'delete queue K'")
    assert "K" not in double.state()["queues"]


def test_qhold_leaves_a_running_job_running_and_qrerun_requeues_it(double):
    """As on a real 6.1 server: R -> E -> H over 40 to 60 ms after qrerun
    returns (the kill, the mom's obit, the requeue)."""
    double.freeze()
    running = submit(double, "-l nodes=1")
    ok(double, f"qhold {running}")
    held = job(double, running)
    assert (held["state"], held["hold"], held["exec_host"]) == ("R", "u", "vm/0")
    ok(double, f"qrerun {running}")
    assert job(double, running)["state"] == "R"
    assert "<substate>60</substate>" in ok(double, f"qstat -f -x {running}")
    double.advance(RERUN_STEP[1])
    exiting = job(double, running)
    assert (exiting["state"], exiting["exec_host"]) == ("E", "vm/0")
    assert double.state()["nodes"]["vm"]["jobs"] == [running]   # still on its slot
    double.advance(RERUN_STEP[1])
    requeued = job(double, running)
    assert (requeued["state"], requeued["exec_host"]) == ("H", None)
    assert double.state()["nodes"]["vm"]["jobs"] == []
    xml = ok(double, f"qstat -f -x {running}")
    assert "<exec_host>vm/0</exec_host>" in xml and "<substate>20</substate>" in xml
    ok(double, f"qrls {running}")                         # qrls runs a cycle
    again = job(double, running)
    assert (again["state"], again["exec_host"], again["start_count"]) == ("R", "vm/0", 2)


def test_qrerun_of_a_held_job_is_a_bad_state_and_of_an_exiting_one_requeues_it(double):
    double.freeze()
    running = submit(double)
    ok(double, f"qhold {running}")
    ok(double, f"qrerun {running}")
    double.advance(RERUN_STEP[1])
    assert job(double, running)["state"] == "E"
    ok(double, f"qrerun {running}")                        # at or past EXITING: at once
    assert job(double, running)["state"] == "H"
    refused = sh(double, f"qrerun {running}")
    assert (refused.returncode, refused.stderr) == (
        170, f"qrerun: Request invalid for state of job MSG=job {running} is in a bad state "
             f"{running}\n")
    queued = ok(double, "qsub -h", stdin="sleep 100").strip()
    ok(double, f"qrls {queued}")
    double.advance(SUBMIT_CYCLE_DELAY[1])
    assert job(double, queued)["state"] == "R"


def test_an_epilogue_keeps_a_killed_job_running_until_it_has_run(double):
    """A real 6.1 server with a 15 s epilogue: qhold and qrerun exit 0 and
    take effect afterwards; qrerun again meanwhile changes nothing; qdel too
    waits for the epilogue."""
    double.set_epilogue(15)
    rerun, deleted = submit(double), submit(double)
    ok(double, f"qhold {rerun}")
    ok(double, f"qrerun {rerun}")
    ok(double, f"qdel {deleted}")
    double.advance(14)
    assert job(double, rerun)["state"] == job(double, deleted)["state"] == "R"
    ok(double, f"qrerun {rerun}")                          # again: still once
    double.advance(1 + 2 * RERUN_STEP[1])
    assert job(double, rerun)["state"] == "H"
    assert (job(double, deleted)["state"], job(double, deleted)["exit_status"]) == ("C", 271)


def test_qrerun_refuses_a_job_that_is_not_rerunnable(double):
    running = submit(double, "-r n")
    refused = sh(double, f"qrerun {running}")
    assert (refused.returncode, refused.stderr) == (
        192, f"qrerun: job is not rerunnable MSG=job {running} not rerunnable {running}\n")
    ok(double, f"qalter -r y {running}")
    ok(double, f"qrerun {running}")
    double.advance(2 * RERUN_STEP[1])
    assert job(double, running)["state"] == "Q"


def test_emptying_a_property_list_breaks_the_node_until_it_is_recreated(double):
    ok(double, "qmgr -c 'set node vm properties += R1'")
    ok(double, "qmgr -c 'set node vm properties -= R1'")
    broken = sh(double, "qmgr -c 'set node vm properties += R2'")
    errno = re.fullmatch(r"qmgr obj=vm svr=default: PBS_Server System error: (.*)\n",
                         broken.stderr)
    assert broken.returncode == 2 and errno and errno.group(1) in BUG_ERRNO_TEXTS
    noted = sh(double, "pbsnodes -o -N 'reserved for R2' vm")
    assert noted.returncode == 0
    assert noted.stderr.startswith(
        "Error setting note attribute for vm - PBS_Server System error: ")
    assert sh(double, "qmgr -c 'set node vm note = x'").returncode == 2
    node = double.state()["nodes"]["vm"]
    assert (node["state"], node["note"], node["properties"]) == ("free", "", [])
    assert "<state>free</state>" in ok(double, "pbsnodes -x vm")   # reads still work
    ok(double, "qmgr -c 'delete node vm'")
    ok(double, "qmgr -c 'create node vm np=4'")
    assert double.state()["nodes"]["vm"]["state"] == "down,offline,MOM-list-not-sent"
    double.advance(1.2)                                  # mom_report_delay 2 s: half-way
    assert double.state()["nodes"]["vm"]["state"] == "down"
    double.advance(1)
    assert double.state()["nodes"]["vm"]["state"] == "free"
    ok(double, "qmgr -c 'set node vm properties += R2'")
    assert double.state()["nodes"]["vm"]["properties"] == ["R2"]


def test_a_node_keeping_another_property_is_not_broken(double):
    ok(double, "qmgr -c 'set node vm properties += base'")
    ok(double, "qmgr -c 'set node vm properties += R5'")
    ok(double, "qmgr -c 'set node vm properties -= R5'")
    ok(double, "qmgr -c 'set node vm properties += R6'")
    ok(double, "pbsnodes -o -N 'reserved' vm")
    node = double.state()["nodes"]["vm"]
    assert (node["properties"], node["state"], node["note"]) == (["base", "R6"], "offline",
                                                                 "reserved")


def test_jobs_are_placed_across_nodes_by_count_ppn_property_and_host():
    home = _scratch("torque-double-")
    try:
        double = install(os.path.join(home, "torque"),
                         nodes=(("n1", 2), ("n2", 2), ("n3", 4)), next_job_number=1)
        ok(double, "qmgr -c 'set node n3 properties += big'")
        pair = submit(double, "-l nodes=2:ppn=2")
        big = submit(double, "-l nodes=1:ppn=2:big")
        named = submit(double, "-l nodes=n3:ppn=2")
        waiting = submit(double, "-l nodes=1:ppn=1")
        hosts = {job_id: job(double, job_id)["exec_host"] for job_id in (pair, big, named)}
        assert hosts == {pair: "n1/0-1+n2/0-1", big: "n3/0-1", named: "n3/2-3"}
        assert (job(double, waiting)["state"], job(double, waiting)["comment"]) == ("Q", NO_NODES)
        n3 = ok(double, "pbsnodes -x n3")
        assert "<state>job-exclusive</state>" in n3 and f"<jobs>0-1/{big},2-3/{named}</jobs>" in n3
        rejected = sh(double, "qsub -l nodes=1:ppn=8", stdin="sleep 1")
        assert (rejected.returncode, rejected.stderr) == (190, (
            "qsub: submit error (Job exceeds queue resource limits MSG=cannot locate feasible "
            "nodes (nodes file is empty, all systems are busy, or no nodes have the requested "
            "feature))\n"))
        ok(double, f"qdel {pair}")
        double.advance(31)                               # freed slots wait for the next cycle
        assert job(double, waiting)["exec_host"] == "n1/0"
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_advance_runs_the_periodic_cycle_and_pbsnodes_c_does_not(double):
    ok(double, "pbsnodes -o vm")
    waiting = submit(double)
    assert (job(double, waiting)["state"], job(double, waiting)["comment"]) == ("Q", NO_NODES)
    ok(double, "pbsnodes -c vm")
    double.advance(20)
    assert job(double, waiting)["state"] == "Q"
    double.advance(11)                                   # scheduler_iteration is 30
    assert job(double, waiting)["state"] == "R"


def test_a_dead_mom_takes_its_node_down_until_it_reports_again(double):
    double.set_node_state("vm", "down")
    assert double.state()["nodes"]["vm"]["state"] == "down"
    waiting = submit(double)
    assert job(double, waiting)["comment"] == NO_NODES
    refused = sh(double, f"qrun -H vm {waiting}")
    assert refused.returncode == 2 and "1 requested, 0 available" in refused.stderr
    double.set_node_state("vm", "free")
    ok(double, f"qrun -H vm {waiting}")                  # qrun is synchronous
    assert job(double, waiting)["state"] == "R"


def test_completed_jobs_are_kept_keep_completed_and_deleted_waiting_ones_twice_that(double):
    running = submit(double)
    held = submit(double, "-h")
    ok(double, f"qdel {running} {held}")
    states = double.state()["jobs"]
    assert (states[running]["exit_status"], states[held]["state"]) == (271, "C")
    double.advance(61)                                   # the server's keep_completed is 60
    assert list(double.state()["jobs"]) == [held]
    double.advance(60)
    assert double.state()["jobs"] == {}


def test_a_job_runs_for_its_sleeps_at_most_its_walltime(double):
    short = submit(double, script="#!/bin/sh\nsleep 2\nsleep 3\n")
    capped = submit(double, "-l walltime=00:00:10")
    double.advance(6)
    assert (job(double, short)["state"], job(double, short)["exit_status"]) == ("C", 0)
    assert job(double, capped)["state"] == "R"
    double.advance(5)
    assert (job(double, capped)["state"], job(double, capped)["exit_status"]) == ("C", -11)


def test_users_may_only_touch_their_own_jobs_and_not_the_server(double):
    _require_root_and_users()
    mine = submit(double, user="alice")
    assert job(double, mine)["owner"] == "alice"
    denied = sh(double, f"qdel {mine}", user="bob")
    assert (denied.returncode, denied.stderr) == (159, f"qdel: Unauthorized Request  {mine}\n")
    assert ok(double, "qstat", user="bob") == "" and ok(double, "qselect", user="bob") == ""
    queue = sh(double, "qmgr -c 'create queue X queue_type=execution'", user="bob")
    assert (queue.returncode, queue.stderr) == (
        2, "qmgr obj=X svr=default: Unauthorized Request \n")
    offline = sh(double, "pbsnodes -o vm", user="bob")
    assert (offline.returncode, offline.stderr) == (
        0, "Error marking node vm - Unauthorized Request \n")
    run = sh(double, f"qrun {mine}", user="alice")
    assert (run.returncode, run.stderr) == (2, f"qrun: Unauthorized Request  {mine}\n")
    ok(double, f"qhold {mine}", user="alice")
    ok(double, f"qrls {mine}", user="alice")
    ok(double, f"qdel {mine}", user="alice")


def test_qmgr_reads_a_comma_as_the_next_attribute(double):
    unquoted = sh(double, "qmgr -c 'set queue batch acl_users=alice,bob'")
    assert (unquoted.returncode, unquoted.stderr) == (
        2, "qmgr: Syntax error - cannot locate attribute\n"
           "set queue batch acl_users=alice,bob\n" + " " * 35 + "^\n")
    ok(double, "qmgr -c 'set queue batch acl_users = \"alice,bob\"'")
    assert "\tacl_users = alice,bob\n" in ok(double, "qmgr -c 'list queue batch'")
    assert ("set queue batch acl_users = alice\nset queue batch acl_users += bob\n"
            in ok(double, "qmgr -c 'print server'"))


def test_the_command_log_lists_every_command_in_order(double):
    ok(double, "qmgr -c 'create queue R1 queue_type=execution'")
    held = submit(double, "-h -N x")
    sh(double, "qmgr -c 'delete queue R9'")
    ok(double, f"qdel {held}")
    log = double.command_log()
    assert [(entry["argv"], entry["user"], entry["exit"]) for entry in log] == [
        (["qmgr", "-c", "create queue R1 queue_type=execution"], "root", 0),
        (["qsub", "-h", "-N", "x"], "root", 0),
        (["qmgr", "-c", "delete queue R9"], "root", 2),
        (["qdel", held], "root", 0)]
    assert [entry["time"] for entry in log] == sorted(entry["time"] for entry in log)


def test_fail_next_fails_the_next_matching_command_once(double):
    double.fail_next("qmgr", "qmgr obj=R1 svr=default: Cannot delete busy queue\n", 2,
                     match="delete queue")
    ok(double, "qmgr -c 'create queue R1 queue_type=execution'")
    first = sh(double, "qmgr -c 'delete queue R1'")
    assert (first.returncode, first.stderr) == (
        2, "qmgr obj=R1 svr=default: Cannot delete busy queue\n")
    assert "R1" in double.state()["queues"]
    ok(double, "qmgr -c 'delete queue R1'")
    assert [entry["injected"] for entry in double.command_log()] == [False, True, False]


def test_qsub_a_waits_until_its_time_and_qalter_a_moves_it(double):
    double.freeze()
    later = int(double.now()) + 600
    stamp = time.strftime("%Y%m%d%H%M.%S", time.localtime(later))
    waiting = submit(double, f"-a {stamp}")
    assert job(double, waiting)["state"] == "W"
    assert f"<Execution_Time>{later}</Execution_Time>" in ok(double, f"qstat -f -x {waiting}")
    double.advance(598)                                       # later - 598.6 >= 0.4 s ahead
    assert job(double, waiting)["state"] == "W"
    double.advance(2)
    assert job(double, waiting)["state"] in ("Q", "R")         # queued, for the next cycle
    moved = submit(double, f"-a {stamp} -q batch")
    assert job(double, moved)["state"] in ("Q", "R")           # its time has passed
    held = submit(double, f"-l nodes=1:ppn=4 -a {time.strftime('%Y%m%d%H%M', time.localtime(later + 3600))}")
    assert job(double, held)["state"] == "W"
    ok(double, f"qalter -a {time.strftime('%Y%m%d%H%M.%S', time.localtime(double.now()))} {held}")
    assert job(double, held)["state"] == "Q"
    assert sh(double, f"qalter -a 25:99 {held}").returncode == 2


def test_qsub_runs_the_submit_filter_torque_cfg_names(double):
    double.set_submit_filter(["sh", "-c", 'echo "$*" >&2; sed "1a #PBS -N filtered"', "filter"])
    named = submit(double, "-q batch", script="#!/bin/sh\nsleep 100\n")
    assert job(double, named)["name"] == "filtered"
    shown = sh(double, "qsub -q batch -N mine", stdin="#!/bin/sh\nsleep 1\n")
    assert shown.stderr == "-q batch -N mine\n"              # qsub's arguments; its -N wins
