"""overlay/reporting/accounting.py and plus_account: the reporting records of seed 000,
5.4.3.2 (new_ar, ar_attribute, ar_log, ar_acct) and their aggregation.

Each record is ``time:record_type:<the fields the seed lists, in order>``.
"""

from __future__ import annotations

import calendar
import time
from pathlib import Path

import pytest

from overlay.cli import account
from overlay.language.limits import shown
from overlay.language.model import Allocation, Request, Reservation, State
from overlay.reporting.accounting import (
    EVENT_DELETED,
    EVENT_START,
    EVENT_TERMINATED,
    EVENT_UNSATISFIED,
    ARUsage,
    ReportingFollower,
    ReportingFormatError,
    ReportingWriter,
    collect,
    read_records,
)

H = 3600
T0 = calendar.timegm((2020, 9, 1, 0, 0, 0))     # well in the past: "now" never clips


def make_ar(ar_id: int, owner: str, start: int, end: int, hosts: dict[str, int],
            submitted: int, name: str = "", account_name: str = "",
            state: State = State.WAITING) -> Reservation:
    return Reservation(id=ar_id, owner=owner, group="staff",
                       request=Request(start=start, end=end, nodes=len(hosts), name=name),
                       state=state, submission_time=submitted,
                       allocations=[Allocation(node, n) for node, n in hosts.items()],
                       account=account_name)


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()




# --- ReportingWriter: the record formats --------------------------------------------------

def test_new_ar_record(tmp_path):
    path = tmp_path / "reporting"
    ar = make_ar(193, "user2", T0, T0 + 86410, {"host1": 2, "host2": 1}, submitted=T0 - 500)
    ReportingWriter(str(path)).new_ar(T0 - 500, ar)
    # time:new_ar:submission_time:ar_number:ar_owner
    assert lines(path) == [f"{T0 - 500}:new_ar:{T0 - 500}:193:user2"]


def test_ar_attribute_record_has_every_field_of_the_seed(tmp_path):
    """seed 000: ar_attribute has event_time, submission_time, ar_number, ar_name,
    ar_account, ar_start_time, ar_end_time, ar_granted_pe, ar_granted_resources."""
    path = tmp_path / "reporting"
    ar = make_ar(193, "user2", T0, T0 + 86410, {"host1": 2, "host2": 1}, submitted=T0 - 500,
                 name="project_xy", account_name="acct1")
    ReportingWriter(str(path)).ar_attribute(T0 - 100, ar)   # e.g. after a modification
    assert lines(path) == [
        f"{T0 - 100}:ar_attribute:{T0 - 100}:{T0 - 500}:193:project_xy:acct1:{T0}:{T0 + 86410}"
        f":NONE:host1=2,host2=1"]


def test_ar_attribute_record_keeps_submission_time_ar_number_and_window(tmp_path):
    path = tmp_path / "reporting"
    ar = make_ar(5, "alice", T0, T0 + H, {"n1": 4}, submitted=T0 - 50, name="sim")
    ReportingWriter(str(path)).ar_attribute(T0 - 10, ar)
    fields = lines(path)[0].split(":")
    assert fields[:2] == [str(T0 - 10), "ar_attribute"]
    tail = fields[-8:]      # submission_time .. ar_granted_resources
    assert tail == [str(T0 - 50), "5", "sim", "sge", str(T0), str(T0 + H), "NONE", "n1=4"]


GRID_ENGINE_REPORTING = Path(__file__).parent / "data" / "sge819_reporting"
"""Grid Engine 8.1.9's own records of three qrsub ARs (see test_arco.py)."""


def qrsub_ar(ar_id: int, submitted: int, start: int, end: int, pe: str,
             attributes: tuple, hosts: dict[tuple[str, str], int], name: str = "",
             account_name: str = "") -> Reservation:
    return Reservation(id=ar_id, owner="plusu1", group="plusgrp", state=State.RUNNING,
                       request=Request(start=start, end=end, nodes=0, pe=pe, pe_range=((2, 2),),
                                       attributes=attributes, name=name, account=account_name),
                       submission_time=submitted, granted_pe=pe, account=account_name,
                       allocations=[Allocation(node, n, queue=queue)
                                    for (queue, node), n in hosts.items()])


def test_qrsub_ar_records_are_grid_engines(tmp_path):
    """A qrsub AR's ar_attribute and ar_acct records hold what Grid Engine's
    hold for the same AR: its granted PE or nothing, its -l requests, the
    cluster queue of each instance; only the record name is the seed's."""
    path = tmp_path / "reporting"
    writer = ReportingWriter(str(path))
    first = qrsub_ar(72718, 1795523050, 1795523050, 1795526650, "mpi", (("lic", "2"),),
                     {("all.q", "vm"): 2}, name="arcotest", account_name="proj1")
    second = qrsub_ar(72720, 1795523084, 1893456000, 1893456600, "",
                      (("lic", "1"), ("h_rt", "3600")), {("all.q", "vm"): 1})
    writer.ar_attribute(1795523050, first)
    writer.ar_acct(1795523071, first)
    writer.ar_attribute(1795523084, second)
    writer.ar_acct(1795523087, second)
    recorded = [line.replace(":ar_attr:", ":ar_attribute:")
                for line in lines(GRID_ENGINE_REPORTING)
                if ":ar_attr:" in line or ":ar_acct:" in line]
    assert lines(path) == recorded[:4]


def test_grid_engines_reporting_file_is_read(tmp_path):
    """8.1.9 names ar_attribute ar_attr; a qrsub AR's hosts come from its
    ar_acct records, never from its -l requests."""
    with open(GRID_ENGINE_REPORTING, encoding="utf-8") as handle:
        ars = {ar.id: ar for ar in collect(handle)}
    assert sorted(ars) == [72718, 72720, 72721]
    assert (ars[72718].name, ars[72718].hosts, ars[72718].terminated) == \
        ("arcotest", {"vm": 2}, 1795523071)
    assert (ars[72720].start, ars[72720].end, ars[72720].hosts) == \
        (1893456000, 1893456600, {"vm": 1})


def test_a_running_qrsub_ar_has_no_hosts_until_it_ends(tmp_path):
    path = tmp_path / "reporting"
    writer = ReportingWriter(str(path))
    ar = qrsub_ar(4, T0, T0, T0 + H, "mpi", (("lic", "2"), ("h_rt", "3600")),
                  {("all.q", "n1"): 1, ("big.q", "n1"): 2, ("all.q", "n2"): 1})
    writer.new_ar(T0, ar)
    writer.ar_attribute(T0, ar)
    [running] = collect(lines(path))
    assert running.hosts == {}
    writer.ar_acct(T0 + H, ar)
    [ended] = collect(lines(path))
    assert ended.hosts == {"n1": 3, "n2": 1}      # a host's instances summed


def test_ar_log_record(tmp_path):
    path = tmp_path / "reporting"
    ar = make_ar(7, "alice", T0, T0 + H, {"n1": 4}, submitted=T0 - 60, state=State.DELETED)
    ReportingWriter(str(path)).ar_log(T0 + 30, ar, EVENT_DELETED, "deleted by alice")
    # time:ar_log:state_change_time:submission_time:ar_number:ar_state:ar_event:ar_message
    assert lines(path) == [f"{T0 + 30}:ar_log:{T0 + 30}:{T0 - 60}:7:d:DELETED:deleted by alice"]


def test_ar_acct_record_per_host(tmp_path):
    path = tmp_path / "reporting"
    ar = make_ar(7, "alice", T0, T0 + H, {"n1": 4, "n2": 2}, submitted=T0 - 60, state=State.EXITED)
    ReportingWriter(str(path)).ar_acct(T0 + H, ar)
    # time:ar_acct:ar_termination_time:submission_time:ar_number:ar_qname:ar_hostname:ar_slots
    assert lines(path) == [f"{T0 + H}:ar_acct:{T0 + H}:{T0 - 60}:7:R7:n1:4",
                           f"{T0 + H}:ar_acct:{T0 + H}:{T0 - 60}:7:R7:n2:2"]


def test_colons_and_newlines_in_free_text_are_neutralised(tmp_path):
    path = tmp_path / "reporting"
    ar = make_ar(9, "bob", T0, T0 + H, {"n1": 1}, submitted=T0, name="a:b", account_name="x:y:z")
    writer = ReportingWriter(str(path))
    writer.ar_attribute(T0, ar)
    writer.ar_log(T0, ar, EVENT_UNSATISFIED, "node n1: down\nretrying: later")
    attribute, log = lines(path)
    assert ":a;b:x;y;z:" in attribute
    assert log == f"{T0}:ar_log:{T0}:{T0}:9:w:RESOURCES UNSATISFIED:node n1; down retrying; later"
    assert len(log.split(":")) == 8


def test_writer_appends_and_creates_the_folder(tmp_path):
    path = tmp_path / "state" / "sub" / "reporting"
    ar = make_ar(1, "alice", T0, T0 + H, {"n1": 1}, submitted=T0)
    ReportingWriter(str(path)).new_ar(T0, ar)
    ReportingWriter(str(path)).new_ar(T0 + 1, ar)
    assert len(lines(path)) == 2
    assert path.read_text().endswith("\n")


# --- read_records and collect -------------------------------------------------------------

def write_history(path: Path, cancel: bool = True) -> None:
    """Four ARs, written the way the daemon writes them:
    1 alice  [T0, T0+2h)      n1=4,n2=4   ends normally
    2 bob    [T0+1h, T0+4h)   n2=2        cancelled at T0+2h
             (cancel=False:   [T0+1h, T0+2h) ending normally: the same usage)
    3 alice  [T0+10h, T0+11h) n3=8        ends normally
    1 carol  [T0+20h, T0+21h) n1=4        the AR id 1 reused
    """
    w = ReportingWriter(str(path))

    def life(ar: Reservation, submitted: int, finished: int, event: str, state: State) -> None:
        ar.state = State.WAITING
        w.new_ar(submitted, ar)
        w.ar_attribute(submitted, ar)
        if finished > ar.start:
            ar.state = State.RUNNING
            w.ar_log(ar.start, ar, EVENT_START, "start time reached")
        ar.state = state
        w.ar_log(finished, ar, event, event.lower())
        w.ar_acct(finished, ar)

    first = make_ar(1, "alice", T0, T0 + 2 * H, {"n1": 4, "n2": 4}, submitted=T0 - 600)
    second = make_ar(2, "bob", T0 + H, T0 + (4 if cancel else 2) * H, {"n2": 2}, submitted=T0 - 300)
    third = make_ar(3, "alice", T0 + 10 * H, T0 + 11 * H, {"n3": 8}, submitted=T0 + 9 * H)
    reused = make_ar(1, "carol", T0 + 20 * H, T0 + 21 * H, {"n1": 4}, submitted=T0 + 19 * H)
    life(first, T0 - 600, T0 + 2 * H, EVENT_TERMINATED, State.EXITED)
    if cancel:
        life(second, T0 - 300, T0 + 2 * H, EVENT_DELETED, State.DELETED)
    else:
        life(second, T0 - 300, T0 + 2 * H, EVENT_TERMINATED, State.EXITED)
    with path.open("a") as handle:     # records of other kinds are skipped
        handle.write(f"# Version: 6.2u5\n{T0 + 5 * H}:new_job:{T0 + 5 * H}:17:-1:NONE:job:alice\n"
                     f"{T0 + 5 * H}:host_consumable:n1:{T0}:X:slots=0=8\n\n")
    life(third, T0 + 9 * H, T0 + 11 * H, EVENT_TERMINATED, State.EXITED)
    life(reused, T0 + 19 * H, T0 + 21 * H, EVENT_TERMINATED, State.EXITED)


def by_owner(ars: list[ARUsage]) -> dict[str, ARUsage]:
    return {ar.owner: ar for ar in ars if ar.owner}


def test_collect_owner_window_and_hosts(tmp_path):
    path = tmp_path / "reporting"
    write_history(path)
    ars = collect(path.read_text().splitlines(True))
    bob = by_owner(ars)["bob"]
    assert (bob.id, bob.start, bob.end, bob.hosts) == (2, T0 + H, T0 + 4 * H, {"n2": 2})


def test_collect_gives_one_usage_per_ar(tmp_path):
    path = tmp_path / "reporting"
    write_history(path)
    ars = collect(path.read_text().splitlines(True))
    assert sorted((ar.id, ar.owner) for ar in ars) == [(1, "alice"), (1, "carol"), (2, "bob"),
                                                       (3, "alice")]


def test_collect_termination_and_last_state(tmp_path):
    path = tmp_path / "reporting"
    write_history(path)
    ars = collect(path.read_text().splitlines(True))
    bob = by_owner(ars)["bob"]
    assert bob.terminated == T0 + 2 * H
    assert bob.last_state == "d"
    assert bob.used_window() == (T0 + H, T0 + 2 * H)
    carol = by_owner(ars)["carol"]
    assert carol.terminated == T0 + 21 * H
    assert carol.last_state == "x"


def test_collect_reused_ar_id_starts_a_new_ar(tmp_path):
    path = tmp_path / "reporting"
    write_history(path)
    ars = [ar for ar in collect(path.read_text().splitlines(True)) if ar.id == 1]
    assert [(ar.owner, ar.start, ar.end, ar.hosts, ar.terminated) for ar in ars] == [
        ("alice", T0, T0 + 2 * H, {"n1": 4, "n2": 4}, T0 + 2 * H),
        ("carol", T0 + 20 * H, T0 + 21 * H, {"n1": 4}, T0 + 21 * H)]


def test_collect_takes_the_last_attributes_of_a_modified_ar(tmp_path):
    path = tmp_path / "reporting"
    w = ReportingWriter(str(path))
    ar = make_ar(4, "dave", T0, T0 + H, {"n1": 4}, submitted=T0 - 10)
    w.new_ar(T0 - 10, ar)
    w.ar_attribute(T0 - 10, ar)
    ar.request = ar.request.with_changes(start=T0 + H, end=T0 + 3 * H, name="longer")
    ar.allocations = [Allocation("n5", 2)]
    w.ar_attribute(T0 - 5, ar)
    [usage] = collect(path.read_text().splitlines())
    assert (usage.owner, usage.name, usage.start, usage.end, usage.hosts) == (
        "dave", "longer", T0 + H, T0 + 3 * H, {"n5": 2})
    assert usage.terminated is None


def test_collect_reads_the_seeds_record_layout():
    """Records written by hand in the field order of seed 000, 5.4.3.2."""
    sub = T0 - 100
    records = [
        f"{sub}:new_ar:{sub}:12:erin",
        f"{sub}:ar_attribute:{sub}:{sub}:12:run:acct:{T0}:{T0 + 2 * H}:NONE:n1=2,n2=2",
        f"{sub}:ar_log:{sub}:{sub}:12:w:CREATED:created",
        f"{T0 + H}:ar_log:{T0 + H}:{sub}:12:d:DELETED:deleted",
        f"{T0 + H}:ar_acct:{T0 + H}:{sub}:12:R12:n1:2",
        f"{T0 + H}:ar_acct:{T0 + H}:{sub}:12:R12:n2:2",
    ]
    [usage] = collect(records)
    assert (usage.id, usage.owner, usage.name) == (12, "erin", "run")
    assert (usage.start, usage.end, usage.terminated, usage.last_state) == (
        T0, T0 + 2 * H, T0 + H, "d")
    assert usage.hosts == {"n1": 2, "n2": 2}


def test_an_ar_granted_is_waiting_until_a_record_says_otherwise():
    """8.1.9 writes no ar_log record at the grant: new_ar says the AR is w."""
    [usage] = collect([f"{T0}:new_ar:{T0}:5:erin",
                       f"{T0}:ar_attr:{T0}:{T0}:5::sge:{T0 + H}:{T0 + 2 * H}::"])
    assert usage.last_state == "w"


def test_an_end_logged_in_the_old_words_counts_as_one_in_8_1_9s():
    """Reporting files of earlier PluS versions end an AR with END TIME
    REACHED; 8.1.9 and this version with TERMINATED: the same usage."""
    def ended(event: str) -> list[str]:
        return [f"{T0}:new_ar:{T0}:5:erin",
                f"{T0}:ar_attribute:{T0}:{T0}:5::sge:{T0 + H}:{T0 + 2 * H}:NONE:n1=2",
                f"{T0 + 2 * H}:ar_log:{T0 + 2 * H}:{T0}:5:x:{event}:end time of AR reached",
                f"{T0 + 2 * H}:ar_acct:{T0 + 2 * H}:{T0}:5:R5:n1:2"]
    [old], [new] = collect(ended("END TIME REACHED")), collect(ended(EVENT_TERMINATED))
    assert old == new
    assert (new.terminated, new.last_state, new.used_window()) == (
        T0 + 2 * H, "x", (T0 + H, T0 + 2 * H))


def test_used_window_clips():
    usage = ARUsage(id=1, start=100, end=500)
    assert usage.used_window() == (100, 500)
    assert usage.used_window(200, 300) == (200, 300)
    assert usage.used_window(0, 1000) == (100, 500)
    assert usage.used_window(600, 700) == (600, 600)        # empty, never inverted
    usage.terminated = 250
    assert usage.used_window() == (100, 250)
    assert usage.used_window(300, 400) == (300, 300)
    usage.terminated = 50                                    # cancelled before the start
    assert usage.used_window() == (100, 100)


def test_read_records_skips_other_kinds_and_reports_bad_times():
    records = list(read_records(["# comment\n", "\n", "5:new_job:1:2\n", "7:new_ar:7:1:x\n",
                                 "8:ar_log:8:7:1:w:CREATED:ok\n"]))
    assert records == [(4, 7, "new_ar", ["7", "1", "x"]),
                       (5, 8, "ar_log", ["8", "7", "1", "w", "CREATED", "ok"])]
    with pytest.raises(ReportingFormatError, match="line 2"):
        list(read_records(["7:new_ar:7:1:x\n", "soon:new_ar:7:1:x\n"]))
    errors = []
    assert len(list(read_records(["7:new_ar:7:1:x\n", "١:new_ar:7:1:x\n", "8:new_ar:8:2:y\n"],
                                 errors.append))) == 2
    assert [str(e) for e in errors] == ["line 2: the record time '١' is not a number"]


def test_no_field_can_forge_a_record(tmp_path):
    """A name with a carriage return, a newline or a Unicode line separator
    stays inside its own record, whichever way the file is split into lines."""
    path = tmp_path / "reporting"
    forged = "x\r9:new_ar:9:9:mallory\n9:ar_attribute\u2028\x1b[2J"
    ar = make_ar(3, "frank", T0, T0 + H, {"n1": 1}, submitted=T0, name=forged)
    writer = ReportingWriter(str(path))
    writer.new_ar(T0, ar)
    writer.ar_attribute(T0, ar)
    text = path.read_text()
    assert len(text.splitlines()) == 2 and len(text.split("\n")) == 3
    [usage] = collect(text.splitlines(True))
    assert usage.id == 3 and usage.owner == "frank" and usage.name.startswith("x 9;new_ar")


@pytest.mark.parametrize("record,kind", [
    ("100:new_ar:100", "new_ar"),
    ("100:ar_attribute:100:7:name", "ar_attribute"),
    ("100:ar_acct:100:7:R7:n1:many", "ar_acct"),
    ("100:new_ar:100:seven:alice", "new_ar"),
])
def test_collect_refuses_malformed_records(record, kind):
    with pytest.raises(ReportingFormatError, match=f"malformed {kind} record"):
        collect([record])


# --- plus_account -------------------------------------------------------------------------

def iso(epoch: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


@pytest.fixture
def history(tmp_path) -> str:
    """The four ARs, all ending at their end time."""
    path = tmp_path / "reporting"
    write_history(path, cancel=False)
    return str(path)


@pytest.fixture
def cancelled(tmp_path) -> str:
    """The four ARs, bob's cancelled one hour after its start."""
    path = tmp_path / "reporting"
    write_history(path, cancel=True)
    return str(path)


def run(capsys, *argv: str) -> list[str]:
    assert account.main(list(argv)) == 0
    return capsys.readouterr().out.splitlines()


def rows(out: list[str], apart: bool = False) -> dict[str, list[str]]:
    """Table rows by their first column (name, TOTAL): ARs, reserved,
    node-hours and slot-hours held, or (``apart``) the node-hours asked,
    used and released."""
    table = {}
    for line in out:
        parts = line.split()
        if len(parts) == 8 and parts[1].isdigit():
            table[parts[0]] = parts[5:] if apart else parts[1:5]
    return table


# Expected usage of write_history's ARs, in seconds, nodes and slots (the same in
# both fixtures):
#   1 alice 7200 s x 2 nodes, 8 slots; 2 bob 3600 s x 1 node, 2 slots;
#   3 alice 3600 s x 1 node, 8 slots;  1 carol 3600 s x 1 node, 4 slots.

def test_totals(capsys, history):
    out = run(capsys, "-f", history)
    assert out[0].split() == ["ARs", "reserved", "node-hours", "slot-hours", "asked-nh",
                              "used-nh", "released-nh"]
    assert set(out[1]) == {"="}
    assert rows(out) == {"TOTAL": ["4", "5:0:0", "7.00", "30.00"]}
    # every AR held what it asked: nothing released; no job's acct record
    assert rows(out, apart=True) == {"TOTAL": ["7.00", "0.00", "0.00"]}


def test_totals_with_capital_s_are_the_same(capsys, history):
    assert rows(run(capsys, "-f", history, "-S")) == {"TOTAL": ["4", "5:0:0", "7.00", "30.00"]}


def test_per_owner(capsys, history):
    out = run(capsys, "-f", history, "-o")
    assert out[0].split()[0] == "OWNER"
    assert rows(out) == {"alice": ["2", "3:0:0", "5.00", "24.00"],
                         "bob": ["1", "1:0:0", "1.00", "2.00"],
                         "carol": ["1", "1:0:0", "1.00", "4.00"]}
    assert [line.split()[0] for line in out[2:]] == ["alice", "bob", "carol"]


def test_per_owner_with_total(capsys, history):
    out = run(capsys, "-f", history, "-o", "-S")
    assert rows(out)["TOTAL"] == ["4", "5:0:0", "7.00", "30.00"]
    assert out[-1].split()[0] == "TOTAL"


def test_one_owner(capsys, history):
    assert rows(run(capsys, "-f", history, "-o", "bob")) == {"bob": ["1", "1:0:0", "1.00", "2.00"]}
    assert rows(run(capsys, "-f", history, "-o", "carol", "-S")) == {
        "carol": ["1", "1:0:0", "1.00", "4.00"], "TOTAL": ["1", "1:0:0", "1.00", "4.00"]}


def test_unknown_owner_gives_an_empty_table(capsys, history):
    out = run(capsys, "-f", history, "-o", "nobody", "-S")
    assert rows(out) == {"TOTAL": ["0", "0:0:0", "0.00", "0.00"]}


def test_per_node(capsys, history):
    out = run(capsys, "-f", history, "-n")
    assert out[0].split()[0] == "NODE"
    assert rows(out) == {"n1": ["2", "3:0:0", "3.00", "12.00"],
                         "n2": ["2", "3:0:0", "3.00", "10.00"],
                         "n3": ["1", "1:0:0", "1.00", "8.00"]}


def test_some_nodes(capsys, history):
    out = run(capsys, "-f", history, "-n", "n1,n3", "-S")
    # only n1 and n3 count: alice's 2-node AR counts 2 h on n1 only
    assert rows(out) == {"n1": ["2", "3:0:0", "3.00", "12.00"],
                         "n3": ["1", "1:0:0", "1.00", "8.00"],
                         "TOTAL": ["3", "4:0:0", "4.00", "20.00"]}


def test_owner_and_node_tables_together(capsys, history):
    out = run(capsys, "-f", history, "-o", "alice", "-n")
    assert "" in out                                   # the two tables are apart
    table = rows(out)
    assert table["alice"] == ["2", "3:0:0", "5.00", "24.00"]
    assert table["n1"] == ["1", "2:0:0", "2.00", "8.00"]
    assert "bob" not in table and "carol" not in table


def test_listing(capsys, history, zone):
    zone("UTC")
    out = run(capsys, "-f", history, "-l")
    assert out[0].split() == ["AR-ID", "owner", "from", "to", "reserved", "node-hours", "nodes",
                              "asked-nh", "used-nh", "released-nh"]
    listed = [line.split() for line in out[2:]]
    assert sorted(listed) == sorted([
        ["1", "alice", "09/01/2020", "00:00:00", "09/01/2020", "02:00:00", "2:0:0", "4.00", "n1,n2",
         "4.00", "0.00", "0.00"],
        ["2", "bob", "09/01/2020", "01:00:00", "09/01/2020", "02:00:00", "1:0:0", "1.00", "n2",
         "1.00", "0.00", "0.00"],
        ["3", "alice", "09/01/2020", "10:00:00", "09/01/2020", "11:00:00", "1:0:0", "1.00", "n3",
         "1.00", "0.00", "0.00"],
        ["1", "carol", "09/01/2020", "20:00:00", "09/01/2020", "21:00:00", "1:0:0", "1.00", "n1",
         "1.00", "0.00", "0.00"],
    ])


def test_listing_with_total(capsys, history, zone):
    zone("UTC")
    out = run(capsys, "-f", history, "-l", "-S")
    assert out[-1].split()[:5] == ["TOTAL", "4", "5:0:0", "7.00", "30.00"]
    assert len(out) == 2 + 4 + 1


def test_period_clips_the_windows(capsys, history):
    # [T0+1h, T0+3h): alice's first AR 1 h on 2 nodes, bob's 1 h (cancelled at T0+2h)
    out = run(capsys, "-f", history, "-s", iso(T0 + H), "-e", iso(T0 + 3 * H))
    assert rows(out) == {"TOTAL": ["2", "2:0:0", "3.00", "10.00"]}


def test_period_with_days_after_the_start(capsys, history):
    assert rows(run(capsys, "-f", history, "-s", iso(T0), "-d", "1")) == {
        "TOTAL": ["4", "5:0:0", "7.00", "30.00"]}
    assert rows(run(capsys, "-f", history, "-s", iso(T0 + 20 * H), "-d", "1")) == {
        "TOTAL": ["1", "1:0:0", "1.00", "4.00"]}


def test_period_with_days_before_the_end(capsys, history):
    # [T0+10.5h-24h, T0+10.5h): ARs 1 and 2 whole, half of AR 3
    out = run(capsys, "-f", history, "-e", iso(T0 + 10 * H + 1800), "-d", "1")
    assert rows(out) == {"TOTAL": ["3", "3:30:0", "5.50", "22.00"]}


def test_period_start_only(capsys, history):
    out = run(capsys, "-f", history, "-s", iso(T0 + 10 * H + 1800), "-o")
    assert rows(out) == {"alice": ["1", "0:30:0", "0.50", "4.00"],
                         "carol": ["1", "1:0:0", "1.00", "4.00"]}


def test_cancelled_ar_counts_until_its_cancellation(capsys, cancelled):
    assert rows(run(capsys, "-f", cancelled)) == {"TOTAL": ["4", "5:0:0", "7.00", "30.00"]}
    assert rows(run(capsys, "-f", cancelled, "-o", "bob")) == {"bob": ["1", "1:0:0", "1.00", "2.00"]}
    assert rows(run(capsys, "-f", cancelled, "-n", "n2")) == {"n2": ["2", "3:0:0", "3.00", "10.00"]}


def test_cancelled_ar_in_the_listing(capsys, cancelled, zone):
    zone("UTC")
    listed = [line.split() for line in run(capsys, "-f", cancelled, "-l")[2:]]
    # asked 3 node-hours, held 1 until its cancellation: 2 released
    assert ["2", "bob", "09/01/2020", "01:00:00", "09/01/2020", "02:00:00", "1:0:0", "1.00",
            "n2", "3.00", "0.00", "2.00"] in listed


def test_period_after_a_cancellation(capsys, cancelled):
    # [T0+2h, T0+4h) lies inside bob's window but after its cancellation
    out = run(capsys, "-f", cancelled, "-s", iso(T0 + 2 * H), "-e", iso(T0 + 4 * H), "-S")
    assert rows(out) == {"TOTAL": ["0", "0:0:0", "0.00", "0.00"]}
    out = run(capsys, "-f", cancelled, "-s", iso(T0 + H), "-e", iso(T0 + 3 * H))
    assert rows(out) == {"TOTAL": ["2", "2:0:0", "3.00", "10.00"]}


def test_days_with_both_start_and_end_is_a_usage_error(capsys, history):
    with pytest.raises(SystemExit) as info:
        account.main(["-f", history, "-s", iso(T0), "-e", iso(T0 + H), "-d", "1"])
    assert info.value.code == 2
    assert "-d cannot be combined" in capsys.readouterr().err


def test_end_before_start_is_a_usage_error(capsys, history):
    with pytest.raises(SystemExit) as info:
        account.main(["-f", history, "-s", iso(T0 + H), "-e", iso(T0)])
    assert info.value.code == 2
    assert "end must be later" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["-d", "0"], ["-d", "x"], ["-s", "tomorrow"]])
def test_bad_option_values_are_usage_errors(capsys, history, argv):
    with pytest.raises(SystemExit) as info:
        account.main(["-f", history] + argv)
    assert info.value.code == 2
    assert capsys.readouterr().err.startswith("plus_account:")


def test_missing_file(capsys, tmp_path):
    path = str(tmp_path / "no-such-reporting")
    with pytest.raises(SystemExit) as info:
        account.main(["-f", path])
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("plus_account: cannot read ")
    assert path in err


@pytest.mark.parametrize("bad,fragment", [
    ("yesterday:new_ar:1:2:alice", "line 2"),
    (f"{T0}:ar_attribute:{T0}:9", "malformed ar_attribute record"),
    (f"{T0}:new_ar:{T0}:nine:alice", "malformed new_ar record"),
])
def test_malformed_record_is_ignored_with_a_warning(capsys, tmp_path, bad, fragment):
    """As qacct does ("ignoring invalid entry"): one bad line must not keep
    every user from their figures."""
    path = tmp_path / "reporting"
    ar = make_ar(8, "alice", T0, T0 + H, {"n1": 1}, submitted=T0)
    writer = ReportingWriter(str(path))
    writer.new_ar(T0, ar)
    with open(path, "a") as handle:
        handle.write(bad + "\n")
    writer.ar_attribute(T0, ar)
    assert account.main(["-f", str(path), "-s", iso(T0), "-e", iso(T0 + H)]) == 0
    out, err = capsys.readouterr()
    assert err.startswith(f"plus_account: {shown(path)}: ignoring line 2: ")  # a long path cut
    assert fragment in err and len(err.splitlines()) == 1
    assert rows(out.splitlines())["TOTAL"][0] == "1"


def test_empty_file_gives_zero_totals(capsys, tmp_path):
    path = tmp_path / "reporting"
    path.write_text("")
    assert rows(run(capsys, "-f", str(path))) == {"TOTAL": ["0", "0:0:0", "0.00", "0.00"]}


def test_running_ar_is_clipped_at_now(capsys, tmp_path):
    now = int(time.time())
    path = tmp_path / "reporting"
    ar = make_ar(3, "frank", now - 2 * H, now + 10 * H, {"n1": 1}, submitted=now - 3 * H)
    w = ReportingWriter(str(path))
    w.new_ar(now - 3 * H, ar)
    w.ar_attribute(now - 3 * H, ar)
    [total] = rows(run(capsys, "-f", str(path))).values()
    assert total[0] == "1"
    assert float(total[2]) == pytest.approx(2.0, abs=0.01)    # 2 h so far, not 12


def test_the_daemons_follower_reads_only_what_was_appended(tmp_path):
    """GET /accounting and /usage ask the follower: the file is read once,
    then each question reads the records written since; a file truncated,
    replaced or rewritten in place (rotated, emptied by dbwriter, even
    regrown past where it was read) is read again from its start, and a
    record half written waits for its end."""
    path = tmp_path / "reporting"
    follower = ReportingFollower(str(path))
    assert follower.current() == ([], [])
    writer = ReportingWriter(str(path))
    first = make_ar(1, "alice", T0, T0 + H, {"n1": 4}, submitted=T0)
    writer.new_ar(T0, first)
    writer.ar_attribute(T0, first)
    [seen], _ = follower.current()
    assert (seen.id, seen.owner, seen.hosts) == (1, "alice", {"n1": 4})
    read = follower._mark.offset
    second = make_ar(2, "bob", T0, T0 + H, {"n2": 4}, submitted=T0)
    writer.new_ar(T0, second)
    with open(path, "a") as handle:
        handle.write(f"{T0}:ar_attribute:{T0}")       # half a record
    ars, _ = follower.current()
    assert [ar.id for ar in ars] == [1, 2] and ars[1].hosts == {}
    assert follower._mark.offset > read
    path.write_text("")
    writer.new_ar(T0, second)
    writer.ar_attribute(T0, second)
    [only], _ = follower.current()
    assert (only.id, only.hosts) == (2, {"n2": 4})
    with open(path, "r+") as handle:              # rewritten in place, and longer than before
        handle.truncate(0)
    for ar_id in range(10, 20):
        writer.new_ar(T0, make_ar(ar_id, "carol", T0, T0 + H, {"n3": 1}, submitted=T0))
    assert sorted(ar.id for ar in follower.current()[0]) == list(range(10, 20))
