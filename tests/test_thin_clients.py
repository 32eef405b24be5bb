"""The commands start fast because they import the standard library only."""

from __future__ import annotations

import subprocess
import sys

import pytest


COMMANDS = ["reserve", "status", "cancel", "destroy", "modify", "availnodes", "commit",
            "abort", "account", "schedkill"]
THIRD_PARTY = ("yaml", "sqlalchemy", "sqlmodel", "pluggy", "numpy", "apscheduler", "pydantic")


@pytest.mark.parametrize("command", COMMANDS)
def test_command_imports_only_the_standard_library(command):
    probe = (f"import sys, overlay.cli.{command}; "
             f"print(','.join(m for m in {THIRD_PARTY!r} if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "", f"plus_{command} imports {result.stdout.strip()}"
