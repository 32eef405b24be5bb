"""The TORQUE backend against the TORQUE test double (tests/torque_double,
proven against the recording of a real TORQUE 6.1): every step of the AR
cycle, the conflict policies, TORQUE's traps, health, self-scheduling, and
convergence after a crash between any two commands."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

from crashing_runner import CrashingRunner
from overlay.contract.backend import Inventory
from overlay.daemon.config import Config
from overlay.kit.remote import CommandError, LocalRunner
from overlay.kit.ssh import SshRunner
from overlay.language.model import State
from overlay.language.request import RequestError
from overlay.placement.ordering import JobOrder
from overlay_torque import settings
from overlay_torque.backend import TorqueBackend
from overlay_torque.ledger import Ledger
from overlay_torque.selfsched import SelfScheduler, Window
from overlay_torque.torque import Torque, TorqueError
from sge_cluster import reservation, wait_for
from torque_cleanup import leftovers, scrub
from torque_double import install
from torque_double.simulate import RERUN_STEP, SUBMIT_CYCLE_DELAY

NODES = (("n1", 4), ("n2", 4))
FILTER = os.path.join(os.path.dirname(sys.executable), "plus_torque_filter")


@pytest.fixture
def double():
    """In a directory the test users can reach (pytest's tmp_path is root's only)."""
    directory = tempfile.mkdtemp(prefix="plus-torque-")
    double = install(directory, nodes=NODES, server="srv", next_job_number=1)
    yield double
    double.thaw()
    scrub(double.path)
    assert leftovers(double.path) == []
    shutil.rmtree(directory, ignore_errors=True)


def backend(double, state_dir, runner=None, windows_path=None, **options) -> TorqueBackend:
    chosen = settings.load(options)
    torque = Torque(runner or LocalRunner(chosen.environment), double.path, chosen.timeout)
    ledger = Ledger(str(state_dir / "torque-ledger.json"))
    scheduler = None
    if chosen.scheduler == "plus":
        scheduler = SelfScheduler(torque, ledger, JobOrder(), ("NodeName",), chosen.schedule_interval)
    return TorqueBackend(torque, ledger, chosen, 60, scheduler, windows_path)


def qsub(double, user: str, *args: str, script: str = "sleep 600") -> str:
    """Submit, then let the pbs_sched cycle the submission kicks run: it
    comes a moment after qsub returns (SUBMIT_CYCLE_DELAY)."""
    result = subprocess.run(["runuser", "-u", user, "--", f"{double.path}/qsub", *args],
                            input=script, capture_output=True, text=True, cwd="/tmp")
    assert result.returncode == 0, result.stderr
    double.advance(SUBMIT_CYCLE_DELAY[1])
    return result.stdout.strip()


def qmgr(double, command: str) -> subprocess.CompletedProcess:
    return subprocess.run([f"{double.path}/qmgr", "-c", command], capture_output=True, text=True)


def jobs(double) -> dict[str, dict]:
    return double.state()["jobs"]


def settled(double) -> dict[str, dict]:
    """The jobs once every rerun asked for has taken place (up to 60 ms on a
    real server, with no epilogue)."""
    double.advance(2 * RERUN_STEP[1])
    return jobs(double)


def commands(double, since: int = 0) -> list[str]:
    return [" ".join(entry["argv"]) for entry in double.command_log()[since:]]


def test_grant_creates_a_queue_that_accepts_but_does_not_run_and_tags_the_nodes(double, tmp_path):
    ar = reservation(7, ("n1",), users=("plusu1", "plusu2"), duration=1800)
    backend(double, tmp_path).prepare(ar)
    state = double.state()
    queue = state["queues"]["R7"]
    assert (queue["enabled"], queue["started"], queue["acl_user_enable"]) == ("True", "False", "True")
    assert queue["acl_users"] == "plusu1,plusu2" and queue["keep_completed"] == "0"
    assert queue["resources_default.walltime"] == "00:29:00"           # duration - duration_offset
    assert queue["resources_default.nodes"] == "1:R7"                  # a job without a spec is bound
    assert state["nodes"]["n1"]["properties"] == ["R7"] and state["nodes"]["n2"]["properties"] == []
    job = qsub(double, "plusu1", "-q", "R7", "-l", "nodes=1:R7")
    refused = subprocess.run(["runuser", "-u", "plusu3", "--", f"{double.path}/qsub", "-q", "R7"],
                             input="sleep 1", capture_output=True, text=True, cwd="/tmp")
    assert refused.returncode == 159 and "ACL rejected" in refused.stderr
    double.advance(60)
    assert jobs(double)[job]["state"] == "Q"                            # nothing runs before the start


def test_prepare_is_idempotent_and_corrects_drift(double, tmp_path):
    ar = reservation(8, ("n1", "n2"))
    plugin = backend(double, tmp_path)
    plugin.prepare(ar)
    before = len(double.command_log())
    plugin.prepare(ar)
    assert len(double.command_log()) == before                          # nothing to do, nothing done
    assert qmgr(double, "set queue R8 acl_users=plusu3").returncode == 0
    assert qmgr(double, "set node n2 properties -= R8").returncode == 0
    plugin._applied.clear()                                             # a restart
    backend(double, tmp_path).prepare(ar)
    state = double.state()
    assert state["queues"]["R8"]["acl_users"] == "plusu1" and "R8" in state["nodes"]["n2"]["properties"]


def test_jobs_submitted_without_the_property_are_bound_to_the_ar_nodes(double, tmp_path):
    ar = reservation(9, ("n2",))
    plugin = backend(double, tmp_path)
    plugin.prepare(ar)
    bare = qsub(double, "plusu1", "-q", "R9")
    two = qsub(double, "plusu1", "-q", "R9", "-l", "nodes=1:ppn=2")
    plugin.reconcile([ar])
    assert jobs(double)[bare]["nodes"] == "1:R9" and jobs(double)[two]["nodes"] == "1:ppn=2:R9"


def test_a_window_from_grant_to_end_under_pbs_sched(double, tmp_path):
    plugin = backend(double, tmp_path)
    foreign = qsub(double, "plusu2", "-l", "nodes=n1:ppn=4")
    assert jobs(double)[foreign]["state"] == "R"
    ar = reservation(10, ("n1",), start_in=-1)
    plugin.prepare(ar)
    ar_job = qsub(double, "plusu1", "-q", "R10", "-l", "nodes=1:R10")
    unbound = qsub(double, "plusu1", "-q", "R10")
    qsub(double, "plusu3", "-l", "nodes=n2:ppn=4")                        # n2 busy elsewhere
    waiting = qsub(double, "plusu3")                                       # could land on n1
    assert jobs(double)[waiting]["state"] == "Q"
    ar.state = State.RUNNING
    mark = len(double.command_log())
    plugin.activate(ar)
    state = settled(double)
    assert state[foreign]["state"] == "H" and state[foreign]["hold"] == "u"   # requeued, held
    assert state[waiting]["hold"] == "u"                                       # kept off n1
    assert state[ar_job]["state"] == "R" and state[ar_job]["exec_host"].startswith("n1/")
    assert state[unbound]["state"] == "R" and state[unbound]["nodes"] == "1:R10"
    started = commands(double, mark)
    assert started.index("qmgr -c set queue R10 started=True") < started.index(
        "qmgr -c set server scheduling=true")                              # the kick comes after
    late = qsub(double, "plusu3")                                          # submitted in the window
    plugin.reconcile([ar])
    assert jobs(double)[late]["hold"] == "u"
    mark = len(double.command_log())
    ar.state = State.EXITED
    plugin.teardown(ar)
    log = commands(double, mark)
    deleted = next(i for i, c in enumerate(log) if c == "qmgr -c delete queue R10")
    untagged = next(i for i, c in enumerate(log) if c == "qmgr -c set node n1 properties -= R10")
    assert deleted < untagged                                               # pbs_sched trap
    state = double.state()
    assert "R10" not in state["queues"] and state["nodes"]["n1"]["properties"] == ["plus"]
    assert not state["nodes"]["n1"]["bugged"]
    assert {state["jobs"][j]["hold"] for j in (foreign, waiting, late)} == {"n"}
    assert ar_job not in state["jobs"] or state["jobs"][ar_job]["state"] == "C"
    assert qmgr(double, "set node n1 properties += later").returncode == 0  # the node still changes


def test_requeue_makes_a_non_rerunnable_job_rerunnable_and_gives_its_setting_back(double, tmp_path):
    plugin = backend(double, tmp_path)
    stubborn = qsub(double, "plusu2", "-r", "n", "-l", "nodes=n1")
    ar = reservation(11, ("n1",), state=State.RUNNING, start_in=-1)
    plugin.prepare(ar)
    plugin.activate(ar)
    assert settled(double)[stubborn]["state"] == "H" and jobs(double)[stubborn]["rerunable"]
    ar.state = State.EXITED
    plugin.teardown(ar)
    job = jobs(double)[stubborn]
    assert job["hold"] == "n" and not job["rerunable"] and job["state"] in ("Q", "R")


def test_a_job_read_mid_requeue_is_asked_once_and_a_bad_state_answer_is_no_failure(double, tmp_path):
    """A real 6.1 server takes a requeued job R -> E -> H over 40 to 60 ms;
    a pass that reads it as E, or whose qrerun finds it H (exit 170), must
    neither send the orders again nor fail."""
    double.freeze()
    plugin = backend(double, tmp_path)
    foreign = qsub(double, "plusu2", "-l", "nodes=n1")
    ar = reservation(16, ("n1",), state=State.RUNNING, start_in=-1)
    plugin.prepare(ar)
    plugin.activate(ar)
    mark = len(double.command_log())
    double.advance(RERUN_STEP[1])
    assert jobs(double)[foreign]["state"] == "E"
    plugin.reconcile([ar])                                             # mid-requeue: no error
    double.advance(RERUN_STEP[1])
    assert jobs(double)[foreign]["state"] == "H"
    plugin.reconcile([ar])
    assert not [c for c in commands(double, mark) if c.startswith(("qhold", "qrerun"))]
    assert plugin.ledger.leaving == {} and plugin.delays(ar) == []
    assert plugin.torque.rerun(foreign)                                # 170: held, off its node


def test_a_long_epilogue_gets_the_orders_once_and_the_ar_jobs_start_when_it_ends(double, tmp_path):
    """A 15 s epilogue keeps a requeued job R: the hold and rerun are sent
    once, plus_status -r says why the window waits, and the AR's jobs start
    as soon as the job has left, not at the next periodic cycle."""
    double.freeze()
    double.set_epilogue(15)
    plugin = backend(double, tmp_path)
    plugin.start()
    try:
        foreign = qsub(double, "plusu2", "-l", "nodes=n1:ppn=4")
        ar = reservation(17, ("n1",), state=State.WAITING, start_in=-1)
        plugin.prepare(ar)
        ar_job = qsub(double, "plusu1", "-q", "R17", "-l", "nodes=1:R17")
        ar.state = State.RUNNING
        plugin.activate(ar)
        for _ in range(3):
            double.advance(4)
            plugin.reconcile([ar])
            assert jobs(double)[foreign]["state"] == "R" and jobs(double)[ar_job]["state"] == "Q"
        orders = [c for c in commands(double) if c.startswith(("qhold", "qrerun"))]
        assert orders == [f"qhold {foreign}", f"qrerun {foreign}"]
        [delay] = plugin.delays(ar)
        assert delay.startswith(f"job {foreign} of plusu2 still on n1: requeued") and "epilogue" in delay
        double.advance(4 + 2 * RERUN_STEP[1])                          # the epilogue is over
        deadline = time.monotonic() + 10
        while jobs(double)[ar_job]["state"] != "R" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert jobs(double)[ar_job]["state"] == "R" and jobs(double)[foreign]["state"] == "H"
        assert plugin.delays(ar) == []
    finally:
        plugin.close()
        double.set_epilogue(0)                                         # for the clean-up's qdel


def test_a_daemon_that_lost_the_lead_stops_watching_departures_and_watches_again_leading(
        double, tmp_path):
    """Issue 30: the watch of jobs asked to leave kicks TORQUE only while
    this daemon leads; taking the lead again, it watches again, and the
    AR's jobs start once the job has left."""
    double.freeze()
    double.set_epilogue(15)
    plugin = backend(double, tmp_path)
    leading = [True]
    plugin.fence = lambda: leading[0]
    plugin.start()
    try:
        foreign = qsub(double, "plusu2", "-l", "nodes=n1:ppn=4")
        ar = reservation(19, ("n1",), state=State.RUNNING, start_in=-1)
        plugin.prepare(ar)
        ar_job = qsub(double, "plusu1", "-q", "R19", "-l", "nodes=1:R19")
        plugin.activate(ar)
        assert plugin.ledger.leaving
        leading[0] = False
        wait_for(lambda: plugin._watcher is None, what="the watch to stop")
        mark = len(double.command_log())
        double.advance(16 + 2 * RERUN_STEP[1])                         # the epilogue is over
        assert jobs(double)[foreign]["state"] == "H" and jobs(double)[ar_job]["state"] == "Q"
        assert commands(double, mark) == [] and plugin.ledger.leaving
        leading[0] = True
        plugin.start()                                                 # leading again
        wait_for(lambda: jobs(double)[ar_job]["state"] == "R", what="the AR's job to start")
        assert plugin.ledger.leaving == {}
    finally:
        plugin.close()
        double.set_epilogue(0)


def test_a_job_submitted_into_an_open_window_waits_for_its_end_instead_of_landing(double, tmp_path):
    """pbs_sched starts a job a moment after its qsub returns, before any
    pass of ours: the submit filter defers one that could land on an open
    window's nodes to the window's end (TORQUE queues it then); one that
    cannot runs at once; a window ended early lets the deferred ones go."""
    published = os.path.join(double.directory, "torque-windows.json")
    double.set_submit_filter([FILTER, "--windows", published, "--"])
    plugin = backend(double, tmp_path, windows_path=published)
    ar = reservation(18, ("n1",), state=State.RUNNING, start_in=-1)
    plugin.prepare(ar)
    plugin.activate(ar)
    assert os.stat(published).st_mode & 0o777 == 0o644
    late = qsub(double, "plusu2")                                      # nodes=1: n1 would do
    elsewhere = qsub(double, "plusu2", "-l", "nodes=n2")
    ar_job = qsub(double, "plusu1", "-q", "R18", "-l", "nodes=1:R18")
    double.advance(120)                                                # periodic cycles too
    state = jobs(double)
    assert state[late]["state"] == "W" and state[elsewhere]["state"] == "R"
    assert state[ar_job]["state"] == "R"
    [deferred] = [job for job in plugin.torque.jobs() if job.id == late]
    assert deferred.execution_time == ar.end
    plugin.release(ar)                                                 # cancelled early
    assert jobs(double)[late]["state"] == "R"
    assert qsub(double, "plusu2") in {j for j, job in jobs(double).items() if job["state"] == "R"}


def test_a_claimed_job_is_submitted_as_the_owner_into_the_ar_queue(double, tmp_path):
    ar = reservation(12, ("n1",), users=("plusu1", "plusu2"))
    plugin = backend(double, tmp_path)
    plugin.prepare(ar)
    answer = plugin.submit_claimed(ar, {"script": "sleep 1\n", "name": "claimed", "cwd": "/tmp",
                                        "stdout": "/tmp/claimed.out", "merge": True})
    job = jobs(double)[answer["id"]]
    assert (job["owner"], job["queue"], job["name"]) == ("plusu1", "R12", "claimed")
    assert job["nodes"] == "1:R12" and job["join_path"] == "oe"
    assert job["output_path"] == "srv:/tmp/claimed.out" and job["init_work_dir"] == "/tmp"
    with pytest.raises(RequestError, match=r"^job: field 'pe' is not taken by TORQUE through a "
                                           r"ResKey claim; accepted: script, name, cwd, stdout"):
        plugin.submit_claimed(ar, {"script": "sleep 1", "pe": "mpi"})
    with pytest.raises(RequestError, match=r"^job: name: invalid name '-V'"):
        plugin.submit_claimed(ar, {"script": "sleep 1", "name": "-V"})
    assert list(jobs(double)) == [answer["id"]]


def test_kill_deletes_foreign_jobs(double, tmp_path):
    plugin = backend(double, tmp_path, conflict="kill")
    victim = qsub(double, "plusu2", "-l", "nodes=n1")
    bystander = qsub(double, "plusu2", "-l", "nodes=n2")
    ar = reservation(12, ("n1",), state=State.RUNNING, start_in=-1)
    plugin.prepare(ar)
    plugin.activate(ar)
    state = jobs(double)
    assert victim not in state or state[victim]["state"] == "C"
    assert state[bystander]["state"] == "R"


def test_avoid_refuses_nodes_whose_jobs_would_outlast_the_start(double, tmp_path):
    plugin = backend(double, tmp_path, conflict="avoid")
    qsub(double, "plusu2", "-l", "nodes=n1,walltime=02:00:00")
    qsub(double, "plusu2", "-l", "nodes=n2,walltime=00:10:00")
    soon = reservation(13, ("n1",), start_in=3600).request
    seen = Inventory(tuple(plugin.running_jobs()), int(time.time()))
    blocked = plugin.blocked_nodes(soon, seen)
    assert set(blocked) == {"n1"} and "runs past the start" in blocked["n1"]
    assert plugin.blocked_nodes(reservation(13, ("n1",), start_in=3 * 3600).request, seen) == {}
    assert backend(double, tmp_path / "x", conflict="requeue").blocked_nodes(soon, seen) == {}


def test_teardown_retries_a_queue_torque_still_counts_jobs_in(double, tmp_path):
    plugin = backend(double, tmp_path)
    ar = reservation(14, ("n2",), state=State.RUNNING, start_in=-1)
    plugin.prepare(ar)
    plugin.activate(ar)
    qsub(double, "plusu1", "-q", "R14", "-l", "nodes=1:R14")
    double.fail_next("qmgr", "qmgr obj=R14 svr=default: Cannot delete busy queue\n", 2, match="delete queue")
    ar.state = State.EXITED
    plugin.teardown(ar)
    log = commands(double)
    assert log.count("qmgr -c delete queue R14") == 2 and "R14" not in double.state()["queues"]


def test_deleting_a_job_already_deleted_and_not_yet_purged_is_done(double, tmp_path):
    """qselect lists a qdel'ed job until TORQUE purges it, and a second qdel
    answers 'invalid state for job - COMPLETE' (exit 170): a teardown that
    retries a busy queue meets exactly that."""
    plugin = backend(double, tmp_path)
    job = qsub(double, "plusu1")
    plugin.torque.delete_jobs([job])
    assert double.state()["jobs"][job]["state"] == "C" and job in plugin.torque.select("batch")
    plugin.torque.delete_jobs([job])                          # no error
    again = subprocess.run([f"{double.path}/qdel", job], capture_output=True, text=True)
    assert again.returncode == 170 and "COMPLETE" in again.stderr


def test_a_queue_that_stays_busy_is_an_error_retried_at_the_next_pass(double, tmp_path):
    plugin = backend(double, tmp_path, queue_timeout=1)
    ar = reservation(15, ("n2",))
    plugin.prepare(ar)
    faults = 20
    for _ in range(faults):
        double.fail_next("qmgr", "qmgr obj=R15 svr=default: Cannot delete busy queue\n", 2,
                         match="delete queue")
    ar.state = State.EXITED
    with pytest.raises(TorqueError, match="queue R15 still counts jobs after 1 s"):
        plugin.teardown(ar)
    assert plugin.ledger.owns(15)
    tried = commands(double).count("qmgr -c delete queue R15")
    assert 2 < tried < faults
    for _ in range(faults - tried):
        qmgr(double, "delete queue nosuch")                                # the busy spell ends
    backend(double, tmp_path).reconcile([])
    assert "R15" not in double.state()["queues"] and not Ledger(str(tmp_path / "torque-ledger.json")).ars


def test_a_node_broken_by_an_emptied_property_list_is_recreated(double, tmp_path):
    assert qmgr(double, "set node n1 properties += spare").returncode == 0
    assert qmgr(double, "set node n1 properties -= spare").returncode == 0   # the bug, by hand
    assert qmgr(double, "set node n1 properties += x").returncode == 2
    ar = reservation(16, ("n1",))
    backend(double, tmp_path).prepare(ar)
    node = double.state()["nodes"]["n1"]
    assert not node["bugged"] and node["properties"] == ["plus", "R16"]


def test_a_broken_node_with_jobs_is_not_recreated(double, tmp_path):
    qsub(double, "plusu2", "-l", "nodes=n1")
    qmgr(double, "set node n1 properties += spare")
    qmgr(double, "set node n1 properties -= spare")
    with pytest.raises(TorqueError, match=r"node n1 refuses every change .* jobs run on it.*"
                                          r"delete node n1.*create node n1 np=4"):
        backend(double, tmp_path).prepare(reservation(17, ("n1",)))


def test_health_reports_nodes_down_or_offline_by_someone_else(double, tmp_path):
    plugin = backend(double, tmp_path, drain=600)
    ar = reservation(18, ("n1", "n2"), start_in=300)
    plugin.prepare(ar)
    assert plugin.health([ar]) == {}
    plugin.reconcile([ar])                                                 # drains 600 s ahead
    state = double.state()["nodes"]
    assert "offline" in state["n1"]["state"] and state["n1"]["note"] == "reserved for R18"
    assert plugin.health([ar]) == {}                                       # our own drain
    assert {n.name for n in plugin.nodes() if n.alive} == {"n1", "n2"}
    double.set_node_state("n2", "down")
    assert "node n2 down" in plugin.health([ar])[18]
    double.set_node_state("n2", "free")
    subprocess.run([f"{double.path}/pbsnodes", "-c", "-N", "n", "n1"], check=True)
    subprocess.run([f"{double.path}/pbsnodes", "-o", "-N", "maintenance", "n1"], check=True)
    assert plugin.health([ar]) == {18: "node n1 offline (maintenance)"}
    ar.state = State.RUNNING
    plugin.activate(ar)
    assert "offline" in double.state()["nodes"]["n1"]["state"]            # not ours to clear


def test_drained_nodes_come_back_with_the_window(double, tmp_path):
    plugin = backend(double, tmp_path, drain=600)
    ar = reservation(19, ("n1",), start_in=300)
    plugin.prepare(ar)
    plugin.reconcile([ar])
    ar.state = State.RUNNING
    plugin.activate(ar)
    node = double.state()["nodes"]["n1"]
    assert "offline" not in node["state"] and node["note"] == "R19 active"
    ar.state = State.EXITED
    plugin.teardown(ar)
    assert double.state()["nodes"]["n1"]["note"] in ("", None)


def test_cancel_gives_the_nodes_back_and_keeps_a_closed_queue(double, tmp_path):
    plugin = backend(double, tmp_path)
    ar = reservation(20, ("n1",), state=State.RUNNING, start_in=-1)
    plugin.prepare(ar)
    plugin.activate(ar)
    job = qsub(double, "plusu1", "-q", "R20", "-l", "nodes=1:R20")
    ar.state = State.DELETED
    plugin.release(ar)
    state = double.state()
    assert state["queues"]["R20"]["enabled"] == "False" and state["queues"]["R20"]["started"] == "False"
    assert state["nodes"]["n1"]["properties"] == ["plus"]
    assert job not in state["jobs"] or state["jobs"][job]["state"] == "C"
    plugin.teardown(ar)
    assert "R20" not in double.state()["queues"]


def test_modify_moves_the_property_and_the_acl(double, tmp_path):
    plugin = backend(double, tmp_path)
    ar = reservation(21, ("n1",))
    plugin.prepare(ar)
    moved = reservation(21, ("n2",), users=("plusu1", "plusu2"))
    plugin.modify(ar, moved)
    state = double.state()
    assert state["nodes"]["n2"]["properties"] == ["R21"] and state["nodes"]["n1"]["properties"] == ["plus"]
    assert state["queues"]["R21"]["acl_users"] == "plusu1,plusu2"


def test_hard_error_keeps_the_queue_stopped(double, tmp_path):
    plugin = backend(double, tmp_path)
    ar = reservation(22, ("n1",), state=State.ERROR, start_in=-1, hard_error=True)
    plugin.prepare(ar)
    plugin.activate(ar)
    assert double.state()["queues"]["R22"]["started"] == "False"
    ar.state = State.RUNNING
    plugin.activate(ar)
    assert double.state()["queues"]["R22"]["started"] == "True"


def test_a_queue_started_by_hand_is_noticed_and_stopped_again(double, tmp_path):
    plugin = backend(double, tmp_path)
    ar = reservation(23, ("n1",))
    plugin.prepare(ar)
    qmgr(double, "set queue R23 started=true")
    plugin.health([ar])
    plugin.prepare(ar)
    assert double.state()["queues"]["R23"]["started"] == "False"


def test_reconcile_removes_what_forgotten_ars_left_behind(double, tmp_path):
    plugin = backend(double, tmp_path)
    plugin.prepare(reservation(24, ("n1",)))
    qsub(double, "plusu1", "-q", "R24", "-l", "nodes=1:R24")
    backend(double, tmp_path).reconcile([])
    state = double.state()
    assert "R24" not in state["queues"] and state["nodes"]["n1"]["properties"] == ["plus"]


def test_nodes_and_running_jobs_come_from_pbsnodes_and_qstat(double, tmp_path):
    plugin = backend(double, tmp_path)
    job = qsub(double, "plusu2", "-l", "nodes=n2:ppn=2,walltime=00:10:00")
    plugin.prepare(reservation(25, ("n1",)))
    nodes = {node.name: node for node in plugin.nodes()}
    assert nodes["n1"].slots == 4 and nodes["n1"].properties == {}          # R25 is ours
    assert nodes["n1"].alive and nodes["n1"].os == "linux"
    [running] = plugin.running_jobs()
    assert (running.id, running.owner, running.nodes, running.reservation) == (job, "plusu2", ("n2",), None)
    assert running.runtime_limit_end is not None


def test_a_crash_between_any_two_commands_converges(double, tmp_path):
    """Grant, open and close one AR with a crash after k commands, for every
    k; a new backend on the same ledger then brings TORQUE to the state the
    store says, with no queue, property, hold or offline node left over."""
    k = 0
    while True:
        state_dir = tmp_path / f"run{k}"
        state_dir.mkdir()
        foreign = qsub(double, "plusu2", "-r", "n", "-l", "nodes=n1")
        crashing = backend(double, state_dir, runner=CrashingRunner({}, k), drain=10)
        ar = reservation(30 + k, ("n1",), start_in=-5)
        crashed = None
        for step, state in (("prepare", State.WAITING), ("reconcile", State.WAITING),
                            ("activate", State.RUNNING), ("teardown", State.EXITED)):
            ar.state = state
            try:
                if step == "reconcile":
                    crashing.reconcile([ar])
                else:
                    getattr(crashing, step)(ar)
            except TorqueError:
                crashed = step
                break
        recovered = backend(double, state_dir, drain=10)
        if crashed is None or ar.state != State.EXITED:
            recovered.prepare(ar)
            if ar.state == State.RUNNING:
                recovered.activate(ar)
                assert double.state()["queues"][f"R{ar.id}"]["started"] == "True", f"crash after {k}"
            ar.state = State.EXITED
        recovered.teardown(ar)
        recovered.reconcile([])
        state = double.state()
        assert set(state["queues"]) == {"batch"}, f"crash after {k} commands in {crashed}"
        assert state["nodes"]["n1"]["properties"] in ([], ["plus"]), f"crash after {k}"
        assert "offline" not in state["nodes"]["n1"]["state"], f"crash after {k} in {crashed}"
        job = state["jobs"][foreign]
        assert job["hold"] == "n" and not job["rerunable"], f"crash after {k} in {crashed}: {job}"
        subprocess.run([f"{double.path}/qdel", foreign], check=True)
        if crashed is None:
            break
        k += 1
    assert k > 10                                                          # many commands in a cycle


def test_self_scheduling_starts_jobs_with_qrun_and_keeps_windows_clear(double, tmp_path):
    assert qmgr(double, "set server scheduling=false").returncode == 0
    plugin = backend(double, tmp_path, scheduler="plus")
    now = int(time.time())
    ar = reservation(40, ("n1",), start_in=1800, duration=3600)
    plugin.prepare(ar)
    plugin.reconcile([ar])
    short = qsub(double, "plusu2", "-l", "nodes=1,walltime=00:10:00")
    long = qsub(double, "plusu2", "-l", "nodes=1:ppn=4,walltime=02:00:00")
    endless = qsub(double, "plusu2", "-l", "nodes=1:ppn=4")
    ar_job = qsub(double, "plusu1", "-q", "R40", "-l", "nodes=1:R40")
    assert {jobs(double)[j]["state"] for j in (short, long, endless, ar_job)} == {"Q"}  # pbs_sched off
    started = dict(plugin.scheduler.run_pass(now))
    assert started[short] == ("n1",)                                       # ends before the window
    assert started[long] == ("n2",)                                        # would run into it: n2
    assert endless not in started and ar_job not in started
    assert any(c.startswith(f"qrun -H n1 {short}") for c in commands(double))
    plugin.scheduler.put_window(Window(40, ("n1",), now - 1, now + 3600))
    ar.state = State.RUNNING
    ar.request = ar.request.with_changes(start=now - 1, end=now + 3600)
    plugin.activate(ar)
    assert settled(double)[short]["state"] == "Q"                          # requeued off n1
    started = dict(plugin.scheduler.run_pass(now))
    assert started == {ar_job: ("n1",)}                                    # n2 is full: short waits
    assert jobs(double)[endless]["state"] == "Q"


def test_self_scheduling_requeues_without_holding(double, tmp_path):
    qmgr(double, "set server scheduling=false")
    plugin = backend(double, tmp_path, scheduler="plus")
    foreign = qsub(double, "plusu2", "-l", "nodes=1")
    plugin.scheduler.run_pass(int(time.time()))
    host = jobs(double)[foreign]["exec_host"].split("/")[0]
    ar = reservation(41, (host,), state=State.RUNNING, start_in=-1)
    plugin.prepare(ar)
    plugin.reconcile([ar])
    plugin.activate(ar)
    job = settled(double)[foreign]
    assert job["state"] == "Q" and job["hold"] == "n"
    started = dict(plugin.scheduler.run_pass(int(time.time())))
    assert started[foreign] != (host,)


def test_job_order_settings_need_the_self_scheduling_mode(tmp_path):
    config = Config(path=str(tmp_path / "plus.yaml"), state_dir=str(tmp_path))
    with pytest.raises(ValueError, match=r"torque.JobSortKey: job order settings need torque.scheduler"):
        TorqueBackend.from_config(config, {"JobSortKey": ["JobPriority"]})
    with pytest.raises(ValueError, match=r"torque.NodeSortKey: unknown sort key 'Random'"):
        TorqueBackend.from_config(config, {"scheduler": "plus", "NodeSortKey": ["Random"]})
    (tmp_path / "sched_conf").write_text("JobSortKey: OwnersName\nOwnersOrder: plusu2, plusu1\n")
    chosen = TorqueBackend.from_config(config, {"scheduler": "plus", "sched_conf": "sched_conf"})
    order = chosen.scheduler.order
    assert order.keys == ("OwnersName",) and order.owners == ("plusu2", "plusu1")


def test_the_ssh_runner_drives_torque_on_the_server_host(double, tmp_path):
    """The same backend with its commands run over SSH: the loopback sshd
    stands for the TORQUE server host, root for the manager account."""
    runner = SshRunner("127.0.0.1", 2222, "root", key_file="/etc/plus-test/ssh/id_ed25519",
                       known_hosts="/etc/plus-test/ssh/known_hosts", env={"PBS_DEFAULT": "srv"})
    try:
        runner.run(["true"], timeout=10)
    except CommandError as exc:
        pytest.fail(f"the test sshd (scripts/test-sshd.sh) is not reachable: {exc}")
    foreign = qsub(double, "plusu2", "-l", "nodes=n2")
    plugin = backend(double, tmp_path, runner=runner)
    ar = reservation(50, ("n2",), state=State.RUNNING, start_in=-5)
    plugin.prepare(ar)
    plugin.activate(ar)
    assert jobs(double)[foreign]["hold"] == "u" and double.state()["queues"]["R50"]["started"] == "True"
    plugin.teardown(ar)
    assert "R50" not in double.state()["queues"] and jobs(double)[foreign]["hold"] == "n"
    runner.close()


def test_a_cancelled_ar_frees_its_nodes_for_the_self_scheduler_at_once(double, tmp_path):
    qmgr(double, "set server scheduling=false")
    plugin = backend(double, tmp_path, scheduler="plus")
    ar = reservation(42, ("n1", "n2"), start_in=600)
    plugin.prepare(ar)
    endless = qsub(double, "plusu2", "-l", "nodes=1")
    assert plugin.scheduler.run_pass(int(time.time())) == []              # both nodes have a window ahead
    ar.state = State.DELETED
    plugin.release(ar)
    assert dict(plugin.scheduler.run_pass(int(time.time()))) == {endless: ("n1",)}


def test_the_self_scheduler_starts_no_job_while_another_daemon_leads(double, tmp_path):
    """Issue 30: a standby's self-scheduler starts no job (nor asks TORQUE
    anything), a leader whose lease goes during a pass starts no more, and
    one that leads again starts them on its own thread."""
    qmgr(double, "set server scheduling=false")
    plugin = backend(double, tmp_path, scheduler="plus")
    plugin.stand_by()
    first, second = (qsub(double, "plusu2", "-l", "nodes=1") for _ in range(2))
    since = len(double.command_log())
    assert plugin.scheduler.run_pass(int(time.time())) == [] and commands(double, since) == []
    leads = iter([True, True, False])           # at the pass's start, at each qrun
    plugin.scheduler.lead(lambda: next(leads))
    assert [job for job, _ in plugin.scheduler.run_pass(int(time.time()))] == [first]
    assert jobs(double)[second]["state"] == "Q"
    plugin.fence = lambda: True                 # the daemon's lease, leading again
    plugin.start()
    try:
        wait_for(lambda: jobs(double)[second]["state"] == "R", what="the second job started")
    finally:
        plugin.close()


def test_what_a_stopped_daemon_left_live_is_scrubbed_after_the_test(double, tmp_path):
    """The fixtures' clean-up, on a live AR left as a daemon stopped mid-window leaves it."""
    plugin = backend(double, tmp_path, drain=3600)
    ar = reservation(50, ("n1", "n2"), state=State.RUNNING, start_in=-1)
    plugin.prepare(ar)
    plugin.activate(ar)
    qsub(double, "plusu1", "-q", "R50", "-l", "nodes=1:R50")
    assert leftovers(double.path) == ["property R50 on n1", "property R50 on n2", "queue R50"]
    scrub(double.path)
    state = double.state()
    assert leftovers(double.path) == [] and set(state["queues"]) == {"batch"}
    assert all(node["properties"] == ["plus"] for node in state["nodes"].values())
    assert all(job["state"] == "C" for job in state["jobs"].values())
