"""Which commands the command server runs: every thin client (the
commands with a ``python -IS`` launcher, overlay.cli.launchers), imported
once. The others stay Python alone: plus_scheduler is the daemon itself,
plus_simulate a long computation of its own (numpy), plus_torque_filter is
run by TORQUE's qsub, and the co-allocation commands and plus_dbwriter load
SQLAlchemy and YAML for work that lasts far longer than their start."""

from __future__ import annotations

import importlib
from typing import Callable

from overlay.cli.launchers import thin_clients


def names() -> list[str]:
    """The served commands' names, sorted."""
    return sorted(thin_clients())


def load() -> dict[str, Callable[[], int]]:
    """Each served command's main, its module imported."""
    commands = {}
    for name, target in thin_clients().items():
        module, _, function = target.partition(":")
        commands[name] = getattr(importlib.import_module(module), function)
    return commands


if __name__ == "__main__":
    print(*names())                 # for scripts/install.sh
