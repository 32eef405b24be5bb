"""Tests of the GPU policy: the hook alone, then installed, through a
reservation manager on the built-in batch system's cluster file."""

import pytest
from plus_gpu_policy import GpuForGroup

from overlay.contract import plugins
from overlay.daemon import config
from overlay.language.model import Node, Request, ReservationError
from overlay.persistence.store import Store
from overlay.usecases.manager import Caller, Manager

GPU = Node("g1", properties={"gpu": "yes"})


def test_only_the_group_may_take_gpu_nodes():
    policy = GpuForGroup("gpu")
    assert policy.plus_node_reservable(GPU, groups=("staff", "gpu")) is None
    assert policy.plus_node_reservable(Node("c1"), groups=("staff",)) is None
    assert policy.plus_node_reservable(GPU, groups=("staff",)) == \
        "GPU nodes are for members of group gpu"


def test_installed_through_its_entry_point(tmp_path):
    (tmp_path / "cluster.yaml").write_text(
        "nodes:\n  - {name: g1, properties: {gpu: 'yes'}}\n  - {name: c1}\n")
    (tmp_path / "plus.yaml").write_text(
        "state_dir: state\nnative: {cluster: cluster.yaml, local_host: false}\n"
        "gpu_policy: {group: gpu}\n")
    settings = config.load(str(tmp_path / "plus.yaml"))
    pm = plugins.plugin_manager()                   # finds plus_gpu_policy by its entry point
    claimed = plugins.configure(pm, settings)
    backend = plugins.build_backend(pm, "native", settings, settings.backend_options(), claimed)
    manager = Manager(settings, Store(settings.store_url), backend, pm,
                      lambda: None, clock=lambda: 1_800_000_000)   # no reporting drain here
    two_nodes = Request(start=1_800_003_600, end=1_800_007_200, nodes=2)
    with pytest.raises(ReservationError, match="policy gpu-policy: GPU nodes are for members"):
        manager.reserve(Caller(1001, "alice", ("staff",), False), two_nodes)
    granted = manager.reserve(Caller(1002, "bob", ("staff", "gpu"), False), two_nodes)
    assert sorted(granted.node_names) == ["c1", "g1"]


def test_a_bad_setting_stops_the_start_naming_it(tmp_path):
    (tmp_path / "plus.yaml").write_text("state_dir: state\ngpu_policy: {group: 12}\n")
    with pytest.raises(plugins.PluginError, match="gpu_policy.group: expected a group name, got 12"):
        plugins.configure(plugins.plugin_manager(), config.load(str(tmp_path / "plus.yaml")))
