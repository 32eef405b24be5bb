"""overlay/usecases/lifecycle.py: stopping while a reconcile pass runs, and passes
that look only at the ARs that changed, fell due or hold a host whose
liveness changed."""

from __future__ import annotations

import logging
import threading
import time

import pytest
from apscheduler.events import EVENT_JOB_MAX_INSTANCES

from overlay.language.model import State
from overlay.log.ratelog import RateLimitFilter
from overlay.usecases import lifecycle as lifecycle_module
from overlay.usecases.lifecycle import Lifecycle
from test_manager import ALICE, CLUSTER, HOUR, T0, Env, _with_alive


class SlowLifecycle(Lifecycle):
    """A lifecycle whose second pass waits until the test lets it go."""

    def __init__(self, interval: float = 1) -> None:
        super().__init__(manager=None, interval=interval)
        self.passes = 0
        self.inside = threading.Event()
        self.release = threading.Event()

    def tick(self):
        self.passes += 1
        if self.passes == 2:
            self.inside.set()
            self.release.wait(10)
        return int(time.time()) + 3600

    def next_due(self):
        return int(time.time()) + 3600


def test_stop_during_a_pass_waits_for_it_and_returns():
    """APScheduler's shutdown holds the lock add_job needs: a pass that aims
    the next date job after shutdown began would wait for ever."""
    lifecycle = SlowLifecycle()
    lifecycle.start()
    assert lifecycle.inside.wait(60), "the periodic pass did not run"
    stopper = threading.Thread(target=lifecycle.stop)
    stopper.start()
    time.sleep(0.2)                      # shutdown is now waiting for the pass
    lifecycle.release.set()
    stopper.join(60)
    assert not stopper.is_alive(), "stop() deadlocked with the pass it waited for"


def test_a_hung_pass_gets_one_line_of_skipped_timers_not_one_a_second(caplog, monkeypatch):
    """A pass stuck on a store cut off: the timers falling due meanwhile
    are skipped, and APScheduler's line saying so comes once, not at each."""
    (timers,) = lifecycle_module._TIMERS_LOG.filters
    monkeypatch.setattr(timers, "limit", RateLimitFilter(burst=1).limit)   # not an earlier test's minute
    lifecycle = SlowLifecycle(interval=0.1)
    skipped = threading.Semaphore(0)
    lifecycle.scheduler.add_listener(lambda _event: skipped.release(), EVENT_JOB_MAX_INSTANCES)
    caplog.set_level(logging.WARNING, "apscheduler")
    lifecycle.start()
    try:
        assert lifecycle.inside.wait(60), "the periodic pass did not run"
        for _ in range(5):
            assert skipped.acquire(timeout=60), "no timer fell due during the hung pass"
    finally:
        lifecycle.release.set()
        lifecycle.stop()
    lines = [r for r in caplog.records if "maximum number of running instances" in r.getMessage()]
    assert len(lines) == 1


# -- passes look at what changed ---------------------------------------------------------

class Watched:
    """Counts what a pass asks of the backend: which ARs it checks the
    health of and which ARs' state it applies."""

    def __init__(self, env) -> None:
        self.checked: list[int] = []
        self.applied: list[int] = []
        backend = env.backend
        health = backend.health

        def counted_health(ars):
            self.checked += [ar.id for ar in ars]
            return health(ars)
        backend.health = counted_health
        for name in ("prepare", "release", "teardown"):
            setattr(backend, name, self._counted(getattr(backend, name)))

    def _counted(self, method):
        def counted(ar):
            self.applied.append(ar.id)
            return method(ar)
        return counted

    def take(self) -> tuple[list[int], list[int]]:
        seen = (sorted(self.checked), sorted(set(self.applied)))
        self.checked, self.applied = [], []
        return seen


@pytest.fixture
def busy(tmp_path):
    """Twenty ARs on the five-node cluster, four on each node, one pass done."""
    env = Env(tmp_path)
    ars = [env.reserve(nodes=1, start=T0 + HOUR * (1 + i // 5), hours=1) for i in range(20)]
    env.lifecycle.tick()
    return env, ars


def test_after_the_first_pass_a_pass_looks_only_at_what_changed(busy):
    env, ars = busy
    watched = Watched(env)
    env.lifecycle.tick()
    assert watched.take() == ([], [])                         # nothing changed, nothing due
    changed = env.manager.modify(ALICE, ars[15].id, None, None, 2 * HOUR, None, None)
    env.settle()
    assert watched.take() == ([], [changed.id])               # the enforcer's, after the command
    env.lifecycle.tick()
    assert watched.take() == ([changed.id], [])               # its health asked, nothing to apply
    env.clock.now = ars[0].start                              # one window opens
    env.lifecycle.tick()
    opened = [ar.id for ar in ars[:5]]
    assert all(env.manager.ars[i].state == State.RUNNING for i in opened)
    assert watched.take() == ([], opened)
    assert env.manager.ars[ars[5].id].state == State.WAITING


def test_a_host_that_dies_or_revives_is_looked_at_with_its_ars_only(busy):
    env, ars = busy
    node = "n02"
    on_node = sorted(ar.id for ar in ars if node in ar.node_names)
    assert len(on_node) == 4
    watched = Watched(env)
    env.cluster_file.write_text(_with_alive(CLUSTER, node, False))
    env.lifecycle.tick()
    checked, applied = watched.take()
    assert checked == on_node and applied == on_node
    assert all(env.manager.ars[i].state == State.WARNING for i in on_node)
    env.lifecycle.tick()                                      # still down: asked again, nothing new
    assert watched.take() == (on_node, [])
    env.cluster_file.write_text(CLUSTER)
    env.lifecycle.tick()
    assert watched.take() == (on_node, on_node)
    assert all(env.manager.ars[i].state == State.WAITING for i in on_node)
    env.lifecycle.tick()
    assert watched.take() == ([], [])


def test_an_ar_the_backend_failed_to_apply_is_retried_until_it_takes(busy):
    env, ars = busy
    failures = []
    prepare = env.backend.prepare

    def failing(ar):
        if len(failures) < 3:     # the enforcer's after the command, then two passes
            failures.append(ar.id)
            raise RuntimeError("batch system unreachable")
        prepare(ar)
    env.backend.prepare = failing
    changed = env.manager.modify(ALICE, ars[16].id, None, None, 2 * HOUR, None, None)
    env.settle()                                              # fails: kept for a retry
    watched = Watched(env)
    env.lifecycle.tick()                                      # fails again: kept for a retry
    env.lifecycle.tick()                                      # and again
    env.lifecycle.tick()                                      # takes
    env.lifecycle.tick()                                      # nothing left to do
    assert failures == [changed.id] * 3
    assert watched.applied == [changed.id] * 3
    assert env.backend.scheduler.windows[changed.id].end == changed.end


def test_due_times_expiry_and_max_expired_without_a_scan(tmp_path):
    env = Env(tmp_path, settings="max_expired: 2\n")
    ars = [env.reserve(nodes=1, start=T0 + HOUR, hours=0.5 + i / 10) for i in range(5)]
    env.lifecycle.tick()
    assert env.lifecycle.next_due() == T0 + HOUR
    env.clock.now = T0 + HOUR
    env.lifecycle.tick()
    assert env.lifecycle.next_due() == ars[0].end - 900    # its ending-soon event
    env.clock.now = ars[-1].end
    env.lifecycle.tick()
    assert sorted(env.manager.ars) == [ars[3].id, ars[4].id]  # the two most recent kept
    assert env.lifecycle.next_due() == env.manager.ars[ars[3].id].finished_time + env.config.expiry
    env.clock.now += env.config.expiry
    env.lifecycle.tick()
    assert env.manager.ars == {} and env.lifecycle.next_due() is None
