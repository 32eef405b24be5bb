"""The commands start fast because they import the standard library only:
every console script of pyproject.toml but the daemon, the simulator and
TORQUE's submit filter, imported from this tree."""

from __future__ import annotations

import subprocess
import sys

import pytest

from commands_from_source import REPO, SOURCE, THIN

THIRD_PARTY = ("yaml", "sqlalchemy", "sqlmodel", "pluggy", "numpy", "apscheduler", "pydantic",
               "paramiko")


def test_the_commands_are_all_here():
    assert {"plus_reserve", "plus_status", "plus_qsub", "plus_qstat", "plus_qdel", "plus_qacct",
            "plus_qhold", "plus_qrls"} <= THIN.keys()


@pytest.mark.parametrize("command", sorted(THIN))
def test_command_imports_only_the_standard_library(command):
    probe = SOURCE + (f"import {THIN[command]}\n"
                      f"print(','.join(m for m in {THIRD_PARTY!r} if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            check=True, cwd=REPO)
    assert result.stdout.strip() == "", f"{command} imports {result.stdout.strip()}"


HEAVY = ("re", "argparse", "typing", "json", "socket", "enum", "datetime", "signal", "fnmatch")
"""Modules that cost a command a millisecond or more to import."""
FILE_READERS = {"plus_account", "plus_qacct", "plus_qsub"}
"""Commands that parse files (reporting and accounting records, job scripts)."""


@pytest.mark.parametrize("command", sorted(THIN.keys() - FILE_READERS))
def test_command_starts_without_the_costly_modules(command):
    """What keeps plus_status -r near qrstat -ar: python -IS (as the
    launchers run it) and none of the modules above."""
    probe = (f"import sys\nsys.path.insert(0, {str(REPO)!r})\n" + SOURCE +
             f"import {THIN[command]}\n"
             f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    result = subprocess.run([sys.executable, "-IS", "-c", probe], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "", f"{command} imports {result.stdout.strip()}"
