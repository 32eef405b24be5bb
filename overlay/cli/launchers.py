"""Launchers for the thin clients: Python without its site module.

pip's console scripts start ``python`` with site, which reads the venv's
.pth files and Debian's sitecustomize: 2 ms of a command's life before its
first line (an empty ``python -S`` starts in 5.4 ms here, ``python`` in
7.4, and qrstat answers in 6). The thin clients need only the standard
library and this package, so their launchers run ``python -IS``
(isolated too: a user's PYTHONPATH cannot shadow a module the command
imports), name the package's folder themselves, and leave without the
interpreter's shutdown (overlay.cli.common.launch).

``python -m overlay.cli.launchers`` replaces the console scripts of every
command in a ``cli`` package with such a launcher; scripts/install.sh runs
it after each pip install. Other commands (the daemon, the simulator) keep
pip's scripts: their dependencies may need site.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from importlib.metadata import distribution

DISTRIBUTION = "plus-overlay"
MARK = "# overlay.cli.launchers"
"""The second line of every launcher, so that it can be told from pip's script."""


def thin_clients() -> dict[str, str]:
    """Each thin client's command name and "module:function"."""
    return {point.name: point.value for point in distribution(DISTRIBUTION).entry_points
            if point.group == "console_scripts" and ".cli." in f".{point.module}."}


def launcher(target: str, python: str, folder: str) -> str:
    """The text of a launcher running ``target`` ("module:function")."""
    module, _, function = target.partition(":")
    return (f"#!{python} -IS\n{MARK}: python -IS skips site, so the package's folder is "
            f"named here\nimport sys\nsys.path.append({folder!r})\n"
            f"from overlay.cli.common import launch\nfrom {module} import {function}\n"
            f"launch({function})\n")


def write(scripts: str, python: str, folder: str) -> list[str]:
    """Write a launcher over each thin client's script in ``scripts``; the
    names written. Each file is replaced whole (written aside, renamed)."""
    written = []
    for name, target in sorted(thin_clients().items()):
        path = os.path.join(scripts, name)
        with open(f"{path}.new", "w", encoding="utf-8") as handle:
            handle.write(launcher(target, python, folder))
        os.chmod(f"{path}.new", 0o755)
        os.replace(f"{path}.new", path)
        written.append(name)
    return written


def main() -> int:
    written = write(sysconfig.get_path("scripts"), sys.executable, sysconfig.get_path("purelib"))
    print(f"launchers written: {' '.join(written)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
