"""The policy author's guide holds: its example plugin installs with pip,
is found through its entry point, passes its own tests, and refuses
through a running plus_scheduler as the guide says."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from daemon_harness import Daemon

EXAMPLE = Path(__file__).resolve().parent.parent / "docs" / "example-policy"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The example, installed by pip (as a site would) into a folder of its own."""
    target = tmp_path_factory.mktemp("site-policy")
    target.chmod(0o755)
    source = tmp_path_factory.mktemp("build") / "example-policy"
    shutil.copytree(EXAMPLE, source)    # pip builds in the source folder: not in ours
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(target), str(source)], check=True, capture_output=True)
    return target


def test_the_example_passes_its_own_tests(installed, tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", str(tmp_path / "pytest.ini"),
         str(EXAMPLE / "test_plus_gpu_policy.py")],
        cwd=tmp_path, env={"PYTHONPATH": str(installed), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 passed" in result.stdout


def test_the_daemon_loads_it_by_its_entry_point(installed, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(installed))
    daemon = Daemon("gpu_policy: {group: gpu}\n").start()
    try:
        refused = daemon.run("plusu1", "plus_reserve", "-s", "now+1h", "-D", "1:00:00", "-n", "5")
        assert refused.returncode == 1
        assert "policy gpu-policy: GPU nodes are for members of group gpu (1 nodes)" in refused.stderr
        granted = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1:00:00", "-n", "4")
        assert "big" not in [a["node"] for a in granted["allocations"]]
    finally:
        daemon.cleanup()


def test_without_the_plugin_its_section_stops_the_daemon():
    daemon = Daemon("gpu_policy: {group: gpu}\n")
    try:
        result = daemon.run("root", "plus_scheduler")
        assert result.returncode == 1 and "unknown setting 'gpu_policy'" in result.stderr
    finally:
        daemon.cleanup()
