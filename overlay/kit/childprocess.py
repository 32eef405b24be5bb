"""What the daemon's child processes share (the HTTP companion, the
command server): kept running while the daemon runs, dying with it,
staying out of other processes' reach, and their stderr relayed into the
daemon's log."""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from typing import BinaryIO

from overlay.log.ratelog import RateLimitedLog

_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
LINE_BYTES = 4096
"""The longest line of a child's stderr taken into the daemon's log."""
LINES = 30
"""A child's lines of one logger and level the daemon logs per minute."""


@functools.cache
def _libc() -> ctypes.CDLL:
    """The C library, opened once: a command server's worker asks for
    prctl at every command."""
    return ctypes.CDLL(None, use_errno=True)


def undumpable(prog: str) -> None:
    """No other process of this user may trace this one, read its memory
    or take its descriptors."""
    if _libc().prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        sys.exit(f"{prog}: prctl: {os.strerror(ctypes.get_errno())}")


def die_with(parent: int, prog: str) -> None:
    """SIGKILL this process when plus_scheduler is gone, whenever that
    happens (even during this process's start, even by SIGKILL): an orphan
    would hold the daemon's port or socket from every later daemon. The
    kernel sends it once the parent dies; a parent already gone is seen by
    getppid, which is asked after the request, so no moment is left
    uncovered."""
    if _libc().prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
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


class Supervised:
    """A child of the daemon kept running on a thread of its own: started
    again when it ends, after a pause that doubles (up to a minute) while
    it keeps ending within a minute of its start, and ended with the
    daemon. A subclass says how it is started (``spawn``), how its start is
    logged (``started``) and what follows each run (``ended``)."""

    def __init__(self, name: str, log: logging.Logger, meanwhile: str = "") -> None:
        """``name`` as the log says it; ``meanwhile``: what users get while
        it is down, added to the line saying it ended."""
        self.name, self.log, self.meanwhile = name, log, meanwhile
        self.process: subprocess.Popen | None = None
        self.lines = RateLimitedLog(log, burst=LINES)
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def spawn(self) -> subprocess.Popen:
        raise NotImplementedError

    def started(self, process: subprocess.Popen) -> str:
        return f"{self.name} started (pid {process.pid})"

    def ended(self) -> None:
        """After each run, before the pause."""

    def start(self) -> None:
        self._thread = threading.Thread(target=self._keep_running, name=self.name.replace(" ", "-"),
                                        daemon=True)
        self._thread.start()

    def _keep_running(self) -> None:
        pause = 1.0
        while not self._stopping.is_set():
            began = time.monotonic()
            try:
                self.process = self.spawn()
            except OSError as exc:
                self.log.error("cannot start the %s: %s", self.name, exc)
                status = None
            else:
                self.log.info("%s", self.started(self.process))
                relay(self.process.stderr, self.lines)
                status = self.process.wait()
            self.ended()
            if self._stopping.is_set():
                return
            pause = 1.0 if time.monotonic() - began > 60 else min(pause * 2, 60.0)
            self.log.warning("the %s ended (status %s); starting it again in %.0f s%s",
                             self.name, status, pause, self.meanwhile)
            self._stopping.wait(pause)

    def stop(self) -> None:
        """End the child (SIGTERM, SIGKILL after 5 s) and its thread."""
        self._stopping.set()
        end(self.process)
        if self._thread is not None:
            self._thread.join(timeout=5)
