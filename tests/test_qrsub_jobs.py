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
  - {name: "host[1-2]", ncpus: 1, exec: local}
complexes:
  - {name: license, shortcut: lic, type: INT, relop: "<=", requestable: YES, consumable: YES,
     default: 0}
global:
  complex_values: {license: 3}
queues:
  - {name: all.q, hostlist: [local1, local2], slots: 2}
  - {name: seed.q, hostlist: [host1, host2], slots: 1}
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


def test_seed_example_a_job_without_h_rt_keeps_qrsub_ars_off_its_slot(daemon, work):
    """Seed 000 5.2.2.1.3, example 2, on one-slot instances as there; Grid
    Engine 8.1.9 answers each step alike (with two slots, it reserves the
    other one, and so does this)."""
    endless = submit(daemon, work, "-q", "seed.q", "-l", "h=host1", "-b", "y", "sleep", "300",
                     user="plusu2")
    wait_for(lambda: states(daemon).get(endless) == "r", "the job without h_rt to run")
    start = time.strftime("%Y%m%d%H%M", time.localtime(time.time() + 3600))
    denied = daemon.run("plusu1", "plus_qrsub", "-a", start, "-d", "0:30:0", "-u", "plusu1",
                        "-q", "seed.q", "-l", "h=host1")
    assert denied.returncode == 1 and "no suitable queues" in denied.stderr
    granted = daemon.run("plusu1", "plus_qrsub", "-a", start, "-d", "0:30:0", "-u", "plusu1",
                         "-q", "seed.q", "-l", "h=host2")
    assert granted.returncode == 0 and granted.stdout.startswith("Your advance reservation ")
    refused = submit(daemon, work, "-w", "e", "-q", "seed.q", "-l", "h=host2", "-b", "y", "true",
                     expect=1)
    assert '(-l hostname=host2) cannot run in queue "seed.q@host2" because it offers only ' \
        'qc:slots=0.000000 due to a reservation' in refused
    assert refused.endswith("error: no suitable queues\nExiting.\n")
    limited = submit(daemon, work, "-w", "e", "-q", "seed.q", "-l", "h=host2,h_rt=60", "-b", "y",
                     "true")                          # ends before the AR starts
    wait_for(lambda: limited not in states(daemon), "the job with h_rt to run and end")
    daemon.ok("root", "plus_qdel", endless)
    daemon.ok("root", "plus_qrdel", "-u", "*")


def test_a_deleted_ar_stays_in_d_while_its_jobs_are_ending(daemon, work):
    """8.1.9's qrdel: the AR shows d, its jobs dr, until the jobs are gone;
    then the AR goes. A job that ignores SIGTERM lingers the kill's grace."""
    made = daemon.run("plusu1", "plus_qrsub", "--json", "-q", "all.q@local1", "-d", "0:10:0")
    assert made.returncode == 0, made.stderr
    ar_id = str(json.loads(made.stdout)["id"])
    job = submit(daemon, work, "-ar", ar_id, "-b", "y", "sh", "-c", "trap '' TERM; sleep 120")
    wait_for(lambda: states(daemon).get(job) == "r", "the AR job to run")
    daemon.ok("plusu1", "plus_qrdel", ar_id)
    table = daemon.ok("plusu1", "plus_qrstat")
    if job in states(daemon):       # the job outlived the listing: the AR was listed, in d
        row = next(line.split() for line in table.splitlines()[2:] if line.split()[0] == ar_id)
        assert row[2] == "d", table
    wait_for(lambda: job not in states(daemon), "the AR's job to end", timeout=60)
    assert ar_id not in [line.split()[0] for line in
                         daemon.ok("plusu1", "plus_qrstat").splitlines()[2:]]
