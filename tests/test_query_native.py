"""QUERY on the native backend is the scheduler's own answer: on random
clusters and queues (seeded), with ARs, hosts that run no jobs, -R y and
max_reservation, the estimate equals the start the scheduler gives the
job once submitted, when jobs end at their h_rt (the scheduler runs in
virtual time: overlay_native.simulation.querycheck)."""

from __future__ import annotations

import pytest

from overlay.api.plugin import Request
from overlay_native.jobs import Submission
from overlay_native.simulation import querycheck
from overlay_native.simulation.querycheck import T0, USER, World

SEEDS = range(120)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_estimate_is_the_start_the_scheduler_gives(seed):
    trial = querycheck.trial(seed)
    assert trial.estimate == trial.actual, trial


def test_the_checks_ask_real_questions():
    """Most trials have jobs waiting ahead and a start in the future (the
    test above would pass on empty clusters too)."""
    trials = [querycheck.trial(seed) for seed in SEEDS[:30]]
    assert sum(t.waiting > 0 for t in trials) >= 15
    assert sum(t.actual is not None and t.actual > t.now for t in trials) >= 10
    assert any(t.actual is None for t in trials)


CLUSTER = """\
    nodes: [{name: "h[1-3]", ncpus: 2}]
    pes: [{name: q2, slots: 100, allocation_rule: 2}]
    queues: [{name: all.q, hostlist: ["h[1-3]"], slots: 2, pe_list: [q2]}]
    """
HOSTS = ["h1", "h2", "h3"]


def ask(world: World, nodes: int, seconds: int = 600) -> tuple[int | None, str]:
    return world.backend.job_start(Request(world.clock.now, world.clock.now + seconds, nodes),
                                   HOSTS, (USER.user, USER.groups))


def test_hosts_that_run_no_jobs_are_not_counted(tmp_path):
    world = World(tmp_path, CLUSTER, 60, none={"h2", "h3"})
    try:
        assert ask(world, 1)[0] == T0
        start, why = ask(world, 2)
        assert start is None
        assert why == ("only 1 of the 3 node(s) matching the request run jobs (exec: none runs "
                       "none); it needs 2")
    finally:
        world.close()


def test_a_queued_job_without_reservation_is_ahead_and_the_offset_adds_nothing(tmp_path):
    world = World(tmp_path, CLUSTER, 60)
    try:
        for _ in range(3):
            world.submit(Submission(("sleeper", "100"), hard="h_rt=100", pe="q2",
                                    pe_range=((2, 2),)))
        world.scheduler.run_pass()
        assert ask(world, 1)[0] == T0 + 100   # at the running jobs' h_rt, not DURATION_OFFSET later
        world.submit(Submission(("sleeper", "300"), hard="h_rt=300", pe="q2", pe_range=((6, 6),)))
        start, how = ask(world, 1)
        assert start == T0 + 400      # behind the larger queued job, though it has no -R y
        assert "1 waiting in its order" in how and "3 running job(s)" in how
    finally:
        world.close()


def test_no_start_when_jobs_without_h_rt_hold_the_hosts(tmp_path):
    world = World(tmp_path, CLUSTER, 60)
    try:
        world.submit(Submission(("sleeper",), pe="q2", pe_range=((2, 2),)))
        world.scheduler.run_pass()
        assert ask(world, 2)[0] == T0
        start, why = ask(world, 3)
        assert start is None and why.startswith("no pass of the native scheduler would start it")
    finally:
        world.close()


def test_an_estimate_that_runs_out_of_time_says_no_earlier_than(tmp_path):
    """A question cannot cost more than the estimate's time: past it, the
    answer is the instant the passes reached, a lower bound said as such
    (here with no time at all: after the first pass)."""
    world = World(tmp_path, CLUSTER, 60)
    try:
        for seconds in (100, 200, 300, 400):
            world.submit(Submission(("sleeper", str(seconds)), hard=f"h_rt={seconds}", pe="q2",
                                    pe_range=((6, 6),)))
        world.scheduler.run_pass()
        exact, _ = ask(world, 1)
        world.backend.estimate_seconds = 0
        bound, how = ask(world, 1)
        assert T0 < bound < exact == T0 + 1000
        assert how.startswith("no earlier than this:") and "had not started it after 1 pass" in how
    finally:
        world.close()
