"""Lending idle reserved slots on the native backend: preemptible jobs
(plus_qsub -preemptible requeue|kill) run on a running AR's idle slots and
give them back, in the pass where the AR's own job wants them, requeued
(same id, same place in the queue) or killed; jobs that did not say so
are never lent. In virtual time (overlay_native.simulation.simhosts)."""

from __future__ import annotations

import json

import pytest

from overlay.api.commands import RequestError
from overlay.persistence.events import EventLog
from overlay.persistence.store import Store
from overlay_native import acct
from overlay_native.cli.qsub import split_options, submission
from overlay_native.resources.window import ReservedWindow
from overlay_native.submit import SubmitError
from tests.test_native_scheduler import ALICE, BOB, T, World

CLUSTER = """\
nodes: [{name: a, ncpus: 2}, {name: b, ncpus: 2}]
scheduler: {NodeSortKey: [NodeName]}
"""


def open_ar(world: World, slots=None, state: str = "r") -> None:
    """AR 7 of alice's over both nodes, open from T to T + 1000."""
    world.scheduler.set_windows([ReservedWindow(7, T, T + 1000, slots or {"a": 2, "b": 2},
                                                ("alice",), state)])


def fill(world: World, mode: str, count: int = 4, run: int = 500) -> list[int]:
    """Bob's preemptible jobs that fill the AR's idle slots."""
    jobs = [world.submit(BOB, "x", str(run), hard=f"h_rt={run}", preemptible=mode)
            for _ in range(count)]
    world.at(T + 1)
    return jobs


def preempted_events(world: World) -> list[dict]:
    store = Store(world.url)
    try:
        return [json.loads(e.data) | {"type": e.type, "owner": e.owner, "acl": e.acl}
                for e in EventLog(store).after(0, 100) if e.type == "job.preempted"]
    finally:
        store.close()


def test_a_preemptible_job_is_requeued_when_the_owner_submits_and_runs_again(tmp_path):
    world = World(tmp_path, CLUSTER)
    open_ar(world)
    lent = fill(world, "requeue")
    assert [world.state(j) for j in lent] == ["r"] * 4
    assert {world.scheduler.jobs[j].placement.lent for j in lent} == {7}
    owners = world.submit(ALICE, "x", "100", ar=7)
    world.at(T + 5)                                             # the owner's pass
    assert world.state(owners) == "r"                           # in the same pass
    assert world.scheduler.jobs[owners].placement.master == ("all.q", "a")
    assert [world.state(j) for j in lent] == ["r", "Rr", "r", "r"]  # on a: the latest, one slot
    back = lent[1]
    event = preempted_events(world)[0]
    assert event["job"]["id"] == str(back) and event["job"]["preemptible"] == "requeue"
    assert event["reservation"]["id"] == 7 and event["owner"] == "bob"   # no AR stored: its owner sees it
    world.at(T + 6)                                             # its end: back in the queue
    assert world.state(back) == "qw"
    assert world.scheduler.jobs[back].submit_time == T      # its place: its submission
    record = next(r for r in world.accounting() if r.job_number == back)
    assert record.failed == acct.PREEMPTED and acct.lent_from(record) == 7
    assert record.category == "-l h_rt=500 -preemptible requeue -lent 7"
    world.at(T + 7)                                             # no idle slot: it waits
    assert world.state(back) == "qw"
    world.at(T + 120)                                           # the owner's job ended
    world.at(T + 121)
    assert world.state(back) == "r"                         # it runs again, same id
    assert world.scheduler.jobs[back].placement.lent == 7
    assert "PREEMPTED RUNS 1, WALLCLOCK 5" in acct.lending(world.accounting())


def test_a_preemptible_kill_job_is_ended_and_accounted_as_preempted(tmp_path):
    world = World(tmp_path, CLUSTER)
    open_ar(world)
    lent = fill(world, "kill")
    owners = world.submit(ALICE, "x", "100", ar=7)
    world.at(T + 5)
    assert world.state(owners) == "r" and world.state(lent[1]) == "dr"
    world.at(T + 6)
    assert world.state(lent[1]) is None                         # ended, not requeued
    record = next(r for r in world.accounting() if r.job_number == lent[1])
    assert (record.failed, record.ru_wallclock, acct.lent_from(record)) == (acct.PREEMPTED, 5, 7)
    assert preempted_events(world)[0]["job"]["preemptible"] == "kill"


def test_a_job_that_is_not_preemptible_is_never_lent(tmp_path):
    world = World(tmp_path, CLUSTER)
    open_ar(world)
    plain = world.submit(BOB, "x", "100", hard="h_rt=100")
    world.at(T + 1)
    assert world.state(plain) == "qw"                           # every slot is the AR's
    world.at(T + 2)
    assert world.state(plain) == "qw" and not world.hosts.started


def test_lending_needs_an_open_ar_and_a_run_that_ends_inside_it(tmp_path):
    world = World(tmp_path, CLUSTER)
    open_ar(world, state="w")                                   # not started: nothing lent
    waiting = world.submit(BOB, "x", "100", hard="h_rt=100", preemptible="requeue")
    endless = world.submit(BOB, "x", "100", preemptible="requeue")   # no h_rt: never lent
    too_long = world.submit(BOB, "x", "100", hard="h_rt=2000", preemptible="kill")
    world.at(T + 1)
    assert world.state(waiting) == "qw"
    open_ar(world)
    world.at(T + 2)
    assert (world.state(waiting), world.state(endless), world.state(too_long)) == ("r", "qw", "qw")


def test_a_lent_job_holds_its_slots_as_any_other_once_its_ar_is_gone(tmp_path):
    world = World(tmp_path, CLUSTER)
    open_ar(world)
    lent = fill(world, "requeue")
    assert all(world.scheduler.jobs[j].placement.lent == 7 for j in lent)
    world.scheduler.reservation_over(7)                          # cancelled: they run on
    other = world.submit(BOB, "x", "100", hard="h_rt=100")
    world.at(T + 3)
    assert [world.state(j) for j in lent] == ["r"] * 4
    assert world.state(other) == "qw"                            # their slots are taken


@pytest.mark.parametrize("options, message", [
    ({"preemptible": "suspend"}, "-preemptible: expected requeue or kill, got 'suspend'"),
    ({"preemptible": "requeue", "ar": 7}, "-preemptible with -ar 7: a job of an advance "
                                          "reservation is its own"),
])
def test_bad_preemptible_requests_are_refused_and_store_nothing(tmp_path, options, message):
    world = World(tmp_path, CLUSTER)
    open_ar(world)
    with pytest.raises(SubmitError, match=message):
        world.submit(ALICE, **options)
    assert world.scheduler.jobs == {} and world.store.load() == []


def test_plus_qsub_reads_preemptible_and_refuses_other_words():
    options, rest = split_options(["-preemptible", "kill", "job.sh"])
    assert submission(options, rest)["preemptible"] == "kill"
    with pytest.raises(RequestError, match="-preemptible: expected requeue or kill, got 'maybe'"):
        submission(*split_options(["-preemptible", "maybe", "job.sh"]))


def test_plus_qacct_prints_nothing_more_without_lent_runs(tmp_path):
    world = World(tmp_path, CLUSTER)
    world.submit(BOB, "x", "5")
    world.at(T)
    world.at(T + 6)
    assert len(world.accounting()) == 1 and acct.lending(world.accounting()) == ""
