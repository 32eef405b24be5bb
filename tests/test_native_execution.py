"""overlay_native.execution.runners: jobs run for real as their owners, here and over
SSH, with Grid Engine's output files, environment and h_rt/s_rt limits, and
nothing a job started outlives it.

The SSH cases use the test sshd on 127.0.0.1:2222 (scripts/test-sshd.sh),
which is this same host, so the tests look at the job's files and processes
directly. Without the sshd they are skipped, except in CI (CI set).
"""

from __future__ import annotations

import json
import os
import pwd
import random
import shutil
import signal
import tempfile
import time
from pathlib import Path

import pytest

from overlay.kit.remote import LocalRunner
from overlay.kit.ssh import SshRunner
from overlay_native.execution.runners import ExecutionError, Executor, Finished, JobSpec
from sshd import ADDRESS as SSHD
from sshd import KEY, KNOWN_HOSTS
from sshd import need_sshd as _need_sshd

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="the shepherd runs as root; scripts/test.sh runs the tests so")


@pytest.fixture(params=["local", "ssh"])
def runner(request):
    if request.param == "ssh":
        _need_sshd()
        made = SshRunner(*SSHD, key_file=KEY, known_hosts=KNOWN_HOSTS)
    else:
        made = LocalRunner()
    yield made
    made.close()


@pytest.fixture
def spool():
    """A spool the jobs' owners can traverse (their PE_HOSTFILE is in it)."""
    path = tempfile.mkdtemp(prefix="plus-spool-")
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path)


@pytest.fixture
def executor(runner, spool) -> Executor:
    return Executor(runner, spool)


def _job(work: Path, job_id: str, script: str, **options) -> JobSpec:
    return JobSpec(id=job_id, name="job", owner="plusu1", command=["sh", "-c", script],
                   cwd=str(work), **options)


SLACK = 15
"""Seconds a loaded machine may add before a limit or a kill is enforced:
enough to prove it enforced (the jobs would sleep 300 s), never so little
that a slow machine fails the test."""


def _until(condition, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _ended(spool: str, job_id: str) -> bool:
    """Whether the job's shepherd has written that it ended, read as a
    restarted daemon would find it (no poll, which would acknowledge it)."""
    try:
        status = json.loads((Path(spool) / "jobs" / job_id / "status").read_text())
    except (OSError, ValueError):
        return False
    return status["state"] == "ended"


def _wait(executor: Executor, *job_ids: str, timeout: float = 120) -> dict[str, Finished]:
    """Poll until the jobs ended; their outcomes by id."""
    ended: dict[str, Finished] = {}
    deadline = time.monotonic() + timeout
    while not set(job_ids) <= ended.keys():
        assert time.monotonic() < deadline, f"jobs {set(job_ids) - ended.keys()} still run"
        ended.update((job.job_id, job) for job in executor.poll())
        time.sleep(0.05)
    return ended


def _unique_sleep() -> str:
    """An argument for sleep that tells this test's processes from others."""
    return f"300.{random.randrange(10**8, 10**9)}"


def _processes_with(argument: str) -> list[int]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if argument.encode() in cmdline.read_bytes().split(b"\0"):
                found.append(int(cmdline.parent.name))
        except OSError:
            pass
    return found


def test_runs_as_owner_with_grid_engine_output_and_environment(executor, work):
    script = ('id -un; pwd; echo "$JOB_ID|$JOB_NAME|$SGE_TASK_ID|$NSLOTS|$NHOSTS|$QUEUE|$HOME'
              '|$LOGNAME|$ENVIRONMENT|$PLUS_X"; cat "$PE_HOSTFILE"; echo oops >&2')
    executor.start(_job(work, "11", script, env={"PLUS_X": "a 'b' $(c)"}, slots=4,
                        queue="big.q", pe_hosts=[("node1", 2), ("node2", 2)]))
    assert executor.running() == ["11"]
    job = _wait(executor, "11")["11"]
    assert (job.exit_status, job.signal, job.reason, job.exit_code) == (0, None, "", 0)
    assert job.start <= job.end
    home = pwd.getpwnam("plusu1").pw_dir
    assert (work / "job.o11").read_text() == (
        f"plusu1\n{work}\n11|job|undefined|4|2|big.q|{home}|plusu1|BATCH|a 'b' $(c)\n"
        "node1 2 big.q@node1 UNDEFINED\nnode2 2 big.q@node2 UNDEFINED\n")
    assert (work / "job.e11").read_text() == "oops\n"
    assert (work / "job.o11").stat().st_uid == pwd.getpwnam("plusu1").pw_uid
    assert executor.running() == []


def test_output_paths_merge_and_exit_statuses(executor, work):
    (work / "logs").mkdir()
    os.chown(work / "logs", pwd.getpwnam("plusu1").pw_uid, -1)
    executor.start(_job(work, "21", "echo out; echo err >&2; exit 3",
                        stdout=str(work / "logs"), merge=True))
    executor.start(_job(work, "22", "echo out; echo err >&2; kill -9 $$",
                        stdout="$JOB_NAME.out", stderr=f"{work}/$USER-$JOB_ID.err"))
    ended = _wait(executor, "21", "22")
    assert (ended["21"].exit_status, ended["21"].signal, ended["21"].exit_code) == (3, None, 3)
    assert (work / "logs" / "job.o21").read_text() == "out\nerr\n"
    assert not (work / "logs" / "job.e21").exists() and not (work / "job.e21").exists()
    assert (ended["22"].exit_status, ended["22"].signal, ended["22"].exit_code) == (None, 9, 137)
    assert (work / "job.out").read_text() == "out\n"
    assert (work / "plusu1-22.err").read_text() == "err\n"


def test_a_spooled_script_runs_as_its_owner_with_its_arguments(executor, work, spool):
    text = '#!/bin/sh\necho "$0|$#|$1|$(id -un)"; ls -l "$0" | cut -c1-10\n'
    executor.start(JobSpec(id="41", name="scripted", owner="plusu1", command=["a b", "c"],
                           script=text, cwd=str(work)))
    assert _wait(executor, "41")["41"].exit_status == 0
    first, mode = (work / "scripted.o41").read_text().splitlines()
    assert first == f"{spool}/jobs/41/script|2|a b|plusu1" and mode == "-rwx------"
    executor.start(JobSpec(id="42", name="shell", owner="plusu1", command=[], cwd=str(work),
                           script="echo $0", shell="/bin/bash"))
    assert _wait(executor, "42")["42"].exit_status == 0
    assert (work / "shell.o42").read_text() == f"{spool}/jobs/42/script\n"


def test_limits_become_rlimits(executor, work):
    executor.start(_job(work, "44", "ulimit -Hv; ulimit -Sv; ulimit -Ht; ulimit -St; ulimit -Hd",
                        limits={"h_vmem": 100 * 2 ** 20, "s_vmem": 50 * 2 ** 20, "h_cpu": 60,
                                "s_cpu": 30, "h_data": 80 * 2 ** 20}))
    assert _wait(executor, "44")["44"].exit_status == 0
    assert (work / "job.o44").read_text().split() == ["102400", "51200", "60", "30", "81920"]
    with pytest.raises(ValueError, match=r"limits: h_rss=1; accepted: s_cpu, h_cpu"):
        _job(work, "45", "true", limits={"h_rss": 1})


def test_the_job_trees_usage_and_the_hosts_load_are_reported(executor, work):
    executor.start(_job(work, "43", "(i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done) & wait"))
    usage = _wait(executor, "43")["43"].rusage
    assert usage["utime"] + usage["stime"] > 0.05 and usage["maxrss"] > 100
    assert usage.keys() >= {"minflt", "majflt", "inblock", "oublock", "nvcsw", "nivcsw"}
    assert executor.report["load_avg"] >= 0 and executor.report["mem_free"] > 2 ** 20


def test_h_rt_kills_the_whole_job_and_s_rt_warns_with_usr1_first(executor, work):
    tag = _unique_sleep()
    executor.start(_job(work, "31", f"sleep {tag} & sleep {tag}", h_rt=2))
    script = (f"trap 'echo usr1' USR1; sleep {_unique_sleep()}; echo continued; "
              f"sleep {_unique_sleep()}")
    executor.start(_job(work, "32", script, s_rt=1, notify=1))
    started = time.monotonic()
    ended = _wait(executor, "31", "32")
    assert time.monotonic() - started < 2 + SLACK
    hard, soft = ended["31"], ended["32"]
    assert (hard.reason, hard.signal, hard.exit_code) == ("h_rt exceeded", signal.SIGKILL, 137)
    assert 1.9 <= hard.end - hard.start < 2 + SLACK
    assert _processes_with(tag) == []
    # The job went on after USR1 (which also ended the group's sleep, as
    # under Grid Engine), until SIGKILL after notify.
    assert (work / "job.o32").read_text() == "usr1\ncontinued\n"
    assert (soft.reason, soft.signal) == ("s_rt exceeded", signal.SIGKILL)
    assert 1.9 <= soft.end - soft.start < 2 + SLACK


def test_kill_terminates_then_kills_after_the_grace(executor, work):
    plain, deaf = _unique_sleep(), _unique_sleep()
    executor.start(_job(work, "51", f"sleep {plain}"))
    executor.start(_job(work, "52", f"trap '' TERM; sleep {deaf}", grace=1))
    _until(lambda: _processes_with(plain) and _processes_with(deaf), "the jobs' sleeps (the "
           "trap set)")
    killed = time.monotonic()
    executor.kill("51")
    executor.kill("52")
    assert _wait(executor, "51")["51"].signal == signal.SIGTERM
    assert time.monotonic() - killed < 5          # not after its grace (5 s): SIGTERM did it
    job = _wait(executor, "52")["52"]
    assert time.monotonic() - killed >= 1
    assert (job.reason, job.signal) == ("killed", signal.SIGKILL)
    with pytest.raises(ExecutionError, match=r": job 99: no such job in /"):
        executor.kill("99")


def test_nothing_the_job_started_outlives_it(executor, work):
    detached, background = _unique_sleep(), _unique_sleep()
    # (setsid ... &) leaves an orphan in a session of its own: a daemon.
    script = (f"(setsid sleep {detached} & echo $!); sleep {background} & echo $!; "
              f"sleep 0.3; exit 0")
    executor.start(_job(work, "61", script))
    job = _wait(executor, "61")["61"]
    assert (job.exit_status, job.reason) == (0, "")
    pids = [int(line) for line in (work / "job.o61").read_text().split()]
    assert len(pids) == 2
    assert _processes_with(detached) == [] and _processes_with(background) == []


def test_a_poll_of_a_later_leader_fences_off_the_starts_of_the_one_before(runner, spool, work):
    """The spool keeps the highest epoch a poll or start brought: a leader
    taken over from starts nothing once the new one looked at the host, and
    what it started before, the new one's poll lists."""
    old, new = Executor(runner, spool), Executor(runner, spool)
    old.start(_job(work, "81", "sleep 300"), epoch=1)
    new.poll(epoch=2)
    assert new.running() == ["81"]
    with pytest.raises(ExecutionError, match="fenced: a later leader .epoch 2."):
        old.start(_job(work, "82", "sleep 300"), epoch=1)
    with pytest.raises(ExecutionError, match="fenced"):
        old.poll(epoch=1)                     # nor removes nor lists the jobs
    new.start(_job(work, "82", "sleep 300"), epoch=2)
    Executor(runner, spool).start(_job(work, "83", "sleep 300"))    # unfenced: one daemon
    assert sorted(os.listdir(Path(spool) / "jobs")) == ["81", "82", "83"]
    for job in ("81", "82", "83"):
        new.kill(job)
    _until(lambda: all(_ended(spool, job) for job in ("81", "82", "83")), "the jobs to end")


def test_a_new_executor_finds_running_and_finished_jobs(runner, spool, work):
    first = Executor(runner, spool)
    first.start(_job(work, "71", "until [ -e go ]; do sleep 0.1; done; echo done"))
    first.start(_job(work, "72", "exit 4"))
    _until(lambda: _ended(spool, "72"), "job 72 to end")
    second = Executor(runner, spool)    # the daemon restarted
    assert second.running() == []
    assert [(job.job_id, job.exit_status) for job in second.poll()] == [("72", 4)]
    assert [job.job_id for job in second.poll()] == ["72"]    # again: nobody took its end
    second.taken("72")
    assert second.running() == ["71"]    # still running at the restart, until told to end
    (work / "go").touch()
    assert _wait(second, "71")["71"].exit_status == 0
    assert (work / "job.o71").read_text() == "done\n"
    second.taken("71")
    second.poll()    # the taken ends' spool entries go
    assert Executor(runner, spool).poll() == []
    assert not (Path(spool) / "jobs" / "71").exists()


def test_a_shepherd_that_died_is_reported_lost(executor, work, spool):
    tag = _unique_sleep()
    executor.start(_job(work, "91", f"sleep {tag}"))
    status = json.loads((Path(spool) / "jobs" / "91" / "status").read_text())
    os.kill(status["shepherd"], signal.SIGKILL)
    try:
        job = _wait(executor, "91")["91"]
        assert (job.reason, job.exit_status, job.signal) == ("shepherd lost", None, None)
    finally:    # the job itself is left without its shepherd
        for pid in _processes_with(tag):
            os.kill(pid, signal.SIGKILL)


def test_jobs_that_cannot_run(executor, work):
    with pytest.raises(ExecutionError, match=r"plus shepherd: job 81: unknown user 'nosuchuser'"):
        executor.start(JobSpec(id="81", name="job", owner="nosuchuser", command=["true"]))
    for owner, uid in (("root", 0), ("daemon", 1), ("nobody", 65534)):
        with pytest.raises(ExecutionError, match=rf"plus shepherd: job 80: {owner} \(uid {uid}\) "
                                                 r"is root or a system account \(below min_uid "
                                                 r"1000\): no job runs as one"):
            executor.start(JobSpec(id="80", name="job", owner=owner, command=["id"]))
    with pytest.raises(ExecutionError, match=r"plusu1 \(uid \d+\) is root or a system account "
                                             r"\(below min_uid 99999\)"):
        executor.start(JobSpec(id="80", name="job", owner="plusu1", command=["id"],
                               min_uid=99999))
    executor.start(_job(work, "82", "true"))
    with pytest.raises(ExecutionError, match=r"plus shepherd: job 82 already exists in /"):
        executor.start(_job(work, "82", "true"))
    executor.start(JobSpec(id="83", name="job", owner="plusu1", command=["true"],
                           cwd=str(work / "none")))
    executor.start(JobSpec(id="84", name="job", owner="plusu1", command=["plus-no-such-cmd"],
                           cwd=str(work)))
    executor.start(JobSpec(id="85", name="job", owner="plusu1", command=[], script="true",
                           shell="/no/such/shell", cwd=str(work)))
    executor.start(JobSpec(id="86", name="job", owner="plusu1", command=["true"],
                           stdout="/proc/no/such/dir/out", cwd=str(work)))
    ended = _wait(executor, "82", "83", "84", "85", "86")
    assert ended["82"].failed == 0
    assert ended["83"].reason == f"cannot start job: {work}/none: No such file or directory"
    assert ended["83"].failed == 28                    # changing into working directory
    assert ended["84"].reason == "cannot start job: plus-no-such-cmd: No such file or directory"
    assert (ended["84"].exit_status, ended["84"].failed) == (127, 11)
    assert (ended["85"].failed, ended["86"].failed) == (27, 26)


def test_job_specs_are_checked_before_anything_runs():
    with pytest.raises(ValueError, match=r"^job id: expected letters.*got '\.\./x'"):
        JobSpec(id="../x", name="a", owner="plusu1", command=["true"])
    with pytest.raises(ValueError, match=r"^job 1: name: expected a file name, got 'a/b'"):
        JobSpec(id="1", name="a/b", owner="plusu1", command=["true"])
    with pytest.raises(ValueError, match=r"^job 1: owner: expected a user name, got '-x'"):
        JobSpec(id="1", name="a", owner="-x", command=["true"])
    with pytest.raises(ValueError, match=r"^job 1: cwd: expected an absolute path"):
        JobSpec(id="1", name="a", owner="plusu1", command=["true"], cwd="tmp")
    with pytest.raises(ValueError, match=r"^job 1: h_rt: expected seconds above 0"):
        JobSpec(id="1", name="a", owner="plusu1", command=["true"], h_rt=0)
    with pytest.raises(ValueError, match=r"^spool_dir: expected an absolute path"):
        Executor(LocalRunner(), "spool")
