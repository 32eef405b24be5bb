"""Lending running ARs' idle slots on the real Grid Engine: plus_scheduler
with the sge backend and ``lend_queue``, jobs really running on node1..node3.

The reconcile pass runs once a minute here, so what happens within seconds
is Grid Engine's own dispatch and subordination and the lending watch."""

from __future__ import annotations

import json
import re
import time

import pytest
from sqlalchemy import create_engine, text

from daemon_harness import Daemon
from sge_cluster import (
    LEND_QUEUE,
    clean,
    instance_states,
    job_states,
    names,
    require,
    sh,
    submit,
    wait_for,
)

SETTINGS = f"""\
backend: sge
reconcile_interval: 60
sge: {{conflict: requeue, lend_queue: {LEND_QUEUE}, lend_watch: 0.5}}
"""
LENT = ("-l", f"plus_rsv={LEND_QUEUE}")


@pytest.fixture
def daemon():
    require()
    clean()
    d = Daemon(SETTINGS).start()
    yield d
    d.cleanup()
    clean()


def lending_hosts() -> list[str]:
    shown = sh("qconf", "-sq", LEND_QUEUE).stdout
    match = re.search(r"^hostlist +(.*)$", shown, re.MULTILINE)
    return [] if match is None or match.group(1) == "NONE" else match.group(1).split()


def opened(daemon: Daemon, seconds: int) -> tuple[dict, str, str]:
    """An AR of plusu1's on one host from a few seconds on; its queue and
    host once its window is open and the host lends."""
    view = daemon.reserve("plusu1", "-s", "now+5s", "-D", f"{seconds}s", "-n", "1")
    queue, node = f"R{view['id']}", view["allocations"][0]["node"]
    wait_for(lambda: instance_states().get(f"{queue}@{node}") == "" and lending_hosts() == [node],
             60, "the window to open and its host to lend")
    return view, queue, node


def where(job: str) -> tuple[str, str]:
    return job_states().get(job, ("gone", ""))


def running_lent(job: str, node: str) -> bool:
    """Running in the lending queue on ``node`` (Rr: running again after a requeue)."""
    state, instance = where(job)
    return state in ("r", "Rr") and instance == f"{LEND_QUEUE}@{node}"


def preempted_events(daemon: Daemon) -> dict[str, str]:
    """Job id -> ``preemptible`` of each job.preempted event in the store."""
    engine = create_engine(f"sqlite:///{daemon.dir / 'state' / 'plus.db'}")
    try:
        with engine.connect() as connection:
            rows = connection.execute(text(
                "SELECT data FROM event WHERE type = 'job.preempted' ORDER BY id")).all()
    finally:
        engine.dispose()
    jobs = [json.loads(data)["job"] for (data,) in rows]
    return {job["id"]: job["preemptible"] for job in jobs}


def test_lent_jobs_give_the_slots_back_requeued_or_killed_and_run_again(daemon):
    view, queue, node = opened(daemon, 240)
    plain = submit("plusu2", "-l", f"h={node}", "sleep", "600")
    endless = submit("plusu2", "-r", "y", *LENT, "sleep", "600")
    overrun = submit("plusu2", "-r", "y", "-l", f"plus_rsv={LEND_QUEUE},h_rt=600", "sleep", "600")
    killed = submit("plusu2", "-r", "n", "-l", f"plus_rsv={LEND_QUEUE},h_rt=60", "sleep", "600")
    wait_for(lambda: running_lent(killed, node), 30, "the first lent job to run")
    requeued = submit("plusu3", "-r", "y", "-l", f"plus_rsv={LEND_QUEUE},h_rt=60", "sleep", "600")
    wait_for(lambda: running_lent(requeued, node), 30, "the second lent job to run")
    # dispatched after them, so the scheduler saw the jobs that may not be lent
    assert {job: where(job)[0] for job in (plain, endless, overrun)} == \
        dict.fromkeys((plain, endless, overrun), "qw")

    owner = submit("plusu1", "-q", queue, "-l", f"plus_rsv={queue}", "sleep", "20")
    wait_for(lambda: where(owner) == ("r", f"{queue}@{node}"), 20, "the AR's own job to start")
    wait_for(lambda: where(requeued)[1] == "" and "q" in where(requeued)[0], 10,
             "the latest started lent job to be requeued")
    assert running_lent(killed, node)                  # one slot was enough
    second = submit("plusu1", "-q", queue, "-l", f"plus_rsv={queue}", "sleep", "20")
    wait_for(lambda: where(second)[0] == "r", 20, "the AR's second job to start")
    wait_for(lambda: where(killed)[0] == "gone", 10, "the other lent job to be killed")
    assert preempted_events(daemon) == {requeued: "requeue", killed: "kill"}

    # the AR's jobs end: its slots are idle again and the requeued job runs there again
    wait_for(lambda: running_lent(requeued, node), 60, "the requeued job to run again")
    assert {job: where(job)[0] for job in (plain, endless, overrun)} == \
        dict.fromkeys((plain, endless, overrun), "qw")
    assert lending_hosts() == [node]


def test_a_daemon_killed_while_lending_finishes_the_preemption_and_leaves_nothing(daemon):
    view, queue, node = opened(daemon, 120)
    first = submit("plusu2", "-r", "y", "-l", f"plus_rsv={LEND_QUEUE},h_rt=45", "sleep", "600")
    wait_for(lambda: running_lent(first, node), 30, "the first lent job to run")
    latest = submit("plusu2", "-r", "y", "-l", f"plus_rsv={LEND_QUEUE},h_rt=45", "sleep", "600")
    wait_for(lambda: running_lent(latest, node), 30, "the second lent job to run")
    daemon.kill9()

    owner = submit("plusu1", "-q", queue, "-l", f"plus_rsv={queue}", "sleep", "600")
    wait_for(lambda: where(owner)[0] == "r", 20, "the AR's job to start")
    assert where(latest) == ("S", f"{LEND_QUEUE}@{node}")   # Grid Engine suspended it
    daemon.start()
    wait_for(lambda: where(latest)[1] == "", 30, "the restarted leader to requeue it")
    assert preempted_events(daemon) == {latest: "requeue"}

    try:   # at the end's transition or, at the latest, the next reconcile pass (60 s)
        wait_for(lambda: queue not in names("-sql"), view["end"] + 90 - time.time(),
                 "the AR's end")
    except AssertionError as timed_out:
        raise AssertionError(f"{timed_out}\n{daemon.log.read_text()[-4000:]}") from None
    wait_for(lambda: lending_hosts() == [], 10, "the host to lend no more")
    assert not [c for c in names("-scall") if c.startswith("pluslend_")]
    ledger = json.loads((daemon.dir / "state" / "sge-ledger.json").read_text())
    assert ledger["lending"] == {"queue": LEND_QUEUE, "calendars": [], "preemptions": {}}
    assert where(latest) == ("Rq", "")                  # waits (requeued) for an AR to lend again
