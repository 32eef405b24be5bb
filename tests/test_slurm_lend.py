"""Lending idle reserved nodes on the real Slurm (issue 33): with
``lend_partition: lend`` an AR's reservation R<id> has a twin L<id> that
admits only jobs of the partition lend (scripts/slurm-job-submit.lua),
whose lower PriorityTier lets the AR's own job preempt them
(PreemptType=preempt/partition_prio, scripts/test-slurm.sh). A lent job
runs on the AR's idle node, is requeued the moment the AR's owner's job
is scheduled, which starts at once; the daemon tells job.preempted and
has the requeued job run again, sooner than Slurm's 120 s; a job that is
not preemptible never gets in; the AR's end removes both reservations."""

from __future__ import annotations

import time

import pytest

from daemon_harness import Daemon
from slurm_testbed import clean, job, require, reservation, reservation_names, sbatch, sh, wait_for
from test_job_events import stored_job_events

ARS = r"[RL]\d{1,3}$"
SETTINGS = ("backend: slurm\nslurm: {conflict: requeue, lend_partition: lend}\n"
            "reconcile_interval: 2\nstore: %s\n")


@pytest.fixture
def lending(store_url):
    require()
    clean(ARS)
    d = Daemon(SETTINGS % store_url).start()
    yield d, store_url
    d.cleanup()
    clean(ARS)


def state(job_id: str) -> str:
    return job(job_id)["JobState"]


def seen_running(daemon) -> None:
    """A pass of the daemon saw the one job running (a lent job's
    preemption is told by comparing two passes)."""
    wait_for(lambda: " 1 running job(s) " in daemon.ok("plusu1", "plus_query", "plusu1", "30m",
                                                       "nodes=1"), 60, "a pass to see the job")


def test_a_lent_job_is_preempted_by_the_ars_job_and_runs_again(lending):
    daemon, store_url = lending
    view = daemon.reserve("plusu1", "-s", "now", "-D", "10m", "-n", "1")
    ar_id, node = view["id"], view["allocations"][0]["node"]
    name, lent_name = f"R{ar_id}", f"L{ar_id}"
    wait_for(lambda: {name, lent_name} <= reservation_names(), 30, "both reservations")
    lender = reservation(lent_name)
    assert lender["Nodes"] == node and lender["PartitionName"] == "lend"
    assert lender["EndTime"] == reservation(name)["EndTime"]
    assert "OVERLAP" in reservation(name)["Flags"]

    refused = sh("sbatch", "-p", "debug", f"--reservation={lent_name}", "-t", "1",
                 "--wrap", "true", user="plusu2")
    assert refused.returncode != 0 and "submit to partition lend" in refused.stderr
    outsider = sbatch("plusu2", "-w", node, "-t", "5", "--wrap", "sleep 300")
    lent = sbatch("plusu2", "-p", "lend", f"--reservation={lent_name}", "-n", "4", "-t", "5",
                  "--wrap", "sleep 300")
    wait_for(lambda: state(lent) == "RUNNING", 30, "the lent job to run on the AR's node")
    assert job(lent)["NodeList"] == node
    assert state(outsider) == "PENDING"                 # not preemptible: kept off
    seen_running(daemon)

    owners = sbatch("plusu1", f"--reservation={name}", "-n", "4", "-t", "2",
                    "--wrap", "sleep 20")
    wait_for(lambda: state(owners) == "RUNNING", 20, "the AR's job to start")
    assert state(lent) == "PENDING" and job(lent)["Restarts"] == "1"
    wait_for(lambda: ("job.preempted", lent) in stored_job_events(store_url), 30,
             "the job.preempted event")
    assert state(outsider) == "PENDING"

    finished = time.time()
    wait_for(lambda: state(lent) == "RUNNING", 90, "the lent job to run again")
    assert time.time() - finished < 80                  # not Slurm's 120 s after the requeue
    assert state(outsider) == "PENDING"

    daemon.ok("plusu1", "plus_cancel", "-r", str(ar_id))
    wait_for(lambda: not {name, lent_name} & reservation_names(), 60,
             "both reservations gone with the AR")
    assert state(lent) in ("CANCELLED", "COMPLETING")


def test_a_lent_job_that_asked_not_to_be_requeued_is_killed(lending):
    daemon, store_url = lending
    view = daemon.reserve("plusu1", "-s", "now", "-D", "10m", "-n", "1")
    lent_name = f"L{view['id']}"
    wait_for(lambda: lent_name in reservation_names(), 30, "the lending reservation")
    lent = sbatch("plusu2", "-p", "lend", "--no-requeue", f"--reservation={lent_name}",
                  "-n", "4", "-t", "5", "--wrap", "sleep 300")
    wait_for(lambda: state(lent) == "RUNNING", 30, "the lent job to run")
    seen_running(daemon)
    owners = sbatch("plusu1", f"--reservation=R{view['id']}", "-n", "4", "-t", "1",
                    "--wrap", "sleep 5")
    wait_for(lambda: state(owners) == "RUNNING", 20, "the AR's job to start")
    assert state(lent) == "PREEMPTED"
    wait_for(lambda: ("job.preempted", lent) in stored_job_events(store_url), 30,
             "the job.preempted event")


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_a_slot_ar_lends_nothing(lending):
    daemon, _ = lending
    view = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "1", "-sn", "2")
    wait_for(lambda: f"R{view['id']}" in reservation_names(), 30, "the reservation")
    assert f"L{view['id']}" not in reservation_names()
