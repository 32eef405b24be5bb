"""Issue 11 on the native batch system: the cluster file. One that cannot be
used (empty, not UTF-8, not a mapping, without nodes) stops the daemon at
its start with one line naming it; edited so live, the last good cluster
stays, with one warning per change; a reserved node gone from the file
puts its ARs in W or E saying so."""

from __future__ import annotations

import logging
import os

import pytest

from overlay.language.model import Allocation, Request, Reservation, State
from overlay_native.backend import NativeBackend
from overlay_native.resources.cluster import Cluster, ClusterError
from test_native_scheduler import T, World

GOOD = "nodes:\n  - {name: 'n[01-03]', slots: 2}\n"
UNUSABLE = [
    (b"", "the file is empty"),
    (b"# all commented out\n", "the file is empty"),
    (b"nodes:\n  - {name: caf\xe9}\n", "not UTF-8 text; cluster file must be YAML in UTF-8"),
    (b"- n01\n- n02\n", "expected a mapping with nodes:"),
    (b"nodes: []\n", "no nodes; list the execution hosts under nodes:"),
    (b"queues: [{name: all.q}]\n", "no nodes"),
    (b"nodes: [broken\n", "not valid YAML"),
]
IDS = ["empty", "comments only", "not UTF-8", "a list", "no nodes", "nodes missing", "broken YAML"]


@pytest.mark.parametrize("content, problem", UNUSABLE, ids=IDS)
def test_an_unusable_file_stops_the_start_with_one_line(tmp_path, content, problem):
    path = tmp_path / "cluster.yaml"
    path.write_bytes(content)
    with pytest.raises(ClusterError) as refused:
        Cluster(str(path), include_local=False)
    text = str(refused.value)
    assert text.startswith(f"{path}: ") and problem in text and "\n" not in text


@pytest.mark.parametrize("content, problem", UNUSABLE, ids=IDS)
def test_an_unusable_edit_keeps_the_last_good_cluster_with_one_warning(tmp_path, caplog,
                                                                       content, problem):
    path = tmp_path / "cluster.yaml"
    path.write_text(GOOD)
    cluster = Cluster(str(path), include_local=False)
    path.write_bytes(content)
    os.utime(path, ns=(1, 1))
    with caplog.at_level(logging.WARNING, logger="plus.native"):
        for _ in range(3):    # every pass and every reconcile asks
            assert [node.name for node in cluster.nodes()] == ["n01", "n02", "n03"]
    (warning,) = caplog.records
    assert warning.levelno == logging.WARNING
    assert f"keeping the last good cluster: {path}: " in warning.getMessage()
    assert problem in warning.getMessage()
    path.write_bytes(content)
    os.utime(path, ns=(2, 2))    # edited again, still unusable: warned again
    cluster.nodes()
    assert len(caplog.records) == 2
    path.write_text("nodes:\n  - {name: n09}\n")
    os.utime(path, ns=(3, 3))
    assert [node.name for node in cluster.nodes()] == ["n09"]


def test_a_file_that_cannot_be_read_keeps_the_last_good_cluster(tmp_path, caplog):
    path = tmp_path / "cluster.yaml"
    path.write_text(GOOD)
    cluster = Cluster(str(path), include_local=False)
    path.unlink()
    path.mkdir()    # a directory where the file was: reading it fails
    with caplog.at_level(logging.WARNING, logger="plus.native"):
        assert len(cluster.nodes()) == 3
        assert len(cluster.nodes()) == 3
    (warning,) = caplog.records
    assert f"{path}" in warning.getMessage()


def reservation(ar_id: int, *nodes: str) -> Reservation:
    return Reservation(ar_id, "alice", "staff", Request(T + 100, T + 200, len(nodes)), State.WAITING,
                       T, [Allocation(node, 2) for node in nodes], ("alice",))


def test_a_reserved_node_gone_from_the_file_is_named_in_its_ars_health(tmp_path):
    world = World(tmp_path, GOOD.replace("slots: 2}", "slots: 2, alive: true}"))
    backend = NativeBackend(world.scheduler.cluster, world.scheduler)
    ars = [reservation(1, "n01"), reservation(2, "n02", "n03"), reservation(3, "n01", "n03")]
    assert backend.health(ars) == {}
    path = tmp_path / "cluster.yaml"
    path.write_text("nodes:\n  - {name: n01, slots: 2}\n  - {name: n03, slots: 2, alive: false}\n")
    os.utime(path, ns=(1, 1))
    assert backend.health(ars) == {
        2: "reserved host(s) down: n03; node n02 is no longer in the cluster file",
        3: "reserved host(s) down: n03"}
    path.write_text("nodes:\n  - {name: n01, slots: 2}\n")
    os.utime(path, ns=(2, 2))
    assert backend.health(ars) == {2: "nodes n02, n03 are no longer in the cluster file",
                                   3: "node n03 is no longer in the cluster file"}


def test_a_file_the_cluster_file_names_is_named_when_it_is_not_utf8(tmp_path):
    (tmp_path / "complexes.yaml").write_bytes(b"- {name: caf\xe9, type: INT}\n")
    path = tmp_path / "cluster.yaml"
    path.write_text("complexes: complexes.yaml\n" + GOOD)
    with pytest.raises(ClusterError) as refused:
        Cluster(str(path), include_local=False)
    assert str(refused.value) == f"{path}: {tmp_path / 'complexes.yaml'}: not UTF-8 text"
