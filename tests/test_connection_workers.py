"""The threads that serve the daemon's connections (overlay.daemon.connections.Workers):
one per connection at a time, so a slow client delays no one else; kept for
the next connections, only a few idle ones."""

from __future__ import annotations

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


def test_a_job_never_waits_for_a_thread_a_slow_job_holds():
    release, done = threading.Event(), threading.Event()
    workers = Workers(lambda job: release.wait() if job == "slow" else done.set())
    workers.submit("slow")
    workers.submit("quick")
    assert done.wait(5)
    release.set()
    workers.stop()


def test_threads_are_kept_for_the_next_jobs():
    others = _others()
    seen, finished = set(), threading.Semaphore(0)

    def serve(job):
        seen.add(threading.get_ident())
        finished.release()

    workers = Workers(serve)
    for _ in range(20):
        workers.submit("job")
        assert finished.acquire(timeout=5)
        time.sleep(0.001)     # the thread is back in the idle ones
    assert len(seen) == 1
    workers.stop()
    assert _wait_for(lambda: _connection_threads(others) == 0)


def test_only_spare_threads_stay_idle_after_a_burst():
    others = _others()
    release = threading.Event()
    workers = Workers(lambda job: release.wait(), spare=3)
    for _ in range(12):
        workers.submit("job")
    assert _wait_for(lambda: _connection_threads(others) == 12)
    release.set()
    assert _wait_for(lambda: _connection_threads(others) == 3)
    workers.stop()
    assert _wait_for(lambda: _connection_threads(others) == 0)
