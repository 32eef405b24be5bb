"""The command server, as plus_scheduler runs it: its socket beside the
daemon's (the daemon's path + ".cmd", mode 0666 as the daemon's), bound by
the daemon and handed to the server, which is started as a fresh
interpreter (never a fork of the threaded daemon), started again when it
ends, and stopped with the daemon. While no server runs there is no socket:
a client then finds none, or has its waiting connection closed before any
worker took it, and runs the Python command. Each daemon (a standby too)
runs its own.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import threading
import time

from overlay.kit.childprocess import end, relay
from overlay.log.ratelog import RateLimitedLog

log = logging.getLogger("plus.commands")
SUFFIX = ".cmd"
LINES = 30
"""The server's lines of one logger and level the daemon logs per minute."""


class CommandServer:
    def __init__(self, daemon_socket: str, connections: int, per_user: int,
                 request_timeout: float) -> None:
        self.path = daemon_socket + SUFFIX
        self.bounds = (connections, per_user, request_timeout)
        self.listening: socket.socket | None = None
        self.process: subprocess.Popen | None = None
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.lines = RateLimitedLog(log, burst=LINES)

    def _listen(self) -> None:
        self._close()                   # stale: the daemon's pid lock proves no daemon owns it
        self.listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listening.bind(self.path)
        os.chmod(self.path, 0o666)
        self.listening.listen(256)

    def _close(self) -> None:
        """No socket: the connections waiting are closed, unserved."""
        if self.listening is not None:
            self.listening.close()
            self.listening = None
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def argv(self) -> list[str]:
        connections, per_user, request_timeout = self.bounds
        return [sys.executable, "-I", "-X", "utf8", "-m", "overlay.cmdserver.server",
                "--parent", str(os.getpid()), "--listening", str(self.listening.fileno()),
                "--connections", str(connections), "--per-user", str(per_user),
                "--request-timeout", str(request_timeout)]

    def start(self) -> None:
        self._thread = threading.Thread(target=self._keep_running, name="command-server",
                                        daemon=True)
        self._thread.start()

    def _keep_running(self) -> None:
        pause = 1.0
        while not self._stopping.is_set():
            began = time.monotonic()
            try:
                self._listen()
                self.process = subprocess.Popen(
                    self.argv(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE, pass_fds=(self.listening.fileno(),), cwd="/",
                    start_new_session=True)
            except OSError as exc:
                log.error("cannot start the command server: %s", exc)
                status = None
            else:
                log.info("command server on %s (pid %d)", self.path, self.process.pid)
                relay(self.process.stderr, self.lines)
                status = self.process.wait()
            self._close()
            if self._stopping.is_set():
                return
            pause = 1.0 if time.monotonic() - began > 60 else min(pause * 2, 60.0)
            log.warning("the command server ended (status %s); starting it again in %.0f s "
                        "(meanwhile the commands run in Python)", status, pause)
            self._stopping.wait(pause)

    def stop(self) -> None:
        """Stop the server (busy workers finish their commands) and remove the socket."""
        self._stopping.set()
        end(self.process)
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._close()
