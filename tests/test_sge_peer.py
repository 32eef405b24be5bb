"""scripts/sge_peer.py, the benchmarks' Grid Engine side, may run on a
site's qmaster: against a stand-in qmaster (its commands recorded, never
run), teardown removes by name only what setup added, and setup refuses a
queue or group of its names that someone else made."""

from __future__ import annotations

import importlib.util
import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[1] / "scripts" / "sge_peer.py"
ME = pwd.getpwuid(os.geteuid()).pw_name
TABLE = f"""\
ar-id   name       owner        state start at             end at               duration
----------------------------------------------------------------------------------------
      7 plusbench  {ME:<12} w     11/27/2026 10:00:00  11/27/2026 11:00:00  01:00:00
      8 nightly    {ME:<12} w     11/27/2026 10:00:00  11/27/2026 11:00:00  01:00:00
      9            {ME:<12} w     11/27/2026 10:00:00  11/27/2026 11:00:00  01:00:00
     10 plusbench  alice        w     11/27/2026 10:00:00  11/27/2026 11:00:00  01:00:00
     11 plusbench  {ME:<12} r     11/27/2026 09:00:00  11/27/2026 12:00:00  03:00:00
"""


class Qmaster:
    """The commands sge_peer runs, answered as a qmaster that holds
    ``existing`` (qconf -s... succeeds for them) and the ARs of TABLE."""

    def __init__(self, existing: set[str] = frozenset()) -> None:
        self.existing = {"all.q", *existing}
        self.commands: list[list[str]] = []

    def __call__(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
        argv = [Path(argv[0]).name, *argv[1:]]
        self.commands.append(argv)
        shown = argv[:2] in (["qconf", "-shgrp"], ["qconf", "-sq"])
        code = 1 if shown and argv[2] not in self.existing else 0
        out = {"qrstat": TABLE, "qconf": "qname all.q\nhostlist @allhosts\nslots 1\n"}.get(argv[0], "")
        return subprocess.CompletedProcess(argv, code, out, "")

    def changes(self) -> list[list[str]]:
        """What would change the qmaster (no qconf -s..., no qrstat)."""
        return [c for c in self.commands if c[0] == "qrdel" or c[1][:2] in ("-A", "-d")]


@pytest.fixture
def peer(monkeypatch, tmp_path):
    spec = importlib.util.spec_from_file_location("sge_peer", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "sge_peer", module)    # dataclasses look their module up
    spec.loader.exec_module(module)
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 localhost\n")
    monkeypatch.setattr(module, "HOSTS_FILE", hosts)
    monkeypatch.setattr(module, "_qconf_file", lambda option, text: module.run("qconf", option))
    return module


def test_teardown_deletes_only_its_own_named_ars_and_what_setup_added(peer, monkeypatch):
    qmaster = Qmaster()
    monkeypatch.setattr(peer, "run", qmaster)
    added = peer.Added()
    peer.setup(3, added)
    assert added == peer.Added(hosts=["bh0001", "bh0002", "bh0003"], group=True, queue=True,
                               hosts_file=True)
    qmaster.commands.clear()
    peer.teardown(added)
    assert qmaster.changes() == [["qrdel", "-f", "7,11"], ["qconf", "-dq", "bench.q"],
                                 ["qconf", "-dhgrp", "@bench"],
                                 ["qconf", "-de", "bh0001,bh0002,bh0003"]]
    assert peer.HOSTS_FILE.read_text() == "127.0.0.1 localhost\n"


def test_an_interrupted_setup_is_undone_as_far_as_it_went(peer, monkeypatch):
    qmaster = Qmaster()
    monkeypatch.setattr(peer, "run", qmaster)
    added = peer.Added(hosts=["bh0001"])
    peer.teardown(added)
    assert qmaster.changes() == [["qrdel", "-f", "7,11"], ["qconf", "-de", "bh0001"]]


@pytest.mark.parametrize("theirs", ["bench.q", "@bench"])
def test_setup_refuses_a_queue_or_group_it_did_not_make(peer, monkeypatch, theirs):
    qmaster = Qmaster({theirs})
    monkeypatch.setattr(peer, "run", qmaster)
    added = peer.Added()
    with pytest.raises(RuntimeError, match=f"already has a .*{theirs}, which this run did not make"):
        peer.setup(3, added)
    assert added == peer.Added() and qmaster.changes() == []


def test_its_ars_carry_the_name_teardown_looks_for(peer):
    argv = peer.qrsub_argv(1_800_000_000, 5400)
    assert argv[argv.index("-N") + 1] == peer.AR_NAME
    assert argv[-2:] == ["-d", "1:30:00"]
