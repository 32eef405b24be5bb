"""The native jobs' store, on SQLite and PostgreSQL: what a restart reads back."""

from __future__ import annotations

import math

import pytest

from overlay_native.jobs import Job, JobState, Placement, Submission
from overlay_native.jobstore import JobCounterRow, JobStore


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
