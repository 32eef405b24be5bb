"""The TORQUE backend's readers and node specs, on the outputs a real
TORQUE 6.1 printed (tests/data/torque/transcripts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from overlay_torque import nodespec, settings, submitfilter, windows
from overlay_torque.status import (
    duration,
    parse_jobs,
    parse_nodes,
    parse_queues,
    parse_server,
    seconds,
)

RECORDED = Path(__file__).parent / "data" / "torque" / "transcripts"


def stdout(step: str) -> str:
    [path] = RECORDED.glob(f"{step}-*.txt")
    text = path.read_text()
    return text.split("--- stdout\n", 1)[1].split("--- stderr\n", 1)[0]


def test_jobs_from_qstat_xml_with_a_requeued_jobs_stale_exec_host_ignored():
    jobs = {job.id: job for job in parse_jobs(stdout("61"))}
    requeued = jobs["42.vm"]
    assert (requeued.state, requeued.held, requeued.exec_hosts) == ("H", True, ())
    assert requeued.owner == "bob" and requeued.walltime == 1800 and requeued.rerunnable
    running = [job for job in jobs.values() if job.running]
    assert {job.id for job in running} == {"45.vm", "47.vm"}
    assert all(job.exec_hosts == ("vm",) and job.queue == "R1" for job in running)
    assert jobs["47.vm"].nodes_spec == "1:R1" and jobs["47.vm"].start_time > 0
    assert parse_jobs(stdout("06")) == []


def test_nodes_from_pbsnodes_xml_whatever_elements_are_left_out():
    [node] = parse_nodes(stdout("41"))
    assert node.offline and node.alive and node.note == "reserved for R1"
    assert node.jobs == ("42.vm", "43.vm", "44.vm") and node.properties == ("R1",)
    assert node.np == 4 and node.load == 0.81 and node.kb("physmem") == 24684084
    [fresh] = parse_nodes(stdout("85"))
    assert not fresh.alive and fresh.properties == () and fresh.jobs == () and fresh.status == {}
    [doubled] = parse_nodes(stdout("24"))
    assert doubled.properties == ("R1", "R1")


def test_queues_and_server_from_print_server():
    queues = parse_queues(stdout("29"))
    assert list(queues) == ["batch", "R1"]
    assert queues["R1"] == {"queue_type": "Execution", "acl_user_enable": "True", "acl_users": "alice",
                            "resources_default.walltime": "00:20:00", "keep_completed": "0",
                            "enabled": "True", "started": "False"}
    assert parse_server(stdout("01"))["scheduling"] == "True"


def test_a_list_attribute_continued_with_plus_equals():
    text = "create queue R3\nset queue R3 acl_users = alice\nset queue R3 acl_users += bob\n"
    assert parse_queues(text)["R3"]["acl_users"] == "alice,bob"


@pytest.mark.parametrize("text, value", [("00:20:00", 1200), ("90", 90), ("1:30", 90), ("", None),
                                         ("1:xx", None)])
def test_durations(text, value):
    assert seconds(text) == value


def test_duration_is_printed_as_torque_does():
    assert duration(1200) == "00:20:00" and duration(90061) == "25:01:01"


@pytest.mark.parametrize("spec, bound", [
    (None, "1:R5"), ("1", "1:R5"), ("2:ppn=4", "2:ppn=4:R5"), ("1:R5", "1:R5"),
    ("n1+2:ppn=2:bigmem", "n1:R5+2:ppn=2:bigmem:R5"), ("1:R5+1", "1:R5+1:R5")])
def test_binding_a_node_spec_to_the_ar_property(spec, bound):
    assert nodespec.bound(spec, "R5") == bound
    assert nodespec.is_bound(bound, "R5")


def test_node_spec_parts_counts_and_slots():
    parts = nodespec.parse("2:ppn=4:bigmem+n5:ppn=2")
    assert parts == [nodespec.Part(2, None, 4, ("bigmem",)), nodespec.Part(1, "n5", 2, ())]
    assert nodespec.slots("2:ppn=4+n5:ppn=2") == 10 and nodespec.node_count("2:ppn=4+n5") == 3
    assert nodespec.parse(None) == [nodespec.Part(1, None, 1, ())]


@pytest.mark.parametrize("options, message", [
    ({"scheduler": "maui"}, r"torque.scheduler: expected one of pbs_sched, plus, got 'maui'"),
    ({"conflict": "nice"}, r"torque.conflict: expected one of requeue, kill, avoid"),
    ({"bin": "opt/torque/bin"}, r"torque.bin: expected an absolute path"),
    ({"drain": -1}, r"torque.drain: expected a whole number of seconds of 0 or more, got -1"),
    ({"keep_property": "R7"}, r"torque.keep_property: expected a node property name"),
    ({"server_name": "vm"}, r"torque.server_name: unknown setting; known: bin, server, "),
])
def test_settings_refuse_what_cannot_work(options, message):
    with pytest.raises(ValueError, match=message):
        settings.load(options)


def test_settings_defaults_and_environment():
    chosen = settings.load({"server": "vm", "scheduler": "plus", "drain": 300})
    assert chosen.environment == {"PBS_DEFAULT": "vm"} and chosen.conflict == "requeue"
    assert settings.load({}).environment == {} and settings.load({}).keep_property == "plus"


def test_a_node_counts_every_slot_of_a_job_slot_range():
    text = ("<Data><Node><name>n1</name><state>job-exclusive</state><np>8</np>"
            "<jobs>0-2,5/45.srv,3/47.srv</jobs></Node></Data>")
    [node] = parse_nodes(text)
    assert node.jobs == ("45.srv",) * 4 + ("47.srv",)


WINDOW = {"queue": "R7", "end": 2_000_000_000,
          "nodes": [{"name": "n1", "np": 4, "properties": ["R7", "bigmem"]}]}


@pytest.mark.parametrize("args, script, deferred", [
    ([], "sleep 1\n", True),                                      # nodes=1: could land on n1
    (["-l", "nodes=1:ppn=4"], "sleep 1\n", True),
    (["-l", "nodes=1:ppn=8"], "sleep 1\n", False),                # n1 has 4 slots
    (["-l", "walltime=1:00,nodes=n2"], "sleep 1\n", False),       # another host
    (["-l", "nodes=1:gpu"], "sleep 1\n", False),                  # n1 has no gpu
    ([], "#PBS -l nodes=n2\nsleep 1\n", False),                   # a directive counts
    (["-l", "nodes=n1"], "#PBS -l nodes=n2\nsleep 1\n", True),    # the command line wins
    (["-q", "R7"], "sleep 1\n", False),                           # the AR's own queue
    (["-q", "R7@srv"], "sleep 1\n", False),
    (["-h"], "sleep 1\n", False),                                 # held by its user
    ([], "#PBS -a 1200\nsleep 1\n", False),                       # deferred by its user
    (["-Z"], "sleep 1\n", False),                                 # qsub will refuse it
])
def test_the_submit_filter_defers_what_could_land_on_an_open_window(args, script, deferred):
    end = submitfilter.deferral(args, script, [WINDOW], now=1_900_000_000)
    assert end == (WINDOW["end"] if deferred else None)


def test_the_submit_filter_ignores_ended_windows_and_keeps_the_shebang_first():
    assert submitfilter.deferral([], "sleep 1\n", [WINDOW], now=WINDOW["end"]) is None
    later = dict(WINDOW, end=WINDOW["end"] + 60, queue="R8")
    assert submitfilter.deferral([], "", [WINDOW, later], now=0) == WINDOW["end"] + 60
    stamp = windows.date_time(WINDOW["end"])
    assert submitfilter.deferred("#!/bin/sh\nsleep 1\n", WINDOW["end"]) == (
        f"#!/bin/sh\n#PBS -a {stamp}\nsleep 1\n")
    assert submitfilter.deferred("sleep 1", WINDOW["end"]) == f"#PBS -a {stamp}\nsleep 1"
