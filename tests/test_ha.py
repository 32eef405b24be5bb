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


@pytest.fixture
def pair(store_url):
    """A leader and a standby on one store (the leader started first)."""
    leader, standby = Daemon(store=store_url), Daemon(store=store_url)
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

    refused = standby.run("plusu1", "plus_qstat")          # jobs are the leader's
    assert refused.returncode == 1
    assert "this plus_scheduler stands by while another leads" in refused.stderr
    assert leader.run("plusu1", "plus_qstat").returncode == 0
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
    if how == "stop":
        leader.send(signal.SIGCONT)                  # wakes up no longer leading
        _until(lambda: leader.process.poll() is not None, "the old leader to stop")
        assert "lost the store to plus_scheduler pid" in leader.log.read_text()
