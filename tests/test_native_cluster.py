"""The embedded cluster file: ranges, validation, and edits while the daemon runs."""

from __future__ import annotations

import os

import pytest

from overlay_native.backend import NativeBackend
from overlay_native.resources.cluster import Cluster, ClusterError, expand_names


def test_ranges_keep_their_width():
    assert expand_names("node[008-010]") == ["node008", "node009", "node010"]
    with pytest.raises(ClusterError, match="ends before it starts"):
        expand_names("n[5-1]")


def test_bad_files_name_the_node_and_key(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text("nodes:\n  - {name: a, slots: 0}\n")
    with pytest.raises(ClusterError, match=r"nodes\[0\]: slots must be a whole number of at least 1"):
        Cluster(str(path), include_local=False)
    path.write_text("nodes:\n  - {name: a, colour: red}\n")
    with pytest.raises(ClusterError, match=r"unknown key\(s\) colour"):
        Cluster(str(path), include_local=False)
    with pytest.raises(ClusterError, match="cannot read|No such file"):
        Cluster(str(tmp_path / "missing.yaml"), include_local=False)


def test_running_daemon_keeps_the_last_good_nodes(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text("nodes:\n  - {name: 'n[1-2]', slots: 2}\n")
    cluster = Cluster(str(path), include_local=False)
    path.write_text("nodes:\n  - {name: 'n[1-3]', slots: 2, alive: false}\n")
    os.utime(path, ns=(1, 1))
    assert [(n.name, n.alive) for n in cluster.nodes()] == [("n1", False), ("n2", False), ("n3", False)]
    path.write_text("nodes: [broken\n")
    os.utime(path, ns=(2, 2))
    assert len(cluster.nodes()) == 3
    path.unlink()
    assert len(cluster.nodes()) == 3
    path.write_text("nodes:\n  - {name: n9}\n")
    os.utime(path, ns=(3, 3))
    assert [n.name for n in cluster.nodes()] == ["n9"]


# -- the whole cluster: queues, PEs, user lists, host groups, complexes, scheduler ----

import math
import textwrap

from overlay.kit.remote import SshSettings
from overlay_native.resources.cluster import load_cluster
from overlay_native.resources.complexes import parse_requests
from overlay_native.resources.matching import mismatch

FULL = """\
complexes:
  - {name: license, shortcut: lic, type: INT, relop: "<=", consumable: YES, urgency: 100}
global:
  complex_values: {license: 5}
hostgroups:
  "@small": ["n[1-2]"]
  "@all": ["@small", big]
userlists:
  staff: [alice, "@physics"]
  banned: [mallory]
pes:
  - {name: mpi, slots: 8, allocation_rule: $round_robin, xuser_lists: [banned]}
  - {name: smp, slots: 16}
nodes:
  - {name: "n[1-2]", ncpus: 2, memory: 4G, exec: local}
  - {name: big, slots: 8, ncpus: 8, memory: 64G, queues: [big.q], complex_values: {license: 2},
     exec: {ssh: {port: 2222}}}
  - {name: sim, ncpus: 4, queues: []}
queues:
  - name: all.q
    hostlist: ["@all"]
    slots: {default: 1, big: 4}
    seq_no: 2
    pe_list: [mpi, smp]
    user_lists: [staff]
    h_rt: "8:0:0"
    suspended: [n2]
  - {name: big.q, slots: 4, complex_values: {license: 1}, disabled: true}
scheduler:
  schedule_interval: "0:0:4"
  max_reservation: 10
  default_duration: "1:0:0"
  params: MONITOR=1,DURATION_OFFSET=30
  queue_sort_method: seqno
  JobSortKey: [OwnersName, JobPriority]
  OwnersOrder: [bob]
  NodeSortKey: [LowestLoadAverage]
"""


def write(tmp_path, text: str, name: str = "cluster.yaml") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_a_full_cluster(tmp_path):
    config, files = load_cluster(write(tmp_path, FULL), False, {"key": "/etc/k"}, 30)
    assert files == [str(tmp_path / "cluster.yaml")]
    assert list(config.hosts) == ["n1", "n2", "big", "sim"]
    assert config.hosts["n1"].execution == "local" and config.hosts["sim"].execution == "none"
    assert config.hosts["big"].execution == SshSettings("big", 2222, "root", "/etc/k")
    all_q, big_q = config.queues["all.q"], config.queues["big.q"]
    assert dict(all_q.slots) == {"n1": 1, "n2": 1, "big": 4}
    assert all_q.hosts == ("n1", "n2", "big")                   # hostlist, then nodes naming it
    assert dict(big_q.slots) == {"big": 4} and big_q.disabled == {"big"}
    assert all_q.suspended == {"n2"} and all_q.limits == {"h_rt": "8:0:0"}
    assert config.pes["mpi"].allocation_rule == "$round_robin" and config.pes["smp"].slots == 16
    assert [(n.name, n.slots, n.queues) for n in config.nodes()] == [
        ("n1", 1, ("all.q",)), ("n2", 1, ("all.q",)), ("big", 8, ("all.q", "big.q")), ("sim", 0, ())]
    sched = config.scheduler
    assert (sched.schedule_interval, sched.max_reservation, sched.default_duration) == (4, 10, 3600)
    assert sched.monitor and sched.duration_offset == 30 and sched.queue_sort_method == "seqno"
    assert sched.job_order.keys == ("OwnersName", "JobPriority") and sched.job_order.owners == ("bob",)
    assert sched.job_order.queue_priority == {"all.q": -2, "big.q": 0}
    assert sched.node_order == ("LowestLoadAverage",)


def test_containers_hold_every_configured_value(tmp_path):
    config, _ = load_cluster(write(tmp_path, FULL), False)
    containers = config.containers(reports={"big": {"load_avg": 4.0, "mem_free": 2 ** 30}})
    big = containers.hosts["big"]
    assert big.available("license") == 2 and big.available("slots") == 8
    assert containers.global_.available("license") == 5
    instance = containers.instances[("big.q", "big")]
    assert instance.available("license") == 1 and instance.available("slots") == 4
    lic = parse_requests(config.table, "lic=1,arch=lx-amd64,num_proc=8,mem_total=64G")
    assert mismatch(lic, containers.instances[("all.q", "big")]) is None
    assert mismatch(parse_requests(config.table, "num_proc=2"), instance) == \
        'cannot run at host "big" because it offers only hl:num_proc=8'
    assert "because it offers only qf:h_rt=8:0:0" in mismatch(
        parse_requests(config.table, "h_rt=9:0:0"), containers.instances[("all.q", "n1")])
    assert mismatch(parse_requests(config.table, "mem_total=4G"),
                    containers.instances[("all.q", "n1")]) is None
    assert mismatch(parse_requests(config.table, "mem_free=1G"), instance) is None   # reported
    assert "hl:mem_free" in mismatch(parse_requests(config.table, "mem_free=2G"), instance)
    assert "mem_free" in mismatch(parse_requests(config.table, "mem_free=1G"),    # not reported
                                  containers.instances[("all.q", "n1")])
    assert containers.hosts["n1"].chain()[0] is containers.global_


def test_user_list_access(tmp_path):
    config, _ = load_cluster(write(tmp_path, FULL), False)
    queue, mpi = config.queues["all.q"], config.pes["mpi"]
    assert config.has_access("alice", (), queue.user_lists, queue.xuser_lists)
    assert config.has_access("carol", ("physics",), queue.user_lists, queue.xuser_lists)
    assert not config.has_access("carol", ("chemistry",), queue.user_lists, queue.xuser_lists)
    assert config.has_access("carol", (), mpi.user_lists, mpi.xuser_lists)
    assert not config.has_access("mallory", (), mpi.user_lists, mpi.xuser_lists)


def test_defaults_without_queues_section(tmp_path):
    config, _ = load_cluster(write(tmp_path, "nodes:\n  - {name: a, slots: 3}\n  - {name: b, ncpus: 2}\n"),
                             False)
    assert dict(config.queues["all.q"].slots) == {"a": 3, "b": 2}
    assert [(n.name, n.slots) for n in config.nodes()] == [("a", 3), ("b", 2)]
    sched = config.scheduler
    assert sched.max_reservation == 0 and math.isinf(sched.default_duration)
    assert (sched.weight_priority, sched.weight_urgency, sched.weight_ticket) == (1.0, 0.1, 0.01)
    assert sched.job_order.keys == ("JobPriority",) and not sched.monitor


def test_complexes_from_a_file_and_sched_conf_read_unchanged(tmp_path):
    write(tmp_path, "- {name: license, type: INT, relop: '<=', consumable: YES}\n", "cx.yaml")
    write(tmp_path, "NodeSortKey: LowestLoadAverage\nJobSortKey: OwnersName, JobPriority\n"
                    "OwnersOrder: studentA,studentB\n", "sched_conf")
    path = write(tmp_path, "complexes: cx.yaml\nglobal: {complex_values: {license: 3}}\n"
                           "nodes: [{name: a}]\nscheduler: {sched_conf: sched_conf}\n")
    config, files = load_cluster(path, False)
    assert files == [path, str(tmp_path / "cx.yaml"), str(tmp_path / "sched_conf")]
    assert config.scheduler.job_order.owners == ("studentA", "studentB")
    assert config.scheduler.node_order == ("LowestLoadAverage",)
    assert config.containers().global_.available("license") == 3


def test_an_edited_complexes_file_is_read_again(tmp_path):
    cx = write(tmp_path, "- {name: license, type: INT, relop: '<=', consumable: YES}\n", "cx.yaml")
    path = write(tmp_path, "complexes: cx.yaml\nglobal: {complex_values: {license: 3}}\nnodes: [{name: a}]\n")
    cluster = Cluster(path, include_local=False)
    assert cluster.config().table.find("license").consumable == "YES"
    write(tmp_path, "- {name: license, type: INT, relop: '<=', consumable: JOB}\n", "cx.yaml")
    os.utime(cx, ns=(5, 5))
    assert cluster.config().table.find("license").consumable == "JOB"


@pytest.mark.parametrize("text,message", [
    ("colour: red\n", r"unknown key\(s\) colour; known: nodes, queues"),
    ("nodes: [{name: a}]\nqueues: [{name: q, hostlist: [b]}]\n", r"queues\[0\] \(q\): unknown host 'b'"),
    ("nodes: [{name: a}]\nqueues: [{name: q, hostlist: ['@g']}]\n", r"unknown host group '@g'"),
    ("hostgroups: {'@g': ['@g']}\nnodes: [{name: a}]\nqueues: [{name: q, hostlist: ['@g']}]\n",
     r"host group '@g' contains itself"),
    ("nodes: [{name: a}]\nqueues: [{name: q, pe_list: [mpi]}]\n", r"queue q: pe_list: unknown PE 'mpi'"),
    ("nodes: [{name: a}]\nqueues: [{name: q, user_lists: [x]}]\n",
     r"queue q: unknown user list 'x'; define it under userlists:"),
    ("nodes: [{name: a}]\nqueues: [{name: q, hostlist: [a], slots: {b: 1}}]\n",
     r"slots: 'b' is not a host of the queue"),
    ("nodes: [{name: a}]\nqueues: [{name: q, hostlist: [a], slots: -1}]\n",
     r"slots must be a whole number of at least 0, got -1"),
    ("nodes: [{name: a}]\nqueues: [{name: q, qtype: [BATCH, PARALLEL]}]\n",
     r"qtype: unknown type 'PARALLEL'; accepted: BATCH INTERACTIVE"),
    ("nodes: [{name: a}]\nqueues: [{name: q, h_rt: soon}]\n", r"h_rt: bad TIME value 'soon'"),
    ("nodes: [{name: a}]\nqueues: [{name: q}, {name: q}]\n", r"queue 'q' is defined twice"),
    ("nodes: [{name: a}]\npes: [{name: p, allocation_rule: $spread}]\n",
     r"allocation_rule: expected \$pe_slots, \$fill_up, \$round_robin or a whole number"),
    ("nodes: [{name: a, exec: rsh}]\n", r"exec: expected local, none, ssh"),
    ("nodes: [{name: a, exec: {ssh: {port: 0}}}]\n", r"exec.ssh.port: expected a port number"),
    ("nodes: [{name: a, complex_values: {license: 1}}]\n", r"unknown resource 'license'"),
    ("global: {complex_values: {slots: x}}\nnodes: [{name: a}]\n", r"slots: bad INT value 'x'"),
    ("global: {colour: red}\nnodes: [{name: a}]\n", r"global: expected a mapping of complex_values"),
    ("nodes: [{name: a}]\nqueues: [{name: q, hostlist: [a], complex_values: {arch: sol}}]\n",
     r"queue q@a: arch is already set on host a; an attribute with relop == can only be overridden"),
    ("complexes: [{name: x, type: INT, relop: '<', consumable: YES}]\nnodes: [{name: a}]\n",
     r"complexes: complex 'x': a consumable must use relop <="),
    ("complexes: missing.yaml\nnodes: [{name: a}]\n", r"cannot read .*missing.yaml"),
    ("userlists: {staff: ['bad name']}\nnodes: [{name: a}]\n", r"userlists.staff: invalid entry"),
    ("nodes: [{name: a}]\nscheduler: {max_reservation: -1}\n",
     r"scheduler.max_reservation: expected a whole number of 0 or more"),
    ("nodes: [{name: a}]\nscheduler: {schedule_interval: never}\n",
     r"scheduler.schedule_interval: expected a time \(seconds or h:m:s\)"),
    ("nodes: [{name: a}]\nscheduler: {params: 'MONITOR=1,PROFILE=1'}\n",
     r"scheduler.params: unknown parameter 'PROFILE'; accepted: DURATION_OFFSET, MONITOR"),
    ("nodes: [{name: a}]\nscheduler: {params: 'MONITOR=maybe'}\n", r"MONITOR: expected 1, 0, true or false"),
    ("nodes: [{name: a}]\nscheduler: {queue_sort_method: random}\n",
     r"queue_sort_method: expected load or seqno"),
    ("nodes: [{name: a}]\nscheduler: {JobSortKey: [OwnersName]}\n", r"JobSortKey OwnersName needs OwnersOrder"),
    ("nodes: [{name: a}]\nscheduler: {NodeSortKey: [Fastest]}\n", r"NodeSortKey: unknown sort key 'Fastest'"),
    ("nodes: [{name: a}]\nscheduler: {sched_conf: s, JobSortKey: [JobPriority]}\n",
     r"give either sched_conf or JobSortKey, not both"),
    ("nodes: [{name: a}]\nscheduler: {params: DURATION_OFFSET=10}\n",
     r"DURATION_OFFSET=10 differs from duration_offset 60 of plus_scheduler's configuration"),
])
def test_mistakes_name_the_place_and_what_is_accepted(tmp_path, text, message):
    with pytest.raises(ClusterError, match=message):
        load_cluster(write(tmp_path, text), False, duration_offset=60)


def test_local_host_is_this_machine_running_jobs_here(tmp_path):
    config, _ = load_cluster(None, True)
    (host,) = config.hosts.values()
    assert host.execution == "local" and host.load is None and host.ncpus == os.cpu_count()
    assert config.nodes()[0].slots == os.cpu_count()
    with pytest.raises(ClusterError, match="is defined twice"):
        load_cluster(write(tmp_path, f"nodes: [{{name: {host.name}}}]\n"), True)


def test_the_sample_cluster_loads():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    config, files = load_cluster(os.path.join(repo, "conf", "cluster.yaml"), True)
    assert os.path.join(repo, "conf", "complexes.yaml") in files
    assert set(config.pes) == {"smp", "mpi"} and config.queues["big.q"].hosts == ("node005", "node006")
    assert all(h.execution == "none" for h in list(config.hosts.values())[1:])


def test_a_host_may_override_its_own_load_value(tmp_path):
    config, _ = load_cluster(write(tmp_path, "nodes: [{name: a, complex_values: {arch: sol-amd64}}]\n"),
                             False)
    container = config.containers().hosts["a"]
    assert mismatch(parse_requests(config.table, "arch=sol-amd64"), container) is None


def test_queue_lists_match_instances(tmp_path):
    config, _ = load_cluster(write(tmp_path, FULL), False)
    assert config.hostgroups["@all"] == ("n1", "n2", "big")
    match = config.queue_matches
    assert match(["all.q"], "all.q", "n1") and not match(["big.q"], "all.q", "n1")
    assert match(["all.q@n1"], "all.q", "n1") and not match(["all.q@n1"], "all.q", "n2")
    assert match(["*@big"], "big.q", "big") and match(["@n[12]"], "all.q", "n2")
    assert match(["all.q@@small"], "all.q", "n2") and not match(["all.q@@small"], "all.q", "big")
    assert match(["big.q", "a*.q"], "all.q", "n1")


@pytest.mark.parametrize("options, message", [
    ({"local_host": "no"}, "native.local_host: expected true or false, got 'no'"),
    ({"spool_dir": "spool"}, "native.spool_dir: expected an absolute path, got 'spool'"),
    ({"ssh": {"host": "h1"}}, "native.ssh: expected a mapping of port, user, key"),
    ({"colour": "red"}, "native.colour: unknown setting; known: cluster, local_host, ssh"),
])
def test_the_native_section_is_checked_key_by_key(options, message):
    """The section is read with the core's settings helper: a string 'no'
    for local_host used to count as true."""
    with pytest.raises(ValueError) as refused:
        NativeBackend.from_config(None, options)
    assert str(refused.value).startswith(message)
