"""Job order of the native scheduler: PluS's JobSortKey and owners' orders
(seed 004, 3.2), the TORQUE fifo table (3.3), PluS's sched_conf file."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from overlay.placement.ordering import (
    DEFAULT_JOB_ORDER,
    JobOrder,
    OrderError,
    order_jobs,
    parse_sched_conf,
)


@dataclass
class Job:
    id: int
    queue: str = "all.q"
    priority: float = 0
    submit_time: int = 0
    slots: int = 1
    nodes: int = 1
    time: int = 60
    owner: str = "alice"
    group: str = "staff"
    host: str = "h1.example.org"


def ids(jobs, **order) -> list[int]:
    return [j.id for j in order_jobs(jobs, JobOrder(**order))]


def test_fifo_breaks_every_tie():
    jobs = [Job(3, submit_time=5), Job(1, submit_time=9), Job(2, submit_time=5)]
    assert ids(jobs, keys=()) == [2, 3, 1]


@pytest.mark.parametrize("key,expected", [
    ("JobPriority", [2, 1, 3]), ("SubmitTime", [3, 1, 2]),
    ("LeastCPURequested", [1, 3, 2]), ("MostCPURequested", [2, 3, 1]),
    ("LeastNodeRequested", [3, 2, 1]), ("MostNodeRequested", [1, 2, 3]),
    ("LeastTimeRequested", [2, 3, 1]), ("MostTimeRequested", [1, 3, 2]),
])
def test_single_keys(key, expected):
    jobs = [Job(1, priority=5, submit_time=2, slots=1, nodes=3, time=300),
            Job(2, priority=9, submit_time=3, slots=8, nodes=2, time=10),
            Job(3, priority=0, submit_time=1, slots=4, nodes=1, time=100)]
    assert ids(jobs, keys=(key,)) == expected


def test_default_is_queue_priority_by_queue_job_priority():
    jobs = [Job(1, "low", priority=9), Job(2, "high", priority=1), Job(3, "high", priority=5),
            Job(4, "low", priority=0)]
    assert DEFAULT_JOB_ORDER == ("QueuePriority", "ByQueue", "JobPriority")
    assert ids(jobs, queue_priority={"high": 10, "low": 1}) == [3, 2, 1, 4]


def test_queue_round_robin_takes_one_job_of_each_queue_in_turn():
    jobs = [Job(1, "a", submit_time=1), Job(2, "a", submit_time=2), Job(3, "a", submit_time=3),
            Job(4, "b", submit_time=4), Job(5, "b", submit_time=5)]
    assert ids(jobs, keys=("QueueRoundRobin", "SubmitTime"), queue_order=("b", "a")) == [4, 1, 5, 2, 3]


def test_owner_group_and_host_orders():
    jobs = [Job(1, owner="carol", group="masters", host="n1.hpcc.org"),
            Job(2, owner="studentB", group="doctors", host="n2.apgrid.org"),
            Job(3, owner="studentA", group="professors", host="x.other.net")]
    assert ids(jobs, keys=("OwnersName",), owners=("studentA", "studentB")) == [3, 2, 1]
    assert ids(jobs, keys=("OwnersGroup",), groups=("professors", "doctors", "masters")) == [3, 2, 1]
    assert ids(jobs, keys=("OwnersHost",), hosts=("apgrid.org", "hpcc.org")) == [2, 1, 3]


@pytest.mark.parametrize("order,message", [
    ({"keys": ("Fastest",)}, r"JobSortKey: unknown key 'Fastest'; accepted: JobPriority"),
    ({"keys": ("OwnersName",)}, r"JobSortKey OwnersName needs OwnersOrder"),
    ({"keys": ("OwnersHost",)}, r"needs HostsOrder"),
    ({"keys": ("QueueRoundRobin", "ByQueue")}, r"QueueRoundRobin and ByQueue exclude each other"),
])
def test_bad_orders(order, message):
    with pytest.raises(OrderError, match=message):
        JobOrder(**order)


def torque_job_order(round_robin: bool, by_queue: bool, sort_queues: bool,
                     strict_fifo: bool) -> tuple[str, ...]:
    """The JobSortKey standing for a TORQUE fifo sched_conf (seed 004, 3.3):
    the seed's table, which a site follows by hand (TORQUE's self-scheduling
    mode reads JobSortKey itself), so it lives beside the tests of the orders."""
    if round_robin and by_queue:
        raise OrderError("round_robin and by_queue must not be true at the same time")
    keys = ["QueuePriority"] if sort_queues else []
    if round_robin:
        keys.append("QueueRoundRobin")
    elif by_queue:
        keys.append("ByQueue")
    keys.append("SubmitTime" if strict_fifo else "JobPriority")
    return tuple(keys)


# seed 004, 3.3: (round_robin, by_queue, sort_queues, strict_fifo) -> JobSortKey
TORQUE = [
    ((0, 0, 0, 0), ("JobPriority",)), ((0, 0, 0, 1), ("SubmitTime",)),
    ((0, 0, 1, 0), ("QueuePriority", "JobPriority")), ((0, 0, 1, 1), ("QueuePriority", "SubmitTime")),
    ((0, 1, 0, 0), ("ByQueue", "JobPriority")), ((0, 1, 0, 1), ("ByQueue", "SubmitTime")),
    ((0, 1, 1, 0), ("QueuePriority", "ByQueue", "JobPriority")),
    ((0, 1, 1, 1), ("QueuePriority", "ByQueue", "SubmitTime")),
    ((1, 0, 0, 0), ("QueueRoundRobin", "JobPriority")), ((1, 0, 0, 1), ("QueueRoundRobin", "SubmitTime")),
    ((1, 0, 1, 0), ("QueuePriority", "QueueRoundRobin", "JobPriority")),
    ((1, 0, 1, 1), ("QueuePriority", "QueueRoundRobin", "SubmitTime")),
]


@pytest.mark.parametrize("flags,keys", TORQUE)
def test_torque_fifo_table(flags, keys):
    assert torque_job_order(*map(bool, flags)) == keys


@pytest.mark.parametrize("sort_queues", [False, True])
@pytest.mark.parametrize("strict_fifo", [False, True])
def test_torque_round_robin_and_by_queue_exclude_each_other(sort_queues, strict_fifo):
    with pytest.raises(OrderError, match="round_robin and by_queue must not be true"):
        torque_job_order(True, True, sort_queues, strict_fifo)


@pytest.mark.parametrize("flags,keys", TORQUE)
def test_every_torque_fifo_order_is_a_job_order(flags, keys):
    assert JobOrder(keys=keys).keys == keys


def test_the_torque_default_is_plus_default():
    assert torque_job_order(False, True, True, False) == DEFAULT_JOB_ORDER


SAMPLE = """\
# Scheduler Config file SAMPLE
NodeSortKey:    LowestLoadAverage, LongestIdleTime
JobSortKey:     QueuePriority, JobPriority
#
OwnersOrder:    studentA,studentB
GroupsOrder:    professors, doctors, masters
HostsOrder:     apgrid.org, hpcc.org
"""


def test_plus_sched_conf_sample_of_the_manual():
    settings = parse_sched_conf(SAMPLE)
    assert settings == {"NodeSortKey": ("LowestLoadAverage", "LongestIdleTime"),
                        "JobSortKey": ("QueuePriority", "JobPriority"),
                        "OwnersOrder": ("studentA", "studentB"),
                        "GroupsOrder": ("professors", "doctors", "masters"),
                        "HostsOrder": ("apgrid.org", "hpcc.org")}


@pytest.mark.parametrize("text,message", [
    ("JobSortKey: Fastest\n", r"sched_conf:1: JobSortKey: unknown key 'Fastest'"),
    ("\nNodeSortKey: Random\n", r"sched_conf:2: NodeSortKey: unknown sort key 'Random'"),
    ("Colour: blue\n", r"sched_conf:1: expected 'Name: value, \.\.\.' with Name one of NodeSortKey"),
    ("JobSortKey JobPriority\n", r"sched_conf:1: expected"),
])
def test_bad_sched_conf_lines_name_the_line(text, message):
    with pytest.raises(OrderError, match=message):
        parse_sched_conf(text)
