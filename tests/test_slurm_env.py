"""The real Slurm (scripts/test-slurm.sh) does what the Slurm backend will
ask of it: the test users' jobs run where they ask, as them; root makes,
changes and deletes reservations on named nodes that let only their users
in, and only in their window; jobs are requeued, held and released; nodes
go down and come back."""

from __future__ import annotations

import datetime
import os
import time
from pathlib import Path

import pytest

from slurm_testbed import (
    NODES,
    all_idle,
    clean,
    job,
    nodes,
    require,
    reservation,
    sbatch,
    sh,
    wait_for,
)

PREFIX = "plusenv"
"""Every reservation these tests make is named so; clean() removes them."""


@pytest.fixture(autouse=True)
def clean_cluster():
    require()
    clean(PREFIX)
    wait_for(all_idle, what="every node idle")
    yield
    clean(PREFIX)


def _utc(text: str) -> datetime.datetime:
    """A StartTime or EndTime as scontrol prints it under TZ=UTC."""
    return datetime.datetime.fromisoformat(text).replace(tzinfo=datetime.timezone.utc)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def test_every_node_is_idle_in_both_partitions():
    assert set(nodes()) == set(NODES)
    partitions = sh("sinfo", "-h", "-o", "%P %D %N", check=True).stdout.split("\n")
    assert "debug* 4 snode[1-4]" in partitions
    assert "pair 2 snode[3-4]" in partitions


def test_a_users_job_runs_on_the_node_it_names_as_that_user():
    out = Path(f"/tmp/{PREFIX}-{os.getpid()}.out")
    out.unlink(missing_ok=True)
    try:
        job_id = sbatch("plusu2", "-w", "snode3", "-t", "1", "-o", str(out),
                        "--wrap", 'echo "$(id -un) $SLURMD_NODENAME"')
        wait_for(lambda: job(job_id)["JobState"] == "COMPLETED", what=f"job {job_id} completed")
        assert out.read_text() == "plusu2 snode3\n"
        assert out.stat().st_uid == int(sh("id", "-u", "plusu2").stdout)
    finally:
        out.unlink(missing_ok=True)


def test_a_reservation_lets_only_its_user_in_and_only_in_its_window():
    name = f"{PREFIX}1"
    created = sh("scontrol", "create", "reservation", f"ReservationName={name}",
                 "Nodes=snode1,snode2", "StartTime=now+8", "EndTime=now+300", "Users=plusu1")
    assert created.returncode == 0 and created.stdout == f"Reservation created: {name}\n", created
    shown = reservation(name)
    assert (shown["Nodes"], shown["Users"], shown["State"]) == ("snode[1-2]", "plusu1", "INACTIVE")
    start = _utc(shown["StartTime"])

    waiting = sbatch("plusu1", f"--reservation={name}", "-N", "2", "-t", "2", "--wrap", "sleep 120")
    assert job(waiting)["JobState"] == "PENDING"
    refused = sh("sbatch", f"--reservation={name}", "-t", "1", "--wrap", "true", user="plusu2")
    assert refused.returncode == 1
    assert "Access denied to requested reservation" in refused.stderr
    # a job outside the reservation that would overlap the window stays off its nodes
    foreign = sbatch("plusu2", "-w", "snode1", "-t", "10", "--wrap", "sleep 120")

    wait_for(lambda: job(waiting)["JobState"] == "RUNNING", what=f"job {waiting} running")
    assert _now() >= start
    assert reservation(name)["State"] == "ACTIVE"
    assert job(waiting)["NodeList"] == "snode[1-2]"
    assert job(foreign)["JobState"] == "PENDING"


def test_root_updates_and_deletes_a_reservation():
    name = f"{PREFIX}2"
    sh("scontrol", "create", "reservation", f"ReservationName={name}", "Nodes=snode3",
       "StartTime=now+600", "Duration=10", "Users=plusu1", check=True)
    sh("scontrol", "update", f"ReservationName={name}", "Nodes=snode3,snode4",
       "EndTime=now+1800", "Users+=plusu2", check=True)
    shown = reservation(name)
    assert (shown["Nodes"], shown["Users"], shown["CoreCnt"]) == ("snode[3-4]", "plusu1,plusu2", "8")
    assert _utc(shown["EndTime"]) - _now() > datetime.timedelta(minutes=25)

    unknown = sh("scontrol", "update", "ReservationName=plusenv_none", "Users=plusu1")
    assert unknown.returncode == 1 and "Requested reservation is invalid" in unknown.stderr
    sh("scontrol", "delete", f"ReservationName={name}", check=True)
    assert reservation(name) is None
    again = sh("scontrol", "delete", f"ReservationName={name}")
    assert again.returncode == 1 and "Requested reservation is invalid" in again.stderr


def test_only_root_creates_reservations():
    refused = sh("scontrol", "create", "reservation", f"ReservationName={PREFIX}3", "Nodes=snode1",
                 "StartTime=now+600", "Duration=10", "Users=plusu1", user="plusu1")
    assert refused.returncode == 1 and "Invalid user id" in refused.stderr
    assert reservation(f"{PREFIX}3") is None


def test_a_job_is_requeued_held_and_released():
    job_id = sbatch("plusu2", "-w", "snode4", "-t", "5", "--wrap", "sleep 300")
    wait_for(lambda: job(job_id)["JobState"] == "RUNNING", what=f"job {job_id} running")
    sh("scontrol", "requeue", job_id, check=True)
    wait_for(lambda: job(job_id)["JobState"] == "PENDING", what=f"job {job_id} requeued")
    assert job(job_id)["Restarts"] == "1"
    sh("scontrol", "hold", job_id, check=True)
    assert (job(job_id)["JobState"], job(job_id)["Reason"]) == ("PENDING", "JobHeldAdmin")
    sh("scontrol", "release", job_id, check=True)
    # a requeued job may start only 120 s after the requeue, unless told now;
    # but slurmd revokes a killed job's credential to the second and refuses
    # a launch credential of that same second ("Killing non-startable batch
    # JobId=...: Job credential revoked": the job then ends, exit 1)
    requeued_by = int(time.time())
    wait_for(lambda: int(time.time()) > requeued_by, what="a second after the requeue")
    sh("scontrol", "update", f"JobId={job_id}", "StartTime=now", check=True)
    wait_for(lambda: job(job_id)["JobState"] == "RUNNING", what=f"job {job_id} running again")
    assert job(job_id)["NodeList"] == "snode4"


def test_a_node_goes_down_and_comes_back():
    sh("scontrol", "update", "NodeName=snode2", "State=DOWN", "Reason=plus test", check=True)
    wait_for(lambda: nodes()["snode2"][0] == "down", what="snode2 down")
    assert nodes()["snode2"][2] == "plus test"
    refused = sh("scontrol", "update", "NodeName=snode2", "State=DOWN")
    assert refused.returncode == 1 and "You must specify a reason" in refused.stderr
    sh("scontrol", "update", "NodeName=snode2", "State=RESUME", check=True)
    wait_for(lambda: nodes()["snode2"][:2] == ("idle", []), what="snode2 idle again")


def test_a_reservations_end_ends_the_jobs_running_in_it():
    """ResvOverRun=0: Slurm kills them (state TIMEOUT), within its periodic
    check (up to about 30 s late), and then forgets the reservation."""
    name = f"{PREFIX}4"
    sh("scontrol", "create", "reservation", f"ReservationName={name}", "Nodes=snode3",
       "StartTime=now", "EndTime=now+5", "Users=plusu1", check=True)
    job_id = sbatch("plusu1", f"--reservation={name}", "-t", "10", "--wrap", "sleep 300")
    wait_for(lambda: job(job_id)["JobState"] in ("RUNNING", "TIMEOUT"), what=f"job {job_id} started")
    wait_for(lambda: job(job_id)["JobState"] == "TIMEOUT", what=f"job {job_id} ended with the reservation")
    wait_for(lambda: reservation(name) is None, what=f"{name} gone")
