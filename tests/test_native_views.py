"""plus_qstat's layouts against a real SoGE 8.1.9's qstat output for the same
jobs (tests/data/sge/qstat*.txt, recorded in UTC): job 60 running, 61
pending on a request no host meets, 62 held on job 60."""

from __future__ import annotations

from pathlib import Path

import pytest

from overlay_native.cli import views

DATA = Path(__file__).parent / "data" / "sge"
SUBMITTED = 1795381150          # Sun Nov 22 20:59:10 2026 UTC


@pytest.fixture(autouse=True)
def utc(zone):
    zone("UTC")


def recorded(name: str) -> str:
    return (DATA / name).read_text().rstrip("\n")


def job(job_id, name, state, priority, queue="", started=None, submitted=SUBMITTED, slots=1):
    return {"id": job_id, "priority": priority, "name": name, "owner": "plusu1", "state": state,
            "submit_time": submitted, "start_time": started, "queue": queue, "slots": slots}


RUNNING = job(60, "longname_job_here", "r", 0.5, "all.q@node1", started=SUBMITTED)
PENDING = job(61, "sleeper.sh", "qw", 0.5)
HELD = job(62, "sleeper.sh", "hqw", 0.0, submitted=SUBMITTED + 1)


def test_the_job_table_is_qstats():
    assert views.job_table([RUNNING, PENDING, HELD]) == recorded("qstat.txt")
    assert views.job_table([]) == ""


def test_the_full_listing_is_qstat_fs():
    def instance(host, used, jobs=()):
        return {"name": f"all.q@{host}", "qtype": "BI", "reserved": 0, "used": used, "total": 2,
                "load": {"node1": 0.92, "node2": 0.95, "node3": 0.93, "vm": 0.95}[host],
                "arch": "lx-amd64", "states": "", "jobs": list(jobs)}
    instances = [instance("node1", 1, [RUNNING]), instance("node2", 0), instance("node3", 0),
                 instance("vm", 0)]
    assert views.full(instances, [PENDING, HELD]) == recorded("qstat-f.txt")


def detail(**changes) -> dict:
    base = dict(job(61, "sleeper.sh", "qw", 0.5), group="plusu1", uid=1001, gid=1002,
                account="sge", cwd=None,
                reserve=False, merge=True, hard="h_rt=100,arch=sol", soft="", stdout="/dev/null",
                stderr=None, posix_priority=0, queues=[], master_queues=[], start_after=None,
                env={"SGE_O_HOME": "/home/plusu1", "SGE_O_LOGNAME": "plusu1",
                     "SGE_O_PATH": "/usr/bin:/bin", "SGE_O_SHELL": "/bin/bash",
                     "SGE_O_WORKDIR": "/tmp", "SGE_O_HOST": "localhost", "TERM": "NONE"},
                command=["60"], binary=False, script_path="/tmp/sleeper.sh", pe=None,
                pe_range=None, hold_jids=[], ar=None, granted=[], granted_pe=None, error="",
                reasons=[f'(-l arch=sol,h_rt=100) cannot run at host "{h}" because it offers '
                         "only hl:arch=lx-amd64" for h in ("node3", "vm", "node2", "node1")])
    base.update(changes)
    return base


def test_the_detail_has_qstat_js_fields_in_its_order():
    ours = views.detail(detail()).splitlines()
    theirs = recorded("qstat-j-pending.txt").splitlines()
    skipped = ("mail_list:", "binding:", "job_type:")      # mail and binding: not ours
    assert ours == [line.replace("/root/.cargo/bin:/root/.cargo/bin:/root/.pyenv/plugins/"
                                 "pyenv-virtualenv/shims:/root/.pyenv/shims:/root/.pyenv/bin:"
                                 "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                                 "/usr/bin:/bin")
                    for line in theirs if not line.startswith(skipped)]


def test_the_detail_of_running_parallel_ar_jobs_and_errors():
    text = views.detail(detail(pe="mpi", pe_range="3,4", ar=7, granted=[["all.q", "n1", 2],
                                                                       ["all.q", "n2", 2]],
                               granted_pe="mpi", reasons=[], hold_jids=["60"],
                               error="11/22/2026 20:21:03 [n1]: cannot start job: /x: No such file"))
    assert "parallel environment:  mpi range: 3,4" in text
    assert "jid_predecessor_list:       60" in text and "ar_id:                      7" in text
    assert "exec_host_list        1:    n1:2,n2:2" in text
    assert "error reason          1:      11/22/2026 20:21:03 [n1]: cannot start job" in text
