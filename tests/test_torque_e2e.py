"""End to end on the TORQUE test double: plus_scheduler with the torque
backend, the commands run as real users, TORQUE's commands run by the
daemon exactly as on a real server (the double only stands in for it)."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import time

import pytest

from approval_e2e import APPROVAL_SETTINGS, on_the_batch_system_only_once_approved
from daemon_harness import BIN, Daemon, released_when_idle
from event_harness import API_SETTINGS, job_events, seen_gone_once, until, watching
from http_harness import answering, free_port
from overlay.events.catalog import JOB_STARTED
from sge_cluster import wait_for
from torque_cleanup import leftovers, scrub
from torque_double import install

SETTINGS = """\
backend: torque
torque: {bin: %s}
"""


@pytest.fixture
def double():
    directory = tempfile.mkdtemp(prefix="plus-torque-")
    double = install(directory, nodes=(("n1", 4), ("n2", 4)), server="srv", next_job_number=1)
    yield double
    double.thaw()
    scrub(double.path)
    assert leftovers(double.path) == []
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def daemon(double):
    """The daemon, its open windows read by qsub's submit filter as a site
    sets it up (torque.cfg's SUBMITFILTER)."""
    d = Daemon(SETTINGS % double.path)
    double.set_submit_filter([str(BIN / "plus_torque_filter"), "--windows",
                              str(d.dir / "state" / "torque-windows.json"), "--"])
    yield d.start()
    d.cleanup()


def qsub(double, user: str, *args: str, script: str = "sleep 600") -> subprocess.CompletedProcess:
    return subprocess.run(["runuser", "-u", user, "--", f"{double.path}/qsub", *args],
                          input=script, capture_output=True, text=True, cwd="/tmp")


def submitted(double, user: str, *args: str) -> str:
    result = qsub(double, user, *args)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def job(double, job_id: str) -> dict:
    return double.state()["jobs"].get(job_id, {"state": "gone", "hold": "", "exec_host": None})


def made(double, view: dict) -> str:
    """Wait for the enforcer to make the AR's queue and mark its nodes
    (plus_reserve answers once the AR is stored, before the backend
    follows, and those are separate qmgr calls); the queue's name."""
    queue = f"R{view['id']}"
    nodes = [a["node"] for a in view["allocations"]]

    def prepared() -> bool:
        state = double.state()
        return queue in state["queues"] and all(queue in state["nodes"][n]["properties"]
                                                for n in nodes)
    wait_for(prepared, 30, f"the enforcer to make {queue} on {nodes}")
    return queue


def on_node(double, node: str) -> set[str]:
    return {j["id"] for j in double.state()["jobs"].values()
            if j["state"] == "R" and (j["exec_host"] or "").startswith(node + "/")}


def test_an_ar_window_on_torque_from_grant_to_end(double, daemon):
    foreign = submitted(double, "plusu2", "-l", "nodes=n1:ppn=4")
    wait_for(lambda: job(double, foreign)["state"] == "R", 5, "pbs_sched to start the job")

    view = daemon.reserve("plusu1", "-s", "now+6s", "-D", "25s", "-n", "1")
    ar_id, queue = view["id"], f"R{view['id']}"
    assert [a["node"] for a in view["allocations"]] == ["n1"]
    made(double, view)
    assert double.state()["queues"][queue]["started"] == "False"
    detail = daemon.ok("plusu1", "plus_status", "-r", str(ar_id))
    assert re.search(rf"submit: +qsub -q {queue} -l nodes=1:{queue} job\.sh", detail)

    ar_job = submitted(double, "plusu1", "-q", queue, "-l", f"nodes=1:{queue}")
    unbound = submitted(double, "plusu1", "-q", queue)
    stranger = qsub(double, "plusu3", "-q", queue)
    assert stranger.returncode == 159 and "ACL rejected" in stranger.stderr
    wait_for(lambda: job(double, unbound).get("nodes") == f"1:{queue}", 5, "the job to be bound")
    assert job(double, ar_job)["state"] == "Q"                       # nobody runs before the start

    start = view["start"]
    wait_for(lambda: job(double, ar_job)["state"] == "R", start + 5 - time.time(),
             "the AR job to start with the window")
    assert time.time() < start + 3
    assert job(double, foreign)["state"] == "H"                       # requeued and held
    assert on_node(double, "n1") == {ar_job, unbound}
    late = submitted(double, "plusu2")                                 # n1 would do: deferred
    assert job(double, late)["state"] == "W"
    time.sleep(1)                                                      # pbs_sched's cycle came
    assert job(double, late)["state"] == "W"
    assert daemon.status("-r", str(ar_id))[0]["state"] == "r"

    end = view["end"]
    wait_for(lambda: queue not in double.state()["queues"]
             and double.state()["nodes"]["n1"]["properties"] == ["plus"], end + 5 - time.time(),
             "teardown: the queue, then the property")
    assert ar_job not in on_node(double, "n1")
    wait_for(lambda: job(double, foreign)["state"] == "R" and job(double, late)["state"] == "R",
             10, "the requeued and the deferred job to run")
    assert daemon.status("-ne", "1")[0]["state"] == "x"
    log = [" ".join(e["argv"]) for e in double.command_log()]
    untag = log.index(f"qmgr -c set node n1 properties -= {queue}")
    assert log.index(f"qmgr -c delete queue {queue}") < untag


def test_a_daemon_killed_during_the_window_converges_after_a_restart(double, daemon):
    view = daemon.reserve("plusu1", "-s", "now+3s", "-D", "10s", "-n", "2")
    queue = f"R{view['id']}"
    wait_for(lambda: double.state()["queues"].get(queue, {}).get("started") == "True", 10,
             "the window to open")
    daemon.kill9()
    time.sleep(max(0, view["end"] - time.time()) + 1)
    assert queue in double.state()["queues"]                           # nobody cleaned up yet
    daemon.start()
    wait_for(lambda: queue not in double.state()["queues"]
             and all(queue not in n["properties"] for n in double.state()["nodes"].values()), 10,
             "the restarted daemon to tear down")
    assert daemon.status("-ne", "1")[0]["state"] == "x"


def test_cancel_and_destroy(double, daemon):
    view = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "1")
    queue = made(double, view)
    daemon.ok("plusu1", "plus_cancel", "-r", str(view["id"]))

    def released() -> bool:
        state = double.state()
        return (state["queues"][queue]["enabled"] == "False"
                and all(queue not in n["properties"] for n in state["nodes"].values()))
    wait_for(released, 30, "the enforcer to disable the queue and unmark the nodes")
    daemon.ok("plusu1", "plus_destroy", "-r", str(view["id"]))
    wait_for(lambda: queue not in double.state()["queues"], 30, "the enforcer to delete the queue")


def test_a_node_going_down_puts_the_ar_in_warning(double, daemon):
    view = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "1", "-repair", "none")
    node = view["allocations"][0]["node"]
    double.set_node_state(node, "down")
    wait_for(lambda: daemon.status("-r", str(view["id"]))[0]["state"] == "W", 10, "state W")
    assert f"node {node} down" in daemon.status("-r", str(view["id"]))[0]["message"]
    double.set_node_state(node, "free")
    wait_for(lambda: daemon.status("-r", str(view["id"]))[0]["state"] == "w", 10, "state w again")


def test_a_node_going_down_before_the_window_is_replaced(double, daemon):
    view = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "1")
    node = view["allocations"][0]["node"]
    double.set_node_state(node, "down")
    wait_for(lambda: (ar := daemon.status("-r", str(view["id"]))[0])["state"] == "w" and
             [a["node"] for a in ar["allocations"]] not in ([], [node]), 30,
             "the AR repaired onto another node")


def test_a_long_epilogue_delays_the_window_and_plus_status_says_why(double, daemon):
    """A real 6.1 server keeps a requeued job R while its epilogue runs."""
    double.set_epilogue(4)
    foreign = submitted(double, "plusu2", "-l", "nodes=n1:ppn=4")
    wait_for(lambda: job(double, foreign)["state"] == "R", 5, "pbs_sched to start the job")
    view = daemon.reserve("plusu1", "-s", "now+3s", "-D", "30s", "-n", "1")
    queue = f"R{view['id']}"
    assert [a["node"] for a in view["allocations"]] == ["n1"]
    made(double, view)
    ar_job = submitted(double, "plusu1", "-q", queue, "-l", f"nodes=1:{queue}")
    wait_for(lambda: double.state()["queues"][queue]["started"] == "True", 8, "the window to open")
    detail = daemon.ok("plusu1", "plus_status", "-r", str(view["id"]))
    assert re.search(rf"warning: +job {re.escape(foreign)} of plusu2 still on n1: requeued \d+ s ago, "
                     r"it leaves when its epilogue has run", detail), detail
    assert job(double, ar_job)["state"] == "Q"
    wait_for(lambda: job(double, ar_job)["state"] == "R", 10, "the AR job to start after the epilogue")
    assert job(double, foreign)["state"] == "H"
    assert "still on" not in daemon.ok("plusu1", "plus_status", "-r", str(view["id"]))
    log = [" ".join(e["argv"]) for e in double.command_log()]
    assert log.count(f"qrerun {foreign}") == 1


@pytest.fixture
def watched(double):
    """The daemon with its HTTP API, for the event stream and webhooks."""
    port = free_port()
    d = Daemon(SETTINGS % double.path + API_SETTINGS.format(port=port))
    double.set_submit_filter([str(BIN / "plus_torque_filter"), "--windows",
                              str(d.dir / "state" / "torque-windows.json"), "--"])
    d.start()
    yield d, answering(d, port), port
    d.cleanup()


def test_an_ars_jobs_start_and_end_once_by_id_across_a_restart(double, watched):
    """TORQUE's jobs of an AR's queue come into and leave the running jobs
    the leader publishes: each is seen started and ended once by id, by the
    AR's users (plusu2 named in its access list) and a webhook, across a
    restart of the daemon while one runs; plusu3, whom the AR does not
    name, sees none."""
    daemon, url, port = watched
    with watching(daemon, url) as (streams, receiver):
        view = daemon.reserve("plusu1", "-s", "now+4s", "-D", "60s", "-n", "1", "-U", "plusu2")
        queue = made(double, view)
        first = submitted(double, "plusu1", "-q", queue, "-l", f"nodes=1:{queue}")
        second = qsub(double, "plusu2", "-q", queue, "-l", f"nodes=1:{queue}", script="sleep 8")
        assert second.returncode == 0, second.stderr
        second = second.stdout.strip()
        until(lambda: (JOB_STARTED, second) in job_events(streams["plusu1"].events),
              "the second job's start")
        daemon.stop()                                   # the restart while it runs
        daemon.start()
        answering(daemon, port)
        daemon.ok("plusu1", "plus_cancel", "-r", str(view["id"]))    # ends the first job
        seen_gone_once(streams, receiver, (first, second), second, "n1", 8)


def test_an_idle_ar_is_released_and_its_queue_torn_down(double, daemon):
    """Early release on TORQUE: an open AR that runs no job for its
    --idle-release ends then, and its queue and node marks go, as at its end."""
    view = daemon.reserve("plusu1", "-s", "now", "-D", "1h", "-n", "1", "--idle-release", "5")
    queue = f"R{view['id']}"
    released_when_idle(daemon, view, 5)
    wait_for(lambda: queue not in double.state()["queues"] and
             all(queue not in n["properties"] for n in double.state()["nodes"].values()),
             30, "teardown at the release")


def test_each_occurrence_of_a_series_is_a_queue_and_node_marks_of_its_own(double, daemon):
    """plus_reserve --repeat on TORQUE: each occurrence its own queue R<id>
    and its own mark on its node; cancelling one occurrence disables its
    queue and unmarks its node alone, plus_cancel -series all the others."""
    view = daemon.reserve("plusu1", "-s", "now+1h", "-D", "30m", "-n", "1",
                          "--repeat", "FREQ=DAILY;COUNT=3")
    series = view["series_made"]
    assert view["series"] == series["id"] and series["granted"] == 3
    queues = [made(double, daemon.status("-r", str(o["id"]))[0]) for o in series["occurrences"]]
    assert len(set(queues)) == 3

    def released(queue: str) -> bool:
        state = double.state()
        return (state["queues"][queue]["enabled"] == "False"
                and all(queue not in n["properties"] for n in state["nodes"].values()))
    first, *others = queues
    daemon.ok("plusu1", "plus_cancel", "-r", first[1:])
    wait_for(lambda: released(first), 30, "the cancelled occurrence's queue and marks gone")
    assert not any(released(q) for q in others)
    daemon.ok("plusu1", "plus_cancel", "-series", str(series["id"]))
    wait_for(lambda: all(released(q) for q in others), 30, "every occurrence's queue and marks")


def test_an_ar_awaiting_approval_is_on_torque_only_once_approved(double):
    approving = Daemon(SETTINGS % double.path + APPROVAL_SETTINGS).start()
    try:
        on_the_batch_system_only_once_approved(
            approving, lambda ar_id: f"R{ar_id}" in double.state()["queues"] or any(
                f"R{ar_id}" in node["properties"] for node in double.state()["nodes"].values()))
    finally:
        approving.cleanup()
