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
"""

from __future__ import annotations

import logging
import os
import selectors
import signal
import socket
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


class Caps(NamedTuple):
    total: int
    per_user: int
    request_timeout: float
    spare: int


class _Busy(NamedTuple):
    uid: int
    conn: socket.socket
    control: socket.socket


class Pool:
    def __init__(self, listening: socket.socket, caps: Caps,
                 commands: dict[str, Callable[[], int]]) -> None:
        self.listening = listening
        self.caps = caps
        self.commands = commands
        self.idle: deque[tuple[int, socket.socket]] = deque()
        self.busy: dict[int, _Busy] = {}
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
        for pid, control in self.idle:
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
            uid = peer_of(conn).uid
        except OSError:
            conn.close()
            return
        refusal = self._over_cap(uid)
        if refusal is not None or not self.idle:
            _answer(conn, frames.REFUSED, 0)
            return
        pid, control = self.idle.popleft()
        try:
            socket.send_fds(control, [b"c"], [conn.fileno()])
        except OSError:
            _answer(conn, frames.REFUSED, 0)
            return                               # the worker died: _heard reaps it
        self.busy[pid] = _Busy(uid, conn, control)
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
        """A worker reported a refused request, or ended (EOF)."""
        try:
            said = control.recv(64)
        except OSError:
            said = b""
        pid = next((pid for pid, idle in self.idle if idle is control), None)
        busy = None
        if pid is None:
            pid, busy = next((pid, b) for pid, b in self.busy.items() if b.control is control)
        for code in said:
            kind = _REPORTED.get(bytes([code]), "garbage")
            self.warnings.warning((busy.uid if busy else None, kind),
                                  "refused a command of uid %s: %s", busy.uid if busy else "?",
                                  _WHY[kind])
        if said:
            return
        self.selector.unregister(control)
        control.close()
        _pid, status = os.waitpid(pid, 0)
        if busy is None:
            self.idle = deque(entry for entry in self.idle if entry[0] != pid)
            return
        del self.busy[pid]
        if busy.uid != 0:
            self.by_uid[busy.uid] -= 1
            if not self.by_uid[busy.uid]:
                del self.by_uid[busy.uid]
        if os.WIFSIGNALED(status):
            _answer(busy.conn, frames.SIGNALLED, os.WTERMSIG(status))
        else:
            busy.conn.close()


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
