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
import queue
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
    """Threads that serve connections, each connection by a thread of its
    own, started only when none is idle and kept (up to ``spare`` idle ones)
    for the next. A thread started per connection made the accepting thread
    wait in Thread.start() until the new one held the GIL, up to the 5 ms
    switch interval behind a busy thread, for every command. Each job
    claims an idle thread or starts one, so a job never waits for a thread
    that a slow client holds."""

    def __init__(self, serve: Callable[[object], None], spare: int = 8) -> None:
        self._serve = serve
        self._spare = spare
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._idle = 0
        self._threads = 0
        self._lock = threading.Lock()

    def submit(self, job: object) -> None:
        with self._lock:
            if self._idle:
                self._idle -= 1
            else:
                threading.Thread(target=self._work, name="connection", daemon=True).start()
                self._threads += 1
            self._jobs.put(job)

    def stop(self) -> None:
        """Let the idle threads end; busy ones end after their job."""
        with self._lock:
            for _ in range(self._threads):
                self._jobs.put(None)

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            self._serve(job)
            with self._lock:
                if self._idle >= self._spare:
                    self._threads -= 1
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
    """A Unix stream server, a thread per connection (Workers), that counts
    connections per peer uid."""

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
        self._workers = Workers(self._serve)
        super().__init__(path, socketserver.BaseRequestHandler, bind_and_activate=True)

    def process_request(self, request: socket.socket, client_address) -> None:
        self._workers.submit((request, client_address))

    def _serve(self, job) -> None:
        """What socketserver.ThreadingMixIn does in a connection's thread."""
        request, client_address = job
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)

    def server_close(self) -> None:
        super().server_close()
        self._workers.stop()

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
