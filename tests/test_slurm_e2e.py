"""End to end on the real Slurm: plus_scheduler with the slurm backend,
the commands run as real users, jobs really running on snode1..snode4."""

from __future__ import annotations

import re
import time

import pytest

from approval_e2e import APPROVAL_SETTINGS, on_the_batch_system_only_once_approved
from daemon_harness import Daemon, released_when_idle, used_by_the_job
from event_harness import API_SETTINGS, job_events, seen_gone_once, until, watching
from http_harness import answering, free_port
from overlay.events.catalog import JOB_ENDED, JOB_STARTED
from slurm_testbed import clean, job, require, reservation, reservation_names, sbatch, sh, wait_for

ARS = r"R\d{1,3}$"
"""The reservations of a test daemon's ARs (a fresh store: ids from 1)."""
SETTINGS = """\
backend: slurm
slurm: {conflict: %s}
"""


@pytest.fixture
def daemon(request):
    require()
    clean(ARS)
    d = Daemon(SETTINGS % getattr(request, "param", "requeue")).start()
    yield d
    d.cleanup()
    clean(ARS)


def state(job_id: str) -> str:
    return job(job_id)["JobState"]


def test_an_ar_window_on_slurm_from_grant_to_end(daemon):
    foreign = sbatch("plusu2", "-w", "snode1", "-t", "10", "--wrap", "sleep 600")
    wait_for(lambda: state(foreign) == "RUNNING", what="the foreign job to run")

    # the window outlasts ledger.REQUEUE_SETTLE: the requeued job is told to
    # start at the end rather than 120 s after its requeue
    view = daemon.reserve("plusu1", "-s", "now+20s", "-D", "25s", "-n", "1")
    ar_id, name = view["id"], f"R{view['id']}"
    node = view["allocations"][0]["node"]
    if node != "snode1":
        sh("scancel", foreign)
        foreign = sbatch("plusu2", "-w", node, "-t", "10", "--wrap", "sleep 600")
        wait_for(lambda: state(foreign) == "RUNNING", what="the foreign job to run")
    wait_for(lambda: name in reservation_names(), 30, "the enforcer to make the reservation")
    made = reservation(name)
    assert made["Nodes"] == node and made["Users"] == "plusu1"
    detail = daemon.ok("plusu1", "plus_status", "-r", str(ar_id))
    assert re.search(rf"submit: +sbatch --reservation={name} job\.sh", detail)

    ar_job = sbatch("plusu1", f"--reservation={name}", "-t", "1", "--wrap", "sleep 300")
    stranger = sh("sbatch", f"--reservation={name}", "-t", "1", "--wrap", "true", user="plusu3")
    assert stranger.returncode != 0 and "Access denied" in stranger.stderr
    assert state(ar_job) == "PENDING"                            # nobody runs before the start

    wait_for(lambda: state(ar_job) == "RUNNING", view["start"] + 20 - time.time(),
             "the AR's job to run at the start")
    assert time.time() >= view["start"]
    assert job(ar_job)["NodeList"] == node
    wait_for(lambda: state(foreign) == "PENDING", 10, "the foreign job requeued")
    assert job(foreign)["Reason"] == "job_requeued_in_held_state"
    normal = sbatch("plusu1", "-w", node, "-t", "1", "--wrap", "sleep 300")
    time.sleep(3)
    assert state(normal) == "PENDING"                            # the owner's normal job stays out
    assert daemon.status("-r", str(ar_id))[0]["state"] == "r"

    wait_for(lambda: name not in reservation_names(), view["end"] + 20 - time.time(),
             "the reservation gone at the end")
    assert state(ar_job) in ("CANCELLED", "COMPLETING", "TIMEOUT")
    wait_for(lambda: state(foreign) == "RUNNING", 30, "the requeued job to run again")
    assert time.time() < view["start"] + 100                   # not Slurm's 120 s after
    assert daemon.status("-ne", "1")[0]["state"] == "x"


def test_a_daemon_killed_during_the_window_converges_after_a_restart(daemon):
    view = daemon.reserve("plusu1", "-s", "now+3s", "-D", "12s", "-n", "2")
    name = f"R{view['id']}"
    wait_for(lambda: reservation(name) is not None and reservation(name)["State"] == "ACTIVE",
             20, "the window to open")
    daemon.kill9()
    wait_for(lambda: time.time() > view["end"] + 1, 30, "the end to pass")
    daemon.start()
    wait_for(lambda: name not in reservation_names(), 20, "the restarted daemon to tear down")
    assert daemon.status("-ne", "1")[0]["state"] == "x"


@pytest.mark.parametrize("daemon", ["avoid"], indirect=True)
def test_avoid_refuses_nodes_whose_jobs_would_outlast_the_start(daemon):
    endless = sbatch("plusu2", "-w", "snode1", "-t", "UNLIMITED", "--wrap", "sleep 600")
    wait_for(lambda: state(endless) == "RUNNING", what="the job to run")
    wait_for(lambda: " 1 running job(s) " in daemon.ok("plusu1", "plus_query", "plusu1", "30m",
                                                       "nodes=1"), 60, "a pass to observe the job")
    result = daemon.run("plusu1", "plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "4")
    assert result.returncode == 1
    assert f"node busy: job {endless} of plusu2 has no time limit" in result.stderr
    view = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "3")
    assert "snode1" not in [a["node"] for a in view["allocations"]]


def test_modify_cancel_and_destroy(daemon):
    view = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "1")
    name = f"R{view['id']}"
    wait_for(lambda: name in reservation_names(), 30, "the enforcer to make the reservation")
    daemon.ok("plusu1", "plus_modify", "-r", str(view["id"]), "-e", "now+3h")
    wait_for(lambda: reservation(name)["Duration"].startswith("02:00:"), 30,
             "the reservation to follow the modify")       # "now" is read a moment later
    daemon.ok("plusu1", "plus_cancel", "-r", str(view["id"]))
    wait_for(lambda: name not in reservation_names(), 30, "the enforcer to give the nodes back")
    daemon.ok("plusu1", "plus_destroy", "-r", str(view["id"]))
    assert daemon.status("-ne", "1") == [] or daemon.status("-ne", "1")[0]["state"] != "r"


def test_a_node_down_puts_the_ar_in_w_and_back(daemon):
    view = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "1", "-repair", "none")
    node = view["allocations"][0]["node"]
    wait_for(lambda: f"R{view['id']}" in reservation_names(), 30, "the reservation")
    sh("scontrol", "update", f"NodeName={node}", "State=DOWN", "Reason=plus e2e", check=True)
    wait_for(lambda: daemon.status("-r", str(view["id"]))[0]["state"] == "W", 60,
             "the AR to go W")
    sh("scontrol", "update", f"NodeName={node}", "State=RESUME", check=True)
    wait_for(lambda: daemon.status("-r", str(view["id"]))[0]["state"] == "w", 60,
             "the AR to come back")


def test_a_node_down_before_the_window_is_replaced_in_the_reservation(daemon):
    """Self-repair on Slurm: the reservation R<id> takes a free node in
    place of the one that went down, and the AR is back in w."""
    view = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "2")
    name, nodes = f"R{view['id']}", [a["node"] for a in view["allocations"]]
    wait_for(lambda: reservation(name) is not None, 30, "the reservation")
    sh("scontrol", "update", f"NodeName={nodes[1]}", "State=DOWN", "Reason=plus repair",
       check=True)
    moved: list[str] = []

    def repaired() -> bool:
        (ar,) = daemon.status("-r", str(view["id"]))
        moved[:] = [a["node"] for a in ar["allocations"]]
        return ar["state"] == "w" and nodes[1] not in moved
    wait_for(repaired, 60, "the AR repaired")
    assert moved[0] == nodes[0] and len(moved) == 2
    expected = sh("scontrol", "show", "hostnames", ",".join(moved), check=True).stdout.split()

    def held() -> list[str]:
        found = reservation(name)
        return [] if found is None else sorted(sh(
            "scontrol", "show", "hostnames", found["Nodes"], check=True).stdout.split())
    wait_for(lambda: held() == sorted(expected), 60, "the reservation to hold the replacement")


def test_a_reservation_deleted_by_hand_is_made_again(daemon):
    view = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "1")
    name = f"R{view['id']}"
    wait_for(lambda: name in reservation_names(), 30, "the reservation")
    sh("scontrol", "delete", f"ReservationName={name}", check=True)
    wait_for(lambda: name in reservation_names(), 60, "the next pass to make it again")


def test_a_slot_ar_is_its_slots_as_cores_on_each_node(daemon):
    view = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "2", "-sn", "3")
    name = f"R{view['id']}"
    wait_for(lambda: name in reservation_names(), 30, "the reservation")
    made = reservation(name)
    assert made["CoreCnt"] == "6" and made["TRES"] == "cpu=6"


@pytest.fixture
def watched():
    """The daemon with its HTTP API, for the event stream and webhooks."""
    require()
    clean(ARS)
    port = free_port()
    d = Daemon(SETTINGS % "requeue" + API_SETTINGS.format(port=port)).start()
    yield d, answering(d, port), port
    d.cleanup()
    clean(ARS)


def test_an_ars_jobs_start_and_end_once_by_id_across_a_restart(watched):
    """Slurm's jobs in an AR's reservation come into and leave the running
    jobs the leader publishes (squeue): each is seen started and ended once
    by id by the AR's users and a webhook, across a restart of the daemon
    while one runs; plusu3, whom the AR does not name, sees none."""
    daemon, url, port = watched
    with watching(daemon, url) as (streams, receiver):
        view = daemon.reserve("plusu1", "-s", "now+5s", "-D", "90s", "-n", "1", "-U", "plusu2")
        name, node = f"R{view['id']}", view["allocations"][0]["node"]
        wait_for(lambda: name in reservation_names(), 30, "the reservation")
        first = sbatch("plusu1", f"--reservation={name}", "-t", "1", "--wrap", "sleep 600")
        second = sbatch("plusu2", f"--reservation={name}", "-t", "1", "--wrap", "sleep 15")
        until(lambda: (JOB_STARTED, second) in job_events(streams["plusu1"].events),
              "the second job's start")
        daemon.stop()                                   # the restart while it runs
        daemon.start()
        answering(daemon, port)
        until(lambda: (JOB_ENDED, second) in job_events(streams["plusu1"].events),
              "the second job's end")
        daemon.ok("plusu1", "plus_cancel", "-r", str(view["id"]))    # ends the first job
        seen_gone_once(streams, receiver, (first, second), second, node, 15)


def test_qrsubs_slots_are_cores_filled_up_over_the_nodes(daemon):
    """Slurm has no parallel environments: qrsub's -pe NAME N reserves N
    cores, node by node, as $fill_up would; the name is kept for qrstat."""
    granted = daemon.run("plusu1", "plus_qrsub", "-d", "3600", "-pe", "mpi", "6")
    assert granted.returncode == 0, granted.stderr
    ar_id = int(re.search(r"advance reservation (\d+)", granted.stdout).group(1))
    name = f"R{ar_id}"
    wait_for(lambda: name in reservation_names(), 30, "the reservation")
    made = reservation(name)
    assert made["CoreCnt"] == "6" and made["Users"] == "plusu1"
    assert "mpi" in daemon.ok("plusu1", "plus_qrstat", "-ar", str(ar_id))
    for words, said in ((("-pe", "mpi", "100"), "100 slot(s) asked"),
                        (("-alloc", "$round_robin", "2"), "-alloc needs a scheduler")):
        refused = daemon.run("plusu1", "plus_qrsub", "-d", "3600", *words)
        assert refused.returncode != 0 and said in refused.stderr, refused.stderr


def test_an_idle_ar_is_released_and_its_reservation_deleted(daemon):
    """Early release on Slurm: an open AR that runs no job for its
    --idle-release ends then, and its reservation R<id> is deleted."""
    view = daemon.reserve("plusu1", "-s", "now", "-D", "1h", "-n", "1", "--idle-release", "5")
    name = f"R{view['id']}"
    released_when_idle(daemon, view, 5)
    wait_for(lambda: name not in reservation_names(), 30, "the reservation deleted")


def test_a_job_in_an_ar_is_its_used_node_hours(daemon):
    """Used node-hours on Slurm: a job of 20 s in an open AR is, once the
    leader saw it end, its AR's used node-hours in plus_account (a record
    of the pass's precision, no extra squeue)."""
    view = daemon.reserve("plusu1", "-s", "now", "-D", "1h", "-n", "1")
    name = f"R{view['id']}"
    wait_for(lambda: name in reservation_names(), 30, "the reservation")
    job_id = sbatch("plusu1", f"--reservation={name}", "-t", "1", "--wrap", "sleep 20")
    used_by_the_job(daemon, view["id"], job_id, 20)


def test_an_ar_awaiting_approval_is_on_slurm_only_once_approved():
    require()
    clean(ARS)
    approving = Daemon(SETTINGS % "requeue" + APPROVAL_SETTINGS).start()
    try:
        on_the_batch_system_only_once_approved(
            approving, lambda ar_id: f"R{ar_id}" in reservation_names())
    finally:
        approving.cleanup()
        clean(ARS)


def test_each_occurrence_of_a_series_is_a_reservation_of_its_own(daemon):
    """plus_reserve --repeat: the backend sees ARs, one Slurm reservation
    each, made and removed with no change of its own."""
    view = daemon.reserve("plusu1", "-s", "now+1h", "-D", "30m", "-n", "1",
                          "--repeat", "FREQ=DAILY;COUNT=2")
    series = view["series_made"]
    assert view["series"] == series["id"] and series["granted"] == 2
    first, second = (f"R{o['id']}" for o in series["occurrences"])
    wait_for(lambda: {first, second} <= set(reservation_names()), 30,
             "the enforcer to make both occurrences' reservations")
    assert reservation(first)["Users"] == reservation(second)["Users"] == "plusu1"
    assert reservation(first)["StartTime"] != reservation(second)["StartTime"]
    listed = daemon.ok("plusu1", "plus_status", "-series")
    assert re.search(rf"^ +{series['id']} +plusu1 +complete +FREQ=DAILY;COUNT=2", listed, re.M)
    daemon.ok("plusu1", "plus_cancel", "-series", str(series["id"]))
    wait_for(lambda: not {first, second} & set(reservation_names()), 30,
             "the enforcer to give both occurrences' nodes back")
