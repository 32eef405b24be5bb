"""Job events. On the native backend: jobs of an AR, a one-second one and
a longer one across a restart of the daemon, each seen started and ended
exactly once by id by an SSE client and by a webhook receiver, carrying
the job's id, owner, nodes, the AR's id and owner, and how it ended; the
job owner named in the AR's access list sees them, a user the AR does not
name sees none. The events are written in the scheduler's own writes of
the job (the store's event table read directly: none twice, none lost).
From the inventory a Grid Engine or TORQUE leader publishes: each once
across restarts and leaders (their end to end tests are in
test_sge_e2e.py and test_torque_e2e.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from sqlalchemy import create_engine, insert, text

from daemon_harness import Daemon, job_daemon
from event_harness import API_SETTINGS, Stream, complete, job_events, until, watching
from http_harness import answering, free_port, token
from overlay.contract.backend import Job
from overlay.events.catalog import GRANTED, JOB_ENDED, JOB_STARTED, shown
from overlay.events.visibility import sees
from overlay.persistence.events import EventLog
from overlay.persistence.inventory import PublishedInventory
from overlay.persistence.outbox import Outbox
from overlay.persistence.store import ReservationRow, Store
from overlay.reporting.accounting import JobUse, collect

CLUSTER = """\
nodes:
  - {name: local1, slots: 2, ncpus: 2, exec: local}
scheduler: {schedule_interval: 1}
"""


def submit(daemon: Daemon, work: Path, user: str, *args: str) -> str:
    output = daemon.ok(user, "plus_qsub", "-b", "y", "-wd", str(work), *args)
    match = re.match(r'Your job (\d+) \(".*"\) has been submitted', output)
    assert match, output
    return match.group(1)


def stored_job_events(url: str) -> list[tuple[str, str]]:
    """(type, job id) of every job event in the store's event table."""
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(text(
                "SELECT type, data FROM event WHERE type LIKE 'job.%' ORDER BY id")).all()
    finally:
        engine.dispose()
    return [(kind, re.search(r'"job":\{"id":"(\d+)"', data).group(1)) for kind, data in rows]


@pytest.fixture
def jobs_api(store_url, work):
    work.chmod(0o777)                   # plusu2's job writes its output there too
    port = free_port()
    settings = API_SETTINGS.format(port=port) + f"store: {store_url}\n"
    with job_daemon(CLUSTER, settings=settings) as daemon:
        yield daemon, answering(daemon, port), port, store_url


def test_an_ars_jobs_start_and_end_once_by_id_across_a_restart(jobs_api, work):
    daemon, url, port, store_url = jobs_api
    with watching(daemon, url) as (streams, receiver):
        ar = daemon.reserve("plusu1", "-s", "now+3s", "-D", "0:5:0", "-n", "1", "-U", "plusu2")
        quick = submit(daemon, work, "plusu1", "-ar", str(ar["id"]), "true")
        longer = submit(daemon, work, "plusu2", "-ar", str(ar["id"]), "sleep", "8")
        until(lambda: (JOB_ENDED, quick) in job_events(streams["plusu1"].events)
              and (JOB_STARTED, longer) in job_events(streams["plusu1"].events),
              "the quick job's end and the longer one's start")
        assert (JOB_ENDED, longer) not in job_events(streams["plusu1"].events)
        daemon.stop()                                 # the restart while the longer one runs
        daemon.start()
        answering(daemon, port)
        both = (quick, longer)
        for who in ("plusu1", "plusu2"):
            until(lambda who=who: complete(job_events(streams[who].events), both), f"{who}'s stream")
        until(lambda: complete(job_events(receiver.taken()), both), "the webhook")
        stored = stored_job_events(store_url)
        assert complete(stored, both), f"a job event twice, or lost: {stored}"
        assert job_events(streams["plusu1"].events) == job_events(receiver.taken()) == stored
        for stream in streams.values():
            ids = [event["id"] for event in stream.events]
            assert ids == sorted(set(ids)), "an event twice, or out of order, in a stream"
        assert streams["plusu3"].events == []         # the AR does not name plusu3
        by_key = {(e["type"], e["job"]["id"]): e for e in streams["plusu1"].events
                  if e["type"].startswith("job.")}
        quick_end, longer_end = by_key[(JOB_ENDED, quick)], by_key[(JOB_ENDED, longer)]
        assert quick_end["reservation"] == {"id": ar["id"], "owner": "plusu1", "name": ""}
        assert quick_end["job"]["owner"] == "plusu1" and longer_end["job"]["owner"] == "plusu2"
        assert quick_end["job"]["nodes"] == ["local1"]
        assert (quick_end["job"]["how"], quick_end["job"]["exit_status"]) == ("exited", 0)
        assert (longer_end["job"]["how"], longer_end["job"]["exit_status"]) == ("exited", 0)
        assert longer_end["job"]["end"] - longer_end["job"]["start"] >= 8
        started = by_key[(JOB_STARTED, longer)]
        assert set(started["job"]) == {"id", "owner", "nodes", "start"}
        assert started["time"] == started["job"]["start"]
        assert [e["type"] for e in receiver.taken()][0] == GRANTED


def _reserved_once_it_ends(daemon, job: str) -> dict:
    """An AR on the one node, once the leader has seen ``job`` (no h_rt)
    end: until then it refuses the window, naming the job."""
    busy = f"host busy: job {job} of plusu1 has no h_rt"
    tries = []

    def answered() -> bool:
        tries.append(daemon.run("plusu1", "plus_reserve", "--json", "-s", "now+2s", "-D",
                                "0:5:0", "-n", "1"))
        return tries[-1].returncode == 0 or busy not in tries[-1].stderr

    until(answered, f"job {job} to end")
    assert tries[-1].returncode == 0, tries[-1].stderr
    return json.loads(tries[-1].stdout)


def test_a_deleted_job_ends_saying_so_and_a_job_outside_ars_has_no_event(jobs_api, work):
    daemon, url, _, store_url = jobs_api
    stream = Stream(url, token(daemon, "plusmgr"))
    try:
        until(lambda: stream.connects, "the stream")
        outside = submit(daemon, work, "plusu1", "true")
        ar = _reserved_once_it_ends(daemon, outside)
        doomed = submit(daemon, work, "plusu1", "-ar", str(ar["id"]), "sleep", "300")
        until(lambda: (JOB_STARTED, doomed) in job_events(stream.events), "the job's start")
        daemon.ok("plusu1", "plus_qdel", doomed)
        until(lambda: (JOB_ENDED, doomed) in job_events(stream.events), "the job's end")
        end = next(e for e in stream.events if e["type"] == JOB_ENDED)
        assert end["job"]["how"] == "deleted" and end["job"]["exit_status"] is not None
        assert stored_job_events(store_url) == [(JOB_STARTED, doomed), (JOB_ENDED, doomed)]
        assert outside not in {job for _, job in job_events(stream.events)}
    finally:
        stream.close()


def _ar_row(store: Store, ar_id: int, owner: str, acl: str) -> None:
    """An AR's row as far as a job event reads it (owner, access list, name)."""
    with store.session() as session, session.begin():
        session.connection().execute(insert(ReservationRow.__table__).values(
            id=ar_id, owner=owner, owner_group="grp", state="r", submission_time=0,
            start_time=0, end_time=10 ** 6, acl=acl, request=json.dumps({"name": "nightly"})))


def test_the_inventorys_job_events_are_written_once_across_restarts_and_leaders(store_url):
    """What a Grid Engine or TORQUE leader publishes: a job of an AR that
    came is a start, one that left an end, each once whichever daemon
    publishes (a restart, a new leader, an old one that wakes up with its
    memory of before), seen by the AR's owner, its access list and the
    job's owner; a backend that writes its own (native) gets none here."""
    first = Store(store_url)
    _ar_row(first, 7, "alice", "alice,@physics")
    log = EventLog(first)
    job, outside = Job("41", "bob", ("n1",), 7, None, 100), Job("42", "carol", ("n2",))
    leader = PublishedInventory(first)
    leader.publish([], [job, outside], 110, job_events=True)
    (started,) = log.after(0, 10)
    assert (started.type, started.time, started.owner, started.acl) == \
        (JOB_STARTED, 100, "alice", ("alice", "@physics", "bob"))
    assert shown(started.id, started.type, started.time, started.data) == {
        "id": started.id, "type": JOB_STARTED, "time": 100,
        "reservation": {"id": 7, "owner": "alice", "name": "nightly"},
        "job": {"id": "41", "owner": "bob", "nodes": ["n1"], "start": 100}}
    assert [user for user, groups in (("alice", ()), ("bob", ()), ("eve", ("physics",)),
                                      ("mallory", ("chemistry",)))
            if sees(started, user, groups, manager=False)] == ["alice", "bob", "eve"]
    restarted = PublishedInventory(Store(store_url))
    restarted.publish([], [job, outside], 120, job_events=True)
    assert len(log.after(0, 10)) == 1                  # still running: no second start
    restarted.publish([], [outside], 130, job_events=True)
    leader.publish([], [outside], 140, job_events=True)     # the old leader, memory of before
    ended = log.after(started.id, 10)
    assert [(e.type, e.time) for e in ended] == [(JOB_ENDED, 130)]
    assert json.loads(ended[0].data)["job"] == {"id": "41", "owner": "bob", "nodes": ["n1"],
                                                "start": 100, "end": 130, "exit_status": None,
                                                "how": "gone"}
    orphan = Job("43", "dave", ("n1",), 99, None, 150)       # its AR no longer stored
    restarted.publish([], [outside, orphan], 150, job_events=True)
    (alone,) = log.after(ended[0].id, 10)
    assert (alone.owner, alone.acl, json.loads(alone.data)["reservation"]) == ("dave", (), {"id": 99})
    PublishedInventory(Store(store_url)).publish([], [outside], 160, job_events=False)
    assert log.after(alone.id, 10) == []


def test_each_job_the_inventory_saw_end_in_an_ar_is_one_ar_job_record(store_url):
    """Used node-hours on Grid Engine, TORQUE and Slurm: a job of an AR the
    leader saw leave the running jobs is one ar_job record in the reporting
    outbox, in the transaction of its end event, once across a restart, a
    new leader and an old one with its memory of before; none for a job
    outside ARs, one still running, or one whose AR is gone; plus_account's
    reader counts it a node-span per host."""
    store = Store(store_url)
    _ar_row(store, 7, "alice", "")
    outbox = Outbox(store.engine, store.url)
    pair, outside = Job("41", "bob", ("n1", "n2"), 7, None, 100), Job("42", "carol", ("n2",))
    leader = PublishedInventory(store)
    leader.publish([], [pair, outside], 110, job_events=True)
    assert outbox.look()[1] == []                               # running: nothing used yet
    restarted = PublishedInventory(Store(store_url))
    restarted.publish([], [pair, outside], 120, job_events=True)
    restarted.publish([], [outside], 130, job_events=True)
    leader.publish([], [outside], 140, job_events=True)         # the old leader wakes up
    orphan = Job("43", "dave", ("n1",), 99, None, 150)          # its AR no longer stored
    restarted.publish([], [outside, orphan], 150, job_events=True)
    restarted.publish([], [outside], 160, job_events=True)
    lines = [line for _, line in outbox.look()[1]]
    assert lines == ["130:ar_job:130:0:7:41:bob:100:n1,n2\n"]
    jobs: list = []
    collect(lines, jobs=jobs)
    assert jobs == [JobUse("bob", 7, 100, 130)] * 2             # one node-span per host
