"""Lending on Grid Engine, its pure parts: the lending queue's and the AR
queues' values, the idle slots, which jobs were preempted and how they
asked to end, the settings refused, and the ledger's entries."""

from __future__ import annotations

import pytest

from overlay_sge import lending, settings
from overlay_sge.ledger import Ledger, Preemption
from overlay_sge.status import GridJob, Observation, QueueInstance, parse_restart_flags

TEMPLATE = {"qname": "all.q", "hostlist": "@allhosts", "slots": "2,[vm=1]", "rerun": "TRUE",
            "calendar": "NONE", "h_rt": "INFINITY", "pe_list": "make", "user_lists": "staff"}


def test_the_lending_queue_is_on_the_lending_hosts_with_their_idle_slots_and_calendars():
    queue = lending.queue("plus_lend", TEMPLATE, "plus_rsv", {"node2": 1, "node1": 2})
    assert queue["hostlist"] == "node1 node2"
    assert queue["slots"] == "0,[node1=2],[node2=1]"
    assert queue["calendar"] == "NONE,[node1=pluslend_node1],[node2=pluslend_node2]"
    assert queue["complex_values"] == "plus_rsv=plus_lend"     # only jobs that ask
    assert queue["rerun"] == "FALSE"                            # rerun only with -r y
    assert (queue["user_lists"], queue["pe_list"], queue["h_rt"]) == ("NONE", "make", "INFINITY")
    idle = lending.queue("plus_lend", TEMPLATE, "plus_rsv", {})
    assert (idle["hostlist"], idle["slots"], idle["calendar"]) == ("NONE", "0", "NONE")


def test_an_ar_queue_subordinates_the_lending_queue_slot_wise_per_host():
    assert lending.subordinates("plus_lend", {"node1": 2, "node2": 2}) == \
        "slots=2(plus_lend:0:sr)"
    assert lending.subordinates("plus_lend", {"node1": 2, "node2": 1}) == \
        "slots=2(plus_lend:0:sr),[node2=slots=1(plus_lend:0:sr)]"
    assert lending.subordinates("plus_lend", {}) == "NONE"


def test_nested_ars_lend_their_slots_together_until_the_first_end():
    hosts = lending.hosts_of([lending.Lender(7, {"node1": 2, "node2": 2}, 2000),
                              lending.Lender(5, {"node1": 1}, 1500)])
    assert hosts == {"node1": lending.LendingHost(3, 1500, 5),
                     "node2": lending.LendingHost(2, 2000, 7)}


def test_idle_slots_are_the_ars_slots_less_those_their_jobs_use():
    hosts = {"node1": lending.LendingHost(2, 2000, 7), "node2": lending.LendingHost(2, 2000, 7)}
    observation = Observation([QueueInstance("R7@node1", "", 2, 1),
                               QueueInstance("plus_lend@node1", "", 1, 1),
                               QueueInstance("R7@node2", "", 2, 2),
                               QueueInstance("R9@node3", "", 2, 2)], [], [])
    assert lending.idle_slots(hosts, observation, lambda q: q.startswith("R")) == \
        {"node1": 1, "node2": 0}


def test_only_jobs_suspended_by_subordination_are_preempted():
    def job(number: str, state: str, queue: str = "plus_lend") -> GridJob:
        return GridJob(number, "plusu2", "sleep", state, 1, f"{queue}@node1")
    observation = Observation([], [job("1", "S"), job("2", "s"), job("3", "r"),
                                   job("4", "S", "all.q")], [])
    assert [j.id for j in lending.preempted(observation, "plus_lend")] == ["1"]


def test_a_rerunnable_job_is_requeued_any_other_killed():
    text = ("<?xml version='1.0'?><detailed_job_info><djob_info>"
            "<element><JB_job_number>11</JB_job_number><JB_restart>1</JB_restart></element>"
            "<element><JB_job_number>12</JB_job_number><JB_restart>2</JB_restart></element>"
            "<element><JB_job_number>13</JB_job_number><JB_restart>0</JB_restart></element>"
            "</djob_info></detailed_job_info>")
    flags = parse_restart_flags(text)
    assert {job: lending.mode(flag) for job, flag in flags.items()} == \
        {"11": "requeue", "12": "kill", "13": "kill"}
    assert parse_restart_flags("<unknown_jobs") == {}


@pytest.mark.parametrize("options, wanted", [
    ({"lend_queue": "R12"}, "sge.lend_queue: 'R12' is an AR queue's name"),
    ({"lend_queue": "all.q"}, "sge.lend_queue: 'all.q' is an AR queue's name (R<number>) or the "
                              "template queue"),
    ({"lend_queue": "plus lend"}, "sge.lend_queue: expected a Grid Engine object name"),
    ({"lend_watch": 0}, "sge.lend_watch: expected a number of seconds from 0.1 to 60"),
    ({"lend_watch": "1s"}, "sge.lend_watch: expected a number of seconds"),
    ({"lend_watch": True}, "sge.lend_watch: expected a number of seconds"),
])
def test_bad_lending_settings_are_refused_naming_what_is_accepted(options, wanted):
    with pytest.raises(ValueError) as refused:
        settings.load(options)
    assert str(refused.value).startswith(wanted)


def test_lending_is_off_unless_a_queue_is_named():
    assert settings.load({}).lend_queue is None
    chosen = settings.load({"lend_queue": "plus_lend", "lend_watch": 0.2})
    assert (chosen.lend_queue, chosen.lend_watch) == ("plus_lend", 0.2)


def test_the_ledger_keeps_what_lending_made_across_a_restart(tmp_path):
    path = str(tmp_path / "ledger.json")
    ledger = Ledger(path)
    ledger.note_lend_queue("plus_lend")
    ledger.note_lend_calendar("node1", True)
    ledger.note_preemption(Preemption("42", "requeue", 7, "plusu2", "node1", 1000))
    again = Ledger(path)
    assert again.lend_queue() == "plus_lend" and again.lend_calendars() == {"node1"}
    assert again.preemptions()["42"].mode == "requeue"
    again.end_preemption("42")
    again.note_lend_calendar("node1", False)
    assert Ledger(path).preemptions() == {} and Ledger(path).lend_calendars() == set()
