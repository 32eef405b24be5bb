"""Job events on the native backend: jobs of an AR, a one-second one and
a longer one across a restart of the daemon, each seen started and ended
exactly once by id by an SSE client and by a webhook receiver, carrying
the job's id, owner, nodes, the AR's id and owner, and how it ended; the
job owner named in the AR's access list sees them, a user the AR does not
name sees none. The events are written in the scheduler's own writes of
the job (the store's event table read directly: none twice, none lost)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from daemon_harness import Daemon, job_daemon
from event_harness import API_SETTINGS, Stream, complete, job_events, until, watching
from http_harness import answering, free_port, token
from overlay.events.catalog import GRANTED, JOB_ENDED, JOB_STARTED

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


def test_a_deleted_job_ends_saying_so_and_a_job_outside_ars_has_no_event(jobs_api, work):
    daemon, url, _, store_url = jobs_api
    stream = Stream(url, token(daemon, "plusmgr"))
    try:
        until(lambda: stream.connects, "the stream")
        outside = submit(daemon, work, "plusu1", "true")
        ar = daemon.reserve("plusu1", "-s", "now+2s", "-D", "0:5:0", "-n", "1")
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
