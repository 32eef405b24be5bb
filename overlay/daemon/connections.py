"""The daemon's Unix socket server, bounded so that no user can starve it.

Each connection gets a thread of its own (kept afterwards for the next
connections, a few of them), but only so many: a user may hold at most
``per_user`` connections at once and all users together ``total`` (root
is exempt, so that an administrator can always reach a busy daemon), a
request must arrive whole within ``request_timeout`` seconds and be at
most ``message_bytes`` long. A connection over a limit is answered with
one line saying which limit and closed at once, and the daemon logs it
(at most once a minute per user and limit). The file descriptor limit is
raised to its hard maximum at start, and the connection total kept below
it, so that accept() never fails for want of descriptors and spins.
"""

from __future__ import annotations

import errno
import logging
import resource
import socket
import socketserver
import struct
import threading
import time
from collections import Counter
from contextlib import contextmanager
from typing import Callable, Iterator, NamedTuple

from overlay.log.ratelog import RateLimitedLog
from overlay.wire import protocol

log = logging.getLogger("plus.connections")

_PEERCRED = struct.Struct("3i")
FDS_KEPT = 256
"""Descriptors left for the store, the backend, job output and logs."""
_LEADER_WAKES = 0.5
"""Seconds between the waiting thread's looks at a stop."""


class Peer(NamedTuple):
    """Who is at the other end, as the kernel says (SO_PEERCRED)."""

    pid: int
    uid: int
    gid: int


class Limits(NamedTuple):
    total: int
    per_user: int
    request_timeout: float
    message_bytes: int


def peer_of(sock: socket.socket) -> Peer:
    return Peer(*_PEERCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                  _PEERCRED.size)))


def raise_fd_limit() -> int:
    """Raise the soft limit on open files to the hard one; the soft limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            log.info("open file limit raised from %d to %d", soft, target)
            soft = target
        except (ValueError, OSError) as exc:
            log.warning("could not raise the open file limit from %d: %s", soft, exc)
    return soft


class Workers:
    """Threads that take the connections themselves and serve them, leader
    and followers: one idle thread at a time waits for the next connection
    (``take``: a job, or None once the server stops), the others wait for
    their turn to; the one that took a job serves it, first starting another
    thread if none is left idle to take the next. No thread hands a
    connection to another: the hand-off woke a second thread at every
    request (a cold plus_status -r request: p50 0.45 ms with it, 0.37 to
    0.41 without, here). A job never waits for a thread that a slow client
    holds, and up to ``spare`` idle threads are kept for the next."""

    def __init__(self, take: Callable[[], object | None], serve: Callable[[object], None],
                 spare: int = 8) -> None:
        self._take = take
        self._serve = serve
        self._spare = spare
        self.turn = threading.Lock()
        """Held by the thread waiting for the next connection."""
        self._idle = 0
        self._lock = threading.Lock()

    def start(self) -> None:
        with self._lock:
            self._start_one()

    def _start_one(self) -> None:
        self._idle += 1
        threading.Thread(target=self._work, name="connection", daemon=True).start()

    def _work(self) -> None:
        while True:
            with self.turn:
                job = self._take()
            with self._lock:
                self._idle -= 1
                if job is None:
                    return
                if not self._idle:
                    self._start_one()
            self._serve(job)
            with self._lock:
                if self._idle >= self._spare:
                    return
                self._idle += 1


class Busy(Exception):
    """A user has as many requests in progress as a user may."""


class UserTurns:
    """Requests in progress per user where the socket's peer is not the
    user: the HTTP companion forwards every HTTP user's requests as one uid,
    so the daemon counts them by the user the token proves, wherever they
    come from (the companion's shares are by address: a user with sixteen
    addresses would have sixteen)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.counts: Counter = Counter()
        self._lock = threading.Lock()

    @contextmanager
    def turn(self, user: str) -> Iterator[None]:
        with self._lock:
            if self.counts[user] >= self.limit:
                raise Busy(f"plus_scheduler is busy: {user} has {self.limit} requests in "
                           "progress, the limit per user (http.max_requests_per_user); try again "
                           "when they are answered")
            self.counts[user] += 1
        try:
            yield
        finally:
            with self._lock:
                self.counts[user] -= 1
                if not self.counts[user]:
                    del self.counts[user]


class BoundedServer(socketserver.UnixStreamServer):
    """A Unix stream server, a thread per connection (Workers, which accept
    too), that counts connections per peer uid."""

    request_queue_size = 256  # a burst of commands must queue, not fail with EAGAIN

    def __init__(self, path: str, handle: Callable[[socket.socket, Peer, float], None],
                 limits: Limits, exempt: Callable[[int], bool],
                 forwarder: Callable[[int], bool] = lambda uid: False) -> None:
        self.handle_connection = handle
        self.limits = limits
        self.exempt = exempt
        self.forwarder = forwarder      # forwards others' requests: counted in the total only
        self.open_by_uid: Counter = Counter()
        self.open_total = 0
        self.warnings = RateLimitedLog(log)
        self._peers: dict[socket.socket, Peer] = {}
        self._count_lock = threading.Lock()
        self._workers = Workers(self._take, self._serve)
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        super().__init__(path, socketserver.BaseRequestHandler, bind_and_activate=True)
        self.socket.settimeout(_LEADER_WAKES)

    def serve_forever(self, poll_interval: float = _LEADER_WAKES) -> None:
        """Serve until shutdown(): the connection threads accept; this one
        waits, and returns once none of them will accept again."""
        self._workers.start()
        while not self._stopping.wait(poll_interval):
            pass                        # signal handlers run in this thread meanwhile
        with self._workers.turn:        # the leader has left accept(); the next see the stop
            self._stopped.set()

    def shutdown(self) -> None:
        self._stopping.set()
        self._stopped.wait()

    def _take(self) -> tuple | None:
        """The next connection within the limits (one over them is answered
        and closed here), or None once the server stops."""
        while not self._stopping.is_set():
            try:
                request, client_address = self.get_request()
            except OSError:             # TimeoutError: a look at the stop
                continue
            if self.verify_request(request, client_address):
                return request, client_address
            self.shutdown_request(request)
        return None

    def _serve(self, job) -> None:
        """What socketserver.ThreadingMixIn does in a connection's thread."""
        request, client_address = job
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)

    def get_request(self):
        try:
            return super().get_request()
        except OSError as exc:
            if exc.errno in (errno.EMFILE, errno.ENFILE):
                self.warnings.warning("fds", "cannot accept a connection: %s; "
                                      "waiting for connections to close", exc.strerror)
                time.sleep(0.1)  # not a busy loop while the table is full
            raise

    def verify_request(self, request: socket.socket, client_address) -> bool:
        """Count the connection in, or answer that a limit bites and drop it."""
        try:
            peer = peer_of(request)
        except OSError:
            return False
        refusal = self._admit(peer)
        if refusal is None:
            with self._count_lock:
                self._peers[request] = peer
            return True
        request.settimeout(0.1)
        try:
            protocol.send_message(request, {"ok": False, "error": refusal,
                                            "status": protocol.EXIT_REFUSED})
        except OSError:
            pass
        return False

    def _admit(self, peer: Peer) -> str | None:
        with self._count_lock:
            if self.exempt(peer.uid):
                self.open_by_uid[peer.uid] += 1
                return None
            if self.open_by_uid[peer.uid] >= self.limits.per_user and not self.forwarder(peer.uid):
                self.warnings.warning(("user", peer.uid), "refused a connection from uid %d: "
                                      "%d open, the limit per user (max_connections_per_user)",
                                      peer.uid, self.limits.per_user)
                return (f"plus_scheduler is busy: you have {self.limits.per_user} connections "
                        "open, the limit per user; try again when your other commands finish")
            if self.open_total >= self.limits.total:
                self.warnings.warning("total", "refused a connection from uid %d: %d open, "
                                      "the limit (max_connections)", peer.uid, self.limits.total)
                return (f"plus_scheduler is busy: {self.limits.total} connections are open, "
                        "its limit; try again shortly")
            self.open_by_uid[peer.uid] += 1
            self.open_total += 1
            return None

    def _release(self, peer: Peer) -> None:
        with self._count_lock:
            self.open_by_uid[peer.uid] -= 1
            if not self.open_by_uid[peer.uid]:
                del self.open_by_uid[peer.uid]
            if not self.exempt(peer.uid):
                self.open_total -= 1

    def finish_request(self, request: socket.socket, client_address) -> None:
        with self._count_lock:
            peer = self._peers.pop(request)
        try:
            deadline = time.monotonic() + self.limits.request_timeout
            self.handle_connection(request, peer, deadline)
        finally:
            self._release(peer)
