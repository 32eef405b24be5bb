"""plus_scheduler's HTTP companion, started and stopped with it.

The API is served by a process of its own, not threads of the daemon:
HTTP parsing (the part the network reaches) then runs as an unprivileged
user (http.user when the daemon is root) with no secret (it never sees the
token key; the daemon checks each token), a crash there cannot take the
reservations down, and the daemon's memory stays what its ARs need. A
companion that exits is started again, waiting longer each time it fails
quickly.
"""

from __future__ import annotations

import logging
import os
import pwd
import socket
import subprocess
import sys
import threading
import time

from overlay.kit.childprocess import end, relay
from overlay.log.ratelog import RateLimitedLog
from overlay.network.http.settings import HttpSettings

log = logging.getLogger("plus.http")
LINES = 30
"""The companion's lines of one logger and level the daemon logs per minute."""


class Companion:
    def __init__(self, settings: HttpSettings, socket_path: str) -> None:
        self.settings = settings
        self.socket_path = socket_path
        self.process: subprocess.Popen | None = None
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.listening: socket.socket | None = None
        self.lines = RateLimitedLog(log, burst=LINES)
        self.uid = self._identity().get("user", os.getuid()) if settings.enabled else None
        """The companion's uid (http.user's when the daemon runs as root)."""

    def argv(self) -> list[str]:
        chosen = self.settings
        argv = [sys.executable, "-m", "overlay.network.http.server", "--socket", self.socket_path,
                "--listening", str(self.listening.fileno()),
                "--connections", str(chosen.max_connections),
                "--per-client", str(chosen.max_connections_per_client),
                "--request-timeout", str(chosen.request_timeout),
                "--timeout", str(chosen.timeout)]
        if chosen.tls:
            argv += ["--cert", chosen.tls_cert, "--key", chosen.tls_key]
        if chosen.oidc is not None and chosen.oidc.client_id:
            argv += ["--provider", chosen.oidc.origin]
        for origin in chosen.cors_origins:
            argv += ["--cors", origin]
        return argv + ["--parent", str(os.getpid())]

    def listen(self) -> None:
        """Take the API's port for the daemon's whole life, before anyone
        else can: each companion serves this socket (passed to it), so no
        local user can bind the port while a companion starts again and
        collect the tokens sent to it. ValueError if the port is taken."""
        if not self.settings.enabled:
            return
        chosen = self.settings
        try:
            self.listening = socket.create_server(
                (chosen.host, chosen.port), backlog=min(chosen.max_connections, 4096),
                family=socket.AF_INET6 if ":" in chosen.host else socket.AF_INET)
        except OSError as exc:
            why = os.strerror(exc.errno) if exc.errno else str(exc)
            raise ValueError(f"http.address {chosen.address}: cannot listen there ({why}); "
                             "another process holds the port, or the address is not this "
                             "host's") from None

    def start(self) -> None:
        if not self.settings.enabled:
            return
        self._thread = threading.Thread(target=self._keep_running, name="http-companion",
                                        daemon=True)
        self._thread.start()

    def _keep_running(self) -> None:
        pause = 1.0
        while not self._stopping.is_set():
            began = time.monotonic()
            try:
                self.process = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL,
                                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                                pass_fds=(self.listening.fileno(),),
                                                **self._identity())
            except OSError as exc:
                log.error("cannot start the HTTP API (%s): %s", self.settings.address, exc)
                status = None
            else:
                log.info("HTTP API on %s://%s (pid %d)", "https" if self.settings.tls else "http",
                         self.settings.address, self.process.pid)
                relay(self.process.stderr, self.lines)
                status = self.process.wait()
            if self._stopping.is_set():
                return
            pause = 1.0 if time.monotonic() - began > 60 else min(pause * 2, 60.0)
            log.warning("the HTTP API process ended (status %s); starting it again in %.0f s",
                        status, pause)
            self._stopping.wait(pause)

    def _identity(self) -> dict:
        """As http.user when the daemon runs as root."""
        if os.getuid() != 0:
            return {}
        entry = pwd.getpwnam(self.settings.user)
        return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}

    def stop(self) -> None:
        self._stopping.set()
        end(self.process)
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self.listening is not None:
            self.listening.close()
