"""QUERY's estimate against the scheduler itself: a random cluster and
queue (seeded), the whole scheduler service run in virtual time
(``simhosts``), the estimate asked through the native backend, the job
asked about submitted, and passes run at every job end and AR boundary
until it starts. With ``early``, jobs end before their h_rt (a random
fraction of it), which the estimate cannot know. For tests/test_query_native.py
and scripts/bench_query.py.
"""

from __future__ import annotations

import random
import tempfile
import textwrap
from dataclasses import dataclass, replace
from pathlib import Path

from overlay.api.plugin import Request
from overlay_native.backend import NativeBackend
from overlay_native.jobs import JobState, Submission
from overlay_native.jobstore import JobStore
from overlay_native.resources.cluster import Cluster
from overlay_native.resources.window import ReservedWindow
from overlay_native.scheduling.scheduler import Scheduler, Submitter
from overlay_native.simulation.simhosts import Clock, SimulatedHosts

T0 = 1_800_000_000
USER = Submitter("alice", ("staff",), False)
MAX_EVENTS = 100_000


@dataclass(frozen=True)
class Trial:
    """One check: the estimate, the start the scheduler gave, and the
    question's size."""

    seed: int
    estimate: int | None
    actual: int | None
    now: int
    waiting: int
    running: int
    how: str

    @property
    def error(self) -> int | None:
        """Seconds the estimate was late (positive) or early (negative)."""
        if self.estimate is None or self.actual is None:
            return None
        return self.estimate - self.actual


class World:
    """A scheduler service on a cluster file, in virtual time, with the
    native backend in front of it for QUERY, and ARs handed to it as the
    reservation core would (opened at their start, over at their end)."""

    def __init__(self, folder: Path, cluster: str, offset: int, none: set[str] = frozenset()) -> None:
        (folder / "cluster.yaml").write_text(textwrap.dedent(cluster))
        self.clock = Clock(T0)
        self.hosts = SimulatedHosts(self.clock)
        self.hosts.none = set(none)
        self.scheduler = Scheduler(Cluster(str(folder / "cluster.yaml"), False,
                                           duration_offset=offset),
                                   JobStore(f"sqlite:///{folder / 'plus.db'}"), self.hosts,
                                   str(folder / "accounting"), str(folder / "schedule"),
                                   offset, self.clock)
        self.scheduler.lead(lambda: True)
        self.backend = NativeBackend(self.scheduler.cluster, self.scheduler)
        self.backend.estimate_seconds = float("inf")    # the passes to the end: exactness
        self.ars: dict[int, ReservedWindow] = {}

    def reserve(self, window: ReservedWindow) -> None:
        self.ars[window.id] = window
        self.scheduler.set_windows([window])

    def submit(self, submission: Submission, who: Submitter = USER) -> int:
        return self.scheduler.submit(who, submission)["id"]

    def next_event(self) -> int | None:
        """The next instant a job ends or an AR opens or ends."""
        now = self.clock.now
        times = [end for _, _, end, _ in self.hosts.jobs.values()]
        times += [t for w in self.ars.values() for t in (w.start, w.end) if t > now]
        return min(times, default=None)

    def step(self) -> bool:
        """On to the next event and a pass there; False if none is left."""
        at = self.next_event()
        if at is None:
            return False
        self.clock.now = at
        for ar_id, window in list(self.ars.items()):
            if window.end <= at:
                del self.ars[ar_id]
                self.scheduler.reservation_over(ar_id)
            elif window.start <= at and window.state == "w":
                self.ars[ar_id] = replace(window, state="r")
                self.scheduler.set_windows([self.ars[ar_id]])
        self.scheduler.run_pass()
        return True

    def running(self, job_id: int) -> bool:
        job = self.scheduler.jobs.get(job_id)
        return job is not None and job.state in (JobState.RUNNING, JobState.TRANSFERRING)

    def close(self) -> None:
        self.scheduler.store.close()


def random_cluster(rng: random.Random) -> tuple[str, int, int]:
    """A cluster file of identical hosts (its text, hosts, slots each)."""
    hosts, slots = rng.randint(3, 10), rng.choice((1, 2, 4))
    rules = sorted({1, 2, slots})
    pes = ", ".join(f"{{name: q{r}, slots: 100000, allocation_rule: {r}}}" for r in rules)
    return textwrap.dedent(f"""\
        nodes: [{{name: "h[01-{hosts:02d}]", ncpus: {slots}}}]
        pes: [{pes}, {{name: rr, slots: 100000, allocation_rule: $round_robin}},
              {{name: smp, slots: 100000, allocation_rule: $pe_slots}}]
        queues: [{{name: all.q, hostlist: ["h[01-{hosts:02d}]"], slots: {slots},
                   pe_list: [{", ".join(f"q{r}" for r in rules)}, rr, smp]}}]
        scheduler: {{max_reservation: {rng.choice((0, 0, 1, 5))},
                     weight_waiting_time: {rng.choice((0, 0.01))}}}
        """), hosts, slots


def random_job(rng: random.Random, slots: int, early: bool) -> Submission:
    h_rt = rng.randrange(60, 7200, 30)
    runs = rng.randint(h_rt // 4, h_rt) if early else h_rt
    options: dict = {"reserve": rng.random() < 0.3, "priority": rng.choice((0, 0, -10))}
    kind = rng.random()
    if kind < 0.2:
        options.update(pe="rr", pe_range=((rng.randint(2, 2 * slots + 1),) * 2,))
    elif kind < 0.3 and slots > 1:
        options.update(pe="smp", pe_range=((rng.randint(2, slots),) * 2,))
    return Submission(("sleeper", str(runs)), hard=f"h_rt={h_rt}", **options)


def trial(seed: int, early: bool = False) -> Trial:
    """One random cluster, queue, ARs and question, estimated and run."""
    rng = random.Random(seed)
    cluster, hosts, slots = random_cluster(rng)
    names = [f"h{i:02d}" for i in range(1, hosts + 1)]
    none = set(rng.sample(names, rng.choice((0, 0, 1))))
    with tempfile.TemporaryDirectory(prefix="plus-querycheck-") as folder:
        world = World(Path(folder), cluster, rng.choice((0, 60)), none)
        try:
            return _run(world, rng, seed, names, none, slots, early)
        finally:
            world.close()


def _run(world: World, rng: random.Random, seed: int, names: list[str], none: set[str],
         slots: int, early: bool) -> Trial:
    for ar_id in range(1, rng.randint(0, 3) + 1):
        start = T0 + rng.randrange(0, 4 * 3600, 60)
        held = rng.sample(sorted(set(names) - none), rng.randint(1, 2))
        world.reserve(ReservedWindow(ar_id, start, start + rng.randrange(600, 7200, 60),
                                     {h: rng.randint(1, slots) for h in held}, ("bob",)))
    for _ in range(rng.randint(0, 40)):
        world.submit(random_job(rng, slots, early))
    world.scheduler.run_pass()
    for _ in range(rng.randint(0, 5)):                # some of the queue has run meanwhile
        if not world.step():
            break
    for _ in range(rng.randint(0, 10)):
        world.submit(random_job(rng, slots, early))
    world.clock.now += rng.randint(0, 30)
    count = rng.randint(1, len(names))
    per_node = rng.choice((None, 1, 2, slots))
    duration = rng.randrange(60, 7200, 30)
    request = Request(world.clock.now, world.clock.now + duration, count, slots_per_node=per_node)
    outlook = world.scheduler.outlook()
    estimate, how = world.backend.job_start(request, names, (USER.user, USER.groups))
    width = per_node or slots
    job_id = world.submit(Submission(("sleeper", str(duration)), hard=f"h_rt={duration}",
                                     pe=f"q{width}", pe_range=((count * width,) * 2,)))
    now = world.clock.now
    world.scheduler.run_pass()
    for _ in range(MAX_EVENTS):
        if world.running(job_id) or not world.step():
            break
    actual = world.scheduler.jobs[job_id].start_time if world.running(job_id) else None
    return Trial(seed, estimate, actual, now, len(outlook.waiting), len(outlook.running), how)
