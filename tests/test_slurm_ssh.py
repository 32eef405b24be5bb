"""The Slurm backend over SSH, on the controller's host (the test sshd of
scripts/test-sshd.sh): in the group of tests/test_remote.py, which
restarts that sshd, beside the Slurm group, whose reservations it leaves
alone (a far window, an AR id of its own)."""

from __future__ import annotations

import pytest

from overlay.kit.remote import CommandError
from overlay.kit.ssh import SshRunner
from overlay.language.model import State
from overlay_slurm import settings
from sge_cluster import reservation
from slurm_testbed import require, reservation_names
from slurm_testbed import reservation as shown
from test_slurm import backend


def test_the_ssh_runner_drives_slurm_on_the_controllers_host(tmp_path):
    require()
    env = settings.load({}).environment
    runner = SshRunner("127.0.0.1", 2222, "root", key_file="/etc/plus-test/ssh/id_ed25519",
                       known_hosts="/etc/plus-test/ssh/known_hosts", env=env)
    try:
        runner.run(["true"], timeout=10)
    except CommandError as exc:
        pytest.fail(f"the test sshd (scripts/test-sshd.sh) is not reachable: {exc}")
    slurm = backend(tmp_path, runner=runner)
    ar = reservation(99912, ("snode3",), start_in=30 * 86400)   # clear of the others' ARs
    slurm.prepare(ar)
    assert shown("R99912")["Nodes"] == "snode3"
    assert {node.name for node in slurm.nodes()} >= {"snode1", "snode4"}
    ar.state = State.EXITED
    slurm.teardown(ar)
    assert "R99912" not in reservation_names()
    runner.close()
