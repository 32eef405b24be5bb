"""The embedded cluster file: ranges, validation, and edits while the daemon runs."""

from __future__ import annotations

import os

import pytest

from overlay_native.cluster import Cluster, ClusterError, expand_names


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
