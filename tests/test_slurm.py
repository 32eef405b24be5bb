"""The Slurm backend against the real Slurm test cluster
(scripts/test-slurm.sh): each step of an AR's reservation, slot ARs as
cores, the conflict policies, health and drift, and convergence after a
crash between any two commands."""

from __future__ import annotations

import datetime
import json
import re
import time
from pathlib import Path

import pytest

from crashing_runner import CrashingRunner
from overlay.kit.remote import LocalRunner
from overlay.language.model import Allocation, State
from overlay_slurm import settings
from overlay_slurm.backend import SlurmBackend
from overlay_slurm.ledger import Ledger
from overlay_slurm.slurm import Slurm
from sge_cluster import reservation
from slurm_testbed import clean, job, require, reservation_names, sbatch, sh, wait_for
from slurm_testbed import reservation as shown

PREFIX = r"R9\d\d$"
"""The ARs here are 9xx: clean() removes their reservations."""


@pytest.fixture(autouse=True)
def cluster():
    require()
    clean(PREFIX)
    yield
    clean(PREFIX)


def epoch(text: str) -> int:
    """A time as scontrol prints it to the testbed (TZ=UTC)."""
    return int(datetime.datetime.fromisoformat(text).replace(tzinfo=datetime.timezone.utc)
               .timestamp())


def backend(state_dir: Path, conflict: str = "requeue", runner=None) -> SlurmBackend:
    chosen = settings.load({"conflict": conflict})
    return SlurmBackend(Slurm(runner or LocalRunner(chosen.environment)),
                        Ledger(str(state_dir / "slurm-ledger.json")), chosen)


def test_grant_makes_the_reservation_on_exactly_the_nodes_for_the_window(tmp_path):
    slurm = backend(tmp_path)
    ar = reservation(901, ("snode1", "snode2"), users=("plusu1", "@plusgrp"), slots=4)
    slurm.prepare(ar)
    made = shown("R901")
    assert made["Nodes"] == "snode[1-2]" and made["Users"] == "plusu1,plusu2"  # members by name
    assert made["State"] == "INACTIVE" and "IGNORE_JOBS" in made["Flags"]
    assert (epoch(made["StartTime"]), epoch(made["EndTime"])) == (ar.start, ar.end)
    waiting = sbatch("plusu2", "--reservation=R901", "-t", "1", "--wrap", "true")
    assert job(waiting)["JobState"] == "PENDING"
    refused = sh("sbatch", "--reservation=R901", "-t", "1", "--wrap", "true", user="plusu3")
    assert refused.returncode != 0 and "Access denied" in refused.stderr
    assert slurm.submit_hint(ar) == "sbatch --reservation=R901 job.sh"
    assert slurm.health([ar]) == {}


def test_a_slot_ar_reserves_its_slots_on_each_node_as_cores(tmp_path):
    slurm = backend(tmp_path)
    ar = reservation(902, ("snode1",), slots=1)
    ar.allocations = [Allocation("snode1", 1), Allocation("snode2", 3)]
    slurm.prepare(ar)
    made = shown("R902")
    assert made["Nodes"] == "snode[1-2]" and made["CoreCnt"] == "4"
    ar.allocations = [Allocation("snode1", 2), Allocation("snode2", 2)]
    slurm.modify(ar, ar)                                         # made anew: 22.05 cannot update it
    assert shown("R902")["CoreCnt"] == "4" and shown("R902")["Nodes"] == "snode[1-2]"
    ar.allocations = [Allocation("snode3", 4)]
    slurm.modify(ar, ar)                                         # whole node again
    assert shown("R902")["Nodes"] == "snode3"


def test_prepare_is_idempotent_and_mends_drift(tmp_path):
    slurm = backend(tmp_path)
    ar = reservation(903, ("snode1",))
    slurm.prepare(ar)
    slurm.prepare(ar)
    sh("scontrol", "update", "ReservationName=R903", "Users=plusu3", check=True)   # by hand
    slurm.health([ar])
    slurm.prepare(ar)
    assert shown("R903")["Users"] == "plusu1"
    sh("scontrol", "delete", "ReservationName=R903", check=True)
    slurm.health([ar])
    slurm.prepare(ar)
    assert shown("R903")["Nodes"] == "snode1"


def test_the_start_requeues_and_holds_foreign_jobs_until_the_end(tmp_path):
    foreign = sbatch("plusu2", "-w", "snode1", "-t", "10", "--wrap", "sleep 600")
    wait_for(lambda: job(foreign)["JobState"] == "RUNNING", what="the foreign job to run")
    slurm = backend(tmp_path)
    ar = reservation(904, ("snode1",), state=State.RUNNING, start_in=-2, slots=4)
    slurm.prepare(ar)
    slurm.activate(ar)
    wait_for(lambda: job(foreign)["JobState"] == "PENDING", what="the foreign job requeued")
    assert job(foreign)["Reason"] == "job_requeued_in_held_state"
    held = json.loads((tmp_path / "slurm-ledger.json").read_text())["held"]
    assert list(held) == [foreign] and held[foreign][:2] == [904, "foreign"]
    assert abs(held[foreign][2] - time.time()) < 60                # when its requeue returned
    mine = sbatch("plusu1", "--reservation=R904", "-t", "1", "--wrap", "sleep 300")
    wait_for(lambda: job(mine)["JobState"] == "RUNNING", what="the AR's job to run")
    assert job(mine)["NodeList"] == "snode1"
    ar.state = State.EXITED
    slurm.teardown(ar)
    assert "R904" not in reservation_names()
    assert job(mine)["JobState"] in ("CANCELLED", "COMPLETING")
    # requeued a moment ago: told to start now, slurmd would fail it, so it
    # keeps Slurm's own 120 s (tests/test_slurm_e2e.py: a longer window)
    released = job(foreign)
    assert released["JobState"] == "PENDING" and released["Reason"] in ("None", "BeginTime")
    eligible = datetime.datetime.fromisoformat(released["EligibleTime"])
    assert eligible.replace(tzinfo=datetime.timezone.utc).timestamp() > time.time() + 60


def test_kill_cancels_foreign_jobs_at_the_start(tmp_path):
    foreign = sbatch("plusu2", "-w", "snode2", "-t", "10", "--wrap", "sleep 600")
    wait_for(lambda: job(foreign)["JobState"] == "RUNNING", what="the foreign job to run")
    slurm = backend(tmp_path, "kill")
    ar = reservation(905, ("snode2",), state=State.RUNNING, start_in=-2)
    slurm.prepare(ar)
    slurm.activate(ar)
    wait_for(lambda: job(foreign)["JobState"] == "CANCELLED", what="the foreign job cancelled")


def test_a_node_down_puts_the_ar_in_error_and_back(tmp_path):
    slurm = backend(tmp_path)
    ar = reservation(906, ("snode3", "snode4"))
    slurm.prepare(ar)
    sh("scontrol", "update", "NodeName=snode4", "State=DOWN", "Reason=plus test", check=True)
    problems = slurm.health([ar])
    assert problems[906].startswith("snode4 DOWN") and "plus test" in problems[906]
    assert not {n.name: n for n in slurm.nodes()}["snode4"].alive
    sh("scontrol", "update", "NodeName=snode4", "State=RESUME", check=True)
    wait_for(lambda: slurm.health([ar]) == {}, what="snode4 to come back")


def test_cancel_gives_the_nodes_back_and_reconcile_forgets_what_the_store_forgot(tmp_path):
    slurm = backend(tmp_path)
    kept, cancelled, gone = (reservation(i, (n,)) for i, n in ((907, "snode1"), (908, "snode2"),
                                                              (909, "snode3")))
    for ar in (kept, cancelled, gone):
        slurm.prepare(ar)
    cancelled.state = State.DELETED
    slurm.release(cancelled)
    assert "R908" not in reservation_names()
    backend(tmp_path).reconcile([kept, cancelled])               # a restart after 909 was destroyed
    assert {"R907"} == {n for n in reservation_names() if re.match(PREFIX, n)}


def test_a_crash_between_any_two_commands_converges(tmp_path):
    """Grant, open, close one AR with a foreign job in the way and a crash
    after k commands, for every k; a new backend on the same ledger then
    brings Slurm to what the store says, and the foreign job runs again."""
    env = backend(tmp_path).settings.environment
    k = 0
    while True:
        foreign = sbatch("plusu2", "-w", "snode1", "-t", "10", "--wrap", "sleep 600")
        wait_for(lambda job_id=foreign: job(job_id)["JobState"] == "RUNNING",
                 what="the foreign job to run")
        state_dir = tmp_path / str(k)
        state_dir.mkdir()
        crashing = backend(state_dir, runner=CrashingRunner(env, k))
        ar = reservation(910, ("snode1",), start_in=-2, duration=600, slots=4)
        crashed_in = None
        for step, state in (("prepare", State.WAITING), ("activate", State.RUNNING),
                            ("teardown", State.EXITED)):
            ar.state = state
            try:
                if step == "activate":
                    crashing.prepare(ar)
                getattr(crashing, step)(ar)
            except Exception:
                crashed_in = step
                break
        if crashed_in is None:
            break
        recovered = backend(state_dir)
        if ar.state == State.RUNNING:
            recovered.prepare(ar)
            recovered.activate(ar)
            recovered.reconcile([ar])
            assert shown("R910")["Nodes"] == "snode1", f"crash after {k} commands"
            assert job(foreign)["JobState"] in ("PENDING", "COMPLETING"), \
                f"crash after {k} commands"
            ar.state = State.EXITED
        recovered.teardown(ar)
        recovered.reconcile([])
        assert "R910" not in reservation_names(), f"crash after {k} commands in {crashed_in}"
        wait_for(lambda job_id=foreign: job(job_id)["Reason"] in ("BeginTime", "None"),
                 what=f"the foreign job released after a crash after {k} commands")
        sh("scancel", foreign, check=True)
        k += 1
    assert k > 5                                                  # the cycle has many commands


def test_a_claims_job_is_submitted_into_the_reservation_as_its_owner(tmp_path):
    slurm = backend(tmp_path)
    ar = reservation(911, ("snode2",), state=State.RUNNING, start_in=-2, slots=4)
    slurm.prepare(ar)
    answer = slurm.submit_claimed(ar, {"script": "#!/bin/sh\nsleep 300\n", "name": "claimed",
                                       "stdout": "/dev/null"})
    shown_job = job(answer["id"])
    assert shown_job["UserId"].startswith("plusu1(") and shown_job["Reservation"] == "R911"
    assert shown_job["JobName"] == "claimed"
    wait_for(lambda: job(answer["id"])["JobState"] == "RUNNING", what="the claimed job to run")
    with pytest.raises(Exception, match="field 'queue' is not taken by Slurm"):
        slurm.submit_claimed(ar, {"script": "true", "queue": "debug"})

