"""End to end on the real Grid Engine: plus_scheduler with the sge backend,
the commands run as real users, jobs really running on node1..node3."""

from __future__ import annotations

import re
import time

import pytest

from approval_e2e import APPROVAL_SETTINGS, on_the_batch_system_only_once_approved
from daemon_harness import Daemon, released_when_idle, used_by_the_job
from event_harness import API_SETTINGS, job_events, seen_gone_once, until, watching
from http_harness import answering, free_port
from overlay.events.catalog import JOB_ENDED, JOB_STARTED
from sge_cluster import clean, instance_states, job_states, names, require, sh, submit, wait_for

SETTINGS = """\
backend: sge
sge: {conflict: %s}
"""


@pytest.fixture
def daemon(request):
    require()
    clean()
    conflict = getattr(request, "param", "requeue")
    d = Daemon(SETTINGS % conflict).start()
    yield d
    d.cleanup()
    clean()


def reserve(daemon: Daemon, *args: str) -> dict:
    return daemon.reserve("plusu1", *args)


def test_an_ar_window_on_grid_engine_from_grant_to_end(daemon):
    foreign = submit("plusu2", "-l", "h=node1", "-N", "longrun", "sleep", "600")
    wait_for(lambda: job_states().get(foreign, ("",))[0] == "r", 20, "the foreign job to run")

    view = reserve(daemon, "-s", "now+30s", "-D", "60s", "-n", "1")
    ar_id, queue = view["id"], f"R{view['id']}"
    assert [a["node"] for a in view["allocations"]] == ["node1"]
    wait_for(lambda: instance_states().get(f"{queue}@node1") == "s", 30,
             "the enforcer to prepare the AR")
    detail = daemon.ok("plusu1", "plus_status", "-r", str(ar_id))
    hint = f"qsub -w e -q {queue} -l plus_rsv={queue} job.sh"
    assert re.search(rf"submit: +{re.escape(hint)}", detail)

    ar_job = submit("plusu1", "-w", "e", "-q", queue, "-l", f"plus_rsv={queue}", "sleep", "300")
    stranger = sh("qsub", "-w", "e", "-q", queue, "-l", f"plus_rsv={queue}", "-b", "y", "true",
                  user="plusu3")
    assert stranger.returncode != 0 and "no suitable queues" in stranger.stdout + stranger.stderr
    time.sleep(8)
    assert job_states()[ar_job][0] == "qw"                      # nobody runs before the start

    start = view["start"]
    wait_for(lambda: instance_states()[f"{queue}@node1"] == "", start + 5 - time.time(),
             "the AR queue to be resumed at the start")
    assert time.time() < start + 3
    assert instance_states()["all.q@node1"] == "s"
    jobs = job_states("plusu2")
    assert foreign not in jobs                                  # requeued as plusu2
    [copy] = list(jobs)
    wait_for(lambda: job_states()[ar_job] == ("r", f"{queue}@node1"), 20, "the AR job to run")
    normal = submit("plusu1", "-l", "h=node1", "sleep", "300")
    time.sleep(8)
    assert job_states()[normal] == ("qw", "")                   # the owner's normal job stays out
    on_node1 = [job for job, (state, where) in job_states().items() if where.endswith("@node1")]
    assert on_node1 == [ar_job]
    assert daemon.status("-r", str(ar_id))[0]["state"] == "r"

    end = view["end"]
    wait_for(lambda: queue not in names("-sql"), end + 5 - time.time(), "teardown at the end")
    assert ar_job not in job_states()
    assert f"{queue}_users" not in names("-sul") and f"@{queue}_hosts" not in names("-shgrpl")
    assert instance_states()["all.q@node1"] == ""
    wait_for(lambda: job_states("plusu2").get(copy, ("",))[0] == "r", 20, "the requeued job to run")
    assert daemon.status("-ne", "1")[0]["state"] == "x"


def test_a_daemon_killed_during_the_window_converges_after_a_restart(daemon):
    view = reserve(daemon, "-s", "now+3s", "-D", "12s", "-n", "2")
    queue = f"R{view['id']}"
    hosts = [a["node"] for a in view["allocations"]]
    wait_for(lambda: all(instance_states()[f"all.q@{h}"] == "s" for h in hosts), 10,
             "the window to open")
    daemon.kill9()
    time.sleep(max(0, view["end"] - time.time()) + 1)
    assert queue in names("-sql")                               # nobody cleaned up yet
    daemon.start()
    wait_for(lambda: queue not in names("-sql"), 10, "the restarted daemon to tear down")
    assert all(instance_states()[f"all.q@{h}"] == "" for h in hosts)
    assert daemon.status("-ne", "1")[0]["state"] == "x"


@pytest.mark.parametrize("daemon", ["avoid"], indirect=True)
def test_avoid_refuses_hosts_whose_jobs_would_outlast_the_start(daemon):
    endless = submit("plusu2", "-l", "h=node1", "sleep", "600")
    wait_for(lambda: job_states().get(endless, ("",))[0] == "r", 20, "the job to run")
    # reserve reads the running jobs the leader's last pass observed, never qstat
    wait_for(lambda: " 1 running job(s) " in daemon.ok("plusu1", "plus_query", "plusu1", "30m",
                                                       "nodes=1"), 60, "a pass to observe the job")
    result = daemon.run("plusu1", "plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "4")
    assert result.returncode == 1
    assert f"host busy: job {endless} of plusu2 has no h_rt" in result.stderr
    view = reserve(daemon, "-s", "now+1h", "-D", "1h", "-n", "3")
    assert "node1" not in [a["node"] for a in view["allocations"]]


def test_cancel_and_destroy(daemon):
    view = reserve(daemon, "-s", "now+1h", "-D", "1h", "-n", "1")
    queue = f"R{view['id']}"
    wait_for(lambda: queue in names("-sql"), 30, "the enforcer to make the AR's queue")
    daemon.ok("plusu1", "plus_cancel", "-r", str(view["id"]))
    wait_for(lambda: re.search(r"^hostlist +NONE$", sh("qconf", "-sq", queue).stdout,
                               re.MULTILINE), 30, "the enforcer to release the hosts")
    daemon.ok("plusu1", "plus_destroy", "-r", str(view["id"]))
    wait_for(lambda: queue not in names("-sql"), 30, "the enforcer to delete the queue")


@pytest.fixture
def watched():
    """The daemon with its HTTP API, for the event stream and webhooks."""
    require()
    clean()
    port = free_port()
    d = Daemon(SETTINGS % "requeue" + API_SETTINGS.format(port=port)).start()
    yield d, answering(d, port), port
    d.cleanup()
    clean()


def test_an_ars_jobs_start_and_end_once_by_id_across_a_restart(watched):
    """Grid Engine's jobs of an AR's queue come into and leave the running
    jobs the leader publishes: each is seen started and ended once by id,
    by the AR's users (plusu2 named in its access list) and a webhook,
    across a restart of the daemon while one runs; plusu3, whom the AR
    does not name, sees none."""
    daemon, url, port = watched
    with watching(daemon, url) as (streams, receiver):
        view = reserve(daemon, "-s", "now+10s", "-D", "90s", "-n", "1", "-U", "plusu2")
        queue, node = f"R{view['id']}", view["allocations"][0]["node"]
        wait_for(lambda: instance_states().get(f"{queue}@{node}") == "s", 30,
                 "the enforcer to prepare the AR")
        inside = ("-w", "e", "-q", queue, "-l", f"plus_rsv={queue}")
        first = submit("plusu1", *inside, "sleep", "600")
        second = submit("plusu2", *inside, "sleep", "15")
        until(lambda: (JOB_STARTED, second) in job_events(streams["plusu1"].events),
              "the second job's start")
        daemon.stop()                                   # the restart while it runs
        daemon.start()
        answering(daemon, port)
        until(lambda: (JOB_ENDED, second) in job_events(streams["plusu1"].events),
              "the second job's end")
        daemon.ok("plusu1", "plus_cancel", "-r", str(view["id"]))    # ends the first job
        seen_gone_once(streams, receiver, (first, second), second, node, 15)


def test_an_ar_whose_instance_is_disabled_moves_to_a_free_host(daemon):
    """Self-repair on Grid Engine: the AR's queue instance disabled on its
    host (as an administrator's qmod -d, or a host whose execd is gone)
    before the window; the AR's hostgroup takes a free host in its place."""
    view = reserve(daemon, "-s", "now+1h", "-D", "1h", "-n", "1", "-m", "a")
    ar_id, queue = view["id"], f"R{view['id']}"
    (first,) = [a["node"] for a in view["allocations"]]
    wait_for(lambda: instance_states().get(f"{queue}@{first}") == "s", 30,
             "the enforcer to prepare the AR")
    sh("qmod", "-d", f"{queue}@{first}", check=True)
    moved: list[str] = []

    def repaired() -> bool:
        (ar,) = daemon.status("-r", str(ar_id))
        moved[:] = [a["node"] for a in ar["allocations"]]
        return ar["state"] == "w" and moved != [first]
    wait_for(repaired, 60, "the AR repaired onto another host")
    assert first not in moved
    wait_for(lambda: sh("qconf", "-shgrp_resolved", f"@{queue}_hosts").stdout.split() == moved,
             30, "the AR's hostgroup to hold the replacement")
    wait_for(lambda: set(instance_states()) >= {f"{queue}@{moved[0]}"} and
             f"{queue}@{first}" not in instance_states(), 30, "the AR queue to move")
    assert "repaired: " in daemon.log.read_text()


def test_an_idle_ar_is_released_and_its_queue_torn_down(daemon):
    """Early release on Grid Engine: an open AR that runs no job for its
    --idle-release ends then, and its queue, userset and hostgroup go, as
    at its end."""
    view = reserve(daemon, "-s", "now", "-D", "1h", "-n", "1", "--idle-release", "5")
    queue = f"R{view['id']}"
    released_when_idle(daemon, view, 5)
    wait_for(lambda: queue not in names("-sql"), 30, "teardown at the release")
    assert f"{queue}_users" not in names("-sul") and f"@{queue}_hosts" not in names("-shgrpl")


def test_a_job_in_an_ar_is_its_used_node_hours(daemon):
    """Used node-hours on Grid Engine: a job of 20 s in an open AR is, once
    the leader saw it end, its AR's used node-hours in plus_account (a
    record of the pass's precision, no extra qstat)."""
    view = reserve(daemon, "-s", "now", "-D", "1h", "-n", "1")
    queue, node = f"R{view['id']}", view["allocations"][0]["node"]
    wait_for(lambda: instance_states().get(f"{queue}@{node}") == "", 30, "the AR's queue open")
    job = submit("plusu1", "-w", "e", "-q", queue, "-l", f"plus_rsv={queue}", "sleep", "20")
    used_by_the_job(daemon, view["id"], job, 20)


def test_each_occurrence_of_a_series_is_a_queue_of_its_own(daemon):
    """plus_reserve --repeat on Grid Engine: each occurrence its own queue
    R<id> on its own hostgroup; cancelling one occurrence gives back its
    hosts alone, plus_cancel -series those of all the others."""
    view = reserve(daemon, "-s", "now+1h", "-D", "30m", "-n", "1",
                   "--repeat", "FREQ=DAILY;COUNT=3")
    series = view["series_made"]
    assert view["series"] == series["id"] and series["granted"] == 3
    queues = [f"R{o['id']}" for o in series["occurrences"]]

    def hosts(queue: str) -> str:
        found = re.search(r"^hostlist +(\S+)$", sh("qconf", "-sq", queue).stdout, re.MULTILINE)
        return found.group(1) if found else ""
    wait_for(lambda: set(queues) <= set(names("-sql")) and
             [hosts(q) for q in queues] == [f"@{q}_hosts" for q in queues], 30,
             "the enforcer to make each occurrence's queue")
    assert len(set(queues)) == 3
    first, *others = queues
    daemon.ok("plusu1", "plus_cancel", "-r", first[1:])
    wait_for(lambda: hosts(first) == "NONE", 30, "the cancelled occurrence's hosts given back")
    assert [hosts(q) for q in others] == [f"@{q}_hosts" for q in others]
    daemon.ok("plusu1", "plus_cancel", "-series", str(series["id"]))
    wait_for(lambda: all(hosts(q) == "NONE" for q in others), 30,
             "every occurrence's hosts given back")


def test_an_ar_awaiting_approval_is_on_grid_engine_only_once_approved():
    require()
    clean()
    approving = Daemon(SETTINGS % "requeue" + APPROVAL_SETTINGS).start()
    try:
        on_the_batch_system_only_once_approved(approving, lambda ar_id: f"R{ar_id}" in names(
            "-sql") or f"@R{ar_id}_hosts" in names("-shgrpl"))
    finally:
        approving.cleanup()
        clean()
