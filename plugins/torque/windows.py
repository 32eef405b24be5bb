"""The open windows, published for the submit filter.

In pbs_sched mode a job submitted while a window is open runs wherever
pbs_sched puts it, a moment after qsub returns: before any pass of ours
could hold it. So the backend writes the open windows (the AR's queue, its
end, its nodes with their slots and properties) to a small file anyone may
read, and TORQUE's qsub submit filter (``plus_torque_filter``) defers a job
that could land on one of those nodes to the window's end (``-a``), the
time TORQUE itself then queues it again. A deferred job is known by that
Execution_Time: the AR's end.
"""

from __future__ import annotations

import json
import os
import time


def date_time(epoch: int) -> str:
    """qsub's and qalter's -a form, CCYYMMDDhhmm.SS, in local time."""
    return time.strftime("%Y%m%d%H%M.%S", time.localtime(epoch))


def publish(path: str, windows: list[dict]) -> None:
    """Replace the file: [{"queue", "end", "nodes": [{"name", "np",
    "properties"}]}], readable by every user (the filter runs as the one
    submitting)."""
    from overlay.api.plugin import save_state  # the daemon's side: the filter never writes
    save_state(path, {"windows": windows}, mode=0o644)


def read(path: str) -> list[dict]:
    """The windows published, [] if none is (no file: no window open)."""
    try:
        with open(path, encoding="utf-8") as handle:
            windows = json.load(handle).get("windows", [])
    except FileNotFoundError:
        return []
    if not isinstance(windows, list):
        raise ValueError(f"{path}: 'windows' is not a list")
    return windows


def default_path() -> str:
    """Where the daemon with the default state_dir publishes them."""
    from overlay.api.commands import protocol
    return os.path.join(protocol.DEFAULT_STATE_DIR, "torque-windows.json")
