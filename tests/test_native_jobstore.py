"""The native jobs' store, on SQLite and PostgreSQL: what a restart reads back."""

from __future__ import annotations

import math

import pytest

from overlay_native import jobstore
from overlay_native.jobs import Job, JobState, Placement, Submission
from overlay_native.jobstore import Fenced, JobCounterRow, JobStore, StoredJob
from overlay_native.jobview import JobView


def job(**changes) -> Job:
    spec = Submission(("job.sh", "a b"), script="#!/bin/sh\necho hi\n", name="job.sh",
                      hard="h_rt=60", pe="smp", pe_range=((2, 4), (8, 8)), queues=("all.q",),
                      env={"X": "1"}, ar=7, hold_jids=("3",))
    base = dict(id=0, owner="alice", group="staff", groups=("staff", "physics"), submit_time=100,
                submission=spec, hard={}, soft={})
    base.update(changes)
    return Job(**base)


@pytest.fixture
def jobs(store_url):
    store = JobStore(store_url)
    yield store
    store.close()


def test_jobs_come_back_as_they_were_stored(jobs, store_url):
    first = jobs.create(job())
    second = jobs.create(job(owner="bob"))
    assert (first.id, second.id) == (1, 2)
    second.state, second.start_time = JobState.RUNNING, 150
    second.placement = Placement((("all.q", "h1", 2), ("all.q", "h2", 2)), "smp", 60.0, math.inf)
    jobs.save(second)
    reopened = JobStore(store_url)
    loaded = list(reopened.load())
    reopened.close()
    assert [(j.id, j.owner, j.state) for j in loaded] == [(1, "alice", JobState.QUEUED),
                                                           (2, "bob", JobState.RUNNING)]
    assert loaded[0].submission == first.submission and loaded[0].groups == ("staff", "physics")
    assert loaded[1].placement == second.placement and loaded[1].start_time == 150
    jobs.remove(1)
    assert [j.id for j in jobs.load()] == [2]


def test_ids_wrap_and_skip_ids_in_use(jobs):
    from sqlmodel import Session
    jobs.create(job())                                     # 1
    with Session(jobs.engine) as session, session.begin():
        session.merge(JobCounterRow(name="jobseqnum", value=9_999_998))
    assert jobs.create(job()).id == 9_999_999
    assert jobs.create(job()).id == 2                      # wrapped, 1 is in use


class Restored:
    """A view's restore, counting the jobs it is given (what a read costs)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, stored: list[StoredJob]) -> list[Job]:
        self.count += len(stored)
        return [job(id=s.id, owner=s.owner, state=s.state) for s in stored]


def test_a_view_reads_only_what_changed_since_its_last_read(jobs):
    restored = Restored()
    view = JobView(jobs, restored)
    for _ in range(5):
        jobs.create(job())
    assert [j.id for j in view.read()] == [1, 2, 3, 4, 5] and restored.count == 5
    assert len(view.read()) == 5 and restored.count == 5         # nothing changed: nothing read
    changed = job(id=2, state=JobState.RUNNING)
    jobs.save(changed)
    jobs.remove(4)
    jobs.publish("hosts", "[1]")
    assert {j.id: j.state for j in view.read()} == {1: JobState.QUEUED, 2: JobState.RUNNING,
                                                    3: JobState.QUEUED, 5: JobState.QUEUED}
    assert restored.count == 6 and view.published == {"hosts": "[1]"}


def test_a_view_too_far_behind_for_the_tombstones_reads_everything_again(jobs, monkeypatch):
    restored = Restored()
    view = JobView(jobs, restored)
    jobs.create(job())
    jobs.create(job())
    view.read()
    monkeypatch.setattr(jobstore, "TOMBSTONE_SECONDS", -1)    # every tombstone is old at once
    jobs.remove(1)
    assert [j.id for j in view.read()] == [2] and restored.count == 3


def test_a_leader_that_another_took_over_from_writes_no_job(jobs, store_url):
    jobs.take_epoch()
    stored = jobs.create(job())
    successor = JobStore(store_url)
    try:
        successor.take_epoch()
        stored.state = JobState.RUNNING
        for write in (lambda: jobs.save(stored), lambda: jobs.create(job()),
                      lambda: jobs.remove(stored.id), lambda: jobs.show([stored]),
                      lambda: jobs.publish("hosts", "[]")):
            with pytest.raises(Fenced):
                write()
        assert [(j.id, j.state) for j in successor.load()] == [(1, JobState.QUEUED)]
        successor.save(stored)
        assert [j.state for j in successor.load()] == [JobState.RUNNING]
    finally:
        successor.close()
