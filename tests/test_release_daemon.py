"""Early release end to end on the native backend: a real plus_scheduler
whose jobs really run, the installed commands run as real users. An AR
idle for its --idle-release after its job ended is released; one with
--release-when-done ends when its job does; its owner ends one with
plus_modify -e now; a restart neither forgets a job ran nor releases
twice; bad input is refused naming what is accepted, storing nothing."""

from __future__ import annotations

import json
import os
import time

import pytest

from daemon_harness import Daemon, job_daemon
from test_native_daemon import submit
from test_repair_daemon import wait_for

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="jobs run as their owners: root only")

CLUSTER = """\
nodes:
  - {name: local1, ncpus: 2, exec: local}
  - {name: local2, ncpus: 2, exec: local}
queues: [{name: all.q, hostlist: [local1, local2]}]
scheduler: {schedule_interval: 1, NodeSortKey: [NodeName]}
"""


@pytest.fixture
def daemon():
    with job_daemon(CLUSTER) as running:
        yield running


def records(daemon: Daemon, kind: str, ar_id: int) -> list[list[str]]:
    """The reporting file's records of ``kind`` of the AR, their fields after the type."""
    path = daemon.dir / "state" / "reporting"
    lines = path.read_text().splitlines() if path.exists() else []
    return [line.split(":")[2:] for line in lines
            if line.split(":")[1:2] == [kind] and line.split(":")[4] == str(ar_id)]


def released(daemon: Daemon, ar_id: int) -> dict:
    return wait_for(lambda: [ar for ar in daemon.status("-ne", "10", "-r", str(ar_id))
                             if ar["state"] == "x"], f"AR {ar_id} released")[0]


def job_end(daemon: Daemon, job: str) -> int:
    out = wait_for(lambda: (r := daemon.run("plusu1", "plus_qacct", "-j", job)).returncode == 0
                   and r.stdout, f"job {job} accounted")
    fields = {line[:13].strip(): line[13:].strip() for line in out.splitlines()[1:]}
    return int(time.mktime(time.strptime(fields["end_time"], "%a %b %d %H:%M:%S %Y")))


def test_an_idle_ar_is_released_after_its_idle_time_once_its_job_ended(daemon, work):
    made = daemon.reserve("plusu1", "-s", "now", "-D", "1h", "-n", "1", "--idle-release", "15",
                          "-m", "e")
    job = submit(daemon, work, "-ar", str(made["id"]), "-b", "y", "sleep", "3")
    ended = job_end(daemon, job)
    ar = released(daemon, made["id"])
    assert ar["message"] == "released: no job ran in it for 15 s (idle_release)"
    assert ar["released"] >= ended + 15 - 1         # idle counted from the job's end
    assert ar["end"] == made["end"]                       # what it asked stays recorded
    [log] = wait_for(lambda: [fields for fields in records(daemon, "ar_log", made["id"])
                              if fields[3] == "x"], "the release's ar_log record written")
    assert log[4:] == ["TERMINATED", "AR released, no job ran in it for 15 s (idle_release)"]
    [acct] = wait_for(lambda: records(daemon, "ar_acct", made["id"]), "its ar_acct written")
    assert int(acct[0]) == ar["released"]
    assert daemon.reserve("plusu2", "-s", "now", "-D", "30m", "-n", "2")   # its node is free
    events = json.loads(daemon.ok("root", "plus_status", "--json", "-ne", "10"))
    assert [e["id"] for e in events if e["state"] == "x"] == [made["id"]]


def test_release_when_done_ends_the_ar_when_its_job_ends(daemon, work):
    made = daemon.reserve("plusu1", "-s", "now", "-D", "1h", "-n", "1", "--release-when-done")
    assert daemon.status("-r", str(made["id"]))[0]["request"]["release_when_done"] is True
    job = submit(daemon, work, "-ar", str(made["id"]), "-b", "y", "sleep", "2")
    ended = job_end(daemon, job)
    ar = released(daemon, made["id"])
    assert ar["message"] == "released: its jobs have all ended (--release-when-done)"
    assert ended <= ar["released"] <= ended + 30


def test_a_restart_remembers_the_job_and_releases_once(daemon, work):
    made = daemon.reserve("plusu1", "-s", "now", "-D", "1h", "-n", "1", "--idle-release", "20")
    job = submit(daemon, work, "-ar", str(made["id"]), "-b", "y", "sleep", "2")
    ended = job_end(daemon, job)
    daemon.kill9()
    daemon.start()
    ar = released(daemon, made["id"])
    assert ended + 20 - 1 <= ar["released"]
    daemon.stop()
    daemon.start()
    later = daemon.reserve("plusu2", "-s", "now", "-D", "1h", "-n", "1")
    wait_for(lambda: daemon.status("-r", str(later["id"]))[0]["state"] == "r",
             "a pass of the restarted daemon")
    assert len([f for f in records(daemon, "ar_log", made["id"]) if f[3] == "x"]) == 1
    assert len(records(daemon, "ar_acct", made["id"])) == 1


def test_its_owner_ends_it_with_e_now_and_others_may_not(daemon, work):
    made = daemon.reserve("plusu1", "-s", "now", "-D", "1h", "-n", "2")
    ar_id = str(made["id"])
    refused = daemon.run("plusu3", "plus_modify", "-r", ar_id, "-e", "now")
    assert refused.returncode == 1 and "only its owner or a manager may end it" in refused.stderr
    refused = daemon.run("plusu1", "plus_modify", "-r", ar_id, "-e", "now", "-n", "1")
    assert refused.returncode == 1
    assert "-e now ends AR" in refused.stderr and "cannot be combined with -n" in refused.stderr
    assert daemon.status("-r", ar_id)[0]["state"] == "r"
    out = daemon.ok("plusu1", "plus_modify", "-r", ar_id, "-e", "now")
    assert out.strip() == f"Advance reservation {ar_id} has been released"
    ar = daemon.status("-ne", "10", "-r", ar_id)[0]
    assert (ar["state"], ar["message"]) == ("x", "released: ended by plusu1 (plus_modify -e now)")
    waiting = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "1")
    refused = daemon.run("plusu1", "plus_modify", "-r", str(waiting["id"]), "-e", "now")
    assert refused.returncode != 0
    assert daemon.status("-r", str(waiting["id"]))[0]["state"] == "w"


@pytest.mark.parametrize("value, why", [
    ("-5", "invalid idle time '-5'"), ("40d", "3456000 s is out of range"), ("31d", "out of range"),
    ("soon", "invalid idle time 'soon'")])
def test_bad_idle_times_are_refused_naming_the_accepted_and_store_nothing(daemon, value, why):
    refused = daemon.run("plusu1", "plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "1",
                         "--idle-release", value)
    assert refused.returncode == 2, refused.stderr
    assert why in refused.stderr and "or 0 or 'none' (never)" in refused.stderr
    refused = daemon.run("plusu1", "plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "1",
                         "--release-when-done", "maybe")
    assert refused.returncode == 2 and "--release-when-done" in refused.stderr
    assert daemon.status() == []


def test_modify_sets_and_clears_the_release_options(daemon):
    made = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "1")
    ar_id = str(made["id"])
    daemon.ok("plusu1", "plus_modify", "-r", ar_id, "--idle-release", "10m",
              "--release-when-done")
    request = daemon.status("-r", ar_id)[0]["request"]
    assert (request["idle_release"], request["release_when_done"]) == (600, True)
    detail = daemon.ok("plusu1", "plus_status", "-r", ar_id)
    assert "idle_release:               600s" in detail
    daemon.ok("plusu1", "plus_modify", "-r", ar_id, "--idle-release", "none",
              "--release-when-done", "n")
    request = daemon.status("-r", ar_id)[0]["request"]
    assert (request["idle_release"], request["release_when_done"]) == (0, False)
    refused = daemon.run("plusu1", "plus_modify", "-r", ar_id, "--idle-release", "-1")
    assert refused.returncode == 2 and "accepted: SECS" in refused.stderr
    assert daemon.status("-r", ar_id)[0]["request"]["idle_release"] == 0
    daemon.ok("plusu1", "plus_modify", "-r", ar_id, "--idle-release", "1d")
    assert daemon.status("-r", ar_id)[0]["request"]["idle_release"] == 86400


def test_a_bad_site_idle_release_stops_the_daemon_naming_the_key(tmp_path):
    bad = Daemon("idle_release: -1\n")
    try:
        bad.start(wait=False)
        assert bad.process.wait(timeout=60) != 0
        assert "idle_release: expected 0 (never) or whole seconds" in bad.log.read_text()
    finally:
        bad.cleanup()
