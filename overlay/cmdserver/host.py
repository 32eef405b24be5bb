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

from overlay.kit.childprocess import Supervised

log = logging.getLogger("plus.commands")
SUFFIX = ".cmd"


class CommandServer(Supervised):
    def __init__(self, daemon_socket: str, connections: int, per_user: int,
                 request_timeout: float) -> None:
        super().__init__("command server", log, " (meanwhile the commands run in Python)")
        self.path = daemon_socket + SUFFIX
        self.bounds = (connections, per_user, request_timeout)
        self.listening: socket.socket | None = None

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

    def spawn(self) -> subprocess.Popen:
        self._listen()
        return subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, pass_fds=(self.listening.fileno(),),
                                cwd="/", start_new_session=True)

    def started(self, process: subprocess.Popen) -> str:
        return f"command server on {self.path} (pid {process.pid})"

    def ended(self) -> None:
        self._close()

    def stop(self) -> None:
        """Stop the server (busy workers finish their commands) and remove the socket."""
        super().stop()
        self._close()
