"""The Grid Engine plugin's pure parts: object files, names, parsing of
real qstat/qhost/qconf output (recorded from this project's test cluster,
Son of Grid Engine 8.1.9), settings and the crash ledger."""

from __future__ import annotations

import calendar
import json
import time
from pathlib import Path

import pytest

from overlay.language.model import Allocation
from overlay_sge import calendars, objects, settings
from overlay_sge.ledger import Ledger, Requeue
from overlay_sge.status import parse_hosts, parse_observation

DATA = Path(__file__).parent / "data" / "sge"


def test_object_names():
    assert (objects.queue_name(123), objects.hostgroup_name(123), objects.userset_name(123)) == \
        ("R123", "@R123_hosts", "R123_users")
    assert objects.ar_id_of("R123") == 123
    assert objects.ar_id_of("all.q") is None and objects.ar_id_of("R0") is None
    assert objects.ar_id_of("R12345678") is None


@pytest.mark.parametrize("host", ["-rf", "a b", "h;rm", "", "x" * 300, "node_1", "$(id)"])
def test_bad_host_names_never_reach_qconf(host):
    with pytest.raises(ValueError, match="refusing host name"):
        objects.hostgroup(1, ["node1", host])


@pytest.mark.parametrize("user", ["-u", "a,b", "@", "x y", "1abc", "@grp;x"])
def test_bad_user_entries_never_reach_qconf(user):
    with pytest.raises(ValueError, match="refusing user"):
        objects.userset(1, ["plusu1", user])


def test_hostgroup_and_userset_files():
    assert objects.render(objects.hostgroup(7, ["node2", "node1"])) == \
        "group_name @R7_hosts\nhostlist node1 node2\n"
    assert objects.render(objects.userset(7, ["plusu1", "@nosuchgroup9"])) == \
        "name R7_users\ntype ACL\nfshare 0\noticket 0\nentries plusu1,@nosuchgroup9\n"


def test_a_groups_supplementary_members_are_named(monkeypatch):
    class Group:
        gr_mem = ["carol", "bob"]
    monkeypatch.setattr("grp.getgrnam", lambda name: Group)
    assert objects.userset(7, ["bob", "@staff"])["entries"] == "bob,@staff,carol"


def test_parse_config_joins_continued_lines():
    text = "qname all.q\nslots 1,[node1=4], \\\n      [node2=8]\npe_list make smp\n"
    assert objects.parse_config(text) == {"qname": "all.q", "slots": "1,[node1=4],[node2=8]",
                                          "pe_list": "make smp"}


def test_queue_copies_the_template_and_sets_what_the_ar_decides():
    template = objects.parse_config((DATA / "qconf-sq-R902.txt").read_text())
    template.update({"qname": "all.q", "pe_list": "smp,[node1=mpi]", "rerun": "TRUE",
                     "slots": "1,[node1=4]", "user_lists": "staff", "load_thresholds": "np_load_avg=1.75"})
    queue = objects.queue(9, template, [Allocation("node2", 2), Allocation("node1", 4)],
                          "plus_rsv", 3540)
    assert queue["qname"] == "R9" and queue["hostlist"] == "@R9_hosts"
    assert queue["slots"] == "4,[node2=2]"
    assert queue["user_lists"] == "R9_users" and queue["xuser_lists"] == "NONE"
    assert queue["complex_values"] == "plus_rsv=R9"
    assert queue["h_rt"] == "00:59:00" and queue["load_thresholds"] == "NONE"
    assert queue["pe_list"] == "smp" and queue["rerun"] == "TRUE"     # template's, overrides dropped
    assert objects.differences(dict(queue, h_rt="3540", slots="4, [node2=2]"), queue) == []
    assert objects.differences(dict(queue, user_lists="NONE"), queue) == ["user_lists"]


def test_observation_from_real_qstat():
    observation = parse_observation((DATA / "qstat-f-u-r.xml").read_text())
    states = {i.name: i.state for i in observation.instances}
    assert states["R902@node1"] == "s" and states["all.q@node3"] == "d" and states["all.q@vm"] == ""
    longone = next(j for j in observation.running if j.name == "longone")
    assert (longone.owner, longone.instance, longone.host, longone.queue) == \
        ("plusu1", "all.q@vm", "vm", "all.q")
    assert longone.h_rt == 600 and longone.start is not None
    pending = {j.id: j for j in observation.pending}
    assert any(j.requests.get("plus_rsv") == "R902" and "R902" in j.queue_requests
               for j in pending.values())
    assert all(j.state == "qw" for j in pending.values())


def test_hosts_from_real_qhost():
    hosts = {h.name: h for h in parse_hosts((DATA / "qhost-q-F.xml").read_text())}
    assert set(hosts) == {"vm", "node1", "node2", "node3"}
    node1 = hosts["node1"]
    assert node1.alive and node1.arch == "lx-amd64" and node1.os == "linux"
    assert node1.ncpus >= 1 and node1.memory_mb > 1000
    assert node1.queues["all.q"] == 2 and node1.queues["R902"] == 2
    assert node1.resources["arch"] == "lx-amd64"


@pytest.mark.parametrize("options,message", [
    ({"conflict": "preempt"}, r"sge.conflict: expected one of requeue, kill, avoid, got 'preempt'"),
    ({"timeout": 0}, r"sge.timeout: expected a whole number of seconds of 1 or more, got 0"),
    ({"timeout": "5"}, r"sge.timeout: .*got '5'"),
    ({"sge_root": "relative/path"}, r"sge.sge_root: expected an absolute path"),
    ({"template_queue": "all q"}, r"sge.template_queue: expected a Grid Engine object name \(.*got 'all q'"),
    ({"complex": ""}, r"sge.complex: expected a Grid Engine object name"),
    ({"ledger": " "}, r"sge.ledger: expected a non-empty string, got ' '"),
    ({"cell": "default"}, r"sge.cell: unknown setting; known: sge_root, sge_cell"),
])
def test_bad_settings_name_the_key_and_what_is_accepted(options, message):
    with pytest.raises(ValueError, match=message):
        settings.load(options)


def test_settings_defaults():
    chosen = settings.load({})
    assert chosen.environment == {"SGE_ROOT": "/var/lib/gridengine", "SGE_CELL": "default"}
    assert (chosen.conflict, chosen.complex, chosen.template_queue) == ("requeue", "plus_rsv", "all.q")


def test_ledger_survives_a_restart(tmp_path):
    path = str(tmp_path / "ledger.json")
    ledger = Ledger(path)
    ledger.claim(5)
    ledger.set_active(5, ["node2", "node1"])
    ledger.note_suspended(["all.q@node1", "all.q@node2"])
    ledger.note_requeue(Requeue("42", "plusu2", 1000))
    again = Ledger(path)
    assert again.owned() == [5] and again.active_hosts() == {"node1", "node2"}
    assert again.suspended() == {"all.q@node1", "all.q@node2"}
    assert again.requeues()["42"].owner == "plusu2"
    again.note_resumed(["all.q@node1"])
    again.end_requeue("42")
    again.forget(5)
    final = json.loads(Path(path).read_text())
    assert final == {"ars": [], "active": {}, "suspended": ["all.q@node2"], "requeues": {},
                     "calendars": {}}


def test_a_corrupt_ledger_is_named(tmp_path):
    path = tmp_path / "ledger.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match=f"cannot read the Grid Engine ledger {path}"):
        Ledger(str(path))


@pytest.fixture
def utc(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_calendar_switches_off_over_each_window_day_by_day(utc):
    ten = calendar.timegm((2026, 11, 22, 10, 0, 0))
    windows = [(ten, ten + 3600), (ten + 13 * 3600, ten + 39 * 3600), (ten - 7200, ten - 3600)]
    assert calendars.year_field(windows, now=ten - 60) == (
        "22.11.2026=10:00:00-11:00:00=off 22.11.2026=23:00:00-24:00:00=off "
        "23.11.2026=00:00:00-24:00:00=off 24.11.2026=00:00:00-01:00:00=off")   # the past one dropped
    assert calendars.year_field([], now=ten) == "NONE"
    assert calendars.calendar("n1.example.org", [], ten)["calendar_name"] == "plus_n1_example_org"
