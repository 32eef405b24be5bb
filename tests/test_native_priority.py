"""Grid Engine's dispatch priority: seed 001's license example figures."""

from __future__ import annotations

import pytest

from overlay_native.jobs import Submission
from overlay_native.scheduling.priority import priorities
from overlay_native.scheduling.schedconf import SchedulerConfig
from overlay_native.submit import make_job
from test_native_resources import LICENSES, cluster


def test_seed_001_license_example_priorities(tmp_path):
    """weight_priority 1, weight_urgency 0.1, weight_ticket 0.01: -p 100
    overwhelms the license urgency: 1.08000, 0.10500, 0.00500."""
    config = cluster(tmp_path, LICENSES)

    def job(job_id, hard, priority=0):
        return make_job(config, job_id, "alice", ("staff",), 0,
                        Submission(("sleeper.sh", "20"), hard=hard, reserve=True, priority=priority),
                        is_manager=True)
    jobs = [job(3127, "h_rt=30,license=4", 100), job(3128, "h_rt=30,license=5"),
            job(3129, "h_rt=31,license=1")]
    found = priorities(jobs, config.table, config.scheduler, 0)
    assert [f"{found[j.id].prio:.5f}" for j in jobs] == ["1.08000", "0.10500", "0.00500"]
    assert [found[j.id].nurg for j in jobs] == [0.75, 1.0, 0.0]
    assert found[3127].rrcontr == 1000 + 100 * 4       # slots urgency 1000, license 100 each


def test_equal_jobs_normalize_to_one_half_and_waiting_counts(tmp_path):
    config = cluster(tmp_path, LICENSES)
    jobs = [make_job(config, i, "alice", (), submit, Submission(("x",)))
            for i, submit in ((1, 0), (2, 0))]
    found = priorities(jobs, config.table, config.scheduler, 100)
    assert found[1].npprior == found[1].nurg == found[1].ntckts == 0.5
    assert found[1].prio == pytest.approx(0.5 + 0.05 + 0.005)
    waiting = SchedulerConfig(weight_waiting_time=1.0)
    older = [make_job(config, 1, "alice", (), 0, Submission(("x",))),
             make_job(config, 2, "alice", (), 60, Submission(("x",)))]
    found = priorities(older, config.table, waiting, 100)
    assert (found[1].wtcontr, found[2].wtcontr) == (100.0, 40.0)
    assert found[1].prio > found[2].prio
