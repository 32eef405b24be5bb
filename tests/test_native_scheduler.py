"""The native scheduler service in virtual time (overlay_native.simulation.simhosts runs
the jobs): seed 001's license example with its schedule file, holds,
deletion, AR jobs, immediate and verified submissions, failed starts,
accounting, and a restart."""

from __future__ import annotations

import json
import re
import textwrap

import pytest
from sqlmodel import Session

from overlay.api.plugin import StoreError
from overlay.persistence.events import EventLog
from overlay.persistence.outbox import Outbox
from overlay.persistence.store import Store
from overlay_native import acct
from overlay_native.execution.runners import ExecutionError
from overlay_native.jobs import JobState, Submission
from overlay_native.jobstore import Fenced, JobCounterRow, JobStore
from overlay_native.resources.cluster import Cluster
from overlay_native.resources.window import ReservedWindow
from overlay_native.scheduling.scheduler import Scheduler, Submitter
from overlay_native.simulation.simhosts import Clock, SimulatedHosts
from overlay_native.submit import SubmitError

T = 1077903416
MANAGER = Submitter("root", ("root",), True)
ALICE = Submitter("alice", ("staff",), False)
BOB = Submitter("bob", ("bob",), False)


class World:
    """A scheduler on a cluster file, its clock, hosts, store and files."""

    def __init__(self, tmp_path, cluster: str, now: int = T, offset: int = 0,
                 url: str | None = None, reporting: bool = False) -> None:
        self.dir = tmp_path
        (tmp_path / "cluster.yaml").write_text(textwrap.dedent(cluster))
        self.clock = Clock(now)
        self.hosts = SimulatedHosts(self.clock)
        self.url = url or f"sqlite:///{tmp_path / 'plus.db'}"
        self.offset, self.reporting = offset, reporting
        self.scheduler = self.new_scheduler()

    def new_scheduler(self) -> Scheduler:
        """A scheduler leading on the store (it takes the stored jobs, as after a restart)."""
        self.store = JobStore(self.url)
        scheduler = Scheduler(Cluster(str(self.dir / "cluster.yaml"), False,
                                      duration_offset=self.offset),
                              self.store, self.hosts,
                              str(self.dir / "accounting"),
                              str(self.dir / "schedule"), self.offset, self.clock,
                              reporting=self.reporting)
        scheduler.lead(lambda: True)
        return scheduler

    def submit(self, who=ALICE, *command, **options) -> int:
        return self.scheduler.submit(who, Submission(command or ("sleeper.sh", "20"), **options))["id"]

    def at(self, when: int) -> None:
        self.clock.now = when
        self.scheduler.run_pass()

    def state(self, job_id: int) -> str | None:
        job = self.scheduler.jobs.get(job_id)
        return job.state_letters if job else None

    def accounting(self) -> list[acct.JobRecord]:
        """The accounting file, once the leader's drain wrote what waits in the outbox."""
        self.scheduler.accounting.drain()
        path = self.dir / "accounting"
        return list(acct.read(str(path))) if path.exists() else []


LICENSES = """\
complexes: [{name: license, type: INT, relop: "<=", consumable: YES, urgency: 100}]
global: {complex_values: {license: 5}}
nodes: [{name: carc, load: 0.1}, {name: bilbur, load: 0.2}, {name: es-ergb01-01, load: 0.3}]
queues: [{name: all.q, slots: 1, hostlist: [carc, bilbur, es-ergb01-01]}]
scheduler: {max_reservation: 10, params: MONITOR=1}
"""

# Seed 001, section 2 d): the schedule file of the license example, as printed there.
SEED_SCHEDULE = """\
::::::::
3127:1:STARTING:1077903416:30:G:global:license:4.000000
3127:1:STARTING:1077903416:30:Q:all.q@carc:slots:1.000000
3128:1:RESERVING:1077903446:30:G:global:license:5.000000
3128:1:RESERVING:1077903446:30:Q:all.q@bilbur:slots:1.000000
3129:1:RESERVING:1077903476:31:G:global:license:1.000000
3129:1:RESERVING:1077903476:31:Q:all.q@es-ergb01-01:slots:1.000000
::::::::
3127:1:RUNNING:1077903416:30:G:global:license:4.000000
3127:1:RUNNING:1077903416:30:Q:all.q@carc:slots:1.000000
3128:1:RESERVING:1077903446:30:G:global:license:5.000000
3128:1:RESERVING:1077903446:30:Q:all.q@es-ergb01-01:slots:1.000000
3129:1:RESERVING:1077903476:31:G:global:license:1.000000
3129:1:RESERVING:1077903476:31:Q:all.q@es-ergb01-01:slots:1.000000
::::::::
3128:1:STARTING:1077903448:30:G:global:license:5.000000
3128:1:STARTING:1077903448:30:Q:all.q@carc:slots:1.000000
3129:1:RESERVING:1077903478:31:G:global:license:1.000000
3129:1:RESERVING:1077903478:31:Q:all.q@bilbur:slots:1.000000
::::::::
3128:1:RUNNING:1077903448:30:G:global:license:5.000000
3128:1:RUNNING:1077903448:30:Q:all.q@carc:slots:1.000000
3129:1:RESERVING:1077903478:31:G:global:license:1.000000
3129:1:RESERVING:1077903478:31:Q:all.q@es-ergb01-01:slots:1.000000
::::::::
3129:1:STARTING:1077903480:31:G:global:license:1.000000
3129:1:STARTING:1077903480:31:Q:all.q@carc:slots:1.000000
::::::::
3129:1:RUNNING:1077903480:31:G:global:license:1.000000
3129:1:RUNNING:1077903480:31:Q:all.q@carc:slots:1.000000
::::::::
"""


def without_hosts(text: str) -> str:
    """The schedule without the queue instances' host names (Grid Engine
    chose them by load, with its load adjustments)."""
    return re.sub(r":Q:all\.q@[^:]+:", ":Q:all.q@HOST:", text)


def test_seed_001_license_example(tmp_path):
    """L4_RR starts with 4 of the 5 licenses; L5_RR is reserved behind it and
    L1_RR (31 s) behind L5_RR, as it cannot end before L5_RR's reservation;
    each starts in the pass after its predecessor ended (sleeper.sh 20)."""
    world = World(tmp_path, LICENSES)
    with Session(world.store.engine) as session, session.begin():
        session.merge(JobCounterRow(name="jobseqnum", value=3126))
    l4 = world.submit(MANAGER, "sleeper.sh", "20", name="L4_RR", reserve=True, priority=100,
                      hard="h_rt=30,license=4")
    l5 = world.submit(ALICE, "sleeper.sh", "20", name="L5_RR", reserve=True,
                      hard="h_rt=30,license=5")
    l1 = world.submit(ALICE, "sleeper.sh", "20", name="L1_RR", reserve=True,
                      hard="h_rt=31,license=1")
    assert (l4, l5, l1) == (3127, 3128, 3129)
    for offset in (0, 15, 32, 47, 64, 79):
        world.at(T + offset)
    schedule = (tmp_path / "schedule").read_text()
    assert without_hosts(schedule) == without_hosts(SEED_SCHEDULE[:-len("::::::::\n")])
    assert schedule.splitlines()[1:3] == ["3127:1:STARTING:1077903416:30:G:global:license:4.000000",
                                          "3127:1:STARTING:1077903416:30:Q:all.q@carc:slots:1.000000"]
    world.at(T + 99)
    records = world.accounting()
    assert [(r.job_number, r.job_name, r.start_time - T, r.end_time - T, r.failed,
             r.category) for r in records] == [
        (3127, "L4_RR", 0, 20, 0, "-l h_rt=30,license=4"),
        (3128, "L5_RR", 32, 52, 0, "-l h_rt=30,license=5"),
        (3129, "L1_RR", 64, 84, 0, "-l h_rt=31,license=1")]
    assert records[0].cpu == 1.75 and records[0].owner == "root" and records[1].group == "staff"
    assert world.scheduler.jobs == {}


def test_the_priorities_of_the_license_example(tmp_path):
    world = World(tmp_path, LICENSES.replace("max_reservation: 10", "max_reservation: 0"))
    ids = [world.submit(MANAGER, priority=100, hard="h_rt=30,license=4"),
           world.submit(ALICE, hard="h_rt=30,license=5"), world.submit(ALICE, hard="h_rt=31,license=1")]
    world.hosts.hosts = set()                     # no host runs jobs: all stay pending
    world.scheduler.hosts = world.hosts
    world.at(T)
    assert [f"{world.scheduler.jobs[i].priority:.5f}" for i in ids] == ["1.08000", "0.10500",
                                                                     "0.00500"]


SMALL = """\
nodes: [{name: a, ncpus: 1}, {name: b, ncpus: 1}]
scheduler: {NodeSortKey: [NodeName]}
"""


def test_hold_jid_waits_for_the_jobs_it_names(tmp_path):
    world = World(tmp_path, SMALL)
    first = world.submit(ALICE, "x", "10", name="build")
    waiting = world.submit(ALICE, "x", "10", hold_jids=("build", "999"))
    other = world.submit(BOB, "x", "10", hold_jids=("build",))      # not bob's: ignored
    assert world.scheduler.jobs[waiting].submission.hold_jids == (str(first),)
    world.at(T)
    assert (world.state(first), world.state(waiting), world.state(other)) == ("r", "hqw", "r")
    assert world.scheduler.jobs[waiting].reasons == ("job dropped because of job dependencies",)
    world.at(T + 10)
    world.at(T + 11)
    assert world.state(waiting) == "r"


def test_execution_time_not_reached(tmp_path):
    world = World(tmp_path, SMALL)
    later = world.submit(ALICE, start_after=T + 100)
    world.at(T)
    assert world.state(later) == "qw"
    assert world.scheduler.jobs[later].reasons == ("execution time not reached",)
    world.at(T + 100)
    assert world.state(later) == "r"


def test_deleting_jobs(tmp_path):
    world = World(tmp_path, SMALL)
    running = world.submit(ALICE)
    world.submit(ALICE)
    pending = world.submit(ALICE, name="later")
    world.at(T)
    assert world.scheduler.delete(BOB, [str(running)]) == \
        [f'bob - you do not have the necessary privileges to delete the job "{running}"']
    assert world.scheduler.delete(ALICE, [str(running), "later", "999"]) == [
        'denied: job "999" does not exist',
        f"alice has registered the job {running} for deletion",
        f"alice has deleted job {pending}"]
    assert world.state(running) == "dr" and str(running) in world.hosts.killed
    world.at(T + 1)
    assert world.state(running) is None
    (record,) = world.accounting()
    assert (record.job_number, record.failed, record.exit_status) == (running, 100, 137)
    assert world.scheduler.delete(MANAGER, users=["alice"]) == [
        f"root has registered the job {running + 1} for deletion"]


def test_ar_jobs_run_in_their_window_and_go_with_it(tmp_path):
    world = World(tmp_path, SMALL, offset=5)
    window = ReservedWindow(7, T + 50, T + 200, {"a": 1}, ("alice",), "w", submitted=T - 10)
    world.scheduler.set_windows([window])
    inside = world.submit(ALICE, "x", "1000", ar=7)                  # no h_rt: until the AR ends
    outside = world.submit(ALICE, "x", "1000")                       # no h_rt: never on a
    with pytest.raises(SubmitError, match="bob is not in the access list of advance reservation 7"):
        world.submit(BOB, ar=7)
    world.at(T)
    assert (world.state(inside), world.state(outside)) == ("qw", "r")
    assert world.scheduler.jobs[outside].placement.master == ("all.q", "b")
    world.scheduler.set_windows([ReservedWindow(7, T + 50, T + 200, {"a": 1}, ("alice",), "r",
                                                submitted=T - 10)])
    world.at(T + 50)
    job = world.scheduler.jobs[inside]
    assert job.state_letters == "r" and job.placement.master == ("all.q", "a")
    assert job.placement.h_rt == 200 - 50 - 5                         # the AR's end - DURATION_OFFSET
    assert world.hosts.jobs[str(inside)][3].env["SGE_AR"] == "7"
    world.scheduler.reservation_over(7)
    assert world.state(inside) == "dr"
    world.at(T + 60)
    record = next(r for r in world.accounting() if r.job_number == inside)
    assert (record.arid, record.ar_sub_time, record.category) == (7, T - 10, "-ar 7")


@pytest.mark.parametrize("ar_job_state", [JobState.TRANSFERRING, JobState.RUNNING])
@pytest.mark.parametrize("qrsub", [False, True])
def test_the_slot_an_ar_leaves_free_is_free_for_jobs_outside_it(tmp_path, ar_job_state, qrsub):
    """A 2-slot host, a 1-slot AR with its job starting (t) or running (r):
    a job outside the AR, with or without h_rt, takes the other slot, as in
    Grid Engine 8.1.9; the AR's job is counted on the AR's slot only."""
    world = World(tmp_path, "nodes: [{name: a, ncpus: 2}]\n", offset=5)
    held = {"instances": {("all.q", "a"): 1}, "debits": (("queue all.q@a", "slots", 1.0),)} \
        if qrsub else {}
    world.scheduler.set_windows([ReservedWindow(7, T, T + 1000, {"a": 1}, ("alice",), "r", **held)])
    inside = world.submit(ALICE, "x", "1000", ar=7)
    world.at(T + 1)
    world.scheduler.jobs[inside].state = ar_job_state
    endless = world.submit(ALICE, "x", "1000")
    world.at(T + 2)
    assert world.state(endless) == "r", world.scheduler.jobs[endless].reasons
    assert world.scheduler.jobs[endless].placement.master == ("all.q", "a")
    third = world.submit(ALICE, "x", "10", hard="h_rt=10")
    world.at(T + 3)
    assert world.state(third) == "qw"                   # the AR's job is on the AR's slot


def test_an_ar_change_asks_for_a_pass_only_while_jobs_wait(tmp_path):
    world = World(tmp_path, SMALL)
    scheduler = world.scheduler
    scheduler.set_windows([ReservedWindow(7, T + 50, T + 200, {"a": 1}, ("alice",))])
    assert not scheduler._wake.is_set()                 # nothing queued: nothing to decide
    world.submit(ALICE, ar=7)
    scheduler._wake.clear()
    scheduler.set_windows([ReservedWindow(7, T + 50, T + 200, {"a": 1}, ("alice",))])
    assert not scheduler._wake.is_set()                 # no change
    scheduler.set_windows([ReservedWindow(7, T + 50, T + 200, {"a": 1}, ("alice",), "r")])
    assert scheduler._wake.is_set()


def test_jobs_of_an_ar_that_is_gone_are_deleted(tmp_path):
    world = World(tmp_path, SMALL)
    world.scheduler.set_windows([ReservedWindow(7, T + 50, T + 200, {"a": 1}, ("alice",))])
    job = world.submit(ALICE, ar=7)
    world.scheduler.set_windows([], complete=True)
    assert world.state(job) is None


def test_immediate_jobs_start_now_or_not_at_all(tmp_path):
    world = World(tmp_path, SMALL)
    assert world.state(world.submit(ALICE, now=True)) == "r"
    world.submit(ALICE, now=True)
    with pytest.raises(SubmitError, match="Your qsub request could not be scheduled; try again later."):
        world.submit(ALICE, now=True)
    assert len(world.scheduler.jobs) == 2


def test_verification(tmp_path):
    world = World(tmp_path, SMALL)
    answer = world.scheduler.submit(ALICE, Submission(("x",), hard="arch=sol*", verify="v"))
    assert answer == {"verified": False, "reasons": [
        '(-l arch=sol*) cannot run at host "a" because it offers only hl:arch=lx-amd64',
        '(-l arch=sol*) cannot run at host "b" because it offers only hl:arch=lx-amd64']}
    assert world.scheduler.jobs == {}
    with pytest.raises(SubmitError, match="(?s)cannot run at host.*error: no suitable queues"):
        world.scheduler.submit(ALICE, Submission(("x",), hard="arch=sol*", verify="e"))
    warned = world.scheduler.submit(ALICE, Submission(("x",), hard="arch=sol*", verify="w"))
    assert warned["warnings"][0] == "warning: no suitable queues" and warned["id"] == 1


def test_a_job_that_cannot_start_waits_in_error_state(tmp_path):
    world = World(tmp_path, SMALL)
    job = world.submit(ALICE)
    world.hosts.refuse[str(job)] = "plus shepherd: job 1: unknown user 'alice' on a"
    world.at(T)
    assert world.state(job) == "Eqw"
    assert world.scheduler.jobs[job].error.endswith("[a]: plus shepherd: job 1: unknown user "
                                                    "'alice' on a")
    (record,) = world.accounting()
    assert (record.failed, record.start_time, record.exit_status) == (1, 0, 0)
    world.at(T + 1)
    assert world.scheduler.jobs[job].reasons == ("Job is in error state",)
    assert world.scheduler.delete(ALICE, [str(job)]) == [f"alice has deleted job {job}"]


def test_h_rt_ends_a_job_with_failed_37(tmp_path):
    world = World(tmp_path, SMALL)
    job = world.submit(ALICE, "x", "100", hard="h_rt=10")
    world.at(T)
    world.at(T + 10)
    (record,) = world.accounting()
    assert (record.job_number, record.failed, record.exit_status) == (job, 37, 137)


def test_a_restart_finds_every_job_again(tmp_path):
    world = World(tmp_path, SMALL)
    running = world.submit(ALICE, "x", "100")
    pending = [world.submit(ALICE, "x", "100") for _ in range(2)]
    world.at(T)
    world.store.close()
    world.scheduler = world.new_scheduler()
    assert world.state(running) == "r" and [world.state(j) for j in pending] == ["r", "qw"]
    world.clock.now = T + 100
    world.scheduler.run_pass()
    assert {r.job_number for r in world.accounting()} == {running, pending[0]}
    assert world.state(pending[1]) == "r"


def test_a_start_that_left_no_trace_is_queued_again(tmp_path):
    world = World(tmp_path, SMALL)
    job = world.submit(ALICE)
    world.at(T)
    world.hosts.jobs.clear()                       # as if the host never got the job
    world.scheduler.jobs[job].state = JobState.TRANSFERRING
    world.at(T + 1)
    assert world.state(job) == "r" and world.hosts.started[-1][0] == str(job)


def take_over(world: World) -> Scheduler:
    """A second daemon takes the lead on the world's store and hosts (the
    next epoch); the first one's scheduler is returned, cut off."""
    cut_off = world.scheduler
    world.scheduler = world.new_scheduler()
    world.store.take_epoch()          # lead() took it already on PostgreSQL; SQLite too, here
    return cut_off


def test_a_leader_taken_over_from_mid_pass_starts_nothing_more(tmp_path, store_url):
    """A cut-off leader's pass starts each job only after the store recorded
    it as being started, under the epoch fence: once another daemon took
    the epoch, its next start is refused, on any host (scripts/ha_chaos.py)."""
    world = World(tmp_path, SMALL, url=store_url)
    world.store.take_epoch()
    first, second = world.submit(ALICE, "x", "100"), world.submit(ALICE, "x", "100")
    start, taken = world.hosts.start, []

    def start_then_taken_over(host, spec, epoch):
        start(host, spec, epoch)
        if not taken:
            taken.append(take_over(world))
    world.hosts.start = start_then_taken_over
    world.clock.now = T
    with pytest.raises(Fenced):
        world.scheduler.run_pass()
    (cut_off,) = taken
    assert world.hosts.started == [(str(first), "a")]
    assert [j.id for j in cut_off.running_jobs()] == [first]
    with pytest.raises(Fenced):
        cut_off.run_pass()
    assert len(world.hosts.started) == 1
    world.hosts.start = start
    world.at(T + 1)                   # the new leader adopts the first, starts the second
    assert (world.state(first), world.state(second)) == ("r", "r")
    assert world.hosts.started == [(str(first), "a"), (str(second), "b")]
    assert [(j.id, j.state) for j in world.store.load()] == \
        [(first, JobState.RUNNING), (second, JobState.RUNNING)]


def test_a_job_recorded_as_being_started_but_in_no_spool_is_started_once(tmp_path, store_url):
    """The old leader recorded ``t`` and was cut off before the start: the
    new leader finds no trace, queues it again and starts it, once."""
    world = World(tmp_path, SMALL, url=store_url)
    world.store.take_epoch()
    job = world.submit(ALICE, "x", "100")

    def cut_off_before_the_start(host, spec, epoch):
        raise KeyboardInterrupt    # the process stops here (no failure is accounted)
    start, world.hosts.start = world.hosts.start, cut_off_before_the_start
    world.clock.now = T
    with pytest.raises(KeyboardInterrupt):
        world.scheduler.run_pass()
    world.hosts.start = start
    assert [j.state for j in world.store.load()] == [JobState.TRANSFERRING]
    cut_off = take_over(world)
    assert world.state(job) == "t"
    world.at(T + 1)
    world.at(T + 2)
    with pytest.raises(Fenced):
        cut_off.run_pass()
    assert world.state(job) == "r" and world.hosts.started == [(str(job), "a")]
    assert world.accounting() == []


def test_a_start_that_reaches_its_host_after_the_new_leader_looked_is_refused(tmp_path,
                                                                              store_url):
    """The old leader recorded ``t``; before its start reached the host the
    new leader took over, found no trace, queued the job again and started
    it: the old start is refused by the host's epoch, and nothing of it is
    recorded (it was accounted failed 1 and left in Eqw: scripts/ha_chaos.py)."""
    world = World(tmp_path, SMALL, url=store_url)
    world.store.take_epoch()
    job = world.submit(ALICE, "x", "100")
    start, refused = world.hosts.start, []

    def late_start(host, spec, epoch):
        world.hosts.start = start
        take_over(world)
        world.at(T + 1)
        assert world.state(job) == "r" and world.hosts.started == [(str(job), "a")]
        try:
            start(host, spec, epoch)
        except ExecutionError as error:    # on another host too, where the job is not
            refused.append(str(error))
            raise
    world.hosts.start = late_start
    cut_off = world.scheduler
    world.clock.now = T
    with pytest.raises(Fenced):
        cut_off.run_pass()
    world.at(T + 2)
    assert world.state(job) == "r" and world.hosts.started == [(str(job), "a")]
    assert world.accounting() == [] and "fenced" in refused[0]


def test_an_unreachable_host_gets_no_jobs_and_keeps_its_jobs(tmp_path):
    world = World(tmp_path, SMALL)
    first = world.submit(ALICE, "x", "100")
    world.at(T)
    host = world.scheduler.jobs[first].placement.master[1]
    world.hosts.down[host] = "cannot connect"
    there = world.submit(ALICE, "x", "100", queues=(f"all.q@{host}",))
    second = world.submit(ALICE, "x", "100")
    third = world.submit(ALICE, "x", "100")
    world.at(T + 1)
    assert [world.state(j) for j in (first, there, second, third)] == ["r", "qw", "r", "qw"]
    assert f'queue instance "all.q@{host}" dropped because it is temporarily not available' in \
        world.scheduler.jobs[there].reasons
    assert world.scheduler.jobs[third].reasons == ("All queues dropped because of overload or full",)


def test_user_holds(tmp_path):
    world = World(tmp_path, SMALL)
    held = world.submit(ALICE, hold=True)
    world.at(T)
    assert world.state(held) == "hqw"
    assert world.scheduler.jobs[held].reasons == ("job dropped because of user hold",)
    assert world.scheduler.hold(BOB, [str(held)], False) == [
        f'bob - you do not have the necessary privileges to modify the job "{held}"']
    assert world.scheduler.hold(ALICE, [str(held), "nosuch"], False) == [
        f"modified hold of job {held}", 'denied: job "nosuch" does not exist']
    world.at(T + 1)
    assert world.state(held) == "r"
    assert world.scheduler.hold(ALICE, [str(held)], True) == [
        f"job {held} is not pending (state r); only pending jobs can be held or released"]
    later = world.submit(ALICE)
    world.submit(ALICE)
    assert world.scheduler.hold(MANAGER, [str(later)], True) == [f"modified hold of job {later}"]
    world.at(T + 2)
    assert world.state(later) == "hqw"


def test_queue_limits_bind_jobs_that_ask_for_less_or_nothing(tmp_path):
    world = World(tmp_path, """\
        nodes: [{name: a, ncpus: 4}]
        pes: [{name: smp, slots: 4}]
        queues: [{name: all.q, hostlist: [a], pe_list: [smp], h_rt: "0:0:10", h_vmem: 2G}]
        """)
    free = world.submit(ALICE, "x", "100")
    small = world.submit(ALICE, "x", "100", hard="h_rt=5,h_vmem=1G", pe="smp", pe_range=((2, 2),))
    world.at(T)
    specs = {job_id: world.hosts.jobs[str(job_id)][3] for job_id in (free, small)}
    assert (specs[free].h_rt, specs[free].limits) == (10, {"h_vmem": 2 * 2 ** 30})
    assert (specs[small].h_rt, specs[small].limits) == (5, {"h_vmem": 2 * 2 ** 30})  # 1G x 2 slots
    world.at(T + 10)
    assert {r.job_number: r.failed for r in world.accounting()} == {free: 37, small: 37}


def test_a_job_end_the_store_cannot_record_is_recorded_at_the_next_poll_once(tmp_path,
                                                                              monkeypatch):
    """The store failing (PostgreSQL restarted, the leader cut off or fenced)
    as a job's end is recorded: neither the acct record nor the removal is
    kept, the host reports the end again, and the next poll records it,
    once (it was recorded as lost, failed 100: scripts/ha_chaos.py)."""
    world = World(tmp_path, SMALL)
    store = Store(world.url)                       # the outbox's table
    outbox = Outbox(store.engine, store.url)
    world.scheduler.reporting = True
    job = world.submit(ALICE, "sleeper.sh", "10")
    world.at(T + 1)
    assert world.state(job) == "r"

    def store_down(*args, **kwargs):
        raise StoreError("the store postgresql://... failed (connection refused)")
    monkeypatch.setattr(world.store, "remove", store_down)
    world.clock.now = T + 20
    with pytest.raises(StoreError):
        world.scheduler.poll()
    assert world.accounting() == [] and world.state(job) == "r"
    assert outbox.look() == (None, [])
    monkeypatch.undo()
    world.at(T + 21)
    ((seq, line),) = outbox.look()[1]
    assert [(r.job_number, r.failed, r.exit_status, r.end_time) for r in world.accounting()] == \
        [(job, 0, 0, T + 11)]
    assert line.split(":")[1] == "acct" and line.split(":")[7] == str(job)
    world.at(T + 22)
    assert len(world.accounting()) == 1 and len(outbox.look()[1]) == 1
    assert world.state(job) is None
    store.close()


def _job_events(world: World) -> list[tuple[str, str, int, dict]]:
    """(type, job id, time, the job's fields) of the job events the store holds."""
    store = Store(world.url)
    try:
        return [(e.type, json.loads(e.data)["job"]["id"], e.time, json.loads(e.data)["job"])
                for e in EventLog(store).after(0, 100)]
    finally:
        store.close()


def test_an_ar_jobs_start_and_end_are_written_with_them_once(tmp_path, monkeypatch):
    """The job's write as running carries its start's event, its end's
    write the end's; a job outside ARs has none, nor does one whose start
    failed; a job whose write as running failed (t while it ran) has both
    with its end, once."""
    world = World(tmp_path, SMALL)
    world.scheduler.set_windows([ReservedWindow(7, T, T + 500, {"a": 1, "b": 1},
                                                ("alice",), "r")])
    inside = world.submit(ALICE, "x", "10", ar=7)
    world.submit(ALICE, "x", "10")                                     # outside any AR
    world.at(T)
    assert _job_events(world) == [("job.started", str(inside), T, {
        "id": str(inside), "owner": "alice", "nodes": ["a"], "start": T})]
    world.at(T + 11)
    assert [(kind, job, when) for kind, job, when, _ in _job_events(world)] == \
        [("job.started", str(inside), T), ("job.ended", str(inside), T + 10)]
    assert _job_events(world)[1][3] | {"start": T} == {
        "id": str(inside), "owner": "alice", "nodes": ["a"], "start": T, "end": T + 10,
        "exit_status": 0, "how": "exited"}
    refused = world.submit(ALICE, "x", "10", ar=7)
    world.hosts.refuse[str(refused)] = "plus shepherd: cannot start"
    world.at(T + 12)
    assert world.state(refused) == "Eqw" and len(_job_events(world)) == 2

    unrecorded = world.submit(ALICE, "x", "5", ar=7)

    def store_down(job):
        raise StoreError("the store failed (connection refused)")
    monkeypatch.setattr(world.scheduler, "_running", store_down)
    with pytest.raises(StoreError):
        world.at(T + 13)
    monkeypatch.undo()
    assert world.state(unrecorded) == "t" and len(_job_events(world)) == 2
    world.at(T + 20)
    world.at(T + 21)
    assert [(kind, job, when) for kind, job, when, _ in _job_events(world)][2:] == \
        [("job.started", str(unrecorded), T + 13), ("job.ended", str(unrecorded), T + 18)]


def test_from_the_grant_on_a_job_that_would_overrun_the_start_is_kept_off_the_ars_host(tmp_path):
    """Nodes cleared ahead (issue 33) on the native backend: its scheduler
    knows the AR's window from the grant on, so a job whose h_rt (plus
    DURATION_OFFSET) would run into it is not started on the AR's host,
    and one that ends before it is."""
    world = World(tmp_path, "nodes: [{name: a, ncpus: 1}]\n", offset=5)
    world.scheduler.set_windows([ReservedWindow(7, T + 100, T + 400, {"a": 1}, ("root",), "w",
                                                submitted=T)])
    overrunning = world.submit(ALICE, "x", "1000", hard="h_rt=100")
    endless = world.submit(ALICE, "x", "1000")
    world.at(T)
    assert (world.state(overrunning), world.state(endless)) == ("qw", "qw")
    fitting = world.submit(ALICE, "x", "10", hard="h_rt=90")       # 90 + 5 s: ends before
    world.at(T + 1)
    assert (world.state(overrunning), world.state(endless), world.state(fitting)) == (
        "qw", "qw", "r")
    assert world.scheduler.jobs[fitting].placement.master == ("all.q", "a")
