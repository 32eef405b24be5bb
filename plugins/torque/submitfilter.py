"""plus_torque_filter: TORQUE's qsub submit filter, for the pbs_sched mode.

qsub runs it with its own arguments and the job script on stdin, and
submits what it prints. A job that could land on the nodes of an open
window (overlay_torque.windows) gets '#PBS -a <the window's end>', so it
waits (W) until then instead of starting there a moment after qsub
returns; a job for an AR's queue, one its user deferred (-a) or held (-h),
and every job while no window is open pass unchanged. Set up in torque.cfg
on each submit host:

    SUBMITFILTER /opt/plus-venv/bin/plus_torque_filter

A daemon whose state_dir is not /var/lib/plus needs a wrapper that runs it
with ``--windows FILE`` before qsub's arguments. It never refuses a job:
a windows file it cannot read lets the job through, with a line on
stderr, and the backend's next pass requeues what landed.
"""

from __future__ import annotations

import getopt
import shlex
import sys
import time
from types import SimpleNamespace

from overlay_torque import nodespec, windows

QSUB_OPTIONS = "a:A:b:c:C:d:D:e:EfF:hIj:J:k:K:l:L:m:M:nN:o:p:P:q:r:S:t:T:u:v:VwW:xXz"
"""TORQUE 6.1 qsub's options: those taking a value end in ':'."""


def deferral(args: list[str], script: str, open_windows: list[dict], now: float) -> int | None:
    """The end of the latest open window the job could land in, or None."""
    try:
        given = _directives(script) + getopt.gnu_getopt(args, QSUB_OPTIONS)[0]
    except (getopt.GetoptError, ValueError):
        return None                     # qsub itself will say what is wrong
    options, spec = dict(given), _nodes(given)
    if "-a" in options or "-h" in options:
        return None
    queue = options.get("-q", "").split("@")[0]
    if any(window["queue"] == queue for window in open_windows):
        return None
    ends = [int(window["end"]) for window in open_windows if int(window["end"]) > now
            and nodespec.could_land(spec, [SimpleNamespace(**node) for node in window["nodes"]])]
    return max(ends, default=None)


def _directives(script: str) -> list[tuple[str, str]]:
    """The '#PBS' options before the script's first command."""
    words: list[str] = []
    for line in script.splitlines():
        stripped = line.strip()
        if stripped.startswith("#PBS"):
            words += shlex.split(stripped[4:])
        elif stripped and not stripped.startswith("#"):
            break
    return getopt.gnu_getopt(words, QSUB_OPTIONS)[0]


def _nodes(options: list[tuple[str, str]]) -> str | None:
    """The last nodes= of the -l lists (a later one wins, as in qsub)."""
    spec = None
    for flag, value in options:
        if flag == "-l":
            for item in value.split(","):
                key, _, setting = item.partition("=")
                if key.strip() == "nodes":
                    spec = setting.strip()
    return spec


def deferred(script: str, end: int) -> str:
    """``script`` with '#PBS -a' for ``end``, after its '#!' line if any."""
    lines = script.splitlines(keepends=True)
    at = 1 if lines and lines[0].startswith("#!") else 0
    return "".join(lines[:at] + [f"#PBS -a {windows.date_time(end)}\n"] + lines[at:])


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    path = windows.default_path()
    if args[:1] == ["--windows"] and len(args) >= 2:
        path, args = args[1], args[2:]
        if args[:1] == ["--"]:
            args = args[1:]
    script = sys.stdin.read()
    try:
        open_windows = windows.read(path)
    except (OSError, ValueError) as exc:
        print(f"plus_torque_filter: cannot read the open windows ({exc}); job passed unchanged",
              file=sys.stderr)
        open_windows = []
    end = deferral(args, script, open_windows, time.time())
    sys.stdout.write(script if end is None else deferred(script, end))
    sys.stdout.flush()
    return 0
