"""Several daemons on one PostgreSQL store (issue 30): every daemon serves
users, one leads (the clock, the backend), a change made at one shows at
the other through the change feed, and when the leader is killed or
stopped a standby takes the lead and the windows go on opening; a stopped
leader that wakes up touches nothing and stands by. Native jobs: the job
commands work at either daemon (the leader carries them out), plus_qstat
shows the same at both, and jobs go on across a failover."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import tempfile
import time
from pathlib import Path

import pytest

from approval_e2e import APPROVAL_SETTINGS
from daemon_harness import DAEMON_SETTINGS, Daemon
from http_harness import secret_file

pytestmark = pytest.mark.parametrize("store_url", ["postgresql"], indirect=True)

WAIT = 120
"""Seconds a condition may take on a loaded machine (failover itself takes
a few: the figures are scripts/bench_ha.py's)."""


def _until(condition, what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _state(daemon: Daemon, ar_id: int) -> str | None:
    shown = [view for view in daemon.status("-ne", "10") if view["id"] == ar_id]
    return shown[0]["state"] if shown else None


def _records(daemon: Daemon) -> list[list[str]]:
    """The shared reporting file's records, split into fields."""
    path = daemon.reporting
    return [line.split(":") for line in path.read_text().splitlines()] if path.exists() else []


def _logged(daemon: Daemon, ar_id: int, event: str) -> bool:
    return any(r[1] == "ar_log" and r[4] == str(ar_id) and r[6] == event
               for r in _records(daemon))


def _each_once(daemon: Daemon, ar_ids: set[int]) -> None:
    """Every record of the shared reporting file is there once, and each AR's new_ar."""
    lines = daemon.reporting.read_text().splitlines()
    assert len(lines) == len(set(lines)), "a record written twice"
    assert sorted(int(r[3]) for r in _records(daemon) if r[1] == "new_ar") == sorted(ar_ids)


@pytest.fixture
def pair(store_url, tmp_path):
    """A leader and a standby on one store (the leader started first),
    with one reporting file, on storage both write (as a shared spool)."""
    shared = f"accounting_file: {tmp_path / 'reporting'}\n"
    leader, standby = (Daemon(shared, store=store_url), Daemon(shared, store=store_url))
    for daemon in (leader, standby):
        daemon.reporting = tmp_path / "reporting"
    leader.start()
    standby.start()
    _until(lambda: "standby:" in standby.log.read_text(), "the second daemon to stand by")
    yield leader, standby
    leader.cleanup()
    standby.cleanup()


def test_both_daemons_serve_and_the_leader_enforces_what_either_recorded(pair):
    """One pair for what changes no leader (each pair costs seconds to start)."""
    leader, standby = pair
    made = standby.reserve("plusu1", "-s", "now+2h", "-D", "1h", "-n", "5")
    _until(lambda: _state(leader, made["id"]) == "w", "the leader to see the standby's AR")
    refused = leader.run("plusu2", "plus_reserve", "-s", "now+2h", "-D", "1h", "-n", "1")
    assert refused.returncode == 1 and "requested nodes" in refused.stderr
    leader.ok("plusu1", "plus_cancel", "-r", str(made["id"]))
    _until(lambda: _state(standby, made["id"]) == "d", "the standby to see the cancel")

    soon = standby.reserve("plusu1", "-s", "now+3s", "-D", "1h", "-n", "1")
    _until(lambda: _state(standby, soon["id"]) == "r", "the window to open, seen at the standby")
    assert _state(leader, soon["id"]) == "r"
    _until(lambda: _logged(leader, soon["id"], "START TIME REACHED"),
           "the leader to write the records of ARs made at both daemons")
    _each_once(leader, {made["id"], soon["id"]})
    assert [r[1] for r in _records(leader) if r[3 if r[1] == "new_ar" else 4] == str(made["id"])
            ] == ["new_ar", "ar_attribute"] + ["ar_acct"] * 5 + ["ar_log"]

    # the standby never observes jobs: it answers QUERY from the leader's inventory
    how = standby.ok("plusu2", "plus_query", "plusu2", "30m", "nodes=1").split(" ", 1)[1]
    assert how.startswith("estimated from the run time limits of 0 running job(s) (observed ")

    def shown(daemon: Daemon) -> tuple[list[str], dict[str, list[str]]]:
        lines = daemon.ok("plusu1", "plus_scheduler", "--status").splitlines()
        return lines, {line.split()[0].rpartition(":")[2]: line.split() for line in lines[3:]}
    _until(lambda: len(shown(standby)[1]) == 2, "both daemons to be listed")
    lines, rows = shown(standby)
    assert lines[0].startswith("this daemon (") and " stands by; leading: " in lines[0]
    assert f":{leader.process.pid} since " in lines[0]
    assert lines[1].startswith("store revision ")
    assert rows[str(leader.process.pid)][1] == "leader"
    assert rows[str(standby.process.pid)][1] == "standby"
    assert shown(leader)[0][0].endswith(") leads")


@pytest.mark.parametrize("how", ["kill", "stop"])
def test_a_standby_takes_the_lead_when_the_leader_dies_or_stops(pair, how):
    leader, standby = pair
    made = standby.reserve("plusu1", "-s", "now+6s", "-D", "1h", "-n", "1")
    if how == "kill":
        leader.kill9()
    else:
        leader.send(signal.SIGSTOP)
    _until(lambda: "taking the lead" in standby.log.read_text(), "the standby to take the lead")
    _until(lambda: _state(standby, made["id"]) == "r", "the new leader to open the window")
    _until(lambda: _logged(standby, made["id"], "START TIME REACHED"),
           "the new leader to write the window's record")
    if how == "stop":
        leader.send(signal.SIGCONT)                  # wakes up no longer leading
        _until(lambda: "standing by: lost the store to plus_scheduler pid" in
               leader.log.read_text(), "the old leader to stand by")
        assert leader.process.poll() is None
        assert _state(leader, made["id"]) == "r"     # and serves users still
    _each_once(standby, {made["id"]})


JOB_CLUSTER = """\
nodes:
  - {name: local1, slots: 1, ncpus: 1, exec: local}
scheduler: {schedule_interval: 1}
"""
"""One slot that really runs jobs: a second job waits for the first."""


@pytest.fixture
def job_pair(store_url):
    """A leader and a standby of the native backend on one store and one spool."""
    spool = tempfile.mkdtemp(prefix="plus-spool-")
    os.chmod(spool, 0o755)
    settings = f"native: {{cluster: cluster.yaml, local_host: false, spool_dir: {spool}}}\n"
    daemons = [Daemon(settings, store=store_url, cluster=JOB_CLUSTER, base=DAEMON_SETTINGS)
               for _ in range(2)]
    for daemon in daemons:
        daemon.start()
    _until(lambda: "standby:" in daemons[1].log.read_text(), "the second daemon to stand by")
    yield daemons
    for daemon in daemons:
        daemon.cleanup()
    shutil.rmtree(spool, ignore_errors=True)


def _submit(daemon: Daemon, work: Path, *command: str, user: str = "plusu1") -> str:
    output = daemon.ok(user, "plus_qsub", "-b", "y", "-wd", str(work), *command)
    match = re.match(r'Your job (\d+) \(".*"\) has been submitted', output)
    assert match, output
    return match.group(1)


def _jobs(daemon: Daemon) -> dict[str, str]:
    """Job id -> state, as plus_qstat shows them."""
    return {str(job["id"]): job["state"]
            for job in json.loads(daemon.ok("plusu1", "plus_qstat", "--json") or "[]")}


def _accounted(daemons: list[Daemon], job: str) -> list[list[str]]:
    """The job's accounting records in every daemon's accounting file."""
    records = []
    for daemon in daemons:
        path = daemon.dir / "state" / "accounting"
        lines = path.read_text().splitlines() if path.exists() else []
        records += [fields for fields in (line.split(":") for line in lines)
                    if len(fields) > 12 and fields[5] == job]
    return records


def test_job_commands_at_the_standby_are_the_leaders_and_qstat_is_the_same_at_both(
        job_pair, work):
    leader, standby = job_pair
    long = _submit(standby, work, "sleep", "600")
    _until(lambda: _jobs(standby).get(long) == "r", "the standby's job to run")
    assert _jobs(leader) == _jobs(standby)
    waiting = _submit(leader, work, "true")
    _until(lambda: _jobs(standby).get(waiting) == "qw", "the leader's job to show at the standby")
    assert _jobs(leader) == _jobs(standby)
    assert "modified hold" in standby.ok("plusu1", "plus_qhold", waiting)
    _until(lambda: _jobs(leader).get(waiting) == "hqw", "the hold to show at the leader")
    refused = standby.run("plusu2", "plus_qdel", long)          # checked by the leader
    assert "you do not have the necessary privileges" in refused.stdout + refused.stderr
    assert "registered the job" in standby.ok("plusu1", "plus_qdel", long)
    _until(lambda: _accounted(job_pair, long), "the deleted job to end")
    standby.ok("plusu1", "plus_qrls", waiting)
    _until(lambda: _accounted(job_pair, waiting), "the released job to run")
    assert [len(_accounted(job_pair, job)) for job in (long, waiting)] == [1, 1]
    assert _accounted(job_pair, waiting)[0][11] == "0"          # failed: 0
    assert _jobs(standby) == _jobs(leader) == {}


def test_jobs_go_on_across_a_failover(job_pair, work):
    """The running job keeps running and is accounted once, by the new
    leader; the job waiting for its slot starts under the new leader."""
    leader, standby = job_pair
    running = _submit(standby, work, "sleep", "4")
    _until(lambda: _jobs(leader).get(running) == "r", "the first job to run")
    waiting = _submit(standby, work, "true")
    assert _jobs(leader)[waiting] == "qw"
    leader.kill9()
    _until(lambda: "taking the lead" in standby.log.read_text(), "the standby to take the lead")
    _until(lambda: _accounted([standby], waiting), "the waiting job to run under the new leader")
    (record,) = _accounted(job_pair, running)
    assert record in _accounted([standby], running)
    assert record[11] == "0" and int(record[10]) - int(record[9]) >= 4    # failed 0, ran it all
    assert len(_accounted(job_pair, waiting)) == 1
    assert _jobs(standby) == {}


def test_qstat_is_byte_for_byte_the_same_at_both_and_a_claim_at_the_standby_runs(job_pair, work):
    """What the leader's passes find (priorities, reasons, the AR's reserved
    slot, loads) shows at the standby too; a ResKey claim's job given at
    the standby runs in the AR (the cluster's one slot), as its owner."""
    leader, standby = job_pair
    success, key, other = standby.ok("plusu1", "plus_setres", "plusu1", "1h", "now",
                                     "nodes=1").split()
    assert success == "true"
    _until(lambda: _state(leader, int(other.removeprefix("R"))) == "r", "the AR to open")
    claim = secret_file(work / "reskey", key, "plusu3")
    claimed = _submit(standby, work, "--reskey", claim, "sleep", "600", user="plusu3")
    waiting = _submit(standby, work, "true")
    held = _submit(leader, work, "-h", "true")
    expected = {claimed: "r", waiting: "qw", held: "hqw"}
    _until(lambda: _jobs(leader) == expected, "the jobs to run, wait and be held")
    views = [(), ("-f",), ("-u", "*"), ("-j", waiting), ("-j", claimed)]

    def shown(daemon: Daemon) -> list[str]:
        return [daemon.ok("plusu1", "plus_qstat", *view) for view in views]

    def priorities(everyone: str) -> dict[str, list[str]]:
        return {line.split()[0]: line.split() for line in everyone.splitlines()[2:]}

    # a waiting job's priority is the leader's pass's: 0 until one has run since
    _until(lambda: shown(leader) == shown(standby)
           and float(priorities(shown(standby)[2])[waiting][1]) > 0,
           "plus_qstat to show the same at both, after a pass")
    table, full, everyone, detail, claimed_detail = shown(standby)
    lines = priorities(everyone)
    assert lines[claimed][3] == "plusu1"                        # the AR's owner, not plusu3
    assert float(lines[waiting][1]) > 0 and float(lines[held][1]) == 0
    assert re.search(r"all\.q@local1 +BI +1/1/1 ", full)         # the AR's slot, in use
    assert "scheduling info:" in detail and "ar_id:" in claimed_detail
    standby.ok("root", "plus_qdel", "-u", "plusu1")
    _until(lambda: _jobs(leader) == _jobs(standby) == {}, "the jobs to end")


def _available(daemon: Daemon, start: str, end: str) -> list[str]:
    return json.loads(daemon.ok("plusu1", "plus_availnodes", "--json", "-s", start, "-e", end)
                      )["nodes"]


def test_a_standby_that_cannot_reach_its_batch_system_serves_the_leaders_nodes(
        store_url, tmp_path):
    """The standby's backend is a Grid Engine whose every command fails (no
    such cell): it starts all the same, and places, finds problems and
    answers plus_availnodes from the nodes the leader published. A node the
    leader's batch system takes down (and one it adds) shows there; the
    standby places no AR on it, and commits an AR holding it in W."""
    leader = Daemon(store=store_url)
    standby = Daemon("backend: sge\nsge: {sge_cell: no-such-cell}\n", store=store_url)
    try:
        leader.start()
        standby.start()
        _until(lambda: "standby:" in standby.log.read_text(), "the second daemon to stand by")
        later = ("now+3h", "now+4h")
        assert _available(standby, *later) == ["big", "n01", "n02", "n03", "n04"]
        pending = standby.reserve("plusu1", "-T", "-s", "now+1h", "-D", "1h", "-n", "5")

        cluster = leader.dir / "cluster.yaml"            # the native batch system's own file
        cluster.write_text(cluster.read_text().replace(
            '- {name: "n[01-04]",', '- {name: n01, slots: 4, alive: false}\n'
            '  - {name: "n[02-05]",'))
        os.utime(cluster, ns=(1, 1))                     # seen as changed, whatever the clock
        _until(lambda: _available(standby, *later) == ["big", "n02", "n03", "n04", "n05"],
               "the standby to see n01 down and n05 added")
        placed = standby.reserve("plusu1", "-s", later[0], "-e", later[1], "-n", "5")
        assert sorted(a["node"] for a in placed["allocations"]) == ["big", "n02", "n03", "n04",
                                                                  "n05"]
        refused = standby.run("plusu2", "plus_reserve", "-s", later[0], "-e", later[1], "-n", "1")
        assert refused.returncode == 1 and "requested nodes" in refused.stderr

        standby.ok("plusu1", "plus_commit", "-r", str(pending["id"]))
        told = f"AR {pending['id']} (plusu1, state W): "   # the standby decided it, at once
        assert told in standby.log.read_text()
        [committed] = [ar for ar in standby.status() if ar["id"] == pending["id"]]
        assert committed["message"] == "reserved host(s) down: n01"
        _until(lambda: _state(leader, pending["id"]) == "W", "the leader to see it")
        assert "qhost" not in standby.log.read_text()     # its batch system never asked
    finally:
        leader.cleanup()
        standby.cleanup()


def test_an_approval_at_the_standby_is_the_leaders_to_enforce(store_url, tmp_path):
    """The held AR, the approval and the deny are store writes like any
    other: made at one daemon, seen at the other through the change feed,
    and enforced by the leader (its native scheduler then takes the AR's jobs)."""
    settings = f"accounting_file: {tmp_path / 'reporting'}\n" + APPROVAL_SETTINGS.replace(
        "approval_timeout: 20", "approval_timeout: 3600")
    leader, standby = Daemon(settings, store=store_url), Daemon(settings, store=store_url)
    leader.reporting = tmp_path / "reporting"
    try:
        leader.start()
        standby.start()
        _until(lambda: "standby:" in standby.log.read_text(), "the second daemon to stand by")
        held = leader.reserve("plusu1", "-s", "now+2h", "-D", "1h", "-n", "2")
        other = leader.reserve("plusu1", "-s", "now+4h", "-D", "1h", "-n", "2")
        _until(lambda: _state(standby, held["id"]) == "h", "the standby to see the held AR")
        standby.ok("plusmgr", "plus_approve", str(held["id"]))
        standby.ok("plusmgr", "plus_deny", str(other["id"]), "-reason", "no")
        _until(lambda: _state(leader, held["id"]) == "w", "the leader to see the approval")
        _until(lambda: _state(leader, other["id"]) == "d", "the leader to see the deny")
        leader.ok("plusu1", "plus_qsub", "-ar", str(held["id"]), "-b", "y", "/bin/true")
        refused = leader.run("plusu1", "plus_qsub", "-ar", str(other["id"]), "-b", "y", "/bin/true")
        assert refused.returncode != 0
        _until(lambda: _logged(leader, held["id"], "APPROVED"), "the approval's record")
        _until(lambda: _logged(leader, other["id"], "DENIED"), "the deny's record")
        _each_once(leader, {held["id"], other["id"]})
    finally:
        leader.cleanup()
        standby.cleanup()
