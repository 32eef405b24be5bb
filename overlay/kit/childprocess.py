"""What the daemon's child processes share (the HTTP companion, the
command server): dying with the daemon, staying out of other processes'
reach, and their stderr relayed into the daemon's log."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from typing import BinaryIO

from overlay.log.ratelog import RateLimitedLog

_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
LINE_BYTES = 4096
"""The longest line of a child's stderr taken into the daemon's log."""


def undumpable(prog: str) -> None:
    """No other process of this user may trace this one, read its memory
    or take its descriptors."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        sys.exit(f"{prog}: prctl: {os.strerror(ctypes.get_errno())}")


def die_with(parent: int, prog: str) -> None:
    """SIGKILL this process when plus_scheduler is gone, whenever that
    happens (even during this process's start, even by SIGKILL): an orphan
    would hold the daemon's port or socket from every later daemon. The
    kernel sends it once the parent dies; a parent already gone is seen by
    getppid, which is asked after the request, so no moment is left
    uncovered."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        sys.exit(f"{prog}: prctl: {os.strerror(ctypes.get_errno())}")
    if os.getppid() != parent:
        sys.exit(0)


def relay(stream: BinaryIO, lines: RateLimitedLog) -> None:
    """A child's stderr lines into the daemon's log, each at most
    LINE_BYTES and rate-limited by their logger and level (the first two
    words), so that they rotate with it, no client fills a disk through
    them, and one kind cannot crowd out another."""
    for raw in iter(lambda: stream.readline(LINE_BYTES), b""):
        line = raw.decode("utf-8", "backslashreplace").rstrip("\n")
        source = line.split(" ", 2)[:2] if line[:1].isalpha() else ["other"]
        lines.warning(tuple(source), "%s", line)
    stream.close()


def end(process: subprocess.Popen | None) -> None:
    """SIGTERM a child still running, then SIGKILL it if it has not ended in 5 s."""
    if process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
