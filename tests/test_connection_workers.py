"""The threads that serve the daemon's connections (overlay.daemon.connections.Workers):
each takes its connection itself (one waits for the next at a time) and
serves it, so a slow client delays no one else; kept for the next
connections, only a few idle ones; all gone once ``take`` says stop."""

from __future__ import annotations

import queue
import threading
import time

from overlay.daemon.connections import Workers


def _connection_threads(other: frozenset = frozenset()) -> int:
    """Connection threads alive but ``other`` (those of daemons that other tests left)."""
    return sum(t.name == "connection" and t not in other for t in threading.enumerate())


def _others() -> frozenset:
    return frozenset(t for t in threading.enumerate() if t.name == "connection")


def _wait_for(condition, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


class Jobs:
    """What a server's accept gives: the jobs put, then None for ever once stopped."""

    def __init__(self) -> None:
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.stopped = False

    def take(self):
        job = self.queue.get()
        if job is None:
            self.stopped = True
            self.queue.put(None)            # the next thread's turn sees it too
        return job

    def stop(self) -> None:
        self.queue.put(None)


def test_a_job_never_waits_for_a_thread_a_slow_job_holds():
    jobs, release, done = Jobs(), threading.Event(), threading.Event()
    workers = Workers(jobs.take, lambda job: release.wait() if job == "slow" else done.set())
    workers.start()
    jobs.queue.put("slow")
    jobs.queue.put("quick")
    assert done.wait(5)
    release.set()
    jobs.stop()


def test_threads_are_kept_for_the_next_jobs():
    others = _others()
    jobs, seen, finished = Jobs(), set(), threading.Semaphore(0)

    def serve(job):
        seen.add(threading.get_ident())
        finished.release()

    workers = Workers(jobs.take, serve)
    workers.start()
    for _ in range(20):
        jobs.queue.put("job")
        assert finished.acquire(timeout=5)
        assert _wait_for(lambda: workers._idle == 2)    # the thread is back in the idle ones
    assert len(seen) <= 2     # the one serving and the one waiting for the next, in turn
    assert _connection_threads(others) <= 2
    jobs.stop()
    assert _wait_for(lambda: _connection_threads(others) == 0)


def test_only_spare_threads_stay_idle_after_a_burst():
    others = _others()
    jobs, release = Jobs(), threading.Event()
    workers = Workers(jobs.take, lambda job: release.wait(), spare=3)
    workers.start()
    for _ in range(12):
        jobs.queue.put("job")
    assert _wait_for(lambda: _connection_threads(others) == 13)     # and one waiting for more
    release.set()
    assert _wait_for(lambda: _connection_threads(others) == 3)
    jobs.stop()
    assert _wait_for(lambda: _connection_threads(others) == 0)
