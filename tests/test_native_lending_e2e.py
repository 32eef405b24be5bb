"""Lending end to end on the native backend: the daemon, plus_reserve,
plus_qsub -preemptible, real processes on this machine. A preemptible
job runs on the AR's idle slot, is requeued when the AR's owner submits,
the owner's job starts, and the preemptible one runs again after it under
the same id; a job that is not preemptible never runs there."""

from __future__ import annotations

import json

from event_harness import until
from test_job_events import jobs_api, stored_job_events, submit  # noqa: F401 (the fixture)


def states(daemon) -> dict[str, str]:
    shown = json.loads(daemon.ok("root", "plus_qstat", "-u", "*", "--json"))
    return {str(job["id"]): job["state"] for job in shown}


def test_a_preemptible_job_is_lent_requeued_and_runs_again(jobs_api, work):  # noqa: F811
    daemon, _, _, store_url = jobs_api
    ar = daemon.reserve("plusu1", "-s", "now+1s", "-D", "0:10:0", "-n", "1")
    lent = [submit(daemon, work, "plusu2", "-preemptible", "requeue", "-l", "h_rt=300",
                   "sleep", "300") for _ in range(2)]
    plain = submit(daemon, work, "plusu2", "-l", "h_rt=300", "sleep", "300")
    until(lambda: all(states(daemon).get(j) == "r" for j in lent), "the lent jobs' start")
    assert states(daemon)[plain] == "qw"                     # not preemptible: never lent
    owners = submit(daemon, work, "plusu1", "-ar", str(ar["id"]), "sleep", "3")
    until(lambda: states(daemon).get(owners) == "r", "the owner's job's start")
    preempted = [kind for kind, _ in stored_job_events(store_url) if kind == "job.preempted"]
    assert len(preempted) == 1
    until(lambda: owners not in states(daemon)
          and all(states(daemon).get(j) == "r" for j in lent), "the requeued job running again")
    assert states(daemon)[plain] == "qw"
