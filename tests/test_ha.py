"""Several daemons on one PostgreSQL store (issue 30): every daemon serves
users, one leads (the clock, the backend), a change made at one shows at
the other through the change feed, and when the leader is killed or
stopped a standby takes the lead and the windows go on opening; a stopped
leader that wakes up touches nothing and stops."""

from __future__ import annotations

import signal
import time

import pytest

from daemon_harness import Daemon

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

    refused = standby.run("plusu1", "plus_qstat")          # jobs are the leader's
    assert refused.returncode == 1
    assert "this plus_scheduler stands by while another leads" in refused.stderr
    assert leader.run("plusu1", "plus_qstat").returncode == 0

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
        _until(lambda: leader.process.poll() is not None, "the old leader to stop")
        assert "lost the store to plus_scheduler pid" in leader.log.read_text()
    _each_once(standby, {made["id"]})
