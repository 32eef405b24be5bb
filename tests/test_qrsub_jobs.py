"""Jobs in a qrsub AR on the native backend, end to end: a real
plus_scheduler running jobs on this machine as their owners. Seed 000
5.2.2: an AR job runs in the queue instances the AR holds and uses only
what the AR holds (slots and consumables); nothing else uses them."""

from __future__ import annotations

import json
import os
import time

import pytest

from daemon_harness import Daemon, job_daemon
from test_native_daemon import states, submit, wait_for

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="jobs run as their owners: root only")

CLUSTER = """\
nodes:
  - {name: "local[1-2]", ncpus: 2, exec: local}
complexes:
  - {name: license, shortcut: lic, type: INT, relop: "<=", requestable: YES, consumable: YES,
     default: 0}
global:
  complex_values: {license: 3}
queues: [{name: all.q, hostlist: [local1, local2], slots: 2}]
scheduler: {schedule_interval: 1, NodeSortKey: [NodeName]}
"""


@pytest.fixture(scope="module")
def daemon():
    with job_daemon(CLUSTER) as running:
        yield running


def queue_of(daemon: Daemon, job: str) -> str:
    out = daemon.ok("root", "plus_qstat", "-u", "*")
    return next(line.split()[7] for line in out.splitlines()[2:] if line.split()[0] == job)


def test_ar_jobs_use_what_the_ar_holds_and_nothing_else_does(daemon, work):
    made = daemon.run("plusu1", "plus_qrsub", "--json", "-q", "all.q@local2", "-alloc",
                      "$pe_slots", "2", "-l", "lic=1", "-u", "plusu1", "-d", "0:10:0")
    assert made.returncode == 0, made.stderr
    ar = json.loads(made.stdout)                    # 2 slots, so 2 of the 3 licenses
    assert [(a["queue"], a["node"], a["slots"]) for a in ar["allocations"]] == \
        [("all.q", "local2", 2)]
    ar_id = str(ar["id"])
    refused = submit(daemon, work, "-ar", ar_id, "-l", "lic=3", "-b", "y", "true", expect=1)
    assert "(-l license=3) cannot run globally because it offers only gc:license=2.000000" \
        in refused                                  # the free one is not the AR's
    inside = submit(daemon, work, "-ar", ar_id, "-l", "lic=1", "-b", "y", "sleep", "300")
    wait_for(lambda: states(daemon).get(inside) == "r", "the AR job to run")
    assert queue_of(daemon, inside) == "all.q@local2"
    waiting = submit(daemon, work, "-ar", ar_id, "-l", "lic=2", "-b", "y", "sleep", "300")
    crowding = submit(daemon, work, "-l", "lic=2", "-b", "y", "sleep", "300", user="plusu2")
    beside = submit(daemon, work, "-l", "lic=1", "-b", "y", "sleep", "300", user="plusu2")
    wait_for(lambda: states(daemon).get(beside) == "r", "the foreign job on the free license")
    time.sleep(2)                                   # two more scheduling passes
    now = states(daemon)
    assert (now[waiting], now[crowding]) == ("qw", "qw")     # the AR's slot is free, not its license
    daemon.ok("plusu1", "plus_qdel", inside)
    wait_for(lambda: states(daemon).get(waiting) == "r", "the AR job to take the AR's licenses")
    assert queue_of(daemon, waiting) == "all.q@local2" and states(daemon)[crowding] == "qw"
    daemon.ok("plusu1", "plus_qrdel", "-f", ar_id)
    wait_for(lambda: waiting not in states(daemon), "the AR's job to go with it")
    daemon.ok("root", "plus_qdel", crowding, beside)
