"""A slow batch system stalls nobody (issue 30, item 6): on the real Grid
Engine with every command taking seconds (a qmaster under load, a command
over a slow link), the use cases answer from the store and their memory
while the enforcer, on its own thread, is still creating the AR's objects;
and the backend follows in the end. With ``conflict: avoid`` they read the
running jobs from the inventory the leader's pass published, never qstat."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from daemon_harness import Daemon
from sge_cluster import HOSTS, clean, job_states, names, require, submit, wait_for

DELAY = 2
"""Seconds every Grid Engine command takes here."""
COMMANDS = ("qconf", "qstat", "qhost", "qmod", "qsub", "qdel", "qalter", "qresub", "qhold",
            "qrls")


def _slow_commands(folder: Path) -> Path:
    """A folder of Grid Engine's commands, each sleeping DELAY s first."""
    folder.mkdir()
    for command in COMMANDS:
        script = folder / command
        script.write_text(f"#!/bin/sh\nsleep {DELAY}\nexec /usr/bin/{command} \"$@\"\n")
        script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return folder


@pytest.fixture(params=[("requeue", 30)])
def slow_daemon(request):
    """A daemon on the Grid Engine cluster, every command slowed; the
    parameter is its conflict policy and reconcile interval."""
    require()
    clean()
    conflict, interval = request.param
    daemon = Daemon(f"backend: sge\nreconcile_interval: {interval}\n"
                    f"sge: {{conflict: {conflict}}}\n")
    slow = _slow_commands(daemon.dir / "slow-bin")
    daemon.start(wrapper=("env", f"PATH={slow}:{os.environ['PATH']}"))
    yield daemon
    daemon.cleanup()
    clean()


def _timed(daemon: Daemon, user: str, *argv: str):
    began = time.monotonic()
    result = daemon.run(user, *argv)
    return result, time.monotonic() - began


def test_commands_answer_while_the_backend_is_still_applying_their_changes(slow_daemon):
    daemon = slow_daemon
    first = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "1")
    queue = f"R{first['id']}"
    assert queue not in names("-sql")              # answered before Grid Engine has it
    other = daemon.reserve("plusu2", "-s", "now+3h", "-D", "1h", "-n", "1")
    assert str(other["id"]) in daemon.ok("plusu2", "plus_status")
    daemon.ok("plusu2", "plus_cancel", "-r", str(other["id"]))
    assert queue not in names("-sql")              # all three while the first is being made
    wait_for(lambda: queue in names("-sql"), 30 * DELAY, "the enforcer to make the AR's queue")
    assert "could not apply" not in daemon.log.read_text()


@pytest.mark.parametrize("slow_daemon", [("avoid", 5)], indirect=True)
def test_conflict_avoid_and_query_read_the_inventory_not_qstat(slow_daemon):
    """A host runs a job without h_rt: once a pass has seen it, a reserve
    that needs every host is refused naming the job, and QUERY counts it,
    each in less time than one Grid Engine command takes."""
    daemon = slow_daemon
    job = submit("plusu2", "-l", "h=node1", "sleep", "600")
    wait_for(lambda: job_states().get(job, ("",))[0] == "r", 30, "the job to run")
    query = ("plus_query", "plusu1", "30m", "nodes=1")
    wait_for(lambda: " 1 running job(s) " in daemon.ok("plusu1", *query), 30 * DELAY,
             "a pass to observe the job")
    refused, took = _timed(daemon, "plusu1", "plus_reserve", "-s", "now+1h", "-D", "1h",
                           "-n", str(len(HOSTS)))
    assert refused.returncode == 1, refused.stdout
    assert f"host busy: job {job} of plusu2 has no h_rt" in refused.stderr
    assert took < DELAY
    answered, took = _timed(daemon, "plusu1", *query)
    assert answered.returncode == 0 and "(observed " in answered.stdout and took < DELAY
