"""What Slurm's commands print, read as the Slurm backend reads it: host
lists, time limits, scontrol's one-line records and squeue's columns
(samples as Slurm 22.05 prints them); and what the ledger
remembers of a requeue."""

from __future__ import annotations

import json

import pytest

from overlay_slurm import hostlist, settings, status
from overlay_slurm.ledger import REQUEUE_SETTLE, Ledger
from overlay_slurm.reservations import Wanted


@pytest.mark.parametrize("text, hosts", [
    ("", []), ("(null)", []), ("snode1", ["snode1"]),
    ("snode[1-3]", ["snode1", "snode2", "snode3"]),
    ("snode[1,3-4],gpu[08-10]", ["snode1", "snode3", "snode4", "gpu08", "gpu09", "gpu10"]),
    ("rack[1-2]-n[1-2]", ["rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"]),
    ("a,b", ["a", "b"]),
])
def test_host_lists_expand_as_slurm_writes_them(text, hosts):
    assert hostlist.expand(text) == hosts


@pytest.mark.parametrize("text", ["snode[1-3", "snode]1", "snode[3-1]", "snode[a-b]",
                                  "n[0-99999999]"])
def test_a_host_list_slurm_would_not_print_is_refused_with_what_was_wrong(text):
    with pytest.raises(hostlist.HostlistError) as refused:
        hostlist.expand(text)
    assert text in str(refused.value) or "more than" in str(refused.value)


@pytest.mark.parametrize("text, seconds", [
    ("30", 1800), ("30:15", 1815), ("1:00:00", 3600), ("2-00:00:00", 172800),
    ("1-2", 93600), ("1-02:30", 95400), ("UNLIMITED", None), ("INVALID", None), ("", None),
])
def test_time_limits_in_every_form_slurm_writes(text, seconds):
    assert status.time_limit(text) == seconds


NODE = ("NodeName=snode2 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUEfctv=2 CPUTot=2 "
        "CPULoad=0.35 AvailableFeatures=fast,ib ActiveFeatures=fast,ib Gres=(null) "
        "NodeAddr=10.201.0.12 NodeHostName=snode2 Version=22.05.8 "
        "OS=Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01) "
        "RealMemory=1000 AllocMem=0 FreeMem=N/A Sockets=2 Boards=1 State=IDLE+DRAIN "
        "ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=debug,long "
        "BootTime=1764250000 SlurmdStartTime=1764250100 LastBusyTime=1764250200 "
        "CfgTRES=cpu=2,mem=1000M,billing=2 AllocTRES= CapWatts=n/a "
        "Reason=disk swap [root@1764250300]")


def test_a_node_record_with_spaces_in_its_values():
    (node,) = status.nodes(NODE + "\n")
    assert node.name == "snode2" and node.cpus == 2 and node.memory_mb == 1000
    assert node.os.startswith("Linux 6.1.0-18-amd64 #1 SMP") and node.os.endswith("(2024-02-01)")
    assert node.features == ("fast", "ib") and node.partitions == ("debug", "long")
    assert node.load == 0.35 and node.reason == "disk swap [root@1764250300]"
    assert node.problems == ["DRAIN"]


@pytest.mark.parametrize("state, problems", [
    ("IDLE", []), ("MIXED", []), ("ALLOCATED", []), ("DOWN", ["DOWN"]),
    ("DOWN*", ["DOWN", "NOT_RESPONDING"]), ("IDLE*", ["NOT_RESPONDING"]),
    ("MIXED+DRAIN", ["DRAIN"]), ("IDLE+FAIL", ["FAIL"]),
])
def test_node_states_that_run_no_new_job(state, problems):
    (node,) = status.nodes(f"NodeName=n1 CPUTot=1 State={state}\n")
    assert node.problems == problems


def test_reservation_records_and_the_empty_answer():
    text = ("ReservationName=R12 StartTime=1764252000 EndTime=1764255600 Duration=01:00:00 "
            "Nodes=snode[1-2] NodeCnt=2 CoreCnt=4 Features=(null) PartitionName=(null) "
            "Flags=IGNORE_JOBS,SPEC_NODES TRES=cpu=4 Users=plusu1,plusu2 Groups=(null) "
            "Accounts=(null) Licenses=(null) State=INACTIVE BurstBuffer=(null) Watts=n/a "
            "MaxStartDelay=(null)\n")
    (made,) = status.reservations(text)
    assert made.name == "R12" and (made.start, made.end) == (1764252000, 1764255600)
    assert made.nodes == ("snode1", "snode2") and made.users == ("plusu1", "plusu2")
    assert "IGNORE_JOBS" in made.flags and made.state == "INACTIVE"
    assert status.reservations("No reservations in the system\n") == []


def test_squeue_columns():
    text = ("41|plusu3|RUNNING|(null)|snode[1-2]|1764250000|1:00:00|debug|None\n"
            "42|plusu1|PENDING|R12||1764252000|30:00|debug|Reservation\n"
            "garbage line\n")
    running, waiting = status.jobs(text)
    assert running.nodes == ("snode1", "snode2") and running.reservation == ""
    assert running.limit_end == 1764250000 + 3600
    assert waiting.reservation == "R12" and waiting.nodes == () and waiting.limit == 1800


def test_the_ledger_says_which_requeued_jobs_may_start_at_once(tmp_path):
    """Only a job whose requeue returned REQUEUE_SETTLE seconds ago or more:
    not one requeued just now, one whose requeue never returned (a crash in
    between) or one held by a ledger of before the requeue's second was kept."""
    path = tmp_path / "slurm-ledger.json"
    path.write_text(json.dumps({"held": {"7": [3, "foreign"]}}))      # an earlier version's
    ledger = Ledger(str(path))
    ledger.note_held(["11", "12", "13"], 3, "foreign")
    ledger.note_requeued(["11"], 1000)
    ledger.note_requeued(["12"], 1000 + REQUEUE_SETTLE)
    ledger.note_held(["21"], 4, "shut")
    assert sorted(ledger.held(3)) == ["11", "12", "13", "7"]
    assert ledger.settled(["7", "11", "12", "13", "21"], 1000 + REQUEUE_SETTLE) == ["11"]
    again = Ledger(str(path))
    assert again.settled(["7", "11", "12", "13", "21"], 2000) == ["11", "12"]
    assert again.held_for() == {"7": 3, "11": 3, "12": 3, "13": 3, "21": 4}


def test_a_lending_partition_slurm_would_not_take_is_refused_naming_the_key():
    assert settings.load({"lend_partition": "lend"}).lend_partition == "lend"
    assert settings.load({}).lend_partition == ""
    for bad in ("lend;rm", "", 3):
        with pytest.raises(Exception) as refused:
            settings.load({"lend_partition": bad})
        assert "lend_partition" in str(refused.value) and "a Slurm name" in str(refused.value)


def test_a_lending_ar_and_its_twin_overlap_and_the_twin_admits_every_user():
    ar = Wanted("R7", 100, 200, ("snode1",), ("plusu1",), (), "", lend="lend")
    twin = ar.lending()
    assert ar.flags == twin.flags == "IGNORE_JOBS,OVERLAP"
    assert twin.name == "L7" and twin.partition == "lend" and twin.users == ("-root",)
    assert twin.fields(0, False)["Users"] == "-root" and twin.end == ar.end
    assert Wanted("R8", 100, 200, ("snode1",), ("plusu1",), (), "").flags == "IGNORE_JOBS"
