"""The commands start fast because they import the standard library only:
every console script of pyproject.toml but the daemon and the simulator,
imported from this tree."""

from __future__ import annotations

import subprocess
import sys

import pytest

from commands_from_source import COMMANDS, REPO, SOURCE

THIRD_PARTY = ("yaml", "sqlalchemy", "sqlmodel", "pluggy", "numpy", "apscheduler", "pydantic",
               "paramiko")


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
