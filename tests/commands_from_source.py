"""The commands of pyproject.toml as they run from this tree: their entry
points, a Python prelude that maps the plugin packages to their folders
with the standard library only (as tests/conftest.py does), and each
command's option parser."""

from __future__ import annotations

import importlib
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
NOT_CLIENTS = {"plus_scheduler", "plus_simulate", "plus_torque_filter"}
"""The daemon, the simulator, and the filter TORQUE's qsub runs (no options
of its own to check, no daemon to ask)."""
ENTRY_POINTS = {name: target for name, target in PROJECT["project"]["scripts"].items()
                if name not in NOT_CLIENTS}
"""Each client command's "module:function"."""
COMMANDS = {name: target.partition(":")[0] for name, target in ENTRY_POINTS.items()}
"""Each client command's module."""
SOURCE = f"""
import importlib.util, sys
for name, folder in {PROJECT["tool"]["setuptools"]["package-dir"]!r}.items():
    path = {str(REPO)!r} + "/" + folder
    spec = importlib.util.spec_from_file_location(name, path + "/__init__.py",
                                                  submodule_search_locations=[path])
    sys.modules[name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sys.modules[name])
"""
THICK = {"plus_coreserve", "plus_costatus", "plus_cocancel", "plus_comodify", "plus_dbwriter"}
"""Clients that are not thin: the co-allocation coordinator keeps a log in a
database (SQLAlchemy) and reads YAML, so the start-up limits of the thin
clients do not apply; their option errors are still checked."""
THIN = {name: module for name, module in COMMANDS.items() if name not in THICK}
OWN_GRAMMAR = {"plus_qsub"}
"""Commands with a grammar of their own (options end at the script)."""
USAGE_STATUS = {"plus_qrsub": 1, "plus_qrstat": 1, "plus_qrdel": 1}
"""A bad option's exit status where it is not 2: 8.1.9's qrsub, qrstat and
qrdel exit 1, and ours with them."""


def argv(command: str, *args: str) -> list[str]:
    """A command line running ``command`` from this tree (cwd: REPO)."""
    module, _, function = ENTRY_POINTS[command].partition(":")
    return [sys.executable, "-c", SOURCE + f"from {module} import {function}\n"
                                           f"sys.argv[0] = {command!r}\nsys.exit({function}())",
            *args]


def parser(command: str):
    """The command's option parser, from its module's parser() (plus_qhold
    and plus_qrls share one module: parser(hold))."""
    module, _, function = ENTRY_POINTS[command].partition(":")
    make = importlib.import_module(module).parser
    return make() if function == "main" else make(function == "hold_main")
