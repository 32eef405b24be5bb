"""The native batch system end to end: a real plus_scheduler, the installed
plus_qsub/plus_qstat/plus_qdel/plus_qacct run as real users, jobs really
running as their owners on 'local1' (this machine) and on 'remote1' over
SSH (the test sshd on 127.0.0.1:2222, this same machine), with h_rt
enforced, accounting written, ARs enforced, and a restart in between."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from daemon_harness import DAEMON_SETTINGS, Daemon, job_daemon
from sshd import ADDRESS, KEY, KNOWN_HOSTS, need_sshd

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="jobs run as their owners: root only")

CLUSTER = """\
nodes:
  - {name: local1, ncpus: 2, exec: local}
  - {name: remote1, ncpus: 2, exec: {ssh: {host: 127.0.0.1}}}
  - {name: reserved1, ncpus: 2}
pes: [{name: mpi, slots: 8, allocation_rule: $round_robin}]
queues: [{name: all.q, hostlist: [local1, remote1], pe_list: [mpi]}]
scheduler: {schedule_interval: 1, params: MONITOR=1, NodeSortKey: [NodeName], max_reservation: 5}
"""
BASE = DAEMON_SETTINGS


@pytest.fixture(scope="module")
def daemon():
    need_sshd()
    with job_daemon(CLUSTER, f"ssh: {{port: {ADDRESS[1]}, key: {KEY}, "
                             f"known_hosts: {KNOWN_HOSTS}}}") as running:
        yield running


def submit(daemon: Daemon, work: Path, *args: str, user: str = "plusu1", script: str | None = None,
           expect: int = 0) -> str:
    """plus_qsub as ``user`` in ``work``; the job id (or the output when refused)."""
    if script is not None:
        (work / "job.sh").write_text(script)
        os.chmod(work / "job.sh", 0o644)
        args = (*args, str(work / "job.sh"))
    result = daemon.run(user, "plus_qsub", *args, cwd=str(work))
    assert result.returncode == expect, (result.returncode, result.stdout, result.stderr)
    if expect:
        return result.stdout + result.stderr
    match = re.match(r'Your job (\d+) \("(.*)"\) has been (submitted|scheduled)', result.stdout)
    assert match, result.stdout
    return match.group(1)


def accounting(daemon: Daemon, job: str) -> dict[str, str]:
    """plus_qacct -j's fields for a job, once it has ended."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        result = daemon.run("plusu1", "plus_qacct", "-j", job)
        if result.returncode == 0:
            return {line[:13].strip(): line[13:].strip() for line in result.stdout.splitlines()[1:]}
        time.sleep(0.2)
    raise AssertionError(f"job {job} never reached the accounting file")


def states(daemon: Daemon, user: str = "root") -> dict[str, str]:
    out = daemon.ok(user, "plus_qstat", "-u", "*")
    return {line.split()[0]: line.split()[4] for line in out.splitlines()[2:]}


def wait_for(condition, what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def test_a_script_job_runs_as_its_owner_with_its_options(daemon, work):
    script = "#!/bin/sh\n#$ -N embedded\n#$ -l h_rt=60\necho \"$(id -un) $JOB_NAME $1 $NSLOTS\"\n"
    job = submit(daemon, work, "-cwd", "-j", "y", script=script)
    fields = accounting(daemon, job)
    assert (fields["owner"], fields["jobname"], fields["failed"], fields["exit_status"]) == \
        ("plusu1", "embedded", "0", "0")
    assert fields["hostname"] == "local1" and fields["category"] == "-l h_rt=60"
    assert (work / f"embedded.o{job}").read_text() == "plusu1 embedded  1\n"


def test_jobs_over_ssh_and_from_stdin(daemon, work):
    result = daemon.run("plusu1", "plus_qsub", "-q", "all.q@remote1", "-cwd", cwd=str(work),
                        stdin="echo remote $QUEUE\n")
    assert result.returncode == 0, result.stderr
    job = re.search(r"Your job (\d+) \(\"STDIN\"\)", result.stdout).group(1)
    fields = accounting(daemon, job)
    assert fields["hostname"] == "remote1" and fields["exit_status"] == "0"
    assert (work / f"STDIN.o{job}").read_text() == "remote all.q\n"


def test_h_rt_is_enforced(daemon, work):
    job = submit(daemon, work, "-cwd", "-l", "h_rt=2", "-b", "y", "sleep", "60")
    started = time.monotonic()
    fields = accounting(daemon, job)
    assert time.monotonic() - started < 15
    assert fields["failed"].startswith("37") and fields["exit_status"].startswith("137")


def test_running_pending_and_deleted(daemon, work):
    first = submit(daemon, work, "-cwd", "-pe", "mpi", "4", "-b", "y", "sleep", "60")
    wait_for(lambda: states(daemon).get(first) == "r", "the parallel job to run")
    waiting = submit(daemon, work, "-cwd", "-b", "y", "sleep", "1")
    wait_for(lambda: "queue instance" in daemon.ok("plusu1", "plus_qstat", "-j", waiting),
             "a scheduling pass to explain the waiting job")
    detail = daemon.ok("plusu1", "plus_qstat", "-j", waiting)
    assert 'queue instance "all.q@local1" dropped because it is full' in detail
    full = daemon.ok("plusu1", "plus_qstat", "-f")
    assert re.search(r"all\.q@local1\s+BIP\s+0/2/2", full) and "PENDING JOBS" in full
    assert re.search(r"all\.q@remote1\s+BIP\s+0/2/2", full)
    refused = daemon.run("plusu2", "plus_qdel", first)
    assert refused.returncode == 1 and "do not have the necessary privileges" in refused.stderr
    assert daemon.ok("plusu1", "plus_qdel", first, waiting).splitlines() == [
        f"plusu1 has registered the job {first} for deletion", f"plusu1 has deleted job {waiting}"]
    fields = accounting(daemon, first)
    assert fields["failed"].startswith("100") and fields["granted_pe"] == "mpi"
    assert fields["slots"] == "4"


def test_bad_submissions_say_what_is_wrong(daemon, work):
    out = submit(daemon, work, "-l", "nosuch=1", script="true\n", expect=1)
    assert out == "Unable to run job: -l nosuch=1: unknown resource 'nosuch'\nExiting.\n"
    out = submit(daemon, work, "-pe", "mpi", script="true\n", expect=2)
    assert f"plus_qsub: -pe: invalid slot range '{work}/job.sh'" in out
    result = daemon.run("plusu1", "plus_qsub", "-pe", "mpi")
    assert (result.returncode, result.stderr) == (
        2, "plus_qsub: -pe needs 2 arguments (see plus_qsub -help)\n")
    out = submit(daemon, work, "-w", "v", "-l", "arch=sol*", script="true\n", expect=1)
    assert out.endswith("verification: no suitable queues\n") and "hl:arch=lx-amd64" in out
    result = daemon.run("plusu1", "plus_qsub", "-w", "v", str(work / "job.sh"), cwd=str(work))
    assert result.stdout == "verification: found suitable queue(s)\n"
    out = submit(daemon, work, "-p", "10", script="true\n", expect=1)
    assert "only managers may raise a job's priority above 0" in out
    result = daemon.run("plusu1", "plus_qsub", str(work / "missing.sh"))
    assert result.returncode == 1 and "error opening" in result.stderr
    assert daemon.run("plusu1", "plus_qstat", "-j", "999999").returncode == 1


def test_ar_jobs_run_in_the_ar_and_others_keep_off(daemon, work):
    ar = daemon.reserve("plusu1", "-s", "now+3s", "-D", "0:0:40", "-n", "1")["id"]
    host = daemon.status("-r", str(ar))[0]["allocations"][0]["node"]
    assert daemon.status("-r", str(ar))[0]["submit_hint"] == f"plus_qsub -ar {ar} job.sh"
    inside = submit(daemon, work, "-cwd", "-ar", str(ar), "-b", "y", "sleep", "300")
    assert states(daemon)[inside] == "qw"
    endless = submit(daemon, work, "-cwd", "-b", "y", "sleep", "300")      # no h_rt
    wait_for(lambda: states(daemon).get(endless) == "r", "the job without h_rt to run")
    out = daemon.ok("root", "plus_qstat", "-u", "*")
    running_on = next(line.split()[7] for line in out.splitlines() if line.split()[0] == endless)
    assert not running_on.endswith("@" + host)
    outsider = submit(daemon, work, "-ar", str(ar), "-b", "y", "true", user="plusu3", expect=1)
    assert "plusu3 is not in the access list" in outsider
    wait_for(lambda: states(daemon).get(inside) == "r", "the AR job to run at the AR's start", 30)
    detail = daemon.ok("plusu1", "plus_qstat", "-j", inside)
    assert f"exec_host_list        1:    {host}:1" in detail
    daemon.ok("plusu1", "plus_cancel", "-r", str(ar))
    fields = accounting(daemon, inside)
    assert fields["arid"] == str(ar) and fields["hostname"] == host
    daemon.ok("plusu1", "plus_qdel", endless)


def test_a_restart_keeps_the_running_jobs(daemon, work):
    job = submit(daemon, work, "-cwd", "-b", "y", "sleep", "4")
    wait_for(lambda: states(daemon).get(job) == "r", "the job to run")
    daemon.kill9()
    daemon.start()
    assert states(daemon).get(job) == "r"
    fields = accounting(daemon, job)
    assert fields["failed"] == "0" and 4 <= int(fields["ru_wallclock"].rstrip("s")) <= 8


def test_monitor_writes_the_schedule_file(daemon):
    text = (daemon.dir / "state" / "schedule").read_text()
    assert text.startswith("::::::::\n")
    assert re.search(r"^\d+:1:(STARTING|RUNNING):\d+:\d+:Q:all\.q@local1:slots:1\.000000$", text,
                     re.M)


def test_a_change_to_an_ar_keeps_the_jobs_queued_in_it(daemon, work):
    """A change of an AR's access list or window left it with none of its
    queued jobs: the backend released the AR, ending its jobs, and prepared
    it again."""
    ar = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "1")
    job = submit(daemon, work, "-ar", str(ar["id"]), "-l", "h_rt=60", "-b", "y", "/bin/true")
    assert states(daemon)[job] == "qw"
    daemon.ok("plusu1", "plus_modify", "-r", str(ar["id"]), "-U", "plusu2")
    daemon.ok("plusu1", "plus_modify", "-r", str(ar["id"]), "-s", "now+2h")
    assert states(daemon).get(job) == "qw"
    daemon.ok("plusu1", "plus_destroy", "-r", str(ar["id"]))
    wait_for(lambda: job not in states(daemon), "the AR's job to go with the AR")
