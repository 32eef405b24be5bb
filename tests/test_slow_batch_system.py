"""A slow batch system stalls nobody (issue 30, item 6): on the real Grid
Engine with every command taking seconds (a qmaster under load, a command
over a slow link), the use cases answer from the store and their memory
while the enforcer, on its own thread, is still creating the AR's objects;
and the backend follows in the end."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from daemon_harness import Daemon
from sge_cluster import clean, names, require, wait_for

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


@pytest.fixture
def slow_daemon():
    require()
    clean()
    daemon = Daemon("backend: sge\nreconcile_interval: 30\n")
    slow = _slow_commands(daemon.dir / "slow-bin")
    daemon.start(wrapper=("env", f"PATH={slow}:{os.environ['PATH']}"))
    yield daemon
    daemon.cleanup()
    clean()


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
