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

from overlay.kit.childprocess import Supervised
from overlay.network.http.settings import HttpSettings

log = logging.getLogger("plus.http")


class Companion(Supervised):
    def __init__(self, settings: HttpSettings, socket_path: str) -> None:
        super().__init__(f"HTTP API ({settings.address})", log)
        self.settings = settings
        self.socket_path = socket_path
        self.listening: socket.socket | None = None
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
        if self.settings.enabled:
            super().start()

    def spawn(self) -> subprocess.Popen:
        return subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, pass_fds=(self.listening.fileno(),),
                                **self._identity())

    def started(self, process: subprocess.Popen) -> str:
        return (f"HTTP API on {'https' if self.settings.tls else 'http'}://"
                f"{self.settings.address} (pid {process.pid})")

    def _identity(self) -> dict:
        """As http.user when the daemon runs as root."""
        if os.getuid() != 0:
            return {}
        entry = pwd.getpwnam(self.settings.user)
        return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}

    def stop(self) -> None:
        super().stop()
        if self.listening is not None:
            self.listening.close()
