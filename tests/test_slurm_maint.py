"""Maintenance and nodes cleared ahead on the real Slurm (issue 33): once
an AR's reservation exists (from its grant on), Slurm's own scheduler
starts no job on its nodes whose time limit would run into the window,
and starts one that ends before it; a maintenance AR is made on a node
down, with Slurm's MAINT flag, and over another AR's reservation with
--force, which puts that AR in W naming it."""

from __future__ import annotations

import pytest

from daemon_harness import Daemon
from slurm_testbed import clean, job, require, reservation, sbatch, sh, wait_for

ARS = r"R\d{1,3}$"
"""The reservations of a test daemon's ARs (a fresh store: ids from 1)."""


@pytest.fixture
def daemon():
    require()
    clean(ARS)
    d = Daemon("backend: slurm\nslurm: {conflict: requeue}\nreconcile_interval: 2\n").start()
    yield d
    d.cleanup()
    clean(ARS)


def test_a_job_that_would_overrun_the_start_waits_and_one_that_ends_before_it_runs(daemon):
    view = daemon.reserve("plusu1", "-s", "now+4m", "-D", "10m", "-n", "1", "-l", "h=snode2")
    wait_for(lambda: reservation(f"R{view['id']}") is not None, what="the reservation")
    overruns = sbatch("plusu2", "-w", "snode2", "--time=10", "--wrap", "sleep 600")
    fits = sbatch("plusu2", "-w", "snode2", "--time=1", "--wrap", "sleep 30")
    wait_for(lambda: job(fits)["JobState"] == "RUNNING", what="the job that ends in time")
    wait_for(lambda: job(overruns)["Reason"] not in ("None", "Priority"),
             what="a reason why the long job waits")
    assert job(overruns)["JobState"] == "PENDING", job(overruns)
    sh("scancel", overruns, fits)


def test_maintenance_on_a_down_node_and_over_another_ar_with_force(daemon):
    other = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "1", "-l", "h=snode3",
                           "-repair", "none")
    wait_for(lambda: reservation(f"R{other['id']}") is not None, what="the user's reservation")
    refused = daemon.run("plusu1", "plus_reserve", "--maint", "-s", "now+1h", "-D", "1h",
                         "-n", "1")
    assert refused.returncode == 1 and "--maint: plusu1 is not a manager" in refused.stderr
    sh("scontrol", "update", "NodeName=snode4", "State=DOWN", "Reason=plus maint test",
       check=True)
    wait_for(lambda: "snode4" not in daemon.ok("plusu1", "plus_availnodes", "-s", "now+1h",
                                                "-e", "now+2h"), what="the node seen down")
    down = daemon.reserve("root", "--maint", "-s", "now+1h", "-D", "1h", "-n", "1",
                          "-l", "h=snode4", "-N", "fw")
    assert down["state"] == "w" and down["request"]["maint"] is True
    wait_for(lambda: reservation(f"R{down['id']}") is not None, what="the maintenance one")
    assert "MAINT" in reservation(f"R{down['id']}")["Flags"]
    overlap = daemon.run("root", "plus_reserve", "--maint", "-s", "now+1h", "-D", "1h",
                         "-n", "1", "-l", "h=snode3")
    assert overlap.returncode == 1 and f"held by AR(s) {other['id']}" in overlap.stderr
    forced = daemon.reserve("root", "--maint", "--force", "-s", "now+1h", "-D", "1h", "-n", "1",
                            "-l", "h=snode3")
    wait_for(lambda: reservation(f"R{forced['id']}") is not None, what="the forced one")
    [shown] = daemon.status("-r", str(other["id"]))
    assert shown["state"] == "W"
    assert shown["message"] == f"reserved node(s) snode3 taken for maintenance by AR {forced['id']}"
    assert reservation(f"R{other['id']}") is not None      # Slurm keeps both
