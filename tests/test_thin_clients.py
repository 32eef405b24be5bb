"""The commands start fast because they import the standard library only:
every console script of pyproject.toml but the daemon and the simulator,
imported from this tree."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
NOT_CLIENTS = {"plus_scheduler", "plus_simulate"}
COMMANDS = {name: target.partition(":")[0] for name, target in PROJECT["project"]["scripts"].items()
            if name not in NOT_CLIENTS}
THIRD_PARTY = ("yaml", "sqlalchemy", "sqlmodel", "pluggy", "numpy", "apscheduler", "pydantic",
               "paramiko")
# Map the plugin packages to their folders (as tests/conftest.py does), with the stdlib only.
SOURCE = f"""
import importlib.util, sys
for name, folder in {PROJECT["tool"]["setuptools"]["package-dir"]!r}.items():
    path = {str(REPO)!r} + "/" + folder
    spec = importlib.util.spec_from_file_location(name, path + "/__init__.py",
                                                  submodule_search_locations=[path])
    sys.modules[name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sys.modules[name])
"""


def test_the_commands_are_all_here():
    assert {"plus_reserve", "plus_status", "plus_qsub", "plus_qstat", "plus_qdel", "plus_qacct",
            "plus_qhold", "plus_qrls"} <= COMMANDS.keys()


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_command_imports_only_the_standard_library(command):
    probe = SOURCE + (f"import {COMMANDS[command]}\n"
                      f"print(','.join(m for m in {THIRD_PARTY!r} if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            check=True, cwd=REPO)
    assert result.stdout.strip() == "", f"{command} imports {result.stdout.strip()}"
