"""The command server's loop: pre-forked idle workers, and the
connections handed to them within each user's and the total cap.

The server accepts, reads who the caller is (SO_PEERCRED), and hands the
connection to an idle worker (SCM_RIGHTS over the worker's control socket),
which serves it as that user and exits; the server forks a new idle worker
after it has handed the connections waiting, so that no fork is on a
command's path. It keeps each busy worker's connection: when a worker is
ended by a signal (the client forwarded SIGTERM, or the kernel killed it)
the server tells the client which, as the worker cannot. A caller over a
cap is answered REFUSED (its client runs the Python command, which the
daemon's socket bounds as usual) and logged, rate-limited, as is what a
worker reports of a request it refused.

A worker that reports DONE is kept warm for its caller (uid and gid) and
handed that caller's next connection before any fresh worker: no fork and
no copied page is then on the command's path. Warm workers are bounded in
number (WARM_PER_USER, WARM_TOTAL), in commands (WARM_COMMANDS) and in
idle time (WARM_SECONDS): retired, they read EOF and exit.
"""

from __future__ import annotations

import logging
import os
import selectors
import signal
import socket
import time
from collections import Counter, deque
from typing import Callable, NamedTuple

from overlay.cmdserver import frames, worker
from overlay.daemon.connections import peer_of
from overlay.log.ratelog import RateLimitedLog

log = logging.getLogger("plus.commands")
_REPORTED = {code: kind for kind, code in worker.REPORTS.items()}
_WHY = {"privileges": "could not become the caller (the command server is not root)",
        "garbage": "a malformed request", "large": "a request over its bounds",
        "slow": "a request that did not arrive within request_timeout",
        "unknown": "a command it does not serve",
        "encoding": "non-ASCII words in a locale whose encoding is not UTF-8"}


WARM_PER_USER = 4
WARM_TOTAL = 32
WARM_COMMANDS = 1000
WARM_SECONDS = 60.0
"""The bounds on warm workers: each holds the pages it copied from the server
(a few MiB), the groups its caller had when it became that user, and
whatever a command leaves in it."""


class Caps(NamedTuple):
    total: int
    per_user: int
    request_timeout: float
    spare: int


class _Busy(NamedTuple):
    caller: tuple[int, int]
    """uid, gid"""
    conn: socket.socket
    control: socket.socket
    served: int
    """Commands this worker has taken, this one included."""


class _Warm(NamedTuple):
    pid: int
    control: socket.socket
    served: int
    since: float


class Pool:
    def __init__(self, listening: socket.socket, caps: Caps,
                 commands: dict[str, Callable[[], int]]) -> None:
        self.listening = listening
        self.caps = caps
        self.commands = commands
        self.idle: deque[tuple[int, socket.socket]] = deque()
        self.busy: dict[int, _Busy] = {}
        self.warm: dict[tuple[int, int], list[_Warm]] = {}
        self.retiring: dict[int, socket.socket] = {}
        self.by_uid: Counter = Counter()
        self.warnings = RateLimitedLog(log)
        self.selector = selectors.DefaultSelector()
        self.running = True

    def serve_forever(self) -> None:
        self.listening.setblocking(False)
        self.selector.register(self.listening, selectors.EVENT_READ, self._accept)
        signal.signal(signal.SIGTERM, self._stop)
        while self.running:
            while len(self.idle) < self.caps.spare and self.running:
                self._fork()
            for key, _events in self.selector.select(timeout=1.0):   # a stop is seen
                key.data(key.fileobj)
            self._retire_idle_warm(time.monotonic() - WARM_SECONDS)
        self._retire_idle_warm(float("inf"))
        for pid, control in [*self.idle, *self.retiring.items()]:
            control.close()                      # an idle worker reads EOF and exits
            os.waitpid(pid, 0)

    def _stop(self, *_ignored) -> None:
        self.running = False

    def _fork(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid = os.fork()
        if pid == 0:
            keep = theirs.fileno()
            for fd in _open_descriptors():
                if fd > 2 and fd != keep:
                    try:
                        os.close(fd)
                    except OSError:
                        pass                     # listdir's own, closed already
            worker.wait_and_serve(theirs, self.commands, self.caps.request_timeout)
        theirs.close()
        self.idle.append((pid, ours))
        self.selector.register(ours, selectors.EVENT_READ, self._heard)

    def _accept(self, listening: socket.socket) -> None:
        try:
            conn, _address = listening.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self.warnings.warning("accept", "cannot accept a connection: %s", exc.strerror)
            return
        try:
            peer = peer_of(conn)
        except OSError:
            conn.close()
            return
        caller, uid = (peer.uid, peer.gid), peer.uid
        warm = self.warm.get(caller)
        if self._over_cap(uid) is not None or not (warm or self.idle):
            _answer(conn, frames.REFUSED, 0)
            return
        if warm:
            pid, control, served, _since = warm.pop()      # the most recently used: its pages
            if not warm:
                del self.warm[caller]
        else:
            (pid, control), served = self.idle.popleft(), 0
        try:
            socket.send_fds(control, [b"c"], [conn.fileno()])
        except OSError:
            _answer(conn, frames.REFUSED, 0)
            self._retire(pid, control)           # it died: _heard reaps it
            return
        self.busy[pid] = _Busy(caller, conn, control, served + 1)
        if uid != 0:
            self.by_uid[uid] += 1

    def _over_cap(self, uid: int) -> str | None:
        if uid == 0:
            return None
        if self.by_uid[uid] >= self.caps.per_user:
            self.warnings.warning(("user", uid), "refused a command of uid %d: %d running, the "
                                  "limit per user (max_connections_per_user); it runs the "
                                  "Python command", uid, self.caps.per_user)
            return "user"
        if sum(self.by_uid.values()) >= self.caps.total:
            self.warnings.warning("total", "refused a command of uid %d: %d running, the limit "
                                  "(max_connections); it runs the Python command", uid,
                                  self.caps.total)
            return "total"
        return None

    def _heard(self, control: socket.socket) -> None:
        """A worker reported a refused request or that it is free (DONE), or
        ended (EOF)."""
        try:
            said = control.recv(64)
        except OSError:
            said = b""
        pid, busy = self._worker_of(control)
        uid = busy.caller[0] if busy else None
        for code in said:
            if bytes([code]) == worker.DONE and busy is not None:
                self._done(pid, busy)
                busy = None
                continue
            kind = _REPORTED.get(bytes([code]), "garbage")
            self.warnings.warning((uid, kind), "refused a command of uid %s: %s",
                                  "?" if uid is None else uid, _WHY[kind])
        if said:
            return
        self.selector.unregister(control)
        control.close()
        _pid, status = os.waitpid(pid, 0)
        self.idle = deque(entry for entry in self.idle if entry[0] != pid)
        self.retiring.pop(pid, None)
        for caller, workers in list(self.warm.items()):
            self.warm[caller] = [entry for entry in workers if entry.pid != pid]
            if not self.warm[caller]:
                del self.warm[caller]
        if busy is None:
            return
        self._not_busy(pid, busy)
        if os.WIFSIGNALED(status):
            _answer(busy.conn, frames.SIGNALLED, os.WTERMSIG(status))
        else:
            busy.conn.close()

    def _worker_of(self, control: socket.socket) -> tuple[int, _Busy | None]:
        """The pid of the worker on ``control``, and its busy entry if it is busy."""
        for pid, busy in self.busy.items():
            if busy.control is control:
                return pid, busy
        for pid, idle in [*self.idle, *self.retiring.items()]:
            if idle is control:
                return pid, None
        return next((entry.pid, None) for workers in self.warm.values() for entry in workers
                    if entry.control is control)

    def _not_busy(self, pid: int, busy: _Busy) -> None:
        del self.busy[pid]
        uid = busy.caller[0]
        if uid != 0:
            self.by_uid[uid] -= 1
            if not self.by_uid[uid]:
                del self.by_uid[uid]

    def _done(self, pid: int, busy: _Busy) -> None:
        """A worker free again: kept warm for its caller, within the bounds."""
        self._not_busy(pid, busy)
        busy.conn.close()
        warm = self.warm.setdefault(busy.caller, [])
        if (busy.served < WARM_COMMANDS and len(warm) < WARM_PER_USER
                and sum(map(len, self.warm.values())) < WARM_TOTAL):
            warm.append(_Warm(pid, busy.control, busy.served, time.monotonic()))
        else:
            self._retire(pid, busy.control)
        if not warm:
            del self.warm[busy.caller]

    def _retire_idle_warm(self, before: float) -> None:
        """Retire the warm workers free since before ``before`` (time.monotonic())."""
        for caller, workers in list(self.warm.items()):
            for entry in workers:
                if entry.since < before:
                    self._retire(entry.pid, entry.control)
            self.warm[caller] = [entry for entry in workers if entry.since >= before]
            if not self.warm[caller]:
                del self.warm[caller]

    def _retire(self, pid: int, control: socket.socket) -> None:
        """The worker reads EOF and exits; _heard reaps it when its end closes."""
        self.retiring[pid] = control
        try:
            control.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def _answer(conn: socket.socket, kind: int, value: int) -> None:
    """One frame to a client that may not read: never waits."""
    try:
        conn.setblocking(False)
        conn.send(frames.frame(kind, value))
    except OSError:
        pass
    conn.close()


def _open_descriptors() -> list[int]:
    return [int(name) for name in os.listdir("/proc/self/fd")]
